// End to end, sharded entities: a real nats-server (JetStream on) and a
// Rust cluster of two nodes (troupe-sharding's cart_gateway example)
// serving the shop's carts, called by kind and id through either node's
// shard gateway, as clients/python/tests/test_entities.py. Skips with one
// line where nats-server or the node binary is missing. Every wait is bounded.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { createServer, connect as tcp } from "node:net";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { Client, EntityRefused, NoResponders, UnknownType } from "../src/index.js";

const SECRET = "e2e-secret";
const ROOT = fileURLToPath(new URL("../../../../", import.meta.url));

function natsServer(): string | null {
  for (const p of (process.env.PATH ?? "").split(":").map((d) => `${d}/nats-server`).concat(["/usr/sbin/nats-server"]))
    if (existsSync(p)) return p;
  if (process.env.TROUPE_REQUIRE_NATS === "1") throw new Error("nats-server is required (TROUPE_REQUIRE_NATS=1) and missing");
  return null;
}
const server = natsServer();
const nodeBin = process.env.TROUPE_CART_GATEWAY ?? `${ROOT}target/debug/examples/cart_gateway`;
const skip = !server ? "nats-server not found: skipping the entity end-to-end tests"
  : !existsSync(nodeBin) ? "no cart_gateway binary (cargo build -p troupe-sharding --example cart_gateway, or set TROUPE_CART_GATEWAY)" : false;
if (skip) console.log(`# ${skip}`);

const freePort = () => new Promise<number>((ok, no) => {
  const s = createServer().listen(0, "127.0.0.1", () => { const p = (s.address() as any).port; s.close(() => ok(p)); }).on("error", no);
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const bound = (ms: number) => new Promise((r) => setTimeout(r, ms).unref());
async function waitPort(port: number, ms: number) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await new Promise<boolean>((ok) => { const c = tcp(port, "127.0.0.1", () => { c.end(); ok(true); }).on("error", () => ok(false)); })) return;
    await sleep(50);
  }
  throw new Error(`nats-server not listening within ${ms} ms`);
}

let url = "", nats: ChildProcess, store = "";
const nodes: ChildProcess[] = [];

before(async () => {
  if (skip) return;
  const port = await freePort();
  store = mkdtempSync(`${tmpdir()}/troupe-ts-entities-`);
  nats = spawn(server!, ["-js", "-sd", store, "-a", "127.0.0.1", "-p", String(port)], { stdio: "ignore" });
  url = `nats://127.0.0.1:${port}`;
  await waitPort(port, 30000);
  await Promise.all(["a", "b"].map(async (name) => {
    const node = spawn(nodeBin, [url, name, "2", SECRET], { stdio: ["pipe", "pipe", "inherit"] });
    nodes.push(node);
    const lines = createInterface({ input: node.stdout! })[Symbol.asyncIterator]();
    const r = await Promise.race([lines.next(), bound(60000).then(() => { throw new Error(`cart_gateway ${name} silent for 60 s`); })]);
    assert.equal(((r as IteratorResult<string>).value ?? "").trim(), "ready");
  }));
}, { timeout: 120000 });

after(async () => {
  if (skip) return;
  const exited = (p: ChildProcess) => new Promise((r) => p.exitCode !== null ? r(0) : p.once("exit", r));
  for (const n of nodes) n.stdin?.end();
  await Promise.race([Promise.all(nodes.map(exited)), bound(20000)]);
  for (const n of nodes) if (n.exitCode === null) n.kill("SIGKILL");
  nats?.kill("SIGTERM");
  await Promise.race([exited(nats), bound(20000)]);
  rmSync(store, { recursive: true, force: true });
});

const T = { skip, timeout: 60000 };

test("tell a cart through one node, read it through the other", T, async () => {
  const c = await Client.connect({ servers: url, name: "ts-entities", secret: SECRET });
  try {
    for (let i = 0; i < 8; i++) { // spread over the shards of both nodes
      const via = "ab"[i % 2];
      for (const [sku, qty] of [["tea", 2], ["milk", 1], ["tea", 3]] as const)
        await c.tellEntity(via, "cart", `ts-cart-${i}`, "shop.cart.AddItem", { sku, qty });
    }
    for (let i = 0; i < 8; i++) {
      const other = "ba"[i % 2], id = `ts-cart-${i}`;
      const deadline = Date.now() + 20000;
      let n: any;
      for (;;) {
        n = await c.askEntity(other, "cart", id, "shop.cart.Count", null, 10000);
        if (n >= 3 || Date.now() > deadline) break;
        await sleep(50);
      }
      assert.equal(n, 3);
      assert.deepEqual(await c.askEntity(other, "cart", id, "shop.cart.Lines", null, 10000),
        [{ sku: "tea", qty: 5 }, { sku: "milk", qty: 1 }]);
    }
    assert.deepEqual(await c.askEntity("a", "cart", "ts-nobody", "shop.cart.Lines", null), []);
    assert.equal(c.stats.badFrames + c.stats.badReplies + c.stats.unauthenticated, 0);
  } finally { await c.close(); }
});

test("the gateway's refusals are typed errors", T, async () => {
  const c = await Client.connect({ servers: url, name: "ts-entities-bad", secret: SECRET });
  const refused = (reason: string) => (e: unknown) => e instanceof EntityRefused && e.reason === reason && e.executed === false;
  try {
    await assert.rejects(c.askEntity("a", "no-such-kind", "c-1", "shop.cart.Lines", null), refused("UnknownKind"));
    await assert.rejects(c.askEntity("b", "cart", "c-1", "shop.cart.Nothing", null), UnknownType);
    await assert.rejects(c.askEntity("a", "cart", "", "shop.cart.Lines", null), refused("BadId"));
    await assert.rejects(c.askEntity("a", "cart", "c-1", "shop.cart.Lines", { x: 1 }), refused("Undecodable"));
    await assert.rejects(c.askEntity("no-such-node", "cart", "c-1", "shop.cart.Lines", null), NoResponders);
  } finally { await c.close(); }
});
