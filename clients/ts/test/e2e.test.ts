// End to end: a real nats-server and a real Rust node (the cart_node
// example of troupe-remote), driven by this client, as
// clients/python/tests/test_e2e.py. Skips with one line where nats-server
// or the node binary is missing (TROUPE_REQUIRE_NATS=1 makes a missing
// nats-server a failure, as in CI). Every wait is bounded.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer, connect as tcp } from "node:net";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { BadFrame, Client, MessageType, NoResponders, Schema, SchemaMismatch, UnknownTarget, fingerprintOfShape } from "../src/index.js";

const SECRET = "e2e-secret";
const ROOT = fileURLToPath(new URL("../../../../", import.meta.url));

function natsServer(): string | null {
  for (const p of (process.env.PATH ?? "").split(":").map((d) => `${d}/nats-server`).concat(["/usr/sbin/nats-server"]))
    if (existsSync(p)) return p;
  if (process.env.TROUPE_REQUIRE_NATS === "1") throw new Error("nats-server is required (TROUPE_REQUIRE_NATS=1) and missing");
  return null;
}
const server = natsServer();
const nodeBin = process.env.TROUPE_CART_NODE ?? `${ROOT}target/debug/examples/cart_node`;
const skip = !server ? "nats-server not found: skipping the end-to-end tests"
  : !existsSync(nodeBin) ? "no cart_node binary (cargo build -p troupe-remote --example cart_node, or set TROUPE_CART_NODE)" : false;
if (skip) console.log(`# ${skip}`);

const freePort = () => new Promise<number>((ok, no) => {
  const s = createServer().listen(0, "127.0.0.1", () => { const p = (s.address() as any).port; s.close(() => ok(p)); }).on("error", no);
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** A bound for a race: unref'd, so a lost race does not keep the process alive. */
const bound = (ms: number) => new Promise((r) => setTimeout(r, ms).unref());
async function waitPort(port: number, ms: number) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await new Promise<boolean>((ok) => { const c = tcp(port, "127.0.0.1", () => { c.end(); ok(true); }).on("error", () => ok(false)); })) return;
    await sleep(50);
  }
  throw new Error(`nats-server not listening within ${ms} ms`);
}

let url = "", schema: Schema, nats: ChildProcess, node: ChildProcess;

before(async () => {
  if (skip) return;
  const port = await freePort();
  nats = spawn(server!, ["-a", "127.0.0.1", "-p", String(port)], { stdio: "ignore" });
  url = `nats://127.0.0.1:${port}`;
  await waitPort(port, 30000);
  node = spawn(nodeBin, [url, "shop", SECRET], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: node.stdout! })[Symbol.asyncIterator]();
  const line = async () => {
    const r = await Promise.race([lines.next(), bound(60000).then(() => { throw new Error("cart_node silent for 60 s"); })]);
    return (r as IteratorResult<string>).value as string;
  };
  schema = Schema.parse(await line());
  assert.equal((await line()).trim(), "ready");
}, { timeout: 120000 });

after(async () => {
  if (skip) return;
  node?.stdin?.end();
  const exited = (p: ChildProcess) => new Promise((r) => p.exitCode !== null ? r(0) : p.once("exit", r));
  const t0 = Date.now();
  await Promise.race([exited(node), bound(20000)]);
  console.log(`# cart_node exited in ${Date.now() - t0} ms (code ${node.exitCode})`);
  if (node.exitCode === null) node.kill("SIGKILL");
  nats?.kill("SIGTERM");
  await Promise.race([exited(nats), bound(20000)]);
});

const T = { skip, timeout: 60000 };

test("add items then read the cart", T, async () => {
  const add = schema.message("cart", "shop.cart.Add"), get = schema.message("cart", "shop.cart.Get");
  assert.ok(schema.portable("cart", "shop.cart.Add"));
  const c = await Client.connect({ servers: url, name: "ts-e2e", secret: SECRET });
  try {
    for (const qty of [1, 2, 3]) await c.tell("shop", "cart", add, { cart: "c-1", item: "tea", qty });
    await c.tell("shop", "cart", add, { cart: "c-1", item: "milk", qty: 1 });
    // Tells and asks travel on different paths: wait for the lines.
    const deadline = Date.now() + 20000;
    let lines: any;
    for (;;) {
      lines = await c.ask("shop", "cart", get, { cart: "c-1" }, 10000);
      if (lines.reduce((n: number, l: any) => n + l.qty, 0) === 7 || Date.now() > deadline) break;
      await sleep(50);
    }
    assert.deepEqual(lines, [{ item: "tea", qty: 6 }, { item: "milk", qty: 1 }]);
    assert.deepEqual(await c.ask("shop", "cart", get, { cart: "nobody" }, 10000), []);
    assert.equal(c.stats.tellsSent, 4);
    assert.equal(c.stats.badFrames, 0);
    assert.equal(c.stats.unauthenticated, 0);
  } finally { await c.close(); }
});

test("an unknown actor and an unknown node are NoResponders", T, async () => {
  const get = schema.message("cart", "shop.cart.Get");
  const c = await Client.connect({ servers: url, name: "ts-e2e-2", secret: SECRET });
  try {
    await assert.rejects(c.ask("shop", "no-such-actor", get, { cart: "c-1" }, 10000), UnknownTarget);
    await assert.rejects(c.ask("no-such-node", "cart", get, { cart: "c-1" }, 10000), NoResponders);
  } finally { await c.close(); }
});

test("a wrong shape is a SchemaMismatch", T, async () => {
  const right = schema.message("cart", "shop.cart.Get");
  // The shape an outdated client believes in: {cart: u64}.
  const wrong = new MessageType("shop.cart.Get", 0n, fingerprintOfShape("struct{cart:u64}"));
  const c = await Client.connect({ servers: url, name: "ts-e2e-3", secret: SECRET });
  try {
    await assert.rejects(c.ask("shop", "cart", wrong, { cart: 7 }, 10000), (e: unknown) => {
      assert.ok(e instanceof SchemaMismatch);
      assert.equal(e.fingerprint, right.askFingerprint);
      return true;
    });
  } finally { await c.close(); }
});

test("a wrong key is refused", T, async () => {
  const get = schema.message("cart", "shop.cart.Get");
  const c = await Client.connect({ servers: url, name: "ts-e2e-4", secret: "not-the-secret" });
  try {
    await assert.rejects(c.ask("shop", "cart", get, { cart: "c-1" }, 10000), BadFrame);
  } finally { await c.close(); }
});
