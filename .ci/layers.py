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
                  core.rs, tasks.rs, mirror.rs
  2 api           builder.rs, cluster.rs, directory.rs, balanced.rs,
                  remote_watch.rs
troupe-sharding's (its lib.rs, "Layers"):
  0 wire          placement.rs, envelope.rs, config.rs, stats.rs
  1 store         ownership/   (on the transport's key_value; no async-nats)
  2 region        shared.rs, region/
  3 coordinator   coordinator.rs
  4 api           sharding.rs
troupe-admin's (its lib.rs, "Layers"):
  0 guards        error.rs, security.rs, target.rs
  1 reads, acts   read/, health.rs, act.rs, openapi.rs
  2 server        router.rs, server.rs
A file may use `crate::` paths of its own layer or below, never above. The
crate root (lib.rs) is exempt: it only declares modules and re-exports;
binaries (bin/) are their own crates. Paths through root re-exports
(`crate::ActorRef`) are resolved through lib.rs's `pub use` lines.
Comments and doc comments are ignored.

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
            "builder": 2,
            "cluster": 2,
            "directory": 2,
            "balanced": 2,
            "remote_watch": 2,
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
            "shared": 2,
            "region": 2,
            "coordinator": 3,
            "sharding": 4,
        },
        {0: "wire", 1: "store", 2: "region", 3: "coordinator", 4: "api"},
    ),
    "crates/troupe-admin/src": (
        {
            "error": 0,
            "security": 0,
            "target": 0,
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


def check(SRC, LAYER_OF_TOP, NAMES):
    """Checks one crate; returns whether it passed."""
    files = {}
    for root, _, names in os.walk(SRC):
        for n in names:
            if n.endswith(".rs") and "/bin" not in root.replace(os.sep, "/")[len(SRC):] + "/":
                rel = os.path.relpath(os.path.join(root, n), SRC).replace(os.sep, "/")
                files[rel] = strip_comments(open(os.path.join(root, n)).read())

    mod_to_file = {tuple(module_path(f)): f for f in files if f != "lib.rs"}

    # Root re-exports: name -> module path they come from.
    root_alias = {}
    lib = files.get("lib.rs", "")
    for m in re.finditer(r"pub use ([\w:]+)::\{([^}]*)\};", lib):
        base = m.group(1).split("::")
        for item in m.group(2).split(","):
            item = item.strip()
            if item:
                root_alias[item.split(" as ")[-1].strip()] = base + [item.split(" as ")[0].strip()]
    for m in re.finditer(r"pub use ([\w:]+);", lib):
        parts = m.group(1).split("::")
        root_alias[parts[-1]] = parts


    def resolve(segments, here):
        """The file a path (list of segments after `crate`) points into."""
        if segments and segments[0] in root_alias and tuple(segments[:1]) not in mod_to_file:
            segments = root_alias[segments[0]] + segments[1:]
        for k in range(len(segments), 0, -1):
            f = mod_to_file.get(tuple(segments[:k]))
            if f:
                return f
        return None


    def layer(f):
        return LAYER_OF_TOP.get(module_path(f)[0])


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


    edges = {f: set() for f in files}
    errors = []
    for f, text in files.items():
        if f == "lib.rs":
            continue
        here = module_path(f)
        paths = []
        for m in re.finditer(r"\buse\s+([^;]+);", text):
            paths.extend(expand_use(m.group(1)))
        paths.extend(re.findall(r"\bcrate(?:::\w+)+", text))
        for p in paths:
            p = p.split(" as ")[0]
            segs = [s for s in p.split("::") if s and s != "self"]
            if not segs:
                continue
            if segs[0] == "crate":
                target = resolve(segs[1:], here)
            elif segs[0] == "super":
                base = here[:-1] if not f.endswith("mod.rs") else here[:-1]
                if f.endswith("mod.rs"):
                    base = here[:-1]
                else:
                    base = here[:-1]
                rest = segs[1:]
                while rest and rest[0] == "super":
                    base = base[:-1]
                    rest = rest[1:]
                target = resolve(base + rest, here) if base else resolve(rest, here)
            else:
                continue
            if target is None or target == f or target == "lib.rs":
                continue
            edges[f].add(target)
            lf, lt = layer(f), layer(target)
            if lf is not None and lt is not None and lt > lf:
                errors.append(f"{f} ({NAMES[lf]}) imports {target} ({NAMES[lt]}) via `{p}`")

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
