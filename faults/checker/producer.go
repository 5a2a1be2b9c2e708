package main

// The at-least-once producer's exact counts (crates/troupe-faults/src/
// producing.rs writes the lines): every confirmed message handled once,
// in order, none lost.

import "sort"

// ProducerCheck is what the producer's lines say.
type ProducerCheck struct {
	Producers int    // producers that had something confirmed
	Confirmed uint64 // messages confirmed, over producers and tallies
	Reads     int    // tally reads answered
	// Tally/producer pairs whose messages some read showed not each
	// handled once and in order (count != last, or out_of_order > 0),
	// each pair once.
	Disordered []string
	// Tallies whose final read lacks a message confirmed before it.
	Lost []string
	// Tallies read in the final quiet interval, of those the producers
	// sent to.
	FinalRead, Tallies int
}

// Producers checks the run's producer lines.
func Producers(run *Run) ProducerCheck {
	var pc ProducerCheck
	keys := uint64(0)
	upto := map[string][]Line{} // producer -> its confirmed lines, by time
	for _, c := range run.Confirmed {
		upto[c.Producer] = append(upto[c.Producer], c)
		if c.Keys > keys {
			keys = c.Keys
		}
	}
	pc.Producers = len(upto)
	for p := range upto {
		sort.Slice(upto[p], func(i, j int) bool { return upto[p][i].T < upto[p][j].T })
		last := upto[p][len(upto[p])-1]
		pc.Confirmed += last.Upto * last.Keys
	}
	final := map[string]Line{}
	disordered := map[string]bool{}
	for _, r := range run.Tallies {
		if !r.OK {
			continue
		}
		pc.Reads++
		for _, s := range r.Seen {
			if pair := r.Key + " " + s.Producer; (s.Count != s.Last || s.OutOfOrder > 0) && !disordered[pair] {
				disordered[pair] = true
				pc.Disordered = append(pc.Disordered, pair)
			}
		}
		if run.QuietStart == 0 || r.CallT < run.QuietStart || (run.QuietEnd > 0 && r.CallT > run.QuietEnd) {
			continue
		}
		if f, ok := final[r.Key]; !ok || r.CallT > f.CallT {
			final[r.Key] = r
		}
	}
	pc.Tallies = int(keys)
	pc.FinalRead = len(final)
	for key, r := range final {
		seen := map[string]uint64{}
		for _, s := range r.Seen {
			seen[s.Producer] = s.Count
		}
		for p, lines := range upto {
			// The highest upto this producer confirmed before the read
			// was called.
			var want uint64
			for _, c := range lines {
				if c.T < r.CallT && c.Upto > want {
					want = c.Upto
				}
			}
			if seen[p] < want {
				pc.Lost = append(pc.Lost, key+" "+p)
			}
		}
	}
	sort.Strings(pc.Lost)
	sort.Strings(pc.Disordered)
	return pc
}
