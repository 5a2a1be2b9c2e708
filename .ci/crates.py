#!/usr/bin/env python3
"""Checks the workspace's crate floors: every dependency between the
workspace's own crates points down (docs/architecture.md, "Crates").

Floors, lowest first:
  0 troupe-test-nats, troupe-macros, troupe-bench-contract  (leaves: no workspace crate below)
  1 troupe                                                  (the runtime)
  2 troupe-remote                                           (remote actors over NATS)
  3 troupe-cluster, troupe-persistence                      (membership, registry, monitors; persistent actors)
  4 troupe-sharding                                         (sharded entities over the cluster)
  5 troupe-top, troupe-bench, troupe-guide, troupe-admin, troupe-faults,
    peers/rust/*                                            (tools, the suite, the guide, the management API, the fault suite, the peers)
A crate may depend (normal, dev or build) only on crates of a lower floor;
tools never depend on each other. A workspace crate missing from this table
fails the check, so a new crate must be given its floor here.

Usage: python3 .ci/crates.py
"""
import glob
import re
import sys

FLOOR = {
    "troupe-test-nats": 0,
    "troupe-macros": 0,
    "troupe-bench-contract": 0,
    "troupe": 1,
    "troupe-remote": 2,
    "troupe-cluster": 3,
    "troupe-persistence": 3,
    "troupe-sharding": 4,
    "troupe-top": 5,
    "troupe-bench": 5,
    "troupe-guide": 5,
    "troupe-admin": 5,
    "troupe-faults": 5,
}
PEER_FLOOR = 5


def crate_name(manifest):
    m = re.search(r'^\[package\][^\[]*?^name\s*=\s*"([^"]+)"', manifest, re.M | re.S)
    return m.group(1) if m else None


def deps(manifest):
    """Names of path dependencies (any dependency table)."""
    out = set()
    for m in re.finditer(r'^([A-Za-z0-9_-]+)\s*=\s*\{[^}]*\bpath\s*=', manifest, re.M):
        out.add(m.group(1))
    # `[dependencies.foo]` tables with a path.
    for m in re.finditer(r'^\[(?:dev-|build-)?dependencies\.([A-Za-z0-9_-]+)\][^\[]*?\bpath\s*=', manifest, re.M | re.S):
        out.add(m.group(1))
    return out


errors = []
checked = 0
for path in sorted(glob.glob("crates/*/Cargo.toml") + glob.glob("peers/rust/*/Cargo.toml")):
    text = open(path).read()
    name = crate_name(text)
    if name is None:
        continue
    floor = FLOOR.get(name, PEER_FLOOR if path.startswith("peers/") else None)
    if floor is None:
        errors.append(f"{name} ({path}) has no floor in .ci/crates.py")
        continue
    checked += 1
    for d in sorted(deps(text)):
        fd = FLOOR.get(d)
        if fd is None:
            errors.append(f"{name} depends on {d}, which has no floor")
        elif fd >= floor:
            errors.append(f"{name} (floor {floor}) depends on {d} (floor {fd}): must point down")

print(f"crates: {checked} manifests checked")
for e in errors:
    print("crate floor violation:", e)
sys.exit(1 if errors else 0)
