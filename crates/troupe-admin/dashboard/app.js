// The Troupe dashboard: reads this node's management API every second
// (GET with the bearer token) and draws the cluster, the shard map, the
// busiest actors (with charts of their waiting and service time), the
// stalls and the counters. Writes (drain, undrain, down, pause, resume)
// carry the CSRF token. Text only: every value goes in with textContent,
// never as markup.
"use strict";

const POLL_MS = (() => {
  const p = Number(new URLSearchParams(location.search).get("poll"));
  return Number.isFinite(p) && p >= 200 ? p : 1000;
})();
const HISTORY = 60;          // points per chart line
const CHART_ACTORS = 5;      // lines per chart
const COLOURS = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7"];

const state = {
  token: sessionStorage.getItem("troupe-token") || "",
  csrf: null,
  seen: new Set(),        // every node this page has seen
  owners: new Map(),      // node -> colour index
  history: new Map(),     // actor id -> {label, waiting: [], service: []}
  lastCounters: null,
  lastAt: 0,
  timer: null,
  self: null,
};

const $ = (id) => document.getElementById(id);

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function setStatus(text) { $("status").textContent = text; }

async function api(path, init) {
  const headers = { Authorization: "Bearer " + state.token };
  const opts = Object.assign({ headers, cache: "no-store" }, init || {});
  if (opts.method === "POST") {
    if (!state.csrf) {
      const c = await api("/api/v1/csrf");
      state.csrf = c.token;
    }
    headers["X-Troupe-Csrf"] = state.csrf;
    headers["Content-Type"] = "application/json";
  }
  const r = await fetch(path, opts);
  const body = await r.json().catch(() => ({}));
  if (!r.ok) {
    const e = new Error(body.error || ("HTTP " + r.status));
    e.status = r.status;
    throw e;
  }
  return body;
}

function colour(node) {
  if (!node) return "cnone";
  if (!state.owners.has(node)) state.owners.set(node, state.owners.size % COLOURS.length);
  return "c" + state.owners.get(node);
}

// ---- the cluster ----------------------------------------------------

function nodeStates(members, shards, controls) {
  // A member listed `down` (declared down lately) is not alive.
  const up = members.filter((m) => m.state !== "down");
  const alive = new Set(up.map((m) => m.name));
  const member = new Map(members.map((m) => [m.name, m]));
  for (const m of up) member.set(m.name, m);
  const known = new Set(state.seen);
  for (const m of members) known.add(m.name);
  const owned = new Map();
  const drained = new Set(), marked = new Set(), registered = new Set();
  for (const k of shards.kinds || []) {
    for (const n of k.members || []) { known.add(n); registered.add(n); }
    for (const s of k.map || []) {
      if (s.owner) { known.add(s.owner); owned.set(s.owner, (owned.get(s.owner) || 0) + 1); }
    }
  }
  for (const c of controls.kinds || []) {
    for (const n of c.drained || []) drained.add(n);
    for (const n of c.down || []) { marked.add(n); known.add(n); }
  }
  for (const n of known) state.seen.add(n);
  return [...known].sort().map((name) => {
    let st;
    if (marked.has(name)) st = "marked-down";
    else if (!alive.has(name)) st = registered.has(name) || owned.has(name) ? "down" : "left";
    else if (drained.has(name)) st = "drained";
    else st = "alive";
    const m = member.get(name);
    return {
      name, state: st, shards: owned.get(name) || 0, self: name === state.self,
      incarnation: m ? m.incarnation_hex : null,
      heartbeatMs: m ? m.heartbeat_ms : null,
      heardMs: m ? m.last_heartbeat_ms_ago : null,
      downAfterMs: m ? m.down_after_ms : null,
    };
  });
}

function actionButton(label, path, node) {
  const b = el("button", label);
  b.type = "button";
  b.dataset.action = label.toLowerCase().replace(/\s+/g, "-");
  b.dataset.node = node;
  b.addEventListener("click", () => act(path, { node }));
  return b;
}

function drawNodes(rows) {
  const tb = $("nodes").tBodies[0];
  tb.replaceChildren();
  for (const r of rows) {
    const tr = el("tr");
    tr.dataset.node = r.name;
    tr.dataset.state = r.state;
    const name = el("td");
    name.append(el("span", "", "swatch " + colour(r.name)), el("span", r.name));
    // Last heartbeat: its age as this node heard it ("self" for this node,
    // empty for one it does not hold); "late" once past halfway from the
    // heartbeat interval to the down detection (a beat is overdue).
    let heard = "", heardClass = "num heard";
    if (r.self) heard = "self";
    else if (r.heardMs !== null && r.heardMs !== undefined) {
      heard = r.heardMs + " ms ago";
      if (r.downAfterMs && r.heardMs * 2 > (r.heartbeatMs || 0) + r.downAfterMs) heardClass += " late";
    }
    const inc = r.incarnation === null || r.incarnation === undefined ? "" : String(r.incarnation);
    tr.append(name, el("td", r.state, "state-" + r.state), el("td", r.shards, "num"),
      el("td", inc, "num incarnation"), el("td", heard, heardClass), el("td", r.self ? "yes" : ""));
    const acts = el("td");
    if (r.state === "drained" || r.state === "marked-down") acts.append(actionButton("Undrain", "/api/v1/actions/undrain", r.name));
    else if (r.state === "alive") acts.append(actionButton("Drain", "/api/v1/actions/drain", r.name));
    if (r.state !== "marked-down" && r.state !== "left" && !r.self) acts.append(actionButton("Mark down", "/api/v1/actions/down", r.name));
    tr.append(acts);
    tb.append(tr);
  }
  const up = rows.filter((r) => r.state === "alive").length;
  $("cluster-summary").textContent = rows.length + " nodes, " + up + " alive";
}

async function act(path, body) {
  try {
    const r = await api(path, { method: "POST", body: JSON.stringify(body) });
    $("action-result").textContent = "done: " + JSON.stringify(r);
  } catch (e) {
    if (e.status === 403) state.csrf = null;
    $("action-result").textContent = "refused: " + e.message;
  }
  poll();
}

// ---- the shard map --------------------------------------------------

function drawShards(shards, controls) {
  const box = $("shard-kinds");
  box.replaceChildren();
  const paused = (controls.kinds || []).some((c) => c.paused);
  $("rebalancing").textContent = (controls.kinds || []).length === 0 ? "no sharded kind" : paused ? "paused" : "running";
  for (const k of shards.kinds || []) {
    const sec = el("div");
    sec.dataset.kind = k.kind;
    sec.append(el("h3", k.kind + " (" + k.shards + " shards, " + (k.settled ? "settled" : "moving") + ")"));
    const grid = el("div", null, "grid");
    const count = new Map();
    for (const s of k.map || []) {
      const c = el("div", null, "cell " + colour(s.owner));
      c.title = "shard " + s.shard + ": " + (s.owner || "no owner") + (s.entities !== null ? ", " + s.entities + " entities here" : "");
      c.dataset.owner = s.owner || "";
      grid.append(c);
      count.set(s.owner || "none", (count.get(s.owner || "none") || 0) + 1);
    }
    const legend = el("p", null, "legend");
    for (const [owner, n] of [...count.entries()].sort()) {
      const span = el("span");
      span.dataset.owner = owner;
      span.append(el("span", "", "swatch " + colour(owner === "none" ? null : owner)), el("span", owner + ": " + n));
      legend.append(span);
    }
    sec.append(grid, legend);
    if (k.store_error) sec.append(el("p", "store: " + k.store_error, "state-down"));
    box.append(sec);
  }
}

// ---- the busiest actors ---------------------------------------------

function drawActors(a) {
  const tb = $("actors").tBodies[0];
  tb.replaceChildren();
  const live = new Set();
  for (const x of (a.actors || []).slice(0, 10)) {
    const tr = el("tr");
    tr.append(
      el("td", x.name || ("#" + x.id)), el("td", x.type),
      el("td", x.arrival_rate.toFixed(1), "num"), el("td", x.throughput.toFixed(1), "num"),
      el("td", x.depth, "num"), el("td", x.waiting.p99_us.toFixed(1), "num"), el("td", x.service.p99_us.toFixed(1), "num"));
    tb.append(tr);
  }
  for (const x of (a.actors || []).slice(0, CHART_ACTORS)) {
    live.add(x.id);
    let h = state.history.get(x.id);
    if (!h) { h = { label: x.name || x.type, waiting: [], service: [] }; state.history.set(x.id, h); }
    h.waiting.push(x.waiting.p99_us);
    h.service.push(x.service.p99_us);
    if (h.waiting.length > HISTORY) { h.waiting.shift(); h.service.shift(); }
  }
  for (const id of [...state.history.keys()]) if (!live.has(id)) state.history.delete(id);
  chart($("chart-waiting"), "waiting");
  chart($("chart-service"), "service");
}

function chart(canvas, field) {
  const ctx = canvas.getContext("2d");
  const w = canvas.width, h = canvas.height, pad = 34;
  ctx.clearRect(0, 0, w, h);
  let max = 1;
  for (const s of state.history.values()) for (const v of s[field]) max = Math.max(max, v);
  ctx.strokeStyle = "#dde"; ctx.fillStyle = "#667"; ctx.font = "11px sans-serif";
  for (let i = 0; i <= 4; i++) {
    const y = pad / 2 + (h - pad) * i / 4;
    ctx.beginPath(); ctx.moveTo(pad, y); ctx.lineTo(w - 4, y); ctx.stroke();
    const v = max * (4 - i) / 4;
    ctx.fillText(max < 10 ? v.toFixed(1) : String(Math.round(v)), 2, y + 4);
  }
  let c = 0;
  for (const s of state.history.values()) {
    const pts = s[field];
    ctx.strokeStyle = COLOURS[c % COLOURS.length]; ctx.lineWidth = 2;
    ctx.beginPath();
    pts.forEach((v, i) => {
      const x = pad + (w - pad - 4) * (HISTORY - pts.length + i) / (HISTORY - 1);
      const y = pad / 2 + (h - pad) * (1 - v / max);
      if (i === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
    });
    ctx.stroke();
    ctx.fillStyle = ctx.strokeStyle;
    ctx.fillText(s.label.slice(0, 24), pad + 4 + 130 * c, h - 4);
    c++;
  }
}

// ---- stalls ---------------------------------------------------------

function drawStalls(w) {
  const ul = $("stalls");
  ul.replaceChildren();
  const ongoing = (w && w.stalls && w.stalls.ongoing) || [];
  const recent = (w && w.stalls && w.stalls.recent) || [];
  const cycles = (w && w.ask_cycles && w.ask_cycles.recent) || [];
  for (const s of ongoing) ul.append(el("li", "STALLED: " + (s.name || s.type) + " handling " + s.msg_type + " for " + s.running_ms.toFixed(0) + " ms (threshold " + s.threshold_ms.toFixed(0) + " ms) on " + s.pool + "#" + s.worker, "state-down"));
  for (const s of recent.slice(-5)) ul.append(el("li", (s.returned ? "returned: " : "stalled: ") + (s.name || s.type) + " / " + s.msg_type + ", " + s.running_ms.toFixed(0) + " ms"));
  for (const c of cycles.slice(-5)) ul.append(el("li", "ask cycle: " + c.text, "state-down"));
  const detected = w && w.stalls ? w.stalls.detected : 0;
  $("stall-summary").textContent = w ? ("stalls detected: " + detected + ", ongoing: " + ongoing.length + ", ask cycles: " + w.ask_cycles.detected + ", workers: " + w.workers.length) : "no actor system";
  const banner = $("stall-banner");
  banner.hidden = ongoing.length === 0 && cycles.length === 0;
  banner.textContent = ongoing.length ? ongoing.length + " handler(s) stalled right now" : cycles.length ? "ask cycles detected" : "";
}

// ---- counters -------------------------------------------------------

function flatten(stats) {
  const out = [];
  const add = (layer, o) => { for (const [k, v] of Object.entries(o || {})) if (typeof v === "number") out.push([layer, k, v]); };
  add("node", stats.node); add("cluster", stats.cluster); add("system", stats.system); add("persistence", stats.persistence);
  for (const [kind, o] of Object.entries(stats.sharding || {})) add("sharding " + kind, o);
  return out;
}

function drawCounters(stats) {
  const now = performance.now();
  const rows = flatten(stats);
  const last = state.lastCounters;
  const dt = (now - state.lastAt) / 1000;
  const tb = $("counters").tBodies[0];
  tb.replaceChildren();
  const all = $("all-counters").checked;
  let hidden = 0;
  for (const [layer, k, v] of rows) {
    const key = layer + "/" + k;
    const prev = last && last.get(key);
    if (!all && v === 0 && !prev) { hidden++; continue; }
    const rate = prev !== undefined && dt > 0 ? ((v - prev) / dt).toFixed(1) : "";
    const tr = el("tr");
    tr.dataset.counter = key;
    tr.append(el("td", layer), el("td", k), el("td", v, "num"), el("td", rate, "num"));
    tb.append(tr);
  }
  $("counters-hidden").textContent = hidden ? hidden + " counters at zero not shown" : "";
  state.lastCounters = new Map(rows.map(([l, k, v]) => [l + "/" + k, v]));
  state.lastAt = now;
}

// ---- registry -------------------------------------------------------

function drawRegistry(r) {
  const tb = $("registry").tBodies[0];
  tb.replaceChildren();
  if (!r) { $("registry-summary").textContent = "no cluster"; return; }
  for (const n of r.names) {
    const tr = el("tr");
    tr.dataset.name = n.name;
    tr.append(el("td", n.name), el("td", "name"), el("td", n.actor + "@" + n.node));
    tb.append(tr);
  }
  for (const g of r.groups) {
    const tr = el("tr");
    tr.dataset.group = g.group;
    tr.append(el("td", g.group), el("td", g.balanced ? "balanced group" : "group"), el("td", g.members.join(", ")));
    tb.append(tr);
  }
  $("registry-summary").textContent = r.names_total + " names, " + r.groups_total + " groups" + (r.truncated ? " (lists cut)" : "");
}

// ---- the loop -------------------------------------------------------

const optional = (p) => p.catch((e) => (e.status === 404 ? null : Promise.reject(e)));

async function poll() {
  if (!state.token) return;
  try {
    const [node, members, shards, controls, actors, stats, workers, registry] = await Promise.all([
      api("/api/v1/node"),
      optional(api("/api/v1/members")),
      api("/api/v1/shards").catch((e) => (e.status === 404 ? { kinds: [] } : Promise.reject(e))),
      api("/api/v1/controls"),
      optional(api("/api/v1/actors?top=10")),
      api("/api/v1/stats"),
      optional(api("/api/v1/workers")),
      optional(api("/api/v1/registry")),
    ]);
    state.self = node.node ? node.node.name : null;
    $("node-name").textContent = state.self ? "· " + state.self : "";
    drawNodes(nodeStates((members && members.members) || [], shards, controls));
    drawShards(shards, controls);
    drawActors(actors || { actors: [] });
    drawStalls(workers);
    drawCounters(stats);
    drawRegistry(registry);
    setStatus("connected, " + (node.ready ? "ready" : "not ready: " + node.not_ready_reason) + ", updated " + new Date().toLocaleTimeString());
    document.body.dataset.connected = "yes";
  } catch (e) {
    setStatus("error: " + e.message);
    document.body.dataset.connected = "no";
  }
}

function start() {
  if (state.timer) clearInterval(state.timer);
  poll();
  state.timer = setInterval(poll, POLL_MS);
}

document.addEventListener("DOMContentLoaded", () => {
  $("token").value = state.token;
  $("login").addEventListener("submit", (ev) => {
    ev.preventDefault();
    state.token = $("token").value.trim();
    state.csrf = null;
    sessionStorage.setItem("troupe-token", state.token);
    start();
  });
  $("all-counters").addEventListener("change", poll);
  $("pause").addEventListener("click", () => act("/api/v1/actions/rebalancing/pause", {}));
  $("resume").addEventListener("click", () => act("/api/v1/actions/rebalancing/resume", {}));
  if (state.token) start();
});
