// SPDX-License-Identifier: MIT (snipe's own code, the licence of the package; no third-party
// code is shipped with the dashboard)
// snipe dashboard: reads the API with the token the user pasted (session storage only,
// sent as a bearer header, so a cross-site page can never act with it); text is always
// inserted as text, never as HTML. While the engine restarts, every read fails: the page
// says "reconnecting", keeps what it last showed, and tries again.
"use strict";
const KEY = "snipe-token";
const POLL_MS = 5000;
const $ = (id) => document.getElementById(id);
const usd = (m) => m == null ? "" : "$" + (m / 1000).toFixed(2);
const when = (t) => t == null ? "" : new Date(t * 1000).toISOString().slice(5, 19).replace("T", " ");

function token() { return sessionStorage.getItem(KEY); }

class Refused extends Error {}

async function api(path, options = {}) {
  const headers = { authorization: "Bearer " + token(), ...(options.headers || {}) };
  const answer = await fetch(path, { ...options, headers, credentials: "omit" });
  if (answer.status === 401) { logout("the token was refused"); throw new Refused("the token was refused"); }
  return answer;
}

async function read(path) {
  const answer = await api(path);
  if (!answer.ok) throw new Error(path + ": " + answer.status);
  return answer.json();
}

function link(state) {
  // "live": the event stream is open; "polling": reads work, the stream is not open yet;
  // "reconnecting": the engine does not answer (restarting, or the network is down)
  $("link").textContent = state;
  $("link").className = "badge link " + state;
}

function table(rows, columns) {
  const t = document.createElement("table");
  const head = t.insertRow();
  for (const [title] of columns) { const th = document.createElement("th"); th.textContent = title; head.appendChild(th); }
  for (const row of rows) {
    const tr = t.insertRow();
    for (const [title, pick] of columns) { const td = tr.insertCell(); td.textContent = pick(row); td.dataset.label = title; }
  }
  if (!rows.length) { const tr = t.insertRow(); tr.className = "empty"; tr.insertCell().textContent = "none"; }
  return t;
}

function show(id, node) { $(id).replaceChildren(node); }

const WAITS = {
  INTENT: "the buy request's answer (written before it was sent)",
  UNKNOWN: "the service's word by project id (the answer was lost)",
};

function feedText(status) {
  // the live listing feed, once the engine reports one; until then it searches snapshots
  const feed = status.feed;
  if (feed == null) return "snapshot";
  if (typeof feed === "string") return "feed: " + feed;
  return "feed: " + (feed.state || feed.mode || "on");
}

function gateText(status) {
  if (status.mode === "starting") return "gate: waiting" + (status.waiting ? " (" + status.waiting + ")" : "");
  if (status.buying_since != null) return "gate: open since " + when(status.buying_since);
  return "gate: " + status.mode;
}

function showState(status) {
  const mode = status.paused ? "paused" : status.mode;
  $("mode").textContent =
    (status.paper ? "PAPER (nothing is bought), " : status.dry_run ? "dry run, " : "") + mode;
  $("mode").className = "badge " + mode;
  $("feed").textContent = feedText(status);
  $("gate").textContent = gateText(status);
  const why = status.halt_reason ? "HALTED: " + status.halt_reason
    : status.paused ? "Paused: " + status.paused
    : status.waiting ? "Waiting: " + status.waiting : "";
  $("why-not").textContent = why; $("why-not").hidden = !why;
  $("counts").textContent = `${status.searches} searches, ${status.listings_seen} listings seen, `
    + `${status.candidates} candidates, ${status.orders_live} buy orders live`;
}

function showBudget(budget) {
  const caps = document.createElement("div");
  for (const cap of budget.caps) {
    const line = document.createElement("div");
    line.className = "cap";
    const used = cap.kind === "count" ? cap.used : usd(cap.used);
    const limit = cap.kind === "count" ? cap.limit : usd(cap.limit);
    line.textContent = `${cap.cap}: ${used} of ${limit}`;
    const bar = document.createElement("div"); bar.className = "bar";
    const fill = document.createElement("span");
    const share = cap.limit ? 100 * cap.used / cap.limit : 0;
    fill.style.width = Math.min(100, share) + "%";
    if (share >= 90) fill.className = "full";
    bar.appendChild(fill); line.appendChild(bar); caps.appendChild(line);
  }
  show("budget", caps);
}

function svg(name, attributes, parent) {
  // the namespace of the page's own <svg> element: no address written here
  const node = document.createElementNS($("chart").namespaceURI, name);
  for (const [k, v] of Object.entries(attributes)) node.setAttribute(k, String(v));
  if (parent) parent.appendChild(node);
  return node;
}

function chart(history) {
  // drawn here, no library: two step lines, running cost and running value, over time
  const W = 600, H = 220, L = 56, R = 10, T = 10, B = 28;
  const box = $("chart");
  box.replaceChildren();
  box.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg("title", {}, box).textContent = "spend and value over time";
  const points = history.points;
  if (!points.length) {
    svg("text", { x: W / 2, y: H / 2, "text-anchor": "middle", class: "muted" }, box).textContent = "nothing held yet";
    return;
  }
  const t0 = points[0].at, t1 = Math.max(history.now, points[points.length - 1].at, t0 + 1);
  const top = Math.max(1, ...points.map((p) => Math.max(p.spent, p.value))) * 1.1;
  const x = (t) => L + (W - L - R) * (t - t0) / (t1 - t0);
  const y = (m) => T + (H - T - B) * (1 - m / top);
  for (let i = 0; i <= 4; i++) {
    const m = top * i / 4;
    svg("line", { x1: L, x2: W - R, y1: y(m), y2: y(m), class: "grid" }, box);
    svg("text", { x: L - 4, y: y(m) + 4, "text-anchor": "end", class: "axis" }, box).textContent = usd(Math.round(m));
  }
  svg("text", { x: L, y: H - 8, class: "axis" }, box).textContent = when(t0);
  svg("text", { x: W - R, y: H - 8, "text-anchor": "end", class: "axis" }, box).textContent = when(t1);
  for (const [key, cls] of [["spent", "spent"], ["value", "value"]]) {
    let d = `M ${x(t0)} ${y(0)}`;
    for (const p of points) d += ` H ${x(p.at).toFixed(1)} V ${y(p[key]).toFixed(1)}`;
    d += ` H ${x(t1)}`;
    svg("path", { d, class: "line " + cls, fill: "none" }, box);
  }
}

function showHistory(history) {
  const last = history.points[history.points.length - 1] || { spent: 0, value: 0 };
  chart(history);
  const unvalued = history.unvalued ? `; ${history.unvalued} without a value counted at cost` : "";
  $("chart-legend").textContent = `spent ${usd(last.spent)}, worth ${usd(last.value)} by ${history.value_by}${unvalued}`;
}

async function refresh() {
  const status = await read("/api/status");
  showState(status);
  showBudget(await read("/api/budget"));
  const purchases = (await read("/api/purchases?limit=20")).purchases;
  show("purchases", table(purchases, [["when", (p) => when(p.created_at)], ["name", (p) => p.name],
    ["rule", (p) => p.rule], ["paid", (p) => usd(p.charged_price ?? p.amount)], ["state", (p) => p.state]]));
  const unresolved = (await read("/api/unresolved")).purchases;
  show("unresolved", table(unresolved, [["name", (p) => p.name], ["state", (p) => p.state],
    ["since", (p) => when(p.created_at)], ["waiting for", (p) => p.reason || WAITS[p.state] || "the service's word"]]));
  const orders = await read("/api/orders");
  show("orders", table(orders.orders, [["name", (o) => o.name], ["price", (o) => usd(o.price)],
    ["filled", (o) => `${o.filled}/${o.amount}`], ["state", (o) => o.state]]));
  show("skips", table(status.skips.slice(0, 8), [["rule", (s) => s.rule],
    ["reason", (s) => s.example], ["times", (s) => s.count]]));
  showHistory(await read("/api/history"));
  $("updated").textContent = "updated " + new Date().toISOString().slice(11, 19) + " UTC";
}

let streaming = false;

async function poll() {
  try { await refresh(); if (!streaming) link("polling"); }
  catch (e) { if (!(e instanceof Refused)) link("reconnecting"); }
}

function event(block) {
  const id = /^id: (\d+)/m.exec(block); const data = /^data: (.*)$/m.exec(block);
  const kind = /^event: (.*)$/m.exec(block);
  if (!id || !data) return null;
  const body = JSON.parse(data[1]);
  const item = document.createElement("li");
  const what = [body.name || body.action || body.reason || "", body.outcome || "", body.error || ""];
  item.textContent = `${when(body.at)} ${kind ? kind[1] : "event"}: ${what.join(" ").trim()}`;
  $("events").prepend(item);
  while ($("events").children.length > 50) $("events").lastChild.remove();
  return Number(id[1]);
}

async function follow() {
  // fetch, not EventSource: EventSource cannot send the bearer header
  let last = 0;
  while (token()) {
    try {
      const answer = await api("/api/events", { headers: { "last-event-id": String(last) } });
      if (!answer.ok) throw new Error("events: " + answer.status);
      streaming = true; link("live");
      const reader = answer.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const seen = event(buffer.slice(0, cut)); buffer = buffer.slice(cut + 2);
          if (seen != null) { last = seen; poll(); }
        }
      }
    } catch (e) { if (e instanceof Refused) return; }
    streaming = false; link("reconnecting");
    await new Promise((r) => setTimeout(r, 2000)); // the engine restarts: try again
  }
}

async function control(action) {
  if (action === "stop" && !confirm("Stop snipe?")) return;
  const note = $("answer");
  try {
    const answer = await api("/api/" + action, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    let body = {};
    try { body = await answer.json(); } catch (e) { /* not JSON: the status says enough */ }
    const ok = answer.ok && body.reloaded !== false;
    note.textContent = ok ? action + ": done" : action + " refused: " + (body.error || answer.status);
    note.className = ok ? "note" : "note alert";
  } catch (e) {
    note.textContent = action + ": no answer (" + (e.message || e) + ")"; note.className = "note alert";
  }
  poll();
}

let timer = null;

function start() {
  $("login").hidden = true; $("board").hidden = false; $("login-note").textContent = "";
  link("connecting");
  poll();
  timer = setInterval(poll, POLL_MS);
  follow();
}

function logout(why) {
  sessionStorage.removeItem(KEY); clearInterval(timer); streaming = false;
  $("login").hidden = false; $("board").hidden = true;
  $("login-note").textContent = why || "";
  link("signed out");
}

$("login-form").addEventListener("submit", (e) => {
  e.preventDefault(); sessionStorage.setItem(KEY, $("token").value.trim()); $("token").value = ""; start();
});
$("logout").addEventListener("click", () => logout(""));
for (const b of document.querySelectorAll("[data-action]")) b.addEventListener("click", () => control(b.dataset.action));
if (token()) start();
