#!/usr/bin/env python3
"""Self-test of .ci/layers.py: plants each kind of import the check must
see in a temporary crate and asserts what it reports, then plants a cycle
in a copy of troupe-bench's sources and asserts that the check fails.

A check that misses a kind of import passes a crate that is one circle
(issue 39: troupe-bench's workloads, cluster and peers files imported each
other through `cluster::...` paths while the check reported a largest
cycle of 1 file). Each case below is one kind; a mutation of the check
that drops it fails its case.

Usage: python3 .ci/layers_test.py [path/to/layers.py]   (default: beside this file)
"""
import contextlib
import importlib.util
import io
import os
import re
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def load(path):
    spec = importlib.util.spec_from_file_location("layers_under_test", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run(layers, src, floors=None, names=None):
    """Runs the check on `src`; returns (passed, largest cycle, output)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        ok = layers.check(src, floors or {}, names or {})
    text = out.getvalue()
    m = re.search(r"largest import cycle: (\d+) file", text)
    return ok, int(m.group(1)) if m else -1, text


def crate(tmp, files):
    """Writes `files` (path -> text) under a fresh src dir; returns it."""
    src = tempfile.mkdtemp(dir=tmp)
    for rel, text in files.items():
        path = os.path.join(src, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    return src


LIB = "mod a;\nmod low;\n"
LOW = "pub struct T;\npub struct U;\n"

# (name, files, floors, expected largest cycle, expected to pass)
CASES = [
    (
        # workloads/mod.rs's `cluster::group(..)`: a child module's name
        # starting a path in code, no `crate`/`super`/`self`.
        "a path in code through a child module",
        {
            "lib.rs": LIB,
            "low.rs": LOW,
            "a/mod.rs": "pub mod b;\npub struct R;\npub fn f() { b::g(); }\n",
            "a/b.rs": "use super::R;\npub fn g() { let _ = R; }\n",
        },
        None,
        2,
        True,
    ),
    (
        "a `use` through a child module",
        {
            "lib.rs": LIB,
            "low.rs": LOW,
            "a/mod.rs": "pub mod b;\nuse b::g;\npub struct R;\npub fn f() { g(); }\n",
            "a/b.rs": "use super::R;\npub fn g() { let _ = R; }\n",
        },
        None,
        2,
        True,
    ),
    (
        "a `self::` path",
        {
            "lib.rs": LIB,
            "low.rs": LOW,
            "a/mod.rs": "pub mod b;\npub struct R;\npub fn f() { self::b::g(); }\n",
            "a/b.rs": "use super::R;\npub fn g() { let _ = R; }\n",
        },
        None,
        2,
        True,
    ),
    (
        # stress.rs's `super::windowed(..)`: `super::` in an expression.
        "a `super::` path in an expression",
        {
            "lib.rs": LIB,
            "low.rs": LOW,
            "a/mod.rs": "pub mod b;\npub fn r() {}\npub fn f() { b::g(); }\n",
            "a/b.rs": "pub fn g() { super::r(); }\n",
        },
        None,
        2,
        True,
    ),
    (
        "a `crate::` path in a type position",
        {
            "lib.rs": LIB,
            "low.rs": "pub fn h(_: crate::a::R) {}\n",
            "a/mod.rs": "pub struct R;\npub fn f() { crate::low::h(R); }\n",
        },
        None,
        2,
        True,
    ),
    (
        # A re-export is a door: the edge goes to the file that defines the
        # item, so children importing their parent's re-exports form no cycle.
        "a re-export resolves to the defining file",
        {
            "lib.rs": LIB,
            "low.rs": LOW,
            "a/mod.rs": "pub mod b;\npub use crate::low::T;\npub fn f() { b::g(); }\n",
            "a/b.rs": "use super::T;\npub fn g() { let _ = T; }\n",
        },
        None,
        1,
        True,
    ),
    (
        "a root re-export resolves to the defining file",
        {
            "lib.rs": LIB + "pub use low::T;\n",
            "low.rs": "pub struct T;\npub fn k() { crate::a::f(); }\n",
            "a/mod.rs": "pub fn f() { let _ = crate::T; }\n",
        },
        None,
        2,
        True,
    ),
    (
        # Through an upper floor's door: a violation even when the item is
        # defined below.
        "an import through an upper floor's re-export",
        {
            "lib.rs": LIB,
            "low.rs": "pub fn k() { let _ = crate::a::U; }\n",
            "lower.rs": LOW,
            "a/mod.rs": "pub use crate::lower::U;\n",
        },
        {"lower": 0, "low": 0, "a": 1},
        1,
        False,
    ),
    (
        "an import of an upper floor",
        {
            "lib.rs": LIB,
            "low.rs": "pub fn k() {}\n",
            "a/mod.rs": "pub mod b;\n",
            "a/b.rs": "pub fn g() { crate::low::k(); }\n",
        },
        {"low": 1, "a": 0},
        1,
        False,
    ),
    (
        # `super` inside `mod tests { }` is the file's own module: no edge
        # from a child to its parent.
        "`use super::*` in an inline test module",
        {
            "lib.rs": LIB,
            "low.rs": LOW,
            "a/mod.rs": "pub mod b;\npub fn f() { b::g(); }\n",
            "a/b.rs": "pub fn g() {}\n#[cfg(test)]\nmod tests {\n    use super::*;\n    #[test]\n    fn t() { g(); }\n}\n",
        },
        None,
        1,
        True,
    ),
    (
        # workloads/mod.rs's `#[path = ...] mod soak;`: outside the tree.
        "a module declared with #[path]",
        {
            "lib.rs": LIB,
            "low.rs": LOW,
            "a/mod.rs": '#[path = "../../elsewhere/soak.rs"]\nmod soak;\npub mod b;\npub fn f() { b::g(); }\n',
            "a/b.rs": "pub fn g() { super::soak::run(); }\n",
        },
        None,
        1,
        True,
    ),
    (
        "a cycle longer than the limit fails",
        {
            "lib.rs": "mod a;\nmod b;\nmod c;\nmod d;\nmod e;\n",
            "a.rs": "pub fn f() { crate::b::f(); }\n",
            "b.rs": "pub fn f() { crate::c::f(); }\n",
            "c.rs": "pub fn f() { crate::d::f(); }\n",
            "d.rs": "pub fn f() { crate::e::f(); }\n",
            "e.rs": "pub fn f() { crate::a::f(); }\n",
        },
        None,
        5,
        False,
    ),
]


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "layers.py")
    layers = load(path)
    failures = []
    tmp = tempfile.mkdtemp(prefix="layers-test-")
    try:
        for name, files, floors, cycle, passes in CASES:
            names = {v: f"floor{v}" for v in (floors or {}).values()}
            ok, largest, text = run(layers, crate(tmp, files), floors, names)
            if largest != cycle or ok != passes:
                failures.append(
                    f"{name}: largest cycle {largest} (want {cycle}), "
                    f"passed {ok} (want {passes})\n{text}"
                )

        # troupe-bench as it is, then with a cycle planted at its bottom
        # floor: `run.rs` naming the registry that names every workload.
        bench = os.path.join(tmp, "bench")
        shutil.copytree(os.path.join(REPO, "crates/troupe-bench/src"), bench)
        floors, names = layers.CRATES.get("crates/troupe-bench/src", ({}, {}))
        ok, largest, text = run(layers, bench, floors, names)
        if not ok:
            failures.append(f"troupe-bench as it is fails:\n{text}")
        with open(os.path.join(bench, "run.rs"), "a") as f:
            f.write("\nfn planted() -> usize {\n    crate::workloads::ALL.len()\n}\n")
        ok, largest, text = run(layers, bench, floors, names)
        if ok or largest <= layers.MAX_CYCLE or "run.rs (run) imports workloads/mod.rs" not in text:
            failures.append(
                f"troupe-bench with a planted cycle: passed {ok}, largest cycle {largest}\n{text}"
            )
    finally:
        shutil.rmtree(tmp)
    for f in failures:
        print("layers_test FAILED:", f)
    print(f"layers_test: {len(CASES) + 1 - len(failures)} of {len(CASES) + 1} cases pass")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
