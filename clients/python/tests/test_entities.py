"""End to end, sharded entities: a real nats-server (JetStream on) and a
Rust cluster of two nodes (the cart_gateway example of troupe-sharding)
serving the shop's carts, called by kind and id through either node's
shard gateway. Skips with one line where nats-server or the node binary
is missing (TROUPE_REQUIRE_NATS=1 makes a missing nats-server a failure).

The mixed test has a Go producer (clients/go/cmd/troupe-produce, built
here with the Go toolchain, or TROUPE_GO_PRODUCER) and this client tell
one cart at once; the cart's count must be exactly their sum."""
import asyncio
import json
import os
import pathlib
import shutil
import socket
import subprocess
import tempfile
import threading
import time

import pytest

from troupe_client import (
    Client, EntityRefused, NoResponders, UnknownType,
)

ROOT = pathlib.Path(__file__).resolve().parents[3]
SECRET = "e2e-secret"


def _nats_server():
    found = shutil.which("nats-server") or ("/usr/sbin/nats-server" if os.path.exists("/usr/sbin/nats-server") else None)
    if not found:
        if os.environ.get("TROUPE_REQUIRE_NATS") == "1":
            pytest.fail("nats-server is required (TROUPE_REQUIRE_NATS=1) and missing")
        pytest.skip("nats-server not found: skipping the entity end-to-end tests")
    return found


def _node_binary():
    given = os.environ.get("TROUPE_CART_GATEWAY")
    if given:
        return given
    built = ROOT / "target" / "debug" / "examples" / "cart_gateway"
    if built.exists():
        return str(built)
    pytest.skip("no cart_gateway binary (cargo build -p troupe-sharding --example cart_gateway, or set TROUPE_CART_GATEWAY)")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Node:
    """A cart_gateway child: its lines read on a thread, so every wait is bounded."""

    def __init__(self, binary, url, name):
        self.p = subprocess.Popen([binary, url, name, "2", SECRET], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        self.lines = []
        self.cv = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            with self.cv:
                self.lines.append(line.strip())
                self.cv.notify_all()

    def expect(self, pred, within):
        end = time.monotonic() + within
        with self.cv:
            while True:
                for i, l in enumerate(self.lines):
                    if pred(l):
                        del self.lines[: i + 1]
                        return l
                left = end - time.monotonic()
                if left <= 0 or self.p.poll() is not None:
                    raise AssertionError(f"node: no such line within {within} s; saw {self.lines}")
                self.cv.wait(left)

    def stats(self):
        self.p.stdin.write("stats\n")
        self.p.stdin.flush()
        return json.loads(self.expect(lambda l: l.startswith("{"), 10))

    def stop(self):
        try:
            self.p.stdin.close()
            self.p.wait(timeout=20)
        except Exception:
            self.p.kill()


@pytest.fixture(scope="module")
def cluster():
    server_bin = _nats_server()
    node_bin = _node_binary()
    port = _free_port()
    store = tempfile.mkdtemp(prefix="troupe-py-entities-")
    server = subprocess.Popen([server_bin, "-js", "-sd", store, "-a", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"nats://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    nodes = {n: Node(node_bin, url, n) for n in ("a", "b")}
    try:
        for n in nodes.values():
            n.expect(lambda l: l == "ready", 60)
        yield url, nodes
    finally:
        for n in nodes.values():
            n.stop()
        server.terminate()
        server.wait(timeout=20)
        shutil.rmtree(store, ignore_errors=True)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 90))


async def _until(c, node, cart, want, within=20):
    end = time.monotonic() + within
    while True:
        n = await c.ask_entity(node, "cart", cart, "shop.cart.Count", None, timeout=10)
        if n >= want or time.monotonic() > end:
            return n
        await asyncio.sleep(0.05)


def test_tell_through_one_node_and_read_through_the_other(cluster):
    url, _ = cluster

    async def go():
        c = await Client.connect(url, "py-entities", secret=SECRET)
        try:
            carts = [f"py-cart-{i}" for i in range(8)]  # spread over shards of both nodes
            for i, cart in enumerate(carts):
                node = "ab"[i % 2]
                await c.tell_entity(node, "cart", cart, "shop.cart.AddItem", {"sku": "tea", "qty": 2})
                await c.tell_entity(node, "cart", cart, "shop.cart.AddItem", {"sku": "milk", "qty": 1})
                await c.tell_entity(node, "cart", cart, "shop.cart.AddItem", {"sku": "tea", "qty": 3})
            for i, cart in enumerate(carts):
                other = "ba"[i % 2]
                assert await _until(c, other, cart, 3) == 3
                lines = await c.ask_entity(other, "cart", cart, "shop.cart.Lines", None, timeout=10)
                assert lines == [{"sku": "tea", "qty": 5}, {"sku": "milk", "qty": 1}]
            assert await c.ask_entity("a", "cart", "py-nobody", "shop.cart.Lines", None) == []
            return c.stats
        finally:
            await c.close()

    stats = run(go())
    assert stats.bad_frames == 0 and stats.bad_replies == 0 and stats.unauthenticated == 0


def test_bad_input_is_refused_typed_and_counted(cluster):
    url, nodes = cluster
    before = nodes["a"].stats()

    async def go():
        c = await Client.connect(url, "py-entities-bad", secret=SECRET)
        try:
            with pytest.raises(EntityRefused) as e:
                await c.ask_entity("a", "no-such-kind", "c-1", "shop.cart.Lines", None)
            assert e.value.reason == "UnknownKind" and e.value.executed is False
            with pytest.raises(UnknownType):
                await c.ask_entity("a", "cart", "c-1", "shop.cart.Nothing", None)
            with pytest.raises(EntityRefused) as e:
                await c.ask_entity("a", "cart", "", "shop.cart.Lines", None)
            assert e.value.reason == "BadId"
            with pytest.raises(EntityRefused) as e:
                await c.ask_entity("a", "cart", "x" * 257, "shop.cart.Lines", None)
            assert e.value.reason == "BadId"
            # A tell's type asked: the kind takes AddItem as a tell only.
            with pytest.raises(UnknownType):
                await c.ask_entity("a", "cart", "c-1", "shop.cart.AddItem", {"sku": "x", "qty": 1})
            # The same refusals as tells: no reply, counted by the gateway.
            await c.tell_entity("a", "no-such-kind", "c-1", "shop.cart.AddItem", {"sku": "x", "qty": 1})
            await c.tell_entity("a", "cart", "", "shop.cart.AddItem", {"sku": "x", "qty": 1})
            await c.tell_entity("a", "cart", "c-1", "shop.cart.AddItem", {"sku": 5})
            await c.tell_entity("a", "cart", "c-1", "shop.cart.Count", None)
            # The node's inbox took it all: a ping through the gateway still answers.
            assert await c.ask_entity("a", "cart", "py-bad-after", "shop.cart.Count", None) == 0
            with pytest.raises(NoResponders):
                await c.ask_entity("no-such-node", "cart", "c-1", "shop.cart.Count", None)
        finally:
            await c.close()

    run(go())
    end = time.monotonic() + 10
    while True:
        after = nodes["a"].stats()
        d = {k: after[k] - before[k] for k in after}
        if (d["unknown_kind"], d["bad_id"], d["undecodable"], d["unknown_type"]) == (2, 3, 1, 3) or time.monotonic() > end:
            break
        time.sleep(0.05)
    assert (d["unknown_kind"], d["bad_id"], d["undecodable"], d["unknown_type"]) == (2, 3, 1, 3), d
    assert d["tells"] == 4 and d["tells_routed"] == 0


def _go_producer():
    given = os.environ.get("TROUPE_GO_PRODUCER")
    if given:
        return given
    go = shutil.which("go") or ("/usr/local/go/bin/go" if os.path.exists("/usr/local/go/bin/go") else None)
    if not go:
        pytest.skip("no Go toolchain and no TROUPE_GO_PRODUCER: skipping the mixed producers test")
    out = pathlib.Path(tempfile.mkdtemp(prefix="troupe-go-produce-")) / "troupe-produce"
    subprocess.run([go, "build", "-o", str(out), "./cmd/troupe-produce"], cwd=ROOT / "clients" / "go",
                   check=True, timeout=600)
    return str(out)


def test_a_python_and_a_go_producer_tell_one_cart_and_the_count_is_exact(cluster):
    url, nodes = cluster
    before = {k: n.stats() for k, n in nodes.items()}
    producer = _go_producer()
    n = 2000
    cart = "mixed-cart"

    async def go():
        c = await Client.connect(url, "py-mixed", secret=SECRET)
        try:
            # The Go producer tells through node b while this one tells through a.
            gop = await asyncio.create_subprocess_exec(
                producer, "-url", url, "-secret", SECRET, "-node", "b", "-kind", "cart",
                "-id", cart, "-n", str(n), stdout=asyncio.subprocess.PIPE)
            for i in range(n):
                await c.tell_entity("a", "cart", cart, "shop.cart.AddItem", {"sku": f"py-{i % 7}", "qty": 1})
            out, _ = await asyncio.wait_for(gop.communicate(), 60)
            assert gop.returncode == 0, out
            assert out.decode().split() == ["told", str(n)]
            got = await _until(c, "b", cart, 2 * n, within=30)
            await asyncio.sleep(0.5)
            again = await c.ask_entity("a", "cart", cart, "shop.cart.Count", None)
            lines = await c.ask_entity("a", "cart", cart, "shop.cart.Lines", None)
            return got, again, lines, c.stats
        finally:
            await c.close()

    got, again, lines, stats = run(go())
    after = {k: n.stats() for k, n in nodes.items()}
    diff = {k: {f: after[k][f] - before[k][f] for f in after[k]} for k in after}
    assert got == 2 * n, (got, diff, stats)
    assert got == 2 * n and again == 2 * n
    assert sum(l["qty"] for l in lines) == 2 * n
    assert sum(l["qty"] for l in lines if l["sku"].startswith("go-")) == n
