package main

// Usage: faults-checker -dir <run directory> [-timeout 5m]
//
// Prints the figures of the run and exits 1 on an anomaly: a history that
// is not linearizable, a lost confirmed deposit, a double activation; 2
// when the check could not decide (porcupine timed out) or could not read
// the run.

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

func main() {
	dir := flag.String("dir", "", "the run's directory")
	timeout := flag.Duration("timeout", 5*time.Minute, "porcupine's bound per model")
	flag.DurationVar(&UnknownBound, "unknown-bound", UnknownBound, "how long after its call an unknown operation may take effect")
	only := flag.String("models", "register,ledger", "which models to check")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "say -dir")
		os.Exit(2)
	}
	anomalies, undecided, err := Verify(os.Stdout, *dir, *timeout, *only)
	if err != nil {
		fmt.Fprintln(os.Stderr, "reading the run:", err)
		os.Exit(2)
	}
	switch {
	case anomalies > 0:
		os.Exit(1)
	case undecided:
		fmt.Println("undecided: see above")
		os.Exit(2)
	}
}

// Verify checks the run in dir and prints its figures to w: how many
// anomalies it found, and whether some check could not decide (porcupine
// timed out, or no ledger was read at the end).
func Verify(w io.Writer, dir string, timeout time.Duration, only string) (anomalies int, undecided bool, err error) {
	run, err := ReadRun(dir)
	if err != nil {
		return 0, false, err
	}
	ok, failed, pending := 0, 0, 0
	for _, o := range run.Ops {
		switch {
		case o.OK():
			ok++
		case o.Ret == nil:
			pending++
		default:
			failed++
		}
	}
	fmt.Fprintf(w, "operations: %d (%d answered, %d failed or timed out, %d with no return: process killed); %d partial lines\n",
		len(run.Ops), ok, failed, pending, run.Partial)
	fmt.Fprintf(w, "nemesis events: %d (%s)\n", len(run.Faults), kinds(run.Faults))
	for _, m := range []struct {
		kind  string
		model porcupine.Model
	}{{"register", RegisterModel}, {"ledger", LedgerModel}} {
		if !strings.Contains(only, m.kind) {
			continue
		}
		ops := Operations(run, m.kind)
		start := time.Now()
		v := Check(m.kind, m.model, ops, timeout)
		fmt.Fprintf(w, "linearizable %s: %v (%d operations, %d of unknown outcome; porcupine %.1f s)\n",
			m.kind, v.Result, v.Ops, v.Unknown, time.Since(start).Seconds())
		switch v.Result {
		case porcupine.Illegal:
			anomalies++
			for _, l := range v.Excerpt {
				fmt.Fprintln(w, l)
			}
			path := filepath.Join(dir, "anomaly-"+m.kind+".html")
			if err := porcupine.VisualizePath(m.model, v.Info, path); err == nil {
				fmt.Fprintln(w, "  visualization:", path)
			}
		case porcupine.Unknown:
			undecided = true
		}
	}
	final := FinalBalances(run)
	lost, over := 0, 0
	for _, b := range final {
		if b.Lost() {
			lost++
		}
		if b.Over() {
			over++
		}
	}
	fmt.Fprintf(w, "lost confirmed deposits: %d ledgers (%d of %d ledgers read in the final quiet interval)\n",
		lost, len(final), run.Ledgers())
	fmt.Fprintf(w, "deposits applied more than once or never made: %d ledgers\n", over)
	for _, b := range final {
		if b.Lost() || b.Over() {
			anomalies++
			fmt.Fprintf(w, "  %s: final balance %d (read by %s, called %.3f s); %d confirmed (%d deposits) + at most %d of unknown outcome (%d)\n",
				b.Key, b.Final, b.ReadID, float64(b.ReadAt)/1e9, b.Confirmed, b.ConfirmedDeposits, b.Unknown, b.UnknownDeposits)
		}
	}
	if len(final) < run.Ledgers() || len(final) == 0 {
		fmt.Fprintf(w, "  %d ledgers were not read in the final quiet interval\n", run.Ledgers()-len(final))
		undecided = true
	}
	double := DoubleActivations(run)
	fmt.Fprintf(w, "double activations: %d\n", len(double))
	for _, d := range double {
		anomalies++
		created := "created at ?"
		if d.BCreated != 0 {
			created = fmt.Sprintf("created at %.3f s", float64(d.BCreated)/1e9)
		}
		fmt.Fprintf(w, "  %s: %s (%d handled, %.3f..%.3f s) and %s (%s, %d handled from %.3f s) both handled for %.0f ms\n",
			d.Entity, d.A, d.Handled[0], float64(d.AFirst)/1e9, float64(d.ALast)/1e9,
			d.B, created, d.Handled[1], float64(d.BFirst)/1e9, float64(d.OverlapNanos)/1e6)
	}
	// The store's fencing: a write refused because another writer (a
	// second activation) wrote first. Not an anomaly by itself (the store
	// kept one writer), but each one is two instances at once.
	fenced := map[string]int{}
	for _, o := range run.Ops {
		if o.Ret != nil && !o.Ret.OK && strings.Contains(o.Ret.Err, "another writer") {
			fenced[o.Call.Kind]++
		}
	}
	fmt.Fprintf(w, "writes fenced by the store (another writer first): register %d, ledger %d\n", fenced["register"], fenced["ledger"])
	pc := Producers(run)
	fmt.Fprintf(w, "producer (at-least-once, exact counts): %d messages confirmed by %d producers to %d tallies; lost confirmed %d, handled twice or out of order %d (%d tally reads; %d of %d tallies read in the final quiet interval)\n",
		pc.Confirmed, pc.Producers, pc.Tallies, len(pc.Lost), len(pc.Disordered), pc.Reads, pc.FinalRead, pc.Tallies)
	for _, l := range pc.Lost {
		anomalies++
		fmt.Fprintf(w, "  lost confirmed: tally/producer %s\n", l)
	}
	for _, d := range pc.Disordered {
		anomalies++
		fmt.Fprintf(w, "  handled twice or out of order: tally/producer %s\n", d)
	}
	if pc.Tallies > 0 && pc.FinalRead < pc.Tallies {
		fmt.Fprintf(w, "  %d tallies were not read in the final quiet interval\n", pc.Tallies-pc.FinalRead)
		undecided = true
	}
	rec := Recovery(run)
	for _, kind := range []string{"node-kill", "node-stop", "server-kill", "partition", "latency", "bandwidth", "reset"} {
		t := rec[kind]
		if len(t) == 0 {
			continue
		}
		fmt.Fprintf(w, "recovery after %s, per disturbed key: p50 %v, p99 %v, max %v (%d disturbed keys over the faults)\n",
			kind, Percentile(t, 0.5).Round(time.Millisecond), Percentile(t, 0.99).Round(time.Millisecond),
			t[len(t)-1].Round(time.Millisecond), len(t))
	}
	// Issue 38's figure: after a SIGKILL, a server kill and a 10 s
	// partition, the time until every disturbed key is served again.
	del, after, never := DeliveryRecovery(run)
	for _, kind := range []string{"node-kill", "server-kill", "partition"} {
		t, e := del[kind], after[kind]
		if len(t) == 0 && never[kind] == 0 {
			continue
		}
		if len(t) == 0 {
			fmt.Fprintf(w, "recovery of delivery after %s, per fault: never (%d faults with a key not served again)\n", kind, never[kind])
			continue
		}
		fmt.Fprintf(w, "recovery of delivery after %s, per fault, from its start: p50 %v, p99 %v, max %v; from its end: p50 %v, p99 %v (%d faults; %d with a key not served again)\n",
			kind, Percentile(t, 0.5).Round(time.Millisecond), Percentile(t, 0.99).Round(time.Millisecond),
			t[len(t)-1].Round(time.Millisecond), Percentile(e, 0.5).Round(time.Millisecond),
			Percentile(e, 0.99).Round(time.Millisecond), len(t), never[kind])
	}
	fmt.Fprintf(w, "anomalies: %d\n", anomalies)
	return anomalies, undecided, nil
}
