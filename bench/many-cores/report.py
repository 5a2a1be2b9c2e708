#!/usr/bin/env python3
"""The report of bench/many-cores/run.sh, from what it wrote under OUT.

Reads OUT/troupe-<workload>-<threads>.jsonl and .txt (Troupe at each thread
count; the .txt holds the `contention <name> <per-message> <total>` lines
of a build with the contention feature), OUT/perf-mailbox_performance-<t>.txt
(perf stat's CSV: futex and sched_yield calls), OUT/peers-<top>.jsonl
(Troupe beside the peers at the top count) and OUT/machine.txt. Writes the
markdown report to stdout and OUT/scaling.svg: each figure's speed-up over
one thread (median time per operation at 1 thread / at N threads), with
the published 16-core figures of issue 39 beside this machine's.
Standard library only.

usage: bench/many-cores/report.py OUT > OUT/report.md
"""
import glob
import json
import math
import os
import re
import sys

# Issue 39, commit 7bab896 on a 16-core Xeon: mailbox_performance --senders
# 32 --messages 200000, msgs/s at 1/2/4/8/16 worker threads; stress (10^8
# tells from 16 threads) wall seconds.
PUBLISHED = {
    "troupe": {1: 32.6e6, 2: 22.4e6, 4: 15.0e6, 8: 10.2e6, 16: 3.8e6},
    "actix": {1: 6.2e6, 2: 3.9e6, 4: 3.4e6, 8: 4.0e6, 16: 4.4e6},
}
PUBLISHED_STRESS_S = {16: 32.7}
WORKLOADS = ("mailbox_performance", "stress", "ring")


def load(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                rows.append(json.loads(line))
    return rows


def fmt_ns(ns):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.2f} {unit}"
    return f"{ns:.1f} ns"


def fmt_rate(r):
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if r >= scale:
            return f"{r / scale:.2f} {unit}"
    return f"{r:.0f}"


def contention(path):
    """`contention <name> <per-message> <total>` lines: name -> (per, total)."""
    out = {}
    if not os.path.exists(path):
        return out
    for line in open(path, errors="replace"):
        parts = line.split()
        if len(parts) == 4 and parts[0] == "contention":
            try:
                out[parts[1]] = (float(parts[2]), int(float(parts[3])))
            except ValueError:
                continue
    return out


def perf_counts(path):
    """perf stat -x, output: event -> count."""
    out = {}
    if not os.path.exists(path):
        return out
    for line in open(path):
        f = line.strip().split(",")
        if len(f) >= 3 and f[0].replace(".", "").isdigit():
            out[f[2].split(":")[-1]] = int(float(f[0]))
    return out


def main(out):
    machine = open(os.path.join(out, "machine.txt")).read() if os.path.exists(
        os.path.join(out, "machine.txt")) else ""
    print("# The many-core check\n")
    print("```\n" + machine.strip() + "\n```\n")

    # Troupe at each thread count: figure name -> threads -> row.
    figs, threads = {}, set()
    for path in glob.glob(os.path.join(out, "troupe-*-*.jsonl")):
        m = re.search(r"troupe-(\w+)-(\d+)\.jsonl$", path)
        w, t = m.group(1), int(m.group(2))
        threads.add(t)
        for r in load(path):
            if r["framework"] != "troupe":
                continue
            figs.setdefault((w, r["name"]), {})[t] = r
    threads = sorted(threads)
    top = max(threads) if threads else 0
    print("## Troupe from 1 to", top, "threads\n")
    print("Median time per operation, the rate, and the speed-up over 1 thread"
          " (below 1: slower with more threads).\n")
    print("| figure | " + " | ".join(f"{t} threads" for t in threads) + " |")
    print("|---|" + "---|" * len(threads))
    speedups = {}
    for (w, name), by_t in sorted(figs.items()):
        cells, base = [], by_t.get(min(by_t))["ns_per_op_median"] if by_t else None
        for t in threads:
            r = by_t.get(t)
            if r is None:
                cells.append("–")
                continue
            ns = r["ns_per_op_median"]
            s = base / ns if ns > 0 else 0.0
            speedups.setdefault(name, []).append((t, s))
            cells.append(f"{fmt_ns(ns)}, {fmt_rate(r['rate'])} {r['unit']} ({s:.2f}x)")
        print(f"| {name} | " + " | ".join(cells) + " |")

    # The published 16-core figures beside this machine's.
    mb = {t: r for (w, _), by_t in figs.items() if w == "mailbox_performance"
          for t, r in by_t.items()}
    print("\n## Beside the published 16-core figures (issue 39, 7bab896)\n")
    print("mailbox_performance, msgs/s (the published run: `--senders 32 --messages 200000`;"
          " compare at the same parameters):\n")
    ts = sorted(set(threads) | set(PUBLISHED["troupe"]))
    print("| | " + " | ".join(f"{t}" for t in ts) + " |")
    print("|---|" + "---|" * len(ts))
    print("| this machine, Troupe | " + " | ".join(
        fmt_rate(mb[t]["rate"]) if t in mb else "–" for t in ts) + " |")
    for fw, by_t in PUBLISHED.items():
        print(f"| 16-core Xeon, {fw} (7bab896) | " + " | ".join(
            fmt_rate(by_t[t]) if t in by_t else "–" for t in ts) + " |")
    if 1 in mb and threads:
        ratio = {t: mb[t]["rate"] / mb[1]["rate"] for t in mb}
        print("\nThis machine, rate at N threads over 1 thread: " + ", ".join(
            f"{t}: {ratio[t]:.2f}" for t in sorted(ratio)) + " (published Troupe at 16: 0.12; target at 2"
            " pinned: >= 0.90).")
    st = {t: r for (w, _), by_t in figs.items() if w == "stress" for t, r in by_t.items()}
    if st:
        print("\nstress, wall seconds of the run: " + ", ".join(
            f"{t} threads {st[t]['seconds']:.2f} s" for t in sorted(st))
            + f" (published, 10^8 tells at 16 workers: {PUBLISHED_STRESS_S[16]} s).")

    # Contention counts.
    counts = {}
    for path in glob.glob(os.path.join(out, "troupe-*-*.txt")):
        m = re.search(r"troupe-(\w+)-(\d+)\.txt$", path)
        c = contention(path)
        if c:
            counts[(m.group(1), int(m.group(2)))] = c
    print("\n## Contention counts (per message; a build with the `contention` feature)\n")
    if not counts:
        print("None: troupe-bench was built without its `contention` feature, or"
              " printed no `contention` lines.")
    else:
        names = sorted({n for c in counts.values() for n in c})
        cols = sorted(counts)
        print("| count | " + " | ".join(f"{w} at {t}" for w, t in cols) + " |")
        print("|---|" + "---|" * len(cols))
        for n in names:
            print(f"| {n} | " + " | ".join(
                f"{counts[k][n][0]:.4g}" if n in counts[k] else "–" for k in cols) + " |")

    # Syscalls from outside.
    print("\n## Syscalls of mailbox_performance (perf stat, whole process)\n")
    msgs_path = os.path.join(out, "mailbox-messages.txt")
    msgs = int(open(msgs_path).read().strip()) if os.path.exists(msgs_path) else 0
    rows = []
    for t in threads:
        p = perf_counts(os.path.join(out, f"perf-mailbox_performance-{t}.txt"))
        if p:
            rows.append((t, p))
    if not rows:
        print("None: perf cannot count syscall tracepoints here.")
    else:
        print(f"Per Troupe message: the counts over {msgs:,} messages (every warm-up and sample;"
              " the process also runs the SegQueue baseline, so these are upper bounds).\n")
        print("| threads | futex | per message | sched_yield | per message | context switches |")
        print("|---|---|---|---|---|---|")
        for t, p in rows:
            fx, sy, cs = p.get("sys_enter_futex", 0), p.get("sys_enter_sched_yield", 0), p.get("context-switches", 0)
            per = lambda n: f"{n / msgs:.2e}" if msgs else "–"
            print(f"| {t} | {fx:,} | {per(fx)} | {sy:,} | {per(sy)} | {cs:,} |")

    # The peers at the top count.
    for path in sorted(glob.glob(os.path.join(out, "peers-*.jsonl"))):
        t = re.search(r"peers-(\d+)\.jsonl", path).group(1)
        groups = {}
        for r in load(path):
            if r["framework"] == "baseline":
                continue
            groups.setdefault((r["workload"], json.dumps(r["params"], sort_keys=True)), {})[r["framework"]] = r
        fws = sorted({f for g in groups.values() for f in g if f != "troupe"})
        print(f"\n## Beside the peers at {t} threads (median time per operation)\n")
        if not fws:
            print("No peer program was installed (build them with"
                  " `cargo build --release -p peer-actix -p peer-ractor`).")
            continue
        print("| workload | troupe | " + " | ".join(fws) + " | troupe vs best peer |")
        print("|---|---|" + "---|" * len(fws) + "---|")
        for (w, _), fw in sorted(groups.items()):
            if "troupe" not in fw:
                continue
            tr = fw["troupe"]["ns_per_op_median"]
            peer_ns = [fw[p]["ns_per_op_median"] for p in fws if p in fw]
            best = f"{min(peer_ns) / tr:.2f}x faster" if peer_ns and tr > 0 else "–"
            cells = [fmt_ns(fw[p]["ns_per_op_median"]) if p in fw else "–" for p in fws]
            print(f"| {w} | {fmt_ns(tr)} | " + " | ".join(cells) + f" | {best} |")

    if threads:
        svg(os.path.join(out, "scaling.svg"), speedups, threads)
        print("\nPlot: `scaling.svg` (speed-up over 1 thread, log-log; dashed: linear).")


def svg(path, speedups, threads):
    """A log-log line chart of speed-up against threads, one line a figure."""
    w, h, m = 900, 560, 60
    tmax = max(threads + [2])
    top = max([s for pts in speedups.values() for _, s in pts] + [tmax])
    xmax, ymax = math.log2(tmax) or 1, math.log2(max(top, 2))
    x = lambda t: m + (w - 2 * m - 260) * math.log2(t) / xmax
    y = lambda s: h - m - (h - 2 * m) * (math.log2(max(s, 0.125)) + 3) / (ymax + 3)
    colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
              "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#000000", "#aec7e8"]
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">',
             f'<rect width="{w}" height="{h}" fill="white"/>',
             f'<text x="{m}" y="24" font-size="14">Troupe: speed-up over 1 thread (log-log)</text>']
    for t in threads:
        parts.append(f'<line x1="{x(t)}" y1="{m}" x2="{x(t)}" y2="{h - m}" stroke="#ddd"/>')
        parts.append(f'<text x="{x(t) - 6}" y="{h - m + 16}">{t}</text>')
    s = 0.125
    while s <= 2 ** ymax:
        parts.append(f'<line x1="{m}" y1="{y(s)}" x2="{x(tmax)}" y2="{y(s)}" stroke="#eee"/>')
        parts.append(f'<text x="{m - 40}" y="{y(s) + 4}">{s:g}x</text>')
        s *= 2
    ideal = " ".join(f"{x(t)},{y(t)}" for t in threads)
    parts.append(f'<polyline points="{ideal}" fill="none" stroke="#999" stroke-dasharray="4 4"/>')
    for i, (name, pts) in enumerate(sorted(speedups.items())):
        c = colors[i % len(colors)]
        line = " ".join(f"{x(t)},{y(s)}" for t, s in pts)
        parts.append(f'<polyline points="{line}" fill="none" stroke="{c}" stroke-width="2"/>')
        label = name if len(name) < 42 else name[:40] + "…"
        parts.append(f'<text x="{w - 300}" y="{m + 14 * i}" fill="{c}">{label}</text>')
    parts.append(f'<text x="{w / 2 - 60}" y="{h - 20}">worker threads</text></svg>')
    with open(path, "w") as f:
        f.write("\n".join(parts))


if __name__ == "__main__":
    main(sys.argv[1])
