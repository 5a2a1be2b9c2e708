"""Tell throughput and ask p50/p99 of this client against the Rust
cart_node, beside raw nats-py publish and request with the same bytes, on
one nats-server in one run (issue 42's physical baseline). Rounds
alternate (A/B) so the machine's drift hits both sides alike. Three round
trips: ``ask`` (Client.ask of shop.cart.Get, CBOR, sealed), ``ping`` (a
sealed ping the node's inbox loop answers without an actor), ``raw``
(nc.request of the ask's bytes to a responder in this process answering
with the reply's bytes), ``rawnode`` (nc.request of the ask's own sealed
bytes, built once, to the node: what the client itself adds). Prints one
JSON line.

    TROUPE_CART_NODE=../../target/release/examples/cart_node python3 bench/roundtrip.py
"""
import asyncio
import json
import os
import socket
import subprocess
import time

import nats

from troupe_client import Client, Schema, codec, frame as fr

SECRET = "bench-secret"
ROUNDS = int(os.environ.get("ROUNDS", 10))
PER = int(os.environ.get("PER", 300))
TELLS = int(os.environ.get("TELLS", 20000))


def pct(d, p):
    s = sorted(d)
    return s[int(p * (len(s) - 1))]


async def main():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([os.environ.get("NATS_SERVER", "/usr/sbin/nats-server"), "-a", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"nats://127.0.0.1:{port}"
    for _ in range(600):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    node = subprocess.Popen([os.environ.get("TROUPE_CART_NODE", "../../target/release/examples/cart_node"), url, "shop", SECRET],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    schema = Schema.loads(node.stdout.readline())
    assert node.stdout.readline().strip() == "ready"
    add, get = schema.message("cart", "shop.cart.Add"), schema.message("cart", "shop.cart.Get")
    c = await Client.connect(url, "py-bench", secret=SECRET)
    nc = await nats.connect(url)
    key, subject = SECRET.encode(), c.subject("shop")
    for _ in range(3):
        await c.tell("shop", "cart", add, {"cart": "bench", "item": "tea", "qty": 1})
    req = fr.seal(key, subject, fr.encode_frame(fr.Kind.ASK, get.type_id, fr.type_id("cart"), get.ask_fingerprint,
                                                codec.encode({"cart": "bench"}), flags=fr.FLAG_CBOR))
    reply = fr.encode_frame(fr.Kind.REPLY, get.type_id, fr.type_id("cart"), get.ask_fingerprint,
                            codec.encode([{"item": "tea", "qty": 3}]), flags=fr.FLAG_CBOR)

    async def echo(m):
        await m.respond(reply)

    await nc.subscribe("bench.echo", cb=echo)
    ping = fr.seal(key, subject, fr.encode_frame(fr.Kind.PING, 0, 0, 0, b""))
    tell_msg = fr.seal(key, subject, fr.link_frame(1, 1, "py-bench") + fr.encode_frame(
        fr.Kind.TELL, add.type_id, fr.type_id("cart"), add.tell_fingerprint,
        codec.encode({"cart": "bench", "item": "tea", "qty": 1}), flags=fr.FLAG_CBOR))
    await nc.flush()
    for _ in range(200):
        await c.ask("shop", "cart", get, {"cart": "bench"}, timeout=10)
        await nc.request("bench.echo", req, timeout=10)
    ask, pong, raw, raw_node = [], [], [], []
    tell_s = raw_pub_s = 0.0
    for _ in range(ROUNDS):
        for _ in range(PER):
            t0 = time.perf_counter()
            await c.ask("shop", "cart", get, {"cart": "bench"}, timeout=10)
            ask.append(time.perf_counter() - t0)
        for _ in range(PER):
            t0 = time.perf_counter()
            await nc.request(subject, ping, timeout=10)
            pong.append(time.perf_counter() - t0)
        for _ in range(PER):
            t0 = time.perf_counter()
            await nc.request("bench.echo", req, timeout=10)
            raw.append(time.perf_counter() - t0)
        for _ in range(PER):
            t0 = time.perf_counter()
            await nc.request(subject, req, timeout=10)
            raw_node.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for _ in range(TELLS):
            await c.tell("shop", "cart", add, {"cart": "bench", "item": "tea", "qty": 1})
        await c._nc.flush()
        tell_s += time.perf_counter() - t0
        t0 = time.perf_counter()
        for _ in range(TELLS):
            await nc.publish("bench.sink", tell_msg)
        await nc.flush()
        raw_pub_s += time.perf_counter() - t0
    us = lambda s: round(s * 1e6)
    print(json.dumps({
        "rounds": ROUNDS, "asks_per_round": PER, "tells_per_round": TELLS,
        "ask_p50_us": us(pct(ask, .5)), "ask_p99_us": us(pct(ask, .99)),
        "ping_p50_us": us(pct(pong, .5)), "ping_p99_us": us(pct(pong, .99)),
        "raw_p50_us": us(pct(raw, .5)), "raw_p99_us": us(pct(raw, .99)),
        "rawnode_p50_us": us(pct(raw_node, .5)),
        "ask_over_raw_p50": round(pct(ask, .5) / pct(raw, .5), 2),
        "ask_over_rawnode_p50": round(pct(ask, .5) / pct(raw_node, .5), 2),
        "ask_over_ping_p50": round(pct(ask, .5) / pct(pong, .5), 2),
        "tells_per_s": round(ROUNDS * TELLS / tell_s), "raw_publish_per_s": round(ROUNDS * TELLS / raw_pub_s),
        "tell_over_raw": round(raw_pub_s / tell_s, 2),
    }))
    await c.close()
    await nc.close()
    node.stdin.close()
    node.wait(timeout=20)
    server.terminate()


asyncio.run(main())
