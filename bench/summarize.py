#!/usr/bin/env python3
"""Turns a `troupe-bench --peers --json FILE` run into the markdown table of
bench/results/README.md: per workload and figure, each framework's median time per
operation, the best peer, Troupe's ratio to it, and how many samples ran beside other
load (disturbed: other processes used more than 10% of the sample's wall time in CPU).

Rows a peer labels (`variant`, `placement`) are that peer's second form of the workload;
they are listed as rows of their own and take part in "best peer" like any other row.

usage: bench/summarize.py RUN.jsonl > summary.md
"""
import json
import sys

PEERS = ["actix", "xtra", "ractor", "kameo", "caf", "erlang"]
LABELS = ("variant", "placement")


def fmt_ns(ns):
    if ns >= 1e9:
        return f"{ns / 1e9:.2f} s"
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.2f} µs"
    return f"{ns:.1f} ns"


def key(fig):
    """What makes two figures the same measurement: workload and parameters, labels aside."""
    params = {k: v for k, v in fig["params"].items() if k not in LABELS}
    return fig["workload"], json.dumps(params, sort_keys=True)


def label(fig):
    return ", ".join(f"{k} {fig['params'][k]}" for k in LABELS if k in fig["params"])


def disturbed(fig):
    d = fig.get("samples_disturbed", 0)
    total = fig.get("samples_total", fig.get("samples", "?"))
    return f"{d}/{total}" + (" (all)" if fig.get("all_samples_disturbed") else "")


def main(path):
    figs = [json.loads(line) for line in open(path) if line.strip()]
    troupe = {}
    rows = {}  # key -> {framework or "framework (label)": fig}
    order = []
    for f in figs:
        k = key(f)
        if f["framework"] == "troupe":
            troupe.setdefault(k, f)
            continue
        if f["framework"] not in PEERS:
            continue
        if k not in rows:
            rows[k] = {}
            order.append(k)
        name = f["framework"] + (f" ({label(f)})" if label(f) else "")
        rows[k][name] = f
    print("| workload | figure | troupe | " + " | ".join(PEERS)
          + " | best peer | troupe vs best peer | disturbed samples (troupe; peers) |")
    print("|---" * (len(PEERS) + 6) + "|")
    for k in order:
        workload, params = k
        t = troupe.get(k)
        peers = rows[k]
        cells = []
        for p in PEERS:
            forms = [(n, f) for n, f in peers.items() if n.split(" ")[0] == p]
            cells.append("<br>".join(
                fmt_ns(f["ns_per_op_median"]) + (f" ({n[len(p) + 2:-1]})" if n != p else "")
                for n, f in forms) or "-")
        best_name, best = min(peers.items(), key=lambda kv: kv[1]["ns_per_op_median"])
        if t:
            r = best["ns_per_op_median"] / t["ns_per_op_median"]
            ratio = f"{r:.2f}x faster" if r >= 1 else f"{1 / r:.2f}x slower"
        else:
            ratio = "n/a"
        dist = (disturbed(t) if t else "-") + "; " + ", ".join(
            f"{n} {disturbed(f)}" for n, f in peers.items())
        fig_name = ", ".join(f"{a}={b}" for a, b in json.loads(params).items())
        print(f"| {workload} | {fig_name} | {fmt_ns(t['ns_per_op_median']) if t else '-'} | "
              + " | ".join(cells)
              + f" | {best_name} {fmt_ns(best['ns_per_op_median'])} | {ratio} | {dist} |")
    # Memory of actor_creation: the same metric on every side.
    mem = [f for f in figs if f["workload"] == "actor_creation" and "pow" in f["params"]
           and "bytes_per_actor" in f]
    if mem:
        print()
        print("actor_creation memory, RSS growth from a settled baseline per actor "
              "(Troupe's heap-in-use figure in parentheses, an extra):")
        print()
        print("| framework | bytes per actor |")
        print("|---|---|")
        for f in mem:
            extra = f" ({f['heap_bytes_per_actor']:.0f} heap)" if "heap_bytes_per_actor" in f else ""
            print(f"| {f['framework']} | {f['bytes_per_actor']:.0f}{extra} |")


if __name__ == "__main__":
    main(sys.argv[1])
