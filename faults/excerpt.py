#!/usr/bin/env python3
"""Cuts a window of one key's operations out of a run's histories, as
JSON lines the checker reads (call and ret lines, sorted by time), for a
bug report or a results folder.

Usage: faults/excerpt.py RUN_DIR KEY FROM_S TO_S > excerpt.jsonl
(times in seconds on the run's clock, as the checker prints them)."""
import glob
import json
import sys

run, key, lo, hi = sys.argv[1], sys.argv[2], float(sys.argv[3]) * 1e9, float(sys.argv[4]) * 1e9
calls, rets = {}, {}
for path in glob.glob(f"{run}/history-*.jsonl"):
    for line in open(path):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("k") == "call" and r["key"] == key and lo <= r["t"] <= hi:
            calls[r["id"]] = r
        elif r.get("k") == "ret":
            rets[r["id"]] = r
        elif r.get("k") == "activated" and r["key"] == key and lo <= r["t"] <= hi:
            calls["activated " + str(r["act"])] = r
out = list(calls.values()) + [rets[i] for i in calls if i in rets]
for r in sorted(out, key=lambda r: r["t"]):
    print(json.dumps(r, separators=(",", ":")))
