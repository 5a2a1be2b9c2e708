#!/usr/bin/env python3
"""The scaling table and plot of bench/sixteen/run.sh, from its JSON lines.

Reads OUT/scaling-<threads>.jsonl (Troupe at each thread count) and
OUT/peers-<threads>.jsonl (Troupe beside actix and ractor), writes the
markdown table to stdout and OUT/scaling.svg: each workload's speed-up over
one thread (median time per operation at 1 thread / at N threads).
Standard library only: the device machine has no package registry.

usage: bench/sixteen/scaling.py OUT > OUT/scaling.md
"""
import glob
import json
import os
import re
import sys


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


def main(out):
    by_threads = {}
    for path in glob.glob(os.path.join(out, "scaling-*.jsonl")):
        t = int(re.search(r"scaling-(\d+)\.jsonl", path).group(1))
        # reader_db names its thread count: one row per workload all the same.
        by_threads[t] = {re.sub(r", \d+ threads?$", "", r["name"]): r
                         for r in load(path) if r["framework"] == "troupe"}
    threads = sorted(by_threads)
    names = sorted({n for rows in by_threads.values() for n in rows})
    print("## Troupe at 1 to 16 threads (median time per operation; speed-up over 1 thread)\n")
    print("| figure | " + " | ".join(f"{t} threads" for t in threads) + " | 16 vs 2 |")
    print("|---|" + "---|" * (len(threads) + 1))
    speedups = {}
    for n in names:
        cells, base = [], None
        for t in threads:
            r = by_threads[t].get(n)
            if r is None:
                cells.append("–")
                continue
            ns = r["ns_per_op_median"]
            base = base or ns
            speedups.setdefault(n, []).append((t, base / ns))
            cells.append(f"{fmt_ns(ns)} ({base / ns:.2f}x)")
        two, top = by_threads.get(2, {}).get(n), by_threads.get(max(threads), {}).get(n)
        ratio = f"{two['ns_per_op_median'] / top['ns_per_op_median']:.2f}x" if two and top else "–"
        print(f"| {n} | " + " | ".join(cells) + f" | {ratio} |")

    for path in sorted(glob.glob(os.path.join(out, "peers-*.jsonl"))):
        t = re.search(r"peers-(\d+)\.jsonl", path).group(1)
        rows = load(path)
        print(f"\n## Beside the peers at {t} threads (median time per operation)\n")
        print("| figure | troupe | actix | ractor | troupe vs best |")
        print("|---|---|---|---|---|")
        groups = {}
        for r in rows:
            groups.setdefault(r["workload"], {})[r["framework"]] = r
        for w, fw in sorted(groups.items()):
            if "troupe" not in fw:
                continue
            tr = fw["troupe"]["ns_per_op_median"]
            peers = [fw[p]["ns_per_op_median"] for p in ("actix", "ractor") if p in fw]
            best = f"{min(peers) / tr:.2f}x" if peers else "–"
            cell = lambda p: fmt_ns(fw[p]["ns_per_op_median"]) if p in fw else "–"
            print(f"| {w} | {fmt_ns(tr)} | {cell('actix')} | {cell('ractor')} | {best} |")

    svg(os.path.join(out, "scaling.svg"), speedups, threads)
    print(f"\nPlot: `scaling.svg` (speed-up over 1 thread, log-log).")


def svg(path, speedups, threads):
    """A log-log line chart of speed-up against threads, one line a figure."""
    import math

    w, h, m = 900, 560, 60
    top = max([s for pts in speedups.values() for _, s in pts] + [max(threads or [1])])
    xmax, ymax = math.log2(max(threads or [2])) or 1, math.log2(max(top, 2))
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
        parts.append(f'<line x1="{m}" y1="{y(s)}" x2="{x(max(threads or [2]))}" y2="{y(s)}" stroke="#eee"/>')
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
