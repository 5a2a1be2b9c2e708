// The dashboard in a real browser: Debian's chromium (/usr/bin/chromium,
// or $CHROMIUM), driven by playwright-core, against three node processes
// (examples/admin_node.rs, built beforehand: $ADMIN_NODE_BIN) on a real
// nats-server with JetStream. Steps: the page loads and shows three
// nodes alive; one is killed with SIGKILL and the page shows it down; one
// is drained from the page and its shards move; writes without the CSRF
// token or from another Origin are refused; SIGTERM makes a node leave
// gracefully. Screenshots go to book/src/img/ (the guide's production
// chapter). Every wait is bounded; the whole run is bounded by the
// caller's `timeout` too.
import { chromium } from "playwright-core";
import { spawn } from "node:child_process";
import { mkdtempSync, existsSync, mkdirSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import assert from "node:assert/strict";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "../../..");
const TOKEN = "browser-test-token-0123456789";
const BIN = process.env.ADMIN_NODE_BIN || join(root, "target/debug/examples/admin_node");
const NATS = process.env.NATS_SERVER || (existsSync("/usr/sbin/nats-server") ? "/usr/sbin/nats-server" : "nats-server");
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const IMG = join(root, "book/src/img");
const LIMIT = 30_000;
const children = [];
const t0 = Date.now();
const log = (m) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1)}s] ${m}`);

function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => ok(p)); });
    s.on("error", fail);
  });
}

function start(cmd, args, name, env) {
  const c = spawn(cmd, args, { env: Object.assign({}, process.env, env || {}), stdio: ["ignore", "pipe", "pipe"] });
  c.name = name;
  c.out = "";
  c.exited = new Promise((ok) => c.on("exit", (code, signal) => ok({ code, signal })));
  c.stdout.on("data", (d) => { c.out += d; });
  c.stderr.on("data", (d) => { c.out += d; });
  children.push(c);
  return c;
}

async function until(what, f, limit = LIMIT) {
  const end = Date.now() + limit;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error("timed out waiting for " + what);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function node(nats, name, extra) {
  const port = await freePort();
  const c = start(BIN, [nats, name, String(port), ...extra], name, { TROUPE_ADMIN_TOKEN: TOKEN, RUST_LOG: "warn" });
  await until(name + " ready", () => c.out.includes("ready http://") || c.exitCode !== null);
  assert.ok(c.out.includes("ready http://"), name + " did not start: " + c.out);
  c.url = `http://127.0.0.1:${port}`;
  return c;
}

async function main() {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: cargo build -p troupe-admin --example admin_node`);
  mkdirSync(IMG, { recursive: true });
  const natsPort = await freePort();
  const store = mkdtempSync(join(tmpdir(), "troupe-browser-"));
  const nats = start(NATS, ["-js", "-a", "127.0.0.1", "-p", String(natsPort), "-sd", store], "nats");
  const natsUrl = `nats://127.0.0.1:${natsPort}`;
  await until("nats-server", async () => {
    const net = await import("node:net");
    return new Promise((ok) => { const s = net.connect(natsPort, "127.0.0.1", () => { s.end(); ok(true); }); s.on("error", () => ok(false)); });
  });
  log("nats-server up");
  const n1 = await node(natsUrl, "n1", ["--entities", "200", "--load", "--stall"]);
  const n2 = await node(natsUrl, "n2", []);
  const n3 = await node(natsUrl, "n3", []);
  log("three nodes up");

  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu"] });
  const page = await browser.newPage({ viewport: { width: 1400, height: 1100 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  // Every failed answer but the browser's own favicon probe and the
  // deliberate refusal below.
  page.on("response", (r) => {
    const u = new URL(r.url());
    if (r.status() >= 400 && u.pathname !== "/favicon.ico" && !(r.status() === 403 && u.pathname === "/api/v1/actions/undrain")) errors.push(r.status() + " " + u.pathname);
  });
  const doc = await page.goto(n1.url + "/?poll=500");
  const csp = doc.headers()["content-security-policy"];
  assert.ok(csp && csp.includes("default-src 'none'"), "a strict CSP: " + csp);
  await page.fill("#token", TOKEN);
  await page.click("#connect");
  const rows = page.locator("#nodes tbody tr");
  await until("three nodes alive", async () =>
    (await page.locator('#nodes tbody tr[data-state="alive"]').count()) === 3);
  await until("a settled shard map with three owners", async () =>
    (await page.locator("#shard-kinds .legend span[data-owner]").count()) === 3 &&
    (await page.locator("#shard-kinds h3").textContent()).includes("settled"));
  await until("the charts have points", async () => (await page.locator("#actors tbody tr").count()) > 0);
  // The stall warning: the sluggish actor's 900 ms handler, reported.
  await until("a stall reported", async () =>
    (await page.locator("#stall-summary").textContent()).match(/stalls detected: [1-9]/));
  await page.waitForTimeout(1500); // a few more chart points
  assert.equal(await rows.count(), 3);
  // Each row's incarnation, and a peer's last heartbeat as n1 heard it.
  for (const n of ["n1", "n2", "n3"]) {
    const inc = await page.locator(`#nodes tbody tr[data-node="${n}"] td.incarnation`).textContent();
    assert.match(inc, /^[0-9a-f]{16}$/, n + " incarnation: " + inc);
  }
  assert.equal(await page.locator('#nodes tbody tr[data-node="n1"] td.heard').textContent(), "self");
  const heard = await page.locator('#nodes tbody tr[data-node="n2"] td.heard').textContent();
  assert.match(heard, /^[0-9]+ ms ago$/, "n2 last heartbeat: " + heard);
  await page.screenshot({ path: join(IMG, "dashboard-cluster.png"), fullPage: true });
  log("page shows three nodes alive (screenshot)");

  // SIGKILL n3: the page shows it down, and its shards go to the others.
  n3.kill("SIGKILL");
  await until("n3 down", async () =>
    (await page.locator('#nodes tbody tr[data-node="n3"]').getAttribute("data-state")) === "down");
  await until("n3's shards taken over", async () =>
    (await page.locator('#shard-kinds .legend span[data-owner="n3"]').count()) === 0 &&
    (await page.locator('#shard-kinds .legend span[data-owner="none"]').count()) === 0);
  await page.screenshot({ path: join(IMG, "dashboard-node-down.png"), fullPage: true });
  log("n3 killed: shown down, shards moved (screenshot)");

  // Drain n2 from the page: its shards move to n1.
  await page.click('#nodes tbody tr[data-node="n2"] button[data-action="drain"]');
  await until("n2 drained", async () =>
    (await page.locator('#nodes tbody tr[data-node="n2"]').getAttribute("data-state")) === "drained");
  await until("n2's shards moved", async () =>
    (await page.locator('#shard-kinds .legend span[data-owner="n2"]').count()) === 0 &&
    (await page.locator('#shard-kinds .legend span[data-owner="none"]').count()) === 0);
  const result = await page.locator("#action-result").textContent();
  assert.ok(result.startsWith("done"), result);
  await page.screenshot({ path: join(IMG, "dashboard-drained.png"), fullPage: true });
  log("n2 drained from the page: its shards moved to n1 (screenshot)");

  // Writes without the CSRF token, or from another Origin, are refused.
  const noCsrf = await page.evaluate(async (token) => {
    const r = await fetch("/api/v1/actions/undrain", { method: "POST", headers: { Authorization: "Bearer " + token, "Content-Type": "application/json" }, body: '{"node":"n2"}' });
    return [r.status, (await r.json()).error];
  }, TOKEN);
  assert.equal(noCsrf[0], 403, "no CSRF token: " + noCsrf);
  const csrf = (await (await fetch(n1.url + "/api/v1/csrf", { headers: { Authorization: "Bearer " + TOKEN } })).json()).token;
  const evil = await fetch(n1.url + "/api/v1/actions/undrain", {
    method: "POST",
    headers: { Authorization: "Bearer " + TOKEN, "X-Troupe-Csrf": csrf, Origin: "http://evil.example", "Content-Type": "application/json" },
    body: '{"node":"n2"}',
  });
  assert.equal(evil.status, 403, "a foreign Origin");
  const noToken = await fetch(n1.url + "/api/v1/shards");
  assert.equal(noToken.status, 401);
  assert.equal(noToken.headers.get("access-control-allow-origin"), null);
  log("CSRF-less, foreign-Origin and token-less requests refused");

  // SIGTERM n2: a graceful leave (exit 0, "left gracefully"); the page
  // shows it gone.
  n2.kill("SIGTERM");
  const ex = await Promise.race([n2.exited, new Promise((r) => setTimeout(() => r(null), LIMIT))]);
  assert.ok(ex, "n2 did not exit after SIGTERM");
  assert.equal(ex.code, 0, "n2's exit: " + JSON.stringify(ex) + "\n" + n2.out);
  assert.ok(n2.out.includes("left gracefully"), n2.out);
  // It took its name out of the member list: shown left, not down.
  await until("n2 shown left", async () =>
    (await page.locator('#nodes tbody tr[data-node="n2"]').getAttribute("data-state")) === "left");
  await page.screenshot({ path: join(IMG, "dashboard-left.png"), fullPage: true });
  log("n2 left gracefully on SIGTERM");
  assert.deepEqual(errors, [], "errors in the page");
  await browser.close();
  const ms = Date.now() - t0;
  log(`passed in ${(ms / 1000).toFixed(1)} s`);
}

let failed = false;
try {
  await main();
} catch (e) {
  failed = true;
  console.error("FAILED:", e && e.stack || e);
  for (const c of children) console.error(`--- ${c.name} ---\n${c.out.slice(-3000)}`);
} finally {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
}
process.exit(failed ? 1 : 0);
