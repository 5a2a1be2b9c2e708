// Tell throughput and ask p50/p99 of this client against the Rust
// cart_node, beside raw @nats-io/nats-core publish and request with the
// same bytes, on one nats-server in one run (issue 42's physical
// baseline). Rounds alternate (A/B) so that the machine's drift hits both
// sides alike. Three round trips: `ask` (Client.ask of shop.cart.Get,
// CBOR, sealed), `ping` (a sealed ping the node's inbox loop answers
// without an actor), `raw` (nc.request of the ask's bytes to a responder
// in this process answering with the reply's bytes), `rawnode` (nc.request
// of the ask's own sealed bytes, built once, to the node: what the client
// itself adds).
//
//   npm run build && TROUPE_CART_NODE=../../target/release/examples/cart_node node dist/bench/roundtrip.js
import { spawn } from "node:child_process";
import { createServer, connect as tcp } from "node:net";
import { createInterface } from "node:readline";
import { connect } from "@nats-io/transport-node";
import { Client, Schema } from "../src/index.js";
import * as codec from "../src/codec.js";
import { FLAG_CBOR, Kind, encodeFrame, linkFrame, seal, typeId } from "../src/frame.js";

const SECRET = "bench-secret";
const nodeBin = process.env.TROUPE_CART_NODE ?? "../../target/release/examples/cart_node";
const server = process.env.NATS_SERVER ?? "/usr/sbin/nats-server";
const ROUNDS = Number(process.env.ROUNDS ?? 10), PER = Number(process.env.PER ?? 300), TELLS = Number(process.env.TELLS ?? 20000);

const freePort = () => new Promise<number>((ok, no) => {
  const s = createServer().listen(0, "127.0.0.1", () => { const p = (s.address() as any).port; s.close(() => ok(p)); }).on("error", no);
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (d: number[], p: number) => { const s = [...d].sort((a, b) => a - b); return s[Math.floor(p * (s.length - 1))]; };

const port = await freePort();
const nats = spawn(server, ["-a", "127.0.0.1", "-p", String(port)], { stdio: "ignore" });
const url = `nats://127.0.0.1:${port}`;
for (let i = 0; ; i++) {
  if (await new Promise<boolean>((ok) => { const c = tcp(port, "127.0.0.1", () => { c.end(); ok(true); }).on("error", () => ok(false)); })) break;
  if (i > 600) throw new Error("nats-server did not listen");
  await sleep(50);
}
const node = spawn(nodeBin, [url, "shop", SECRET], { stdio: ["pipe", "pipe", "inherit"] });
const lines = createInterface({ input: node.stdout! })[Symbol.asyncIterator]();
const schema = Schema.parse((await lines.next()).value);
if ((await lines.next()).value.trim() !== "ready") throw new Error("cart_node not ready");
const add = schema.message("cart", "shop.cart.Add"), get = schema.message("cart", "shop.cart.Get");

const c = await Client.connect({ servers: url, name: "ts-bench", secret: SECRET });
const nc = await connect({ servers: url });
const key = Buffer.from(SECRET);
const subject = c.subject("shop");
for (let i = 0; i < 3; i++) await c.tell("shop", "cart", add, { cart: "bench", item: "tea", qty: 1 });
const req = seal(key, subject, encodeFrame(Kind.Ask, get.typeId, typeId("cart"), get.askFingerprint, codec.encode({ cart: "bench" }), 0, FLAG_CBOR));
const reply = encodeFrame(Kind.Reply, get.typeId, typeId("cart"), get.askFingerprint, codec.encode([{ item: "tea", qty: 3 }]), 0, FLAG_CBOR);
nc.subscribe("bench.echo", { callback: (_e, m) => { m.respond(reply); } });
const ping = seal(key, subject, encodeFrame(Kind.Ping, 0n, 0n, 0n, new Uint8Array(), 0, 0));
const tellMsg = seal(key, subject, Buffer.concat([linkFrame(1n, 1n, "ts-bench"),
  encodeFrame(Kind.Tell, add.typeId, typeId("cart"), add.tellFingerprint, codec.encode({ cart: "bench", item: "tea", qty: 1 }), 0, FLAG_CBOR)]));
await nc.flush();
// Warm up both paths.
for (let i = 0; i < 200; i++) { await c.ask("shop", "cart", get, { cart: "bench" }, 10000); await nc.request("bench.echo", req, { timeout: 10000 }); }

const ask: number[] = [], pong: number[] = [], raw: number[] = [], rawNode: number[] = [];
let tellMs = 0, rawPubMs = 0;
for (let r = 0; r < ROUNDS; r++) {
  for (let i = 0; i < PER; i++) {
    const t0 = performance.now();
    await c.ask("shop", "cart", get, { cart: "bench" }, 10000);
    ask.push(performance.now() - t0);
  }
  for (let i = 0; i < PER; i++) {
    const t0 = performance.now();
    await nc.request(subject, ping, { timeout: 10000 });
    pong.push(performance.now() - t0);
  }
  for (let i = 0; i < PER; i++) {
    const t0 = performance.now();
    await nc.request("bench.echo", req, { timeout: 10000 });
    raw.push(performance.now() - t0);
  }
  for (let i = 0; i < PER; i++) {
    const t0 = performance.now();
    await nc.request(subject, req, { timeout: 10000 });
    rawNode.push(performance.now() - t0);
  }
  let t0 = performance.now();
  for (let i = 0; i < TELLS; i++) await c.tell("shop", "cart", add, { cart: "bench", item: "tea", qty: 1 });
  await c.flush();
  tellMs += performance.now() - t0;
  t0 = performance.now();
  for (let i = 0; i < TELLS; i++) nc.publish("bench.sink", tellMsg);
  await nc.flush();
  rawPubMs += performance.now() - t0;
}
const us = (ms: number) => Math.round(ms * 1000);
const out = {
  rounds: ROUNDS, asks_per_round: PER, tells_per_round: TELLS,
  ask_p50_us: us(pct(ask, 0.5)), ask_p99_us: us(pct(ask, 0.99)),
  ping_p50_us: us(pct(pong, 0.5)), ping_p99_us: us(pct(pong, 0.99)),
  raw_p50_us: us(pct(raw, 0.5)), raw_p99_us: us(pct(raw, 0.99)),
  rawnode_p50_us: us(pct(rawNode, 0.5)),
  ask_over_raw_p50: +(pct(ask, 0.5) / pct(raw, 0.5)).toFixed(2),
  ask_over_rawnode_p50: +(pct(ask, 0.5) / pct(rawNode, 0.5)).toFixed(2),
  ask_over_ping_p50: +(pct(ask, 0.5) / pct(pong, 0.5)).toFixed(2),
  tells_per_s: Math.round(ROUNDS * TELLS / (tellMs / 1000)),
  raw_publish_per_s: Math.round(ROUNDS * TELLS / (rawPubMs / 1000)),
  tell_over_raw: +(rawPubMs / tellMs).toFixed(2),
};
console.log(JSON.stringify(out));
await c.close();
await nc.close();
node.stdin!.end();
await new Promise((r) => node.once("exit", r));
nats.kill("SIGTERM");
