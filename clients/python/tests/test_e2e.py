"""End to end: a real nats-server and a real Rust node (the cart_node
example of troupe-remote), driven by this client. Skips with one line
where nats-server or the node binary is missing (TROUPE_REQUIRE_NATS=1
makes a missing nats-server a failure, as in CI)."""
import asyncio
import os
import pathlib
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass

import pytest

from troupe_client import (
    BadFrame, Client, MessageType, NoResponders, Schema, SchemaMismatch, UnknownTarget,
    fingerprint_of_shape,
)

ROOT = pathlib.Path(__file__).resolve().parents[3]
SECRET = "e2e-secret"


@dataclass
class Add:
    cart: str
    item: str
    qty: int


@dataclass
class Get:
    cart: str


def _nats_server():
    found = shutil.which("nats-server") or ("/usr/sbin/nats-server" if os.path.exists("/usr/sbin/nats-server") else None)
    if not found:
        if os.environ.get("TROUPE_REQUIRE_NATS") == "1":
            pytest.fail("nats-server is required (TROUPE_REQUIRE_NATS=1) and missing")
        pytest.skip("nats-server not found: skipping the end-to-end tests")
    return found


def _node_binary():
    given = os.environ.get("TROUPE_CART_NODE")
    if given:
        return given
    built = ROOT / "target" / "debug" / "examples" / "cart_node"
    if built.exists():
        return str(built)
    pytest.skip("no cart_node binary (cargo build -p troupe-remote --example cart_node, or set TROUPE_CART_NODE)")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def shop():
    server_bin = _nats_server()
    node_bin = _node_binary()
    port = _free_port()
    server = subprocess.Popen([server_bin, "-a", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"nats://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    node = subprocess.Popen([node_bin, url, "shop", SECRET], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    schema_line = node.stdout.readline()
    assert node.stdout.readline().strip() == "ready"
    try:
        yield url, Schema.loads(schema_line)
    finally:
        node.stdin.close()
        try:
            node.wait(timeout=20)
        except subprocess.TimeoutExpired:
            node.kill()
        server.terminate()
        server.wait(timeout=20)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def test_add_items_then_read_the_cart(shop):
    url, schema = shop
    add, get = schema.message("cart", "shop.cart.Add"), schema.message("cart", "shop.cart.Get")
    assert schema.portable("cart", "shop.cart.Add")

    async def go():
        c = await Client.connect(url, "py-e2e", secret=SECRET)
        try:
            for qty in (1, 2, 3):
                await c.tell("shop", "cart", add, Add("c-1", "tea", qty))
            await c.tell("shop", "cart", add, Add("c-1", "milk", 1))
            # Tells and asks travel on different paths: wait for the lines.
            deadline = time.monotonic() + 20
            while True:
                lines = await c.ask("shop", "cart", get, Get("c-1"), timeout=10)
                if sum(l["qty"] for l in lines) == 7 or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.05)
            assert lines == [{"item": "tea", "qty": 6}, {"item": "milk", "qty": 1}]
            assert await c.ask("shop", "cart", get, Get("nobody"), timeout=10) == []
            return c.stats
        finally:
            await c.close()

    stats = run(go())
    assert stats.tells_sent == 4 and stats.bad_frames == 0 and stats.unauthenticated == 0


def test_unknown_actor_and_unknown_node_are_no_responders(shop):
    url, schema = shop
    get = schema.message("cart", "shop.cart.Get")

    async def go():
        c = await Client.connect(url, "py-e2e-2", secret=SECRET)
        try:
            with pytest.raises(UnknownTarget):
                await c.ask("shop", "no-such-actor", get, Get("c-1"), timeout=10)
            with pytest.raises(NoResponders):
                await c.ask("no-such-node", "cart", get, Get("c-1"), timeout=10)
        finally:
            await c.close()

    run(go())


def test_a_wrong_shape_is_a_schema_mismatch(shop):
    url, schema = shop
    right = schema.message("cart", "shop.cart.Get")
    # The shape an outdated client believes in: {cart: u64}.
    wrong = MessageType("shop.cart.Get", ask_fingerprint=fingerprint_of_shape("struct{cart:u64}"))

    async def go():
        c = await Client.connect(url, "py-e2e-3", secret=SECRET)
        try:
            with pytest.raises(SchemaMismatch) as e:
                await c.ask("shop", "cart", wrong, {"cart": 7}, timeout=10)
            assert e.value.fingerprint == right.ask_fingerprint
        finally:
            await c.close()

    run(go())


def test_a_wrong_key_is_refused(shop):
    url, schema = shop
    get = schema.message("cart", "shop.cart.Get")

    async def go():
        c = await Client.connect(url, "py-e2e-4", secret="not-the-secret")
        try:
            with pytest.raises(BadFrame):
                await c.ask("shop", "cart", get, Get("c-1"), timeout=10)
        finally:
            await c.close()

    run(go())
