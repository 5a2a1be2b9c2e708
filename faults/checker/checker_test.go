package main

import (
	"testing"

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
	lost, read := LostDeposits(run)
	if read != 1 || len(lost) != 1 || lost[0].Confirmed != 9 {
		t.Fatalf("want l0 lost (9 confirmed, 5 read), got %v (%d read)", lost, read)
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
