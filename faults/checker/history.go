package main

// Reading a run's directory: every history-*.jsonl (the nodes' clients'
// call and ret lines, node events) and nemesis.jsonl (the driver's
// faults). The line formats are crates/troupe-faults/src/history.rs's.

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Line is any line of a history file.
type Line struct {
	K      string `json:"k"`
	ID     string `json:"id"`
	Client string `json:"client"`
	Kind   string `json:"kind"`
	Key    string `json:"key"`
	Op     string `json:"op"`
	Arg    uint64 `json:"arg"`
	T      int64  `json:"t"`
	OK     bool   `json:"ok"`
	Val    uint64 `json:"val"`
	Node   string `json:"node"`
	Act    uint64 `json:"act"`
	At     int64  `json:"at"`
	Err    string `json:"err"`
	What   string `json:"what"`
	Target string `json:"target"`
	Phase  string `json:"phase"`
	Name   string `json:"name"`
	Event  string `json:"event"`
	// The producer's lines (crates/troupe-faults/src/producing.rs).
	Producer string `json:"producer"`
	Upto     uint64 `json:"upto"`
	Keys     uint64 `json:"keys"`
	CallT    int64  `json:"call"`
	Seen     []Seen `json:"seen"`
}

// Seen is one producer's messages as a tally handled them.
type Seen struct {
	Producer   string `json:"producer"`
	Count      uint64 `json:"count"`
	Last       uint64 `json:"last"`
	OutOfOrder uint64 `json:"out_of_order"`
}

// Op is one client operation: its call, and its return if one was written.
type Op struct {
	Call Line
	Ret  *Line
}

// OK says whether the entity answered with a value.
func (o *Op) OK() bool { return o.Ret != nil && o.Ret.OK }

// Fault is one nemesis event, start to end.
type Fault struct {
	What, Target string
	Start, End   int64
}

// Run is what a run's directory holds.
type Run struct {
	Ops        []*Op // by call time
	Faults     []Fault
	QuietStart int64 // the final quiet interval (0 if absent)
	QuietEnd   int64
	Partial    int // lines that did not parse (a killed writer's last line)
	// When each activation was created (its "activated" line), by act.
	Activated map[uint64]int64
	// The producers' "confirmed" lines and the tallies' reads.
	Confirmed []Line
	Tallies   []Line
}

func readLines(path string, f func(Line)) (bad int, err error) {
	file, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		var l Line
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			bad++
			continue
		}
		f(l)
	}
	return bad, sc.Err()
}

// ReadRun reads directory dir.
func ReadRun(dir string) (*Run, error) {
	run := &Run{Activated: map[uint64]int64{}}
	files, err := filepath.Glob(filepath.Join(dir, "history-*.jsonl"))
	if err != nil {
		return nil, err
	}
	byID := map[string]*Op{}
	var rets []Line
	for _, path := range files {
		bad, err := readLines(path, func(l Line) {
			switch l.K {
			case "call":
				op := &Op{Call: l}
				byID[l.ID] = op
				run.Ops = append(run.Ops, op)
			case "ret":
				rets = append(rets, l)
			case "activated":
				run.Activated[l.Act] = l.T
			case "confirmed":
				run.Confirmed = append(run.Confirmed, l)
			case "tally":
				run.Tallies = append(run.Tallies, l)
			}
		})
		if err != nil {
			return nil, err
		}
		run.Partial += bad
	}
	for i := range rets {
		if op, ok := byID[rets[i].ID]; ok {
			op.Ret = &rets[i]
		}
	}
	sort.Slice(run.Ops, func(i, j int) bool { return run.Ops[i].Call.T < run.Ops[j].Call.T })
	open := map[string]int64{}
	_, err = readLines(filepath.Join(dir, "nemesis.jsonl"), func(l Line) {
		if l.K != "nemesis" {
			return
		}
		id := l.What + " " + l.Target
		switch {
		case l.What == "final-quiet" && l.Phase == "start":
			run.QuietStart = l.T
		case l.What == "final-quiet" && l.Phase == "end":
			run.QuietEnd = l.T
		case l.Phase == "start":
			open[id] = l.T
		case l.Phase == "end":
			if s, ok := open[id]; ok && !strings.HasPrefix(l.What, "ready") {
				run.Faults = append(run.Faults, Fault{What: l.What, Target: l.Target, Start: s, End: l.T})
				delete(open, id)
			}
		}
	})
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	return run, nil
}
