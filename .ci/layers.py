#!/usr/bin/env python3
"""Checks that each layered crate's imports point down only, and reports
the largest import cycle among its files; every other crate of the
workspace (crates/*/src) is checked for its largest import cycle alone.

The troupe crate's layers, lowest first (docs/architecture.md, "Layers"):
  0 engine        engine/
  1 actor core    actor/
  2 system        system/
  3 features      messaging/, states.rs, parallel.rs, supervision/, registry/, bridge.rs, testkit/
  4 observability observability/
troupe-remote's (its lib.rs, "Layers"):
  0 transport     transport/   (the only place that names async-nats)
  1 protocol      protocol/    (envelope, links and acks, the ask server)
  2 api           api/         (Node, NodeBuilder, RemoteRef, Exposure)
troupe-cluster's (its lib.rs, "Layers"):
  0 wire          wire.rs, bad_input.rs, error.rs
  1 state         liveness.rs, registry.rs, monitor.rs, permissions.rs,
                  core.rs, tasks.rs, mirror.rs, split_brain.rs
  2 api           builder.rs, cluster.rs, directory.rs, balanced.rs,
                  remote_watch.rs, metrics.rs
troupe-sharding's (its lib.rs, "Layers"):
  0 wire          placement.rs, envelope.rs, config.rs, stats.rs
  1 store         ownership/, controls.rs (on the transport's key_value; no async-nats)
  2 region        shared.rs, region/
  3 coordinator   coordinator.rs
  4 api           sharding.rs, metrics.rs, delivery/
  5 building blocks singleton/, reminders/ (on sharding.rs)
troupe-bench's (its run.rs):
  0 tools         stats.rs, plot.rs, compare.rs, programs.rs, contention.rs
  1 run           run.rs       (Workload, RunCfg and its measuring loop)
  2 workloads     workloads/   (one file each; the registry in its mod.rs)
  3 report        peers.rs     (the peers beside Troupe)
troupe-admin's (its lib.rs, "Layers"):
  0 guards        error.rs, security.rs, target.rs, dashboard.rs
  1 reads, acts   read/, health.rs, act.rs, openapi.rs
  2 server        router.rs, server.rs
A file may use `crate::` paths of its own layer or below, never above. The
crate root (lib.rs, or main.rs in a crate without one) is exempt: it
declares modules and re-exports; binaries (bin/, main.rs beside a lib.rs)
are their own crates.

What counts as an import of another file: every path in a `use` item and
every path in code (expressions, types, patterns) that starts with
`crate::`, `super::`, `self::` or the name of a child module (`cluster::x`
in workloads/mod.rs: a 2018 path needs no `self::`). `super` inside an
inline `mod tests { }` is the file's own module. A path through a module's
`use` items (its re-exports and, since a child sees them through `super::`,
its private imports too) resolves to the file that defines the item: the
edge goes there, and the door is held to the floors as well. A module
declared with `#[path = ...]` lies outside the tree and names no file.
Comments and doc comments are ignored. The self-test, .ci/layers_test.py,
plants each kind of import in a temporary crate and checks that it counts.

Also fails if the largest strongly connected component of a crate's
file-level import graph has more than MAX_CYCLE files.
Usage: python3 .ci/layers.py [crate src dir]   (default: every crate below)
"""
import os
import re
import sys

MAX_CYCLE = 4
CRATES = {
    "crates/troupe/src": (
        {
            "engine": 0,
            "actor": 1,
            "system": 2,
            "messaging": 3,
            "states": 3,
            "parallel": 3,
            "supervision": 3,
            "registry": 3,
            "bridge": 3,
            "testkit": 3,
            "observability": 4,
        },
        {0: "engine", 1: "actor core", 2: "system", 3: "features", 4: "observability"},
    ),
    "crates/troupe-remote/src": (
        {"transport": 0, "protocol": 1, "api": 2},
        {0: "transport", 1: "protocol", 2: "api"},
    ),
    "crates/troupe-cluster/src": (
        {
            "wire": 0,
            "bad_input": 0,
            "error": 0,
            "liveness": 1,
            "registry": 1,
            "monitor": 1,
            "permissions": 1,
            "core": 1,
            "tasks": 1,
            "mirror": 1,
            "name_lock": 1,
            "split_brain": 1,
            "builder": 2,
            "cluster": 2,
            "directory": 2,
            "balanced": 2,
            "remote_watch": 2,
            "metrics": 2,
        },
        {0: "wire", 1: "state", 2: "api"},
    ),
    "crates/troupe-sharding/src": (
        {
            "placement": 0,
            "envelope": 0,
            "config": 0,
            "stats": 0,
            "ownership": 1,
            "controls": 1,
            "shared": 2,
            "region": 2,
            "coordinator": 3,
            "sharding": 4,
            "metrics": 4,
            "delivery": 4,
            "singleton": 5,
            "reminders": 5,
            "gateway": 5,
        },
        {0: "wire", 1: "store", 2: "region", 3: "coordinator", 4: "api", 5: "building blocks"},
    ),
    "crates/troupe-bench/src": (
        {
            "stats": 0,
            "plot": 0,
            "compare": 0,
            "programs": 0,
            "contention": 0,
            "run": 1,
            "workloads": 2,
            "peers": 3,
        },
        {0: "tools", 1: "run", 2: "workloads", 3: "report"},
    ),
    "crates/troupe-admin/src": (
        {
            "error": 0,
            "security": 0,
            "target": 0,
            "dashboard": 0,
            "read": 1,
            "health": 1,
            "act": 1,
            "openapi": 1,
            "router": 2,
            "server": 2,
        },
        {0: "guards", 1: "reads, acts", 2: "server"},
    ),
}
# Names only the transport layer may use: (crate src, folder allowed or
# None for no file at all, name).
SEALED = [
    ("crates/troupe-remote/src", "transport/", "async_nats"),
    # The cluster reaches NATS only through troupe-remote's transport.
    ("crates/troupe-cluster/src", None, "async_nats"),
    # So does sharding (its ownership bucket is the transport's key_value).
    ("crates/troupe-sharding/src", None, "async_nats"),
]


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    out = []
    for line in text.split("\n"):
        # Drop // comments (not inside strings: good enough for this crate,
        # whose string literals hold no "//" followed by `crate::`).
        i = line.find("//")
        out.append(line if i < 0 else line[:i])
    return "\n".join(out)


def module_path(rel):
    """engine/mailbox/mod.rs -> ['engine','mailbox']; actor/cell.rs -> ['actor','cell']."""
    parts = rel[:-3].split("/")
    if parts[-1] == "mod":
        parts = parts[:-1]
    return parts


def inline_mods(text):
    """The inline `mod name { ... }` blocks of a file: (name, start, end)."""
    out = []
    for m in re.finditer(r"\bmod\s+(\w+)\s*\{", text):
        depth, i = 0, m.end() - 1
        while i < len(text):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        out.append((m.group(1), m.start(), i))
    return out


def expand_use(body):
    """`a::{b, c::{d}}` -> ['a::b', 'a::c::d']"""
    body = body.replace(" ", "").replace("\n", "")
    m = re.match(r"^(.*?)\{(.*)\}$", body)
    if not m:
        return [body]
    prefix, inner = m.group(1), m.group(2)
    items, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        items.append(cur)
    out = []
    for it in items:
        for e in expand_use(it):
            out.append(prefix + e)
    return out


# A path where it starts: not the tail of a longer path, not a field or a
# method (`x.a::<T>` is not a path start either way).
PATH_START = r"(?<![\w:.])"


def check(SRC, LAYER_OF_TOP, NAMES):
    """Checks one crate; returns whether it passed."""
    files = {}
    for root, _, names in os.walk(SRC):
        for n in names:
            if n.endswith(".rs") and "/bin" not in root.replace(os.sep, "/")[len(SRC):] + "/":
                rel = os.path.relpath(os.path.join(root, n), SRC).replace(os.sep, "/")
                files[rel] = strip_comments(open(os.path.join(root, n)).read())
    # The crate root: lib.rs, or main.rs in a binary-only crate (beside a
    # lib.rs, main.rs is a crate of its own, like bin/).
    root_file = "lib.rs" if "lib.rs" in files else "main.rs"
    if root_file == "lib.rs":
        files.pop("main.rs", None)

    def modpath(f):
        return () if f == root_file else tuple(module_path(f))

    mod_to_file = {modpath(f): f for f in files}

    # Modules declared with `#[path = ...]`: their file lies outside this
    # tree (or is another module's), so a path into one names no file here.
    external = set()
    for f, text in files.items():
        for m in re.finditer(r"#\[path\s*=[^\]]*\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", text):
            external.add(modpath(f) + (m.group(1),))

    def absolute(segs, here):
        """A path's segments as a path from the crate root, or None when it
        starts outside the crate (std::, another crate, a local name)."""
        segs = [s for s in segs if s and s != "self"] if segs and segs[0] != "self" else [s for s in segs[1:] if s]
        if not segs:
            return None
        if segs[0] == "crate":
            return list(segs[1:])
        if segs[0] == "super":
            base = list(here)
            while segs and segs[0] == "super":
                base = base[:-1]
                segs = segs[1:]
            return base + [s for s in segs if s != "self"]
        # Relative to this module: a child module's name (2018 paths need no
        # `self::`), e.g. `cluster::group(..)` in workloads/mod.rs.
        if tuple(here) + (segs[0],) in mod_to_file or tuple(here) + (segs[0],) in external:
            return list(here) + [s for s in segs if s != "self"]
        return None

    # Every module's imported names (`use` items, private ones too: a child
    # reaches its parent's imports through `super::`): name -> absolute
    # path, or None for a name from outside the crate.
    aliases = {f: {} for f in files}
    for f, text in files.items():
        here = modpath(f)
        for m in re.finditer(r"\buse\s+([^;]+);", text):
            for p in expand_use(m.group(1)):
                name = p.split(" as ")[-1].split("::")[-1].strip() if " as " not in p else p.split(" as ")[1].strip()
                path = p.split(" as ")[0].strip()
                segs = path.split("::")
                if segs[-1] == "*":
                    continue
                if segs[-1] == "self":
                    segs = segs[:-1]
                    if " as " not in p and segs:
                        name = segs[-1]
                absp = absolute(segs, here)
                aliases[f].setdefault(name, absp)

    def resolve(segments, doors, depth=0):
        """The file a path (segments from the crate root) points into,
        through re-exports and imports; None outside this crate's files.
        Appends to `doors` each file whose `use` the path went through (a
        door of an upper floor is a violation too)."""
        segments = list(segments)
        for k in range(len(segments), -1, -1):
            if tuple(segments[:k]) in external:
                return None
            f = mod_to_file.get(tuple(segments[:k]))
            if f is None:
                continue
            if k < len(segments) and depth < 16:
                name = segments[k]
                if name in aliases[f] and tuple(segments[: k + 1]) not in mod_to_file:
                    target = aliases[f][name]
                    if target is None:
                        return None
                    doors.append(f)
                    return resolve(target + segments[k + 1 :], doors, depth + 1)
            return f
        return None

    def layer(f):
        mp = modpath(f)
        return LAYER_OF_TOP.get(mp[0]) if mp else None

    edges = {f: set() for f in files}
    errors = []
    for f, text in files.items():
        if f == root_file:
            continue
        here = modpath(f)
        inner = inline_mods(text)

        def scope(pos):
            """The module a position is in: the file's, or an inline one."""
            return here + tuple(n for n, a, b in inner if a < pos < b)

        paths = []
        for m in re.finditer(r"\buse\s+([^;]+);", text):
            for p in expand_use(m.group(1)):
                paths.append((p, scope(m.start())))
        used = {m.start(1) for m in re.finditer(r"\buse\s+([^;]+);", text)}
        # Paths in expressions, types and patterns: from the crate, a
        # parent, or a child module.
        for m in re.finditer(PATH_START + r"((?:crate|super|self|\w+)(?:::\w+)+)", text):
            if any(u <= m.start() < text.find(";", u) for u in used):
                continue
            paths.append((m.group(1), scope(m.start())))
        for p, sc in paths:
            p = p.split(" as ")[0]
            segs = p.split("::")
            absp = absolute(segs, sc)
            if absp is None and sc != here:
                # Inside an inline module (tests): a child of the file's
                # module through its `use super::*`.
                absp = absolute(segs, here) if segs[0] not in ("crate", "super", "self") else None
            if absp is None:
                continue
            doors = []
            target = resolve(absp, doors)
            if target is None or target == f or target == root_file:
                continue
            edges[f].add(target)
            lf = layer(f)
            for t in [target] + [d for d in doors if d not in (f, root_file)]:
                lt = layer(t)
                if lf is not None and lt is not None and lt > lf:
                    errors.append(f"{f} ({NAMES[lf]}) imports {t} ({NAMES[lt]}) via `{p}`")

    # Tarjan's strongly connected components.
    index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)


    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            sccs.append(comp)


    for v in edges:
        if v not in index:
            strong(v)
    largest = max(sccs, key=len)
    print(f"layers: {SRC}: {len(files)} files checked; largest import cycle: {len(largest)} file(s)"
          + (f": {', '.join(sorted(largest))}" if len(largest) > 1 else ""))
    for e in sorted(set(errors)):
        print("layer violation:", e)
    if len(largest) > MAX_CYCLE:
        print(f"import cycle of {len(largest)} files exceeds {MAX_CYCLE}")
    sealed = []
    for src, allowed, name in SEALED:
        if src != SRC:
            continue
        for f, text in files.items():
            if (allowed is None or not f.startswith(allowed)) and re.search(
                r"\b" + name + r"\b", text
            ):
                where = f"only {allowed} may" if allowed else "no file of this crate may"
                sealed.append(f"{f} names `{name}`: {where}")
    for e in sealed:
        print("transport seam:", e)
    return not (errors or sealed or len(largest) > MAX_CYCLE)


if __name__ == "__main__":
    # With no argument: the layered crates above, then every other crate of
    # the workspace, whose import cycles are bounded too (no floors).
    import glob

    others = sorted(
        d.rstrip("/") for d in glob.glob("crates/*/src/") if d.rstrip("/") not in CRATES
    )
    srcs = sys.argv[1:] or list(CRATES) + others
    ok = True
    for src in srcs:
        layers, names = CRATES.get(src.rstrip("/"), ({}, {}))
        ok = check(src.rstrip("/"), layers, names) and ok
    sys.exit(0 if ok else 1)
