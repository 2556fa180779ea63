// snipe dashboard: reads the API with the token the user pasted (session storage only,
// sent as a bearer header, so a cross-site page can never act with it); text is always
// inserted as text, never as HTML.
"use strict";
const KEY = "snipe-token";
const $ = (id) => document.getElementById(id);
const usd = (m) => m == null ? "" : "$" + (m / 1000).toFixed(2);

function token() { return sessionStorage.getItem(KEY); }

async function api(path, options = {}) {
  const headers = { authorization: "Bearer " + token(), ...(options.headers || {}) };
  const answer = await fetch(path, { ...options, headers, credentials: "omit" });
  if (answer.status === 401) { logout(); throw new Error("the token was refused"); }
  return answer;
}

function table(rows, columns) {
  const t = document.createElement("table");
  const head = t.insertRow();
  for (const [title] of columns) { const th = document.createElement("th"); th.textContent = title; head.appendChild(th); }
  for (const row of rows) {
    const tr = t.insertRow();
    for (const [, pick] of columns) tr.insertCell().textContent = pick(row);
  }
  if (!rows.length) { const tr = t.insertRow(); tr.insertCell().textContent = "none"; }
  return t;
}

function show(id, node) { const el = $(id); el.replaceChildren(node); }

async function refresh() {
  const status = await (await api("/api/status")).json();
  const mode = status.paused ? "paused" : status.mode;
  $("mode").textContent = (status.dry_run ? "dry run, " : "") + mode;
  $("mode").className = "badge " + mode;
  const why = status.halt_reason ? "HALTED: " + status.halt_reason
    : status.paused ? "Paused: " + status.paused
    : status.waiting ? "Waiting: " + status.waiting : "";
  $("why-not").textContent = why; $("why-not").hidden = !why;
  const budget = await (await api("/api/budget")).json();
  const caps = document.createElement("div");
  for (const cap of budget.caps) {
    const line = document.createElement("div");
    const used = cap.kind === "count" ? cap.used : usd(cap.used);
    const limit = cap.kind === "count" ? cap.limit : usd(cap.limit);
    line.textContent = `${cap.cap}: ${used} of ${limit}`;
    const bar = document.createElement("div"); bar.className = "bar";
    const fill = document.createElement("span");
    fill.style.width = Math.min(100, cap.limit ? 100 * cap.used / cap.limit : 0) + "%";
    bar.appendChild(fill); line.appendChild(bar); caps.appendChild(line);
  }
  show("budget", caps);
  const purchases = (await (await api("/api/purchases?limit=20")).json()).purchases;
  show("purchases", table(purchases, [["name", (p) => p.name], ["rule", (p) => p.rule],
    ["paid", (p) => usd(p.amount)], ["state", (p) => p.state]]));
  const unresolved = (await (await api("/api/unresolved")).json()).purchases;
  show("unresolved", table(unresolved, [["name", (p) => p.name], ["state", (p) => p.state],
    ["waiting for", (p) => p.reason || "the service's word"]]));
  const orders = await (await api("/api/orders")).json();
  show("orders", table(orders.orders, [["name", (o) => o.name], ["price", (o) => usd(o.price)],
    ["filled", (o) => `${o.filled}/${o.amount}`], ["state", (o) => o.state]]));
  show("skips", table(status.skips.slice(0, 8), [["rule", (s) => s.rule],
    ["reason", (s) => s.example], ["times", (s) => s.count]]));
}

async function follow() {
  // fetch, not EventSource: EventSource cannot send the bearer header
  let last = 0;
  for (;;) {
    try {
      const answer = await api("/api/events", { headers: { "last-event-id": String(last) } });
      const reader = answer.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, cut); buffer = buffer.slice(cut + 2);
          const id = /^id: (\d+)/m.exec(block); const data = /^data: (.*)$/m.exec(block);
          const kind = /^event: (.*)$/m.exec(block);
          if (!id || !data) continue;
          last = Number(id[1]);
          const item = document.createElement("li");
          const body = JSON.parse(data[1]);
          item.textContent = `${kind ? kind[1] : "event"}: ${body.name || body.action || body.reason || ""} ${body.outcome || ""}`;
          $("events").prepend(item);
          refresh().catch(() => {});
        }
      }
    } catch (e) { if (!token()) return; }
    await new Promise((r) => setTimeout(r, 3000)); // the engine restarts: try again
  }
}

async function control(action) {
  if (action === "stop" && !confirm("Stop snipe?")) return;
  const answer = await api("/api/" + action, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
  const body = await answer.json();
  $("answer").textContent = answer.ok ? action + ": done" : action + ": " + (body.error || answer.status);
  refresh().catch(() => {});
}

function start() {
  $("login").hidden = true; $("board").hidden = false;
  refresh().catch((e) => { $("answer").textContent = String(e.message || e); });
  setInterval(() => refresh().catch(() => {}), 10000);
  follow();
}

function logout() { sessionStorage.removeItem(KEY); $("login").hidden = false; $("board").hidden = true; }

$("login-form").addEventListener("submit", (e) => {
  e.preventDefault(); sessionStorage.setItem(KEY, $("token").value.trim()); $("token").value = ""; start();
});
$("logout").addEventListener("click", logout);
for (const b of document.querySelectorAll("[data-action]")) b.addEventListener("click", () => control(b.dataset.action));
if (token()) start();
