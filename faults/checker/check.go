package main

// From a run's operations to porcupine's, and the checks beside
// linearizability: lost confirmed deposits, double activations, recovery.

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// UnknownBound is how long after its call an operation of unknown outcome
// may still take effect. A buffered or forwarded ask waits at most 10 s in a
// region; the nemesis holds a process stopped at most 8 s and a partition
// 10 s; the client gives up after 2 s. 20 s bounds these; an effect later
// than this shows as an anomaly, to be looked at, not hidden. (At 60 s the
// long run's ledger history of 1 December, 616 unknown deposits, was
// undecided after porcupine's 5 minutes; at 20 s it was decided in 2.)
var UnknownBound = 20 * time.Second

// Operations turns the run's operations of kind ("register" or "ledger")
// into porcupine operations:
//   - a read without a value is dropped (it changed nothing);
//   - a write or deposit without a value is kept with Output.Unknown and a
//     return UnknownBound after its call;
//   - a register write of unknown outcome whose value no read saw is
//     dropped: values are unique, so "it never happened" explains every
//     history it is in, and dropping it changes no verdict while keeping
//     the search small.
func Operations(run *Run, kind string) []porcupine.Operation {
	seen := map[uint64]bool{}
	if kind == "register" {
		for _, o := range run.Ops {
			if o.Call.Kind == kind && o.Call.Op == "read" && o.OK() {
				seen[o.Ret.Val] = true
			}
		}
	}
	clients := map[string]int{}
	var out []porcupine.Operation
	for _, o := range run.Ops {
		c := o.Call
		if c.Kind != kind {
			continue
		}
		in := Input{Key: c.Key, Op: c.Op, Arg: c.Arg}
		var res Output
		var ret int64
		switch {
		case o.OK():
			res = Output{Val: o.Ret.Val}
			ret = o.Ret.T
		case c.Op == "read":
			continue
		case kind == "register" && !seen[c.Arg]:
			continue
		default:
			res = Output{Unknown: true}
			ret = c.T + UnknownBound.Nanoseconds()
		}
		id, ok := clients[c.Client]
		if !ok {
			id = len(clients)
			clients[c.Client] = id
		}
		out = append(out, porcupine.Operation{ClientId: id, Input: in, Call: c.T, Output: res, Return: ret, Metadata: c.ID})
	}
	return out
}

// Verdict is one model's result.
type Verdict struct {
	Kind    string
	Ops     int
	Unknown int
	Result  porcupine.CheckResult
	Excerpt []string // for an illegal history: where the search got stuck
	Info    porcupine.LinearizationInfo
}

// Check runs porcupine on one kind's history.
func Check(kind string, model porcupine.Model, ops []porcupine.Operation, timeout time.Duration) Verdict {
	v := Verdict{Kind: kind, Ops: len(ops)}
	for _, op := range ops {
		if op.Output.(Output).Unknown {
			v.Unknown++
		}
	}
	v.Result, v.Info = porcupine.CheckOperationsVerbose(model, ops, timeout)
	if v.Result == porcupine.Illegal {
		v.Excerpt = excerpt(model, ops, v.Info)
	}
	return v
}

// excerpt names, for each key whose history is not linearizable, the
// longest prefix porcupine could linearize and the operations around the
// first one (by call) it could not place.
func excerpt(model porcupine.Model, ops []porcupine.Operation, _ porcupine.LinearizationInfo) []string {
	var lines []string
	single := model
	single.Partition = nil
	for _, part := range partitionByKey(ops) {
		res, info := porcupine.CheckOperationsVerbose(single, part, time.Minute)
		if res != porcupine.Illegal {
			continue
		}
		key := part[0].Input.(Input).Key
		placed := map[interface{}]bool{}
		longest := 0
		for _, lin := range info.PartialLinearizationsOperations() {
			for _, l := range lin {
				if len(l) > longest {
					longest = len(l)
					placed = map[interface{}]bool{}
					for _, op := range l {
						placed[op.Metadata] = true
					}
				}
			}
		}
		sort.Slice(part, func(i, j int) bool { return part[i].Call < part[j].Call })
		stuck := len(part)
		for i, op := range part {
			if !placed[op.Metadata] {
				stuck = i
				break
			}
		}
		from, to := stuck-12, stuck+6
		if from < 0 {
			from = 0
		}
		if to > len(part) {
			to = len(part)
		}
		lines = append(lines, fmt.Sprintf("key %s: %d of %d operations linearized at most; around the first (by call) left out (* = in the longest linearization):", key, longest, len(part)))
		for _, op := range part[from:to] {
			ret := fmt.Sprintf("%.3f", float64(op.Return)/1e9)
			if op.Output.(Output).Unknown {
				ret = "unknown"
			}
			mark := " "
			if placed[op.Metadata] {
				mark = "*"
			}
			lines = append(lines, fmt.Sprintf("  %s %-16s call %.3f  ret %-9s %s", mark, op.Metadata, float64(op.Call)/1e9, ret, describe(op.Input, op.Output)))
		}
	}
	return lines
}

// Balance is one ledger's last balance read in the final quiet interval,
// against the deposits that bound it: those confirmed before the read was
// called must all be in it; those of unknown outcome, and those confirmed
// while the read ran, may be.
type Balance struct {
	Key               string
	Final             uint64
	ReadID            string
	ReadAt            int64 // the read's call
	Confirmed         uint64
	ConfirmedDeposits int
	Unknown           uint64 // the most the other deposits add
	UnknownDeposits   int
}

// Lost says whether a confirmed deposit is missing from the balance.
func (b Balance) Lost() bool { return b.Final < b.Confirmed }

// Over says whether the balance holds more than every deposit that may be
// in it: one applied twice, or one never made.
func (b Balance) Over() bool { return b.Final > b.Confirmed+b.Unknown }

// Ledgers is how many ledgers the run's clients used.
func (run *Run) Ledgers() int {
	keys := map[string]bool{}
	for _, o := range run.Ops {
		if o.Call.Kind == "ledger" {
			keys[o.Call.Key] = true
		}
	}
	return len(keys)
}

// FinalBalances is, per ledger read in the final quiet interval, its last
// balance read there (by call) with the deposits that bound it, by key.
// A ledger with no answered read there has no entry.
func FinalBalances(run *Run) []Balance {
	last := map[string]*Op{}
	for _, o := range run.Ops {
		c := o.Call
		if c.Kind != "ledger" || c.Op != "read" || !o.OK() || run.QuietStart == 0 || c.T < run.QuietStart {
			continue
		}
		if run.QuietEnd > 0 && c.T > run.QuietEnd {
			continue
		}
		if p, ok := last[c.Key]; !ok || c.T > p.Call.T {
			last[c.Key] = o
		}
	}
	var out []Balance
	for key, read := range last {
		b := Balance{Key: key, Final: read.Ret.Val, ReadID: read.Call.ID, ReadAt: read.Call.T}
		for _, o := range run.Ops {
			c := o.Call
			if c.Kind != "ledger" || c.Key != key || c.Op != "deposit" || c.T > read.Ret.T {
				continue
			}
			if o.OK() && o.Ret.T < read.Call.T {
				b.Confirmed += c.Arg
				b.ConfirmedDeposits++
			} else {
				b.Unknown += c.Arg
				b.UnknownDeposits++
			}
		}
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Overlap is two activations of one entity that both handled commands in
// overlapping intervals (by the entities' own stamps).
type Overlap struct {
	Entity       string
	A, B         string // node/activation
	OverlapNanos int64
	Handled      [2]int
	// When B was created, and A's first and last stamps (ns).
	BCreated, AFirst, ALast, BFirst int64
}

type span struct {
	act        uint64
	name       string
	first, end int64
	n          int
}

// DoubleActivations finds, per entity, activations whose handling
// intervals [first stamp, last stamp] overlap.
func DoubleActivations(run *Run) []Overlap {
	spans := map[string]map[uint64]*span{}
	for _, o := range run.Ops {
		if !o.OK() || o.Ret.Act == 0 {
			continue
		}
		e := o.Call.Kind + "/" + o.Call.Key
		if spans[e] == nil {
			spans[e] = map[uint64]*span{}
		}
		s, ok := spans[e][o.Ret.Act]
		if !ok {
			s = &span{act: o.Ret.Act, name: fmt.Sprintf("%s#%x", o.Ret.Node, o.Ret.Act), first: o.Ret.At, end: o.Ret.At}
			spans[e][o.Ret.Act] = s
		}
		if o.Ret.At < s.first {
			s.first = o.Ret.At
		}
		if o.Ret.At > s.end {
			s.end = o.Ret.At
		}
		s.n++
	}
	var out []Overlap
	entities := make([]string, 0, len(spans))
	for e := range spans {
		entities = append(entities, e)
	}
	sort.Strings(entities)
	for _, e := range entities {
		var list []*span
		for _, s := range spans[e] {
			list = append(list, s)
		}
		sort.Slice(list, func(i, j int) bool { return list[i].first < list[j].first })
		for i := 1; i < len(list); i++ {
			for j := 0; j < i; j++ {
				if list[i].first < list[j].end {
					end := list[j].end
					if list[i].end < end {
						end = list[i].end
					}
					out = append(out, Overlap{Entity: e, A: list[j].name, B: list[i].name, OverlapNanos: end - list[i].first,
						Handled: [2]int{list[j].n, list[i].n}, BCreated: run.Activated[list[i].act],
						AFirst: list[j].first, ALast: list[j].end, BFirst: list[i].first})
				}
			}
		}
	}
	return out
}

// Recovery is, per fault kind, the times from a fault's start until the
// operations on each key it disturbed succeed again.
//
// A key is disturbed by a fault when an operation on it, called after the
// fault's start, fails with a reply before the next fault's start (and at
// most 10 s after this one's end: an operation in flight when the next
// fault begins is that one's) (a timeout, a store error; not a client
// killed with its node). Its recovery time runs from the fault's start to
// the return of the first operation on it, called after that failure,
// that succeeds (on any node).
func Recovery(run *Run) map[string][]time.Duration {
	out := map[string][]time.Duration{}
	byKey := opsByKey(run)
	for n, f := range run.Faults {
		horizon := f.End + (10 * time.Second).Nanoseconds()
		if n+1 < len(run.Faults) && run.Faults[n+1].Start < horizon {
			horizon = run.Faults[n+1].Start
		}
		firstFail := map[string]int64{}
		for _, o := range run.Ops {
			c := o.Call
			if c.T < f.Start || o.Ret == nil || o.Ret.OK || o.Ret.T > horizon {
				continue
			}
			key := c.Kind + "/" + c.Key
			if _, ok := firstFail[key]; !ok {
				firstFail[key] = c.T
			}
		}
		for key, failedAt := range firstFail {
			var best int64
			for _, o := range byKey[key] {
				if !o.OK() || o.Call.T <= failedAt {
					continue
				}
				if best == 0 || o.Ret.T < best {
					best = o.Ret.T
				}
			}
			if best > 0 {
				out[f.What] = append(out[f.What], time.Duration(best-f.Start))
			}
		}
	}
	for k := range out {
		sort.Slice(out[k], func(i, j int) bool { return out[k][i] < out[k][j] })
	}
	return out
}

// Percentile is the nearest-rank p-quantile of sorted durations.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(float64(len(sorted)-1)*p+0.5)]
}

func kinds(faults []Fault) string {
	n := map[string]int{}
	for _, f := range faults {
		n[f.What]++
	}
	var parts []string
	for k, v := range n {
		parts = append(parts, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// DeliveryRecovery is, per fault kind, one figure per fault: the time from
// the fault's start until every key the fault disturbed is served again,
// that is until, for each key, an operation called after the last one that
// failed in the fault's window is answered. The window runs from the
// fault's start to the next fault's start (or the end of the final quiet
// interval); a failure counts if it was called and answered in it (one in
// flight when the next fault begins is the next one's). Operations cut by a SIGKILL of their own process are not
// failures of delivery. A fault that disturbed no key counts 0; one with a
// key not served again in the run is counted in the third map instead.
// The second map holds the same figures from the fault's end (the heal, the
// restart): what is left of the recovery once the fault is gone.
func DeliveryRecovery(run *Run) (fromStart, fromEnd map[string][]time.Duration, never map[string]int) {
	fromStart, fromEnd, never = map[string][]time.Duration{}, map[string][]time.Duration{}, map[string]int{}
	byKey := opsByKey(run)
	for n, f := range run.Faults {
		horizon := run.QuietEnd
		if n+1 < len(run.Faults) {
			horizon = run.Faults[n+1].Start
		}
		if horizon == 0 {
			horizon = f.End + (20 * time.Second).Nanoseconds()
		}
		lastFail := map[string]int64{}
		for _, o := range run.Ops {
			c := o.Call
			if c.T < f.Start || o.Ret == nil || o.Ret.OK || o.Ret.T > horizon {
				continue
			}
			key := c.Kind + "/" + c.Key
			if c.T > lastFail[key] {
				lastFail[key] = c.T
			}
		}
		var worst int64
		recovered := true
		for key, failedAt := range lastFail {
			var best int64
			for _, o := range byKey[key] {
				if !o.OK() || o.Call.T <= failedAt {
					continue
				}
				if best == 0 || o.Ret.T < best {
					best = o.Ret.T
				}
			}
			if best == 0 {
				recovered = false
				continue
			}
			if best-f.Start > worst {
				worst = best - f.Start
			}
		}
		if !recovered {
			never[f.What]++
			continue
		}
		fromStart[f.What] = append(fromStart[f.What], time.Duration(worst))
		after := worst - (f.End - f.Start)
		if after < 0 {
			after = 0
		}
		fromEnd[f.What] = append(fromEnd[f.What], time.Duration(after))
	}
	for _, m := range []map[string][]time.Duration{fromStart, fromEnd} {
		for k := range m {
			sort.Slice(m[k], func(i, j int) bool { return m[k][i] < m[k][j] })
		}
	}
	return fromStart, fromEnd, never
}

// opsByKey is the run's operations per "kind/key", in call order.
func opsByKey(run *Run) map[string][]*Op {
	out := map[string][]*Op{}
	for _, o := range run.Ops {
		k := o.Call.Kind + "/" + o.Call.Key
		out[k] = append(out[k], o)
	}
	return out
}
