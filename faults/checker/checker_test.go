package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// op builds a porcupine operation on key k, called at c and returned at
// r (seconds); val < 0 is an unknown outcome.
func op(k, o string, arg uint64, c, r int64, val int64) porcupine.Operation {
	out := Output{Val: uint64(val)}
	if val < 0 {
		out = Output{Unknown: true}
	}
	return porcupine.Operation{Input: Input{Key: k, Op: o, Arg: arg}, Call: c, Output: out, Return: r, Metadata: k}
}

func TestRegisterAcceptsALinearizableHistory(t *testing.T) {
	h := []porcupine.Operation{
		op("r0", "write", 5, 0, 10, 5),
		op("r0", "read", 0, 5, 15, 5), // concurrent with the write: sees it
		op("r0", "write", 7, 20, 30, 7),
		op("r0", "read", 0, 21, 22, 0),
	}
	// The read at 21..22 answers 0 after write 5 completed (and while 7
	// was being written): not linearizable.
	if porcupine.CheckOperations(RegisterModel, h) {
		t.Fatal("a read of 0 after write 5 completed was accepted")
	}
	h[3] = op("r0", "read", 0, 21, 22, 5)
	if !porcupine.CheckOperations(RegisterModel, h) {
		t.Fatal("a linearizable register history was rejected")
	}
}

// The checker's mutation test: a stale read (the value before the last
// completed write, as a deposed owner serving from memory would answer)
// must be rejected, on each model.
func TestStaleReadsAreRejected(t *testing.T) {
	reg := []porcupine.Operation{
		op("r1", "write", 1, 0, 1, 1),
		op("r1", "write", 2, 2, 3, 2),
		op("r1", "read", 0, 4, 5, 1), // stale
	}
	if porcupine.CheckOperations(RegisterModel, reg) {
		t.Fatal("register: a stale read was accepted")
	}
	led := []porcupine.Operation{
		op("l1", "deposit", 3, 0, 1, 3),
		op("l1", "deposit", 4, 2, 3, 7),
		op("l1", "read", 0, 4, 5, 3), // stale
	}
	if porcupine.CheckOperations(LedgerModel, led) {
		t.Fatal("ledger: a stale balance was accepted")
	}
	// A deposit applied twice (7 + 4 = 11 read where 7 is stored).
	twice := []porcupine.Operation{
		op("l2", "deposit", 3, 0, 1, 3),
		op("l2", "deposit", 4, 2, 3, 7),
		op("l2", "read", 0, 4, 5, 11),
	}
	if porcupine.CheckOperations(LedgerModel, twice) {
		t.Fatal("ledger: a doubled deposit was accepted")
	}
}

func TestUnknownOutcomesMayOrMayNotHappen(t *testing.T) {
	// An unknown deposit that did take effect, and one that never did.
	h := []porcupine.Operation{
		op("l0", "deposit", 3, 0, 100, -1),
		op("l0", "deposit", 5, 1, 100, -1),
		op("l0", "read", 0, 10, 11, 3),
		op("l0", "deposit", 1, 150, 151, 4),
		op("l0", "read", 0, 200, 201, 4),
	}
	if !porcupine.CheckOperations(LedgerModel, h) {
		t.Fatal("unknown deposits (one applied, one never) were rejected")
	}
	// But not after its bound: the 5 was not in at 151, after the unknown
	// deposit's return (100), and shows at 200.
	h[4] = op("l0", "read", 0, 200, 201, 9)
	if porcupine.CheckOperations(LedgerModel, h) {
		t.Fatal("an unknown deposit took effect after its bound and was accepted")
	}
	r := []porcupine.Operation{
		op("r0", "write", 9, 0, 100, -1),
		op("r0", "read", 0, 10, 11, 0),
		op("r0", "read", 0, 12, 13, 9),
	}
	if !porcupine.CheckOperations(RegisterModel, r) {
		t.Fatal("an unknown write seen late was rejected")
	}
	r = append(r, op("r0", "read", 0, 14, 15, 0))
	if porcupine.CheckOperations(RegisterModel, r) {
		t.Fatal("a register going back to 0 after 9 was accepted")
	}
}

func line(kind, key, o string, arg uint64, c int64, ok bool, val uint64, node string, act uint64, at int64, r int64) *Op {
	call := Line{K: "call", ID: node + key + o, Client: node, Kind: kind, Key: key, Op: o, Arg: arg, T: c}
	ret := &Line{K: "ret", ID: call.ID, OK: ok, Val: val, Node: node, Act: act, At: at, T: r}
	return &Op{Call: call, Ret: ret}
}

func TestDoubleActivationsAreFound(t *testing.T) {
	run := &Run{Ops: []*Op{
		line("ledger", "l0", "read", 0, 0, true, 0, "a", 1, 1, 2),
		line("ledger", "l0", "read", 0, 3, true, 0, "b", 2, 4, 5),
		line("ledger", "l0", "read", 0, 6, true, 0, "a", 1, 7, 8), // a again after b began
	}}
	if d := DoubleActivations(run); len(d) != 1 {
		t.Fatalf("want one overlap, found %v", d)
	}
	run.Ops = run.Ops[:2]
	if d := DoubleActivations(run); len(d) != 0 {
		t.Fatalf("a clean hand-over was reported: %v", d)
	}
}

func TestLostDepositsAreFound(t *testing.T) {
	run := &Run{QuietStart: 10, Ops: []*Op{
		line("ledger", "l0", "deposit", 5, 0, true, 5, "a", 1, 1, 2),
		line("ledger", "l0", "deposit", 4, 3, true, 9, "a", 1, 4, 5),
		line("ledger", "l0", "read", 0, 11, true, 5, "b", 2, 12, 13),
	}}
	final := FinalBalances(run)
	if len(final) != 1 || !final[0].Lost() || final[0].Confirmed != 9 {
		t.Fatalf("want l0 lost (9 confirmed, 5 read), got %+v", final)
	}
	// Read 18: more than the 9 every deposit could make.
	run.Ops[2] = line("ledger", "l0", "read", 0, 11, true, 18, "b", 2, 12, 13)
	if final = FinalBalances(run); len(final) != 1 || final[0].Lost() || !final[0].Over() {
		t.Fatalf("want l0 over (18 read, 9 made), got %+v", final)
	}
	// An unknown deposit of 9 may be in: 18 is then possible.
	run.Ops = append(run.Ops, &Op{Call: Line{K: "call", ID: "u", Kind: "ledger", Key: "l0", Op: "deposit", Arg: 9, T: 6}})
	if final = FinalBalances(run); final[0].Lost() || final[0].Over() {
		t.Fatalf("an unknown deposit applied was reported: %+v", final)
	}
}

// writeRun writes a run's directory as troupe-faults writes it: one
// history file per node, JSON lines, and the driver's nemesis log.
func writeRun(t *testing.T, files map[string][]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, lines := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The whole check on an injected run: n2's instance confirmed deposit
// 4 (balance 9) and a new instance on n1 answers 5 in the final quiet
// interval, the 4 lost. The verdict must count it (the linearizability
// check sees it too); the same run with the 4 kept passes.
func TestVerifyFailsARunThatLostAConfirmedDeposit(t *testing.T) {
	nemesis := []string{
		`{"k":"nemesis","what":"ready","target":"all","phase":"start","t":1}`,
		`{"k":"nemesis","what":"node-kill","target":"n2","phase":"start","t":3000}`,
		`{"k":"nemesis","what":"node-kill","target":"n2","phase":"end","t":4000}`,
		`{"k":"nemesis","what":"final-quiet","target":"all","phase":"start","t":10000}`,
		`{"k":"nemesis","what":"final-quiet","target":"all","phase":"end","t":20000}`,
	}
	n2 := []string{
		`{"k":"activated","kind":"ledger","key":"l0","node":"n2-1","act":7,"t":10}`,
		`{"k":"call","id":"n2-1.c0.1","client":"n2-1.c0","kind":"ledger","key":"l0","op":"deposit","arg":5,"t":100}`,
		`{"k":"ret","id":"n2-1.c0.1","ok":true,"val":5,"node":"n2-1","act":7,"at":110,"t":120}`,
		`{"k":"call","id":"n2-1.c0.2","client":"n2-1.c0","kind":"ledger","key":"l0","op":"deposit","arg":4,"t":200}`,
		`{"k":"ret","id":"n2-1.c0.2","ok":true,"val":9,"node":"n2-1","act":7,"at":210,"t":220}`,
	}
	final := func(val int) []string {
		return []string{
			`{"k":"activated","kind":"ledger","key":"l0","node":"n1-1","act":8,"t":5000}`,
			`{"k":"call","id":"n1-1.c0.9","client":"n1-1.c0","kind":"ledger","key":"l0","op":"read","arg":0,"t":11000}`,
			fmt.Sprintf(`{"k":"ret","id":"n1-1.c0.9","ok":true,"val":%d,"node":"n1-1","act":8,"at":11010,"t":11020}`, val),
		}
	}
	var out strings.Builder
	dir := writeRun(t, map[string][]string{"nemesis.jsonl": nemesis, "history-n2-1.jsonl": n2, "history-n1-1.jsonl": final(5)})
	anomalies, _, err := Verify(&out, dir, time.Minute, "register,ledger")
	if err != nil {
		t.Fatal(err)
	}
	if anomalies < 2 || !strings.Contains(out.String(), "lost confirmed deposits: 1 ledgers (1 of 1 ledgers read") {
		t.Fatalf("the lost deposit was not reported (%d anomalies):\n%s", anomalies, out.String())
	}
	out.Reset()
	dir = writeRun(t, map[string][]string{"nemesis.jsonl": nemesis, "history-n2-1.jsonl": n2, "history-n1-1.jsonl": final(9)})
	anomalies, undecided, err := Verify(&out, dir, time.Minute, "register,ledger")
	if err != nil || anomalies != 0 || undecided {
		t.Fatalf("a clean run failed (%d anomalies, undecided %v, %v):\n%s", anomalies, undecided, err, out.String())
	}
	if !strings.Contains(out.String(), "lost confirmed deposits: 0 ledgers (1 of 1 ledgers read") {
		t.Fatalf("the final read did not reach the check:\n%s", out.String())
	}
}

// No read in the final quiet interval: the lost-deposit check cannot
// decide, and says so.
func TestAFinalIntervalWithoutReadsIsUndecided(t *testing.T) {
	dir := writeRun(t, map[string][]string{
		"nemesis.jsonl": {
			`{"k":"nemesis","what":"final-quiet","target":"all","phase":"start","t":10000}`,
			`{"k":"nemesis","what":"final-quiet","target":"all","phase":"end","t":20000}`,
		},
		"history-n1-1.jsonl": {
			`{"k":"call","id":"a","client":"c","kind":"ledger","key":"l0","op":"deposit","arg":5,"t":100}`,
			`{"k":"ret","id":"a","ok":true,"val":5,"node":"n1-1","act":7,"at":110,"t":120}`,
		},
	})
	var out strings.Builder
	anomalies, undecided, err := Verify(&out, dir, time.Minute, "ledger")
	if err != nil || anomalies != 0 || !undecided {
		t.Fatalf("want undecided, got %d anomalies, undecided %v, %v:\n%s", anomalies, undecided, err, out.String())
	}
}

func TestDeliveryRecoveryIsPerFaultTheLastKeyServed(t *testing.T) {
	fail := func(key string, c, r int64) *Op {
		return &Op{Call: Line{Kind: "ledger", Key: key, Op: "read", T: c}, Ret: &Line{OK: false, T: r}}
	}
	run := &Run{
		Faults: []Fault{{What: "partition", Start: 100, End: 200}, {What: "partition", Start: 1000, End: 1100}},
		Ops: []*Op{
			fail("l0", 110, 120),
			fail("l0", 150, 160),
			line("ledger", "l0", "read", 0, 130, true, 0, "a", 1, 131, 140), // before the last failure: not yet
			line("ledger", "l0", "read", 0, 170, true, 0, "a", 1, 171, 180), // l0 served at 180
			fail("l1", 120, 130),
			line("ledger", "l1", "read", 0, 200, true, 0, "a", 1, 201, 400), // l1 at 400: the fault's figure, 300
			fail("l2", 1010, 1020), // never served again
		},
	}
	got, after, never := DeliveryRecovery(run)
	if len(got["partition"]) != 1 || got["partition"][0] != 300 || never["partition"] != 1 {
		t.Fatalf("want one partition recovered in 300 ns and one never, got %v, %v", got, never)
	}
	if after["partition"][0] != 200 {
		t.Fatalf("want 200 ns after the partition's end, got %v", after)
	}
}

func TestOperationsDropsUnseenUnknownWrites(t *testing.T) {
	run := &Run{Ops: []*Op{
		{Call: Line{Kind: "register", Key: "r0", Op: "write", Arg: 11, T: 0, Client: "c"}},
		{Call: Line{Kind: "register", Key: "r0", Op: "write", Arg: 12, T: 1, Client: "c"}},
		line("register", "r0", "read", 0, 2, true, 12, "a", 1, 3, 4),
	}}
	ops := Operations(run, "register")
	if len(ops) != 2 {
		t.Fatalf("want the seen unknown write and the read, got %d operations", len(ops))
	}
	if ops[0].Return != ops[0].Call+UnknownBound.Nanoseconds() {
		t.Fatal("an unknown write's return is not its call plus the bound")
	}
}

// The producer's exact counts on injected runs: a clean one passes; one
// whose final tally read lacks a confirmed message, and one where a
// message was handled twice, fail; with no final read it is undecided.
func TestProducerCountsAreExact(t *testing.T) {
	nemesis := []string{
		`{"k":"nemesis","what":"final-quiet","target":"all","phase":"start","t":10000}`,
		`{"k":"nemesis","what":"final-quiet","target":"all","phase":"end","t":20000}`,
	}
	run := func(final string, earlier string) string {
		return writeRun(t, map[string][]string{
			"nemesis.jsonl": nemesis,
			"history-n1-1.jsonl": {
				`{"k":"confirmed","producer":"n1-1","upto":10,"keys":1,"t":500}`,
				`{"k":"confirmed","producer":"n1-1","upto":20,"keys":1,"t":9000}`,
				`{"k":"confirmed","producer":"n1-1","upto":30,"keys":1,"t":12000}`,
				earlier,
				final,
			},
		})
	}
	read := func(call int64, count, last, ooo int) string {
		return fmt.Sprintf(`{"k":"tally","key":"t0","call":%d,"ok":true,"seen":[{"producer":"n1-1","count":%d,"last":%d,"out_of_order":%d}],"t":%d}`,
			call, count, last, ooo, call+10)
	}
	verify := func(dir string) (int, bool, string) {
		var out strings.Builder
		a, u, err := Verify(&out, dir, time.Minute, "")
		if err != nil {
			t.Fatal(err)
		}
		return a, u, out.String()
	}
	// Clean: the final read (called at 11000) holds the 20 confirmed
	// before it and more; the 30 confirmed after it do not count.
	// (Undecided all the same: the run has no ledger reads.)
	if a, u, out := verify(run(read(11000, 25, 25, 0), read(600, 12, 12, 0))); a != 0 || strings.Contains(out, "tallies were not read") ||
		!strings.Contains(out, "lost confirmed 0, handled twice or out of order 0 (2 tally reads; 1 of 1 tallies") {
		t.Fatalf("a clean run: %d anomalies, undecided %v:\n%s", a, u, out)
	}
	// Lost: 19 < 20 confirmed before the read.
	if a, _, out := verify(run(read(11000, 19, 19, 0), read(600, 12, 12, 0))); a != 1 ||
		!strings.Contains(out, "lost confirmed: tally/producer t0 n1-1") {
		t.Fatalf("a lost confirmed message was not found (%d anomalies):\n%s", a, out)
	}
	// Twice: an earlier read counted 13 messages with last 12.
	if a, _, out := verify(run(read(11000, 25, 25, 0), read(600, 13, 12, 1))); a != 1 ||
		!strings.Contains(out, "handled twice or out of order: tally/producer t0 n1-1") {
		t.Fatalf("a message handled twice was not found (%d anomalies):\n%s", a, out)
	}
	// No final read: undecided.
	if _, u, out := verify(run(read(600, 12, 12, 0), read(700, 12, 12, 0))); !u || !strings.Contains(out, "1 tallies were not read") {
		t.Fatalf("no final tally read must be undecided:\n%s", out)
	}
}
