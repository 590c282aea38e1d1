/* occustream dashboard — plain JS, no build step. Reads /api/* with a bearer token. */
(function () {
  "use strict";
  const PALETTES = {
    cb: ["#313695", "#4575b4", "#74add1", "#abd9e9", "#e0f3f8", "#fee090", "#fdae61", "#f46d43", "#d73027", "#a50026"],
    viridis: ["#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89", "#35b779", "#6ece58", "#b5de2b", "#fde725"],
    classic: ["#006837", "#1a9850", "#66bd63", "#a6d96a", "#d9ef8b", "#fee08b", "#fdae61", "#f46d43", "#d73027", "#a50026"],
  };
  const NO_BASELINE = "#c9ced6";
  const NS = "http://www.w3.org/2000/svg";
  const $ = (id) => document.getElementById(id);
  const state = {
    token: null, role: null, site: null, mechs: [], mech: null, meta: {},
    building: null, floor: null, snapshot: null, ticks: [], live: true, playing: null,
    incidents: [], selected: null, palette: localStorage.getItem("occ.palette") || "cb",
    scale: localStorage.getItem("occ.scale") || "auto", legendMode: null,
    es: null, locIndex: {},
  };
  window.__occustream = state; // for tests and debugging; holds released data only

  // ---------- helpers ----------
  function fmtTime(t) {
    if (t === null || t === undefined) return "—";
    const d = new Date(t * 1000);
    return d.toISOString().slice(0, 16).replace("T", " ") + " UTC";
  }
  function fmtHM(t) { return new Date(t * 1000).toISOString().slice(11, 16); }
  function dayOf(t) { return new Date(t * 1000).toISOString().slice(0, 10); }
  function num(v, d = 1) { return v === null || v === undefined ? "—" : Number(v).toFixed(d); }
  function esc(s) { return String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c])); }
  function colour(cls) { return cls ? PALETTES[state.palette][cls - 1] : NO_BASELINE; }
  // "auto": the ten-colour scale vs the usual μ ± 2σ; before any baseline exists (a first
  // day) fall back to the share of capacity (post-processing of public values only).
  function byCapacity() {
    if (state.scale === "capacity") return true;
    if (state.scale === "baseline") return false;
    const vals = Object.values((state.snapshot && state.snapshot.values) || {});
    return vals.length > 0 && vals.every((v) => !v.class);
  }
  function capClass(value, cap) { return Math.min(10, Math.max(1, Math.floor((Math.max(0, value) / cap) * 10) + 1)); }
  function classOf(id, v) { return !v ? null : byCapacity() ? capClass(v.value, state.locIndex[id].capacity) : v.class; }
  function inkFor(hex) {
    const n = parseInt(hex.slice(1), 16);
    const r = (n >> 16) & 255, g = (n >> 8) & 255, b = n & 255;
    return 0.299 * r + 0.587 * g + 0.114 * b > 150 ? "#111" : "#fff";
  }
  async function api(path, opts = {}) {
    const r = await fetch(path, { ...opts, headers: { Authorization: "Bearer " + state.token, ...(opts.headers || {}) } });
    const body = await r.json().catch(() => ({}));
    if (!r.ok) { const e = new Error(body.error || r.statusText); e.status = r.status; throw e; }
    return body;
  }
  function setStatus(text, cls) { const s = $("status"); s.textContent = text; s.className = "status " + (cls || ""); }

  // ---------- auth ----------
  function readToken() {
    const m = location.hash.match(/token=([^&]+)/);
    if (m) { sessionStorage.setItem("occ.token", decodeURIComponent(m[1])); history.replaceState(null, "", location.pathname + location.search); }
    return sessionStorage.getItem("occ.token");
  }
  async function signIn() {
    state.token = readToken();
    if (!state.token) { showLogin(""); return false; }
    try {
      state.role = (await api("/api/whoami")).role;
    } catch (e) {
      sessionStorage.removeItem("occ.token");
      showLogin(e.status === 401 ? "That token was not accepted." : e.message);
      return false;
    }
    $("role").textContent = state.role;
    return true;
  }
  function showLogin(msg) {
    $("login").hidden = false; $("login-error").textContent = msg; $("token").focus();
  }
  $("login-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    sessionStorage.setItem("occ.token", $("token").value.trim());
    $("login").hidden = true;
    start();
  });

  // ---------- legend ----------
  function renderLegend() {
    const pal = PALETTES[state.palette];
    const names = ["far below usual", "", "", "", "", "", "", "", "", "far above usual"];
    let h = "";
    pal.forEach((c, i) => {
      h += `<div class="sw" style="background:${c};color:${inkFor(c)}" title="class ${i + 1}${names[i] ? ": " + names[i] : ""}">${i + 1}</div>`;
    });
    h += `<div class="sw nb" style="background:${NO_BASELINE};color:#111;flex:0 0 90px" title="no baseline yet">no baseline</div>`;
    state.legendMode = state.snapshot ? byCapacity() : null;
    h += state.legendMode
      ? `<div class="ends"><span>◀ empty</span><span>share of fire-code capacity${state.scale === "auto" ? " (no baseline yet for this time of day)" : ""}</span><span>at or over capacity ▶</span></div>`
      : `<div class="ends"><span>◀ below μ−2σ (usual for this time of day)</span><span>μ</span><span>above μ+2σ ▶</span></div>`;
    $("legend").innerHTML = h;
  }

  // ---------- plan ----------
  function buildingOf(id) { return state.site.buildings.find((b) => b.id === id); }
  function renderCampus() {
    const nav = $("campus");
    if (state.site.buildings.length < 2) { nav.hidden = true; return; }
    nav.hidden = false;
    const vals = (state.snapshot && state.snapshot.values) || {};
    nav.innerHTML = "";
    for (const b of state.site.buildings) {
      let total = 0, maxCls = 0, n = 0;
      for (const l of b.locations) { const v = vals[l.id]; if (v) { total += v.value; n++; maxCls = Math.max(maxCls, classOf(l.id, v) || 0); } }
      const btn = document.createElement("button");
      btn.className = "tile"; btn.type = "button";
      btn.setAttribute("aria-pressed", String(b.id === state.building));
      btn.dataset.building = b.id;
      btn.innerHTML = `<div class="t-name">${esc(b.name)}</div><div class="t-val"><span class="chip" style="background:${colour(maxCls || null)}"></span>${n ? "≈ " + Math.round(total) + " people" : "no data"} · ${b.floors.length} floor${b.floors.length > 1 ? "s" : ""}</div>`;
      btn.addEventListener("click", () => { state.building = b.id; state.floor = b.floors.length > 1 ? "*" : b.floors[0].id; renderAll(); });
      nav.appendChild(btn);
    }
  }
  function renderFloors() {
    const b = buildingOf(state.building);
    const nav = $("floors"); nav.innerHTML = "";
    const tabs = b.floors.length > 1 ? [{ id: "*", name: "All floors" }, ...b.floors] : b.floors;
    for (const f of tabs) {
      const btn = document.createElement("button");
      btn.type = "button"; btn.setAttribute("role", "tab"); btn.dataset.floor = f.id;
      btn.setAttribute("aria-selected", String(f.id === state.floor));
      btn.textContent = f.name;
      btn.addEventListener("click", () => { state.floor = f.id; renderFloors(); renderPlan(); });
      nav.appendChild(btn);
    }
  }
  function shortName(l) {
    return l.name.length > 22 ? l.id.split("-").pop() : l.name;
  }
  function floorSvg(b, f) {
    const svg = document.createElementNS(NS, "svg");
    const pad = Math.max(f.width, f.height) * 0.02;
    svg.setAttribute("viewBox", `${-pad} ${-pad} ${f.width + 2 * pad} ${f.height + 2 * pad}`);
    svg.setAttribute("role", "group");
    svg.setAttribute("aria-label", `${b.name}, ${f.name}: rooms coloured by occupancy`);
    svg.dataset.floor = f.id;
    const bg = document.createElementNS(NS, "rect");
    bg.setAttribute("class", "outline"); bg.setAttribute("x", 0); bg.setAttribute("y", 0);
    bg.setAttribute("width", f.width); bg.setAttribute("height", f.height);
    bg.setAttribute("stroke-width", Math.max(f.width, f.height) / 400);
    svg.appendChild(bg);
    const sw = Math.max(f.width, f.height) / 500;
    for (const l of b.locations.filter((x) => x.floor === f.id)) {
      const pts = l.polygon;
      const poly = document.createElementNS(NS, "polygon");
      poly.setAttribute("points", pts.map((p) => p.join(",")).join(" "));
      poly.setAttribute("class", "loc");
      poly.setAttribute("tabindex", "0");
      poly.setAttribute("role", "button");
      poly.setAttribute("stroke-width", sw);
      poly.dataset.location = l.id;
      poly.addEventListener("mouseenter", () => showTip(l.id, poly));
      poly.addEventListener("mouseleave", hideTip);
      poly.addEventListener("focus", () => showTip(l.id, poly));
      poly.addEventListener("blur", hideTip);
      poly.addEventListener("click", () => select(l.id));
      poly.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); select(l.id); } });
      svg.appendChild(poly);
      const xs = pts.map((p) => p[0]), ys = pts.map((p) => p[1]);
      const w = Math.max(...xs) - Math.min(...xs), h = Math.max(...ys) - Math.min(...ys);
      const cx = xs.reduce((a, c) => a + c, 0) / xs.length, cy = ys.reduce((a, c) => a + c, 0) / ys.length;
      const shown = shortName(l);
      const fs = Math.max(Math.min(w / (0.62 * shown.length + 1.5), h / 3.4, Math.max(f.width, f.height) / 30), 0.4);
      const t = document.createElementNS(NS, "text");
      t.setAttribute("class", "label"); t.setAttribute("x", cx); t.setAttribute("y", cy);
      t.setAttribute("font-size", fs); t.dataset.labelFor = l.id;
      const name = document.createElementNS(NS, "tspan");
      name.setAttribute("x", cx); name.setAttribute("dy", -fs * 0.45);
      name.textContent = shown;
      const val = document.createElementNS(NS, "tspan");
      val.setAttribute("x", cx); val.setAttribute("dy", fs * 1.1); val.setAttribute("font-weight", "400");
      t.appendChild(name); t.appendChild(val);
      svg.appendChild(t);
    }
    return svg;
  }
  function renderPlan() {
    const b = buildingOf(state.building);
    const plan = $("plan"); plan.innerHTML = "";
    const all = state.floor === "*";
    plan.classList.toggle("all", all);
    for (const f of b.floors) {
      if (!all && f.id !== state.floor) continue;
      const fig = document.createElement("figure");
      if (all) { const cap = document.createElement("figcaption"); cap.textContent = f.name; fig.appendChild(cap); }
      fig.appendChild(floorSvg(b, f));
      plan.appendChild(fig);
    }
    paint();
  }
  // locations with an over-capacity incident open at the shown tick
  function alertingNow() {
    const s = new Set(); const tick = state.snapshot && state.snapshot.tick;
    if (!tick) return s;
    for (const i of state.incidents) {
      if (i.opened <= tick && (i.resolved === null || i.resolved === undefined || tick < i.resolved)) s.add(i.location);
    }
    return s;
  }
  const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
  function paint() {
    const t = state.snapshot && state.snapshot.tick;
    $("clock").textContent = t ? `${DAYS[new Date(t * 1000).getUTCDay()]} ${fmtHM(t)}` : "";
    const vals = (state.snapshot && state.snapshot.values) || {};
    const hot = alertingNow();
    for (const poly of document.querySelectorAll("#plan .loc")) {
      const id = poly.dataset.location, v = vals[id], cls = classOf(id, v);
      const c = v ? colour(cls) : "#e3e6ea";
      poly.setAttribute("fill", c);
      poly.dataset.class = cls || "";
      poly.dataset.value = v ? v.value : "";
      poly.classList.toggle("nodata", !v);
      poly.classList.toggle("alerting", hot.has(id));
      poly.classList.toggle("selected", id === state.selected);
      const loc = state.locIndex[id];
      poly.setAttribute("aria-label", `${loc.name}: ${v ? "about " + Math.max(0, Math.round(v.value)) + " people" : "no data"}, capacity ${loc.capacity}${hot.has(id) ? ", over-capacity incident" : ""}`);
      const label = document.querySelector(`#plan text[data-label-for="${CSS.escape(id)}"]`);
      if (label) {
        label.setAttribute("fill", inkFor(v ? c : "#e3e6ea"));
        label.lastChild.textContent = v ? (hot.has(id) ? "⚠ " : "") + Math.max(0, Math.round(v.value)) + " / " + loc.capacity : "—";
      }
    }
    $("empty").hidden = state.mechs.length > 0;
    if (state.legendMode !== byCapacity()) renderLegend();
    $("when").textContent = state.snapshot && state.snapshot.tick ? fmtTime(state.snapshot.tick) : "—";
    renderCampus();
  }

  // ---------- tooltip & details ----------
  function tipHtml(id) {
    const loc = state.locIndex[id];
    const v = state.snapshot && state.snapshot.values[id];
    let h = `<b>${esc(loc.name)}</b><span class="dim">${esc(loc.kind)} · capacity ${loc.capacity}</span><br>`;
    if (!v) return h + "No released value at this tick.";
    const iv = v.interval;
    h += `Released: <b style="display:inline">${num(v.value)}</b>`;
    if (iv && iv.low !== null) h += `<br>${Math.round(iv.level * 100)} % interval: ${num(Math.max(0, iv.low))} – ${num(iv.high)} <span class="dim">(${esc(iv.note)})</span>`;
    else h += `<br><span class="ngt">${esc(iv ? iv.note : "no interval")}</span>`;
    if (v.mu !== null) h += `<br><span class="dim">usual now: ${num(v.mu)} ± ${num(v.sigma)} · colour ${classOf(id, v)}/10</span>`;
    else h += `<br><span class="dim">no baseline yet for this time of day</span>`;
    return h;
  }
  function showTip(id, el) {
    const tip = $("tooltip"); tip.innerHTML = tipHtml(id); tip.hidden = false;
    const r = el.getBoundingClientRect();
    const x = Math.min(window.innerWidth - 310, r.left + r.width / 2 + 8);
    const y = Math.max(8, r.top - tip.offsetHeight - 6);
    tip.style.left = x + "px"; tip.style.top = (y < 8 ? r.bottom + 6 : y) + "px";
  }
  function hideTip() { $("tooltip").hidden = true; }
  async function select(id) {
    state.selected = id; paint();
    const loc = state.locIndex[id];
    const tick = state.snapshot && state.snapshot.tick;
    const v = state.snapshot && state.snapshot.values[id];
    let h = `<h3 style="margin:0 0 6px">${esc(loc.name)}</h3><dl>
      <dt>Kind</dt><dd>${esc(loc.kind)}</dd><dt>Capacity</dt><dd>${loc.capacity}</dd>
      <dt>Released</dt><dd>${v ? num(v.value) : "—"}</dd>
      <dt>Interval</dt><dd>${v && v.interval.low !== null ? num(Math.max(0, v.interval.low)) + " – " + num(v.interval.high) + " (90 %)" : v ? esc(v.interval.note) : "—"}</dd>
      <dt>Mechanism</dt><dd>${esc(state.mech)}</dd></dl>`;
    $("details").innerHTML = h + `<svg class="spark" id="spark" role="img" aria-label="today's released values"></svg>
      <a id="csv" href="#">Download CSV of this room</a>`;
    $("csv").addEventListener("click", (ev) => { ev.preventDefault(); downloadCsv(id); });
    if (!tick) return;
    const d0 = Date.parse(dayOf(tick) + "T00:00:00Z") / 1000;
    const hist = await api(`/api/history?mech=${encodeURIComponent(state.mech)}&location=${encodeURIComponent(id)}&start=${d0}&end=${tick}`);
    drawSpark(hist.points, loc.capacity, d0);
  }
  function drawSpark(points, cap, d0) {
    const svg = $("spark"); if (!svg || !points.length) return;
    const W = 340, H = 90; svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
    const ymax = Math.max(cap, ...points.map((p) => p.value)) * 1.05 || 1;
    const x = (t) => ((t - d0) / 86400) * W, y = (v) => H - (Math.max(0, v) / ymax) * H;
    svg.innerHTML = `<line class="cap" x1="0" x2="${W}" y1="${y(cap)}" y2="${y(cap)}"></line>
      <text class="ax" x="${W - 2}" y="${y(cap) + 11}" text-anchor="end">capacity ${cap}</text>
      <text class="ax" x="2" y="${H - 2}">00:00</text><text class="ax" x="${W / 2}" y="${H - 2}" text-anchor="middle">12:00</text>
      <text class="ax" x="${W - 2}" y="${H - 2}" text-anchor="end">24:00</text>
      <polyline class="ln" points="${points.map((p) => x(p.tick) + "," + y(p.value)).join(" ")}"></polyline>`;
  }
  async function downloadCsv(id) {
    const r = await fetch(`/api/history?format=csv&mech=${encodeURIComponent(state.mech)}&location=${encodeURIComponent(id)}`, { headers: { Authorization: "Bearer " + state.token } });
    const blob = await r.blob(); const a = document.createElement("a");
    a.href = URL.createObjectURL(blob); a.download = `${state.mech}-${id}.csv`; a.click();
  }

  // ---------- incidents (one per location and over-capacity episode) ----------
  function sortIncidents() {
    state.incidents.sort((a, b) => (a.state === "open" ? 0 : 1) - (b.state === "open" ? 0 : 1) || b.opened - a.opened);
  }
  function renderIncidents() {
    const ul = $("incidents"); ul.innerHTML = "";
    const open = state.incidents.filter((i) => i.state === "open");
    const waiting = open.filter((i) => !i.acknowledged).length;
    $("incident-count").textContent = open.length;
    $("incident-count").className = "badge" + (waiting ? " hot" : "");
    $("incident-count").title = `${open.length} open, ${waiting} not acknowledged`;
    $("no-incidents").hidden = state.incidents.length > 0;
    for (const i of state.incidents.slice(0, 100)) {
      const loc = state.locIndex[i.location];
      const li = document.createElement("li");
      li.dataset.incidentId = i.id; li.dataset.state = i.state;
      li.className = i.state + (i.acknowledged ? " acked" : "");
      const d = i.decisions || {};
      const when = i.state === "open"
        ? `open since ${fmtHM(i.opened)} · last seen ${fmtHM(i.last_seen)}`
        : `${fmtHM(i.opened)}–${fmtHM(i.last_seen)} · resolved ${fmtHM(i.resolved)}`;
      const peak = i.peak === null || i.peak === undefined ? "" : ` · peak ≈ ${Math.max(0, Math.round(i.peak))} (${esc(i.peak_mechanism || "released")})`;
      li.innerHTML = `<span class="a-title"><span class="chip">${i.state === "open" ? "OPEN" : "resolved"}</span> ${esc(loc ? loc.name : i.location)} — over capacity${i.capacity ? " (" + i.capacity + ")" : ""}</span>
        <span class="a-meta">${dayOf(i.opened)} ${when}${peak}</span>
        <span class="a-meta" title="${esc(i.guarantee || "")}">${d.tick || 0} tick + ${d.hour || 0} hour decisions · ${esc(i.algorithm || "?")} · β = ${i.beta ?? "?"} per decision${i.uncertainty ? " · " + esc(i.uncertainty) : ""}${i.acknowledged ? " · acknowledged" : ""}</span>`;
      const btn = document.createElement("button"); btn.type = "button";
      btn.textContent = i.acknowledged ? "Acknowledged" : "Acknowledge";
      btn.disabled = !!i.acknowledged || state.role !== "admin";
      if (state.role !== "admin") btn.title = "the admin token is needed to acknowledge";
      btn.setAttribute("aria-label", `acknowledge the incident in ${loc ? loc.name : i.location}`);
      btn.addEventListener("click", async () => {
        try { const r = await api(`/api/incidents/${encodeURIComponent(i.id)}/ack`, { method: "POST" }); i.acknowledged = r.acknowledged; renderIncidents(); paint(); }
        catch (e) { btn.title = e.message; }
      });
      li.appendChild(btn);
      li.addEventListener("click", (ev) => { if (ev.target === btn) return; const l = state.locIndex[i.location]; if (l) { goTo(l); select(i.location); } });
      ul.appendChild(li);
    }
  }
  function upsertIncident(rec) {
    const old = state.incidents.find((x) => x.id === rec.id);
    if (old) { if ((rec.version || 0) >= (old.version || 0)) Object.assign(old, rec, { acknowledged: old.acknowledged || rec.acknowledged || null }); }
    else state.incidents.push({ acknowledged: null, ...rec });
    sortIncidents(); renderIncidents(); paint();
  }

  function goTo(loc) {
    const b = state.site.buildings.find((x) => x.locations.some((l) => l.id === loc.id));
    if (b.id !== state.building || (loc.floor !== state.floor && state.floor !== "*")) { state.building = b.id; state.floor = loc.floor; renderAll(); }
  }

  // ---------- privacy ----------
  async function renderPrivacyHead() {
    const p = await api("/api/privacy");
    const head = $("privacy-head");
    head.textContent = "Live occupancy · " + p.headline;
    head.dataset.protected = p.protected ? "1" : "0";
    head.title = p.unit_text ? "unit of privacy: " + p.unit_text : "";
    return p;
  }
  // rooms whose threshold is below the alert width α are not watched (an empty room
  // would fire most hours): say which, so nobody relies on a silent small room
  function alertCoverage(p) {
    if (p.alerts_alpha === undefined) return "";
    const off = p.alerts_unmonitored || [];
    return `<dt>fire-code alerts</dt><dd id="alerts-coverage">watch rooms whose threshold is ≥ α = ${num(p.alerts_alpha, 0)} people` +
      (off.length ? `; ${off.length} smaller room${off.length > 1 ? "s" : ""} not watched at this budget (${esc(off.join(", "))})` : "") + `</dd>`;
  }
  function renderBudget(p) {
    if (!p || !p.unit) { $("budget").innerHTML = ""; return; }
    const dd = p.unit === "device-day";
    $("budget").innerHTML = dd
      ? `<dl class="budget" data-unit="device-day"><dt>Unit</dt><dd>${esc(p.unit_text)}</dd>
         <dt>ε<sub>day</sub></dt><dd id="eps-day">${num(p.epsilon_day, 2)}</dd>
         <dt>δ</dt><dd id="delta">${esc(Number(p.delta).toExponential(0))}</dd>
         <dt>ε spent today</dt><dd id="eps-spent">${num(p.epsilon_spent_today, 3)}</dd>
         <dt>projected for the day</dt><dd id="eps-proj">${num(p.epsilon_projected_day, 3)}</dd>
         <dt>releases</dt><dd>${esc((p.releases || []).join(", "))}</dd>${alertCoverage(p)}</dl>`
      : `<dl class="budget" data-unit="event"><dt>Unit</dt><dd>${esc(p.unit_text)}</dd>
         <dt>ε per tick</dt><dd>${num(p.epsilon_tick, 2)}</dd>
         <dt>a device present all day</dt><dd>ε ${num(p.epsilon_projected_day, 1)}</dd></dl>`;
  }
  async function renderLedger() {
    if (state.role !== "admin") return;
    $("privacy").hidden = false;
    const led = await api("/api/ledger");
    renderBudget(led.status);
    const dd = (led.device_day || []).filter((r) => r.day >= ((led.device_day.slice(-1)[0] || {}).day || ""));
    if (dd.length) {
      let t = `<div class="scroll"><table class="ledger dd"><thead><tr><th>Day</th><th>Device-day release</th><th>ρ (zCDP)</th><th>ε at δ</th></tr></thead><tbody>`;
      for (const r of dd) t += `<tr data-release="${esc(r.release)}"${r.total ? ' class="total"' : ""}><td>${esc(r.day.slice(5))}</td><td>${esc(r.total ? "Total (ρ added, converted)" : r.release)}</td><td class="num">${num(r.rho, 4)}</td><td class="num">${num(r.epsilon, 2)}</td></tr>`;
      $("budget").insertAdjacentHTML("beforeend", t + "</tbody></table></div>");
    }
    const days = [...new Set(led.rows.map((r) => r.day))].slice(-2);
    const rows = led.rows.filter((r) => days.includes(r.day));
    let h = `<p class="muted">Unit: ${esc(led.unit)}. A person present k ticks of a day loses k × (ε per tick) per mechanism; all mechanisms release the same data, so the total row adds them (TTL excluded: no formal guarantee).</p>
      <div class="scroll"><table class="ledger"><thead><tr><th>Day</th><th>Mechanism</th><th>ε spent</th><th>Ticks</th><th title="a device present at every released tick of the day">Device-day ε</th><th>ε / h present</th></tr></thead><tbody>`;
    for (const r of rows) {
      const ttl = r.guarantee === "no formal guarantee";
      const name = r.total ? `Total${r.excluded && r.excluded.length ? ` (excl. ${r.excluded.join(", ")}: no formal guarantee)` : ""}` : r.mechanism;
      h += `<tr data-mech="${esc(r.mechanism)}"${r.total ? ` class="total" title="${esc(r.guarantee)}"` : ""}><td title="${esc(r.day)}">${esc(r.day.slice(5))}</td><td>${esc(name)}</td>` + (ttl
        ? `<td colspan="4" class="ngt">no formal guarantee</td>`
        : `<td class="num">${num(r.epsilon_spent, 2)}</td><td class="num">${r.ticks_released ?? "—"}</td><td class="num">${num(r.device_day_worst_case_epsilon, 2)}</td><td class="num">${num(r.epsilon_per_hour_present, 2)}</td>`) + "</tr>";
    }
    $("ledger").innerHTML = h + "</tbody></table></div>";
  }

  // ---------- data loading ----------
  async function loadMechs() {
    const r = await api("/api/mechanisms");
    state.mechs = r.mechanisms.map((m) => m.name);
    for (const m of r.mechanisms) state.meta[m.name] = m.meta;
    const sel = $("mech");
    const prev = state.mech;
    sel.innerHTML = r.mechanisms.map((m) => `<option value="${esc(m.name)}">${esc(m.name)}</option>`).join("");
    state.mech = state.mechs.includes(prev) ? prev : state.mechs[0] || null;
    if (state.mech) sel.value = state.mech;
    renderGuarantee();
  }
  function renderGuarantee() {
    const m = state.meta[state.mech] || {};
    // device-day releases are charged per day (their ε is per device-day), others per tick
    const per = /^device-day/.test(m.unit || "") ? "per device-day" : "per tick";
    const eps = m.epsilon !== undefined ? ` · ε = ${num(m.epsilon, 2)} ${per}` : "";
    $("guarantee").innerHTML = state.mech ? `<b>${esc(state.mech)}</b>: ${esc(m.guarantee || "")}${eps}` : "";
  }
  async function loadTicks(day) {
    const r = await api(`/api/ticks?mech=${encodeURIComponent(state.mech)}&day=${day}`);
    state.ticks = r.ticks;
    const s = $("scrub"); s.max = Math.max(0, state.ticks.length - 1);
  }
  async function loadSnapshot(tick) {
    const q = tick === undefined || tick === null ? "" : `&tick=${tick}`;
    state.snapshot = await api(`/api/snapshot?mech=${encodeURIComponent(state.mech)}${q}`);
    paint();
  }
  // merge, never roll back: a response that started before a lifecycle event arrived over
  // SSE carries an older version of that incident (versions rise with each event)
  async function loadIncidents() {
    const got = (await api("/api/incidents?limit=100")).incidents;
    const old = new Map(state.incidents.map((i) => [i.id, i]));
    const ids = new Set(got.map((i) => i.id));
    state.incidents = got.map((i) => {
      const o = old.get(i.id);
      if (o && (o.version || 0) > (i.version || 0)) return o;
      return { ...i, acknowledged: i.acknowledged || (o && o.acknowledged) || null };
    });
    for (const o of old.values()) if (!ids.has(o.id)) state.incidents.push(o);
    sortIncidents(); renderIncidents();
  }
  async function refreshAll() {
    await loadMechs();
    if (!state.mech) { state.snapshot = null; paint(); return; }
    await loadSnapshot();
    if (state.snapshot.tick) { await loadTicks(dayOf(state.snapshot.tick)); $("scrub").value = state.ticks.indexOf(state.snapshot.tick); }
  }
  function setLive(on) {
    state.live = on; const b = $("live");
    b.classList.toggle("on", on); b.setAttribute("aria-pressed", String(on));
    b.textContent = on ? "● Live" : "Go live";
    if (!on) return;
    stopPlay(); refreshAll();
  }
  function stopPlay() { if (state.playing) { clearInterval(state.playing); state.playing = null; $("play").textContent = "▶"; } }

  // ---------- live updates ----------
  function connect() {
    if (state.es) state.es.close();
    const q = `access_token=${encodeURIComponent(state.token)}${state.mech ? "&mech=" + encodeURIComponent(state.mech) : ""}`;
    const es = new EventSource(`/api/events?${q}`); state.es = es;
    let first = true;
    es.addEventListener("hello", () => {
      setStatus("live", "live");
      if (!first && state.live) refreshAll().catch(() => {}); // catch up after a reconnect
      first = false;
    });
    es.addEventListener("tick", async (ev) => {
      const snap = JSON.parse(ev.data);
      if (!state.mechs.includes(snap.mech)) { await loadMechs(); if (!state.mech) return; }
      if (snap.mech !== state.mech) return;
      if (!state.ticks.includes(snap.tick)) {
        if (state.ticks.length && dayOf(state.ticks[0]) !== dayOf(snap.tick)) state.ticks = [];
        state.ticks.push(snap.tick); $("scrub").max = state.ticks.length - 1;
      }
      if (state.live) { state.snapshot = snap; $("scrub").value = state.ticks.length - 1; paint(); }
      renderLedger().catch(() => {});
      // open incidents move their "last seen" silently with each tick: re-read them
      if (state.incidents.some((i) => i.state === "open")) loadIncidents().then(paint).catch(() => {});
    });
    es.addEventListener("incident", (ev) => { upsertIncident(JSON.parse(ev.data).incident); });
    es.addEventListener("incident_ack", (ev) => {
      const a = JSON.parse(ev.data), i = state.incidents.find((x) => x.id === a.id);
      if (i && !i.acknowledged) { i.acknowledged = a.acknowledged; renderIncidents(); }
    });
    es.onerror = () => { setStatus("reconnecting…", "down"); };
  }

  function renderAll() { renderCampus(); renderFloors(); renderPlan(); }

  function wire() {
    $("scale").value = state.scale;
    $("scale").addEventListener("change", () => { state.scale = $("scale").value; localStorage.setItem("occ.scale", state.scale); renderLegend(); paint(); });
    $("palette").value = state.palette;
    $("palette").addEventListener("change", () => { state.palette = $("palette").value; localStorage.setItem("occ.palette", state.palette); renderLegend(); paint(); });
    $("mech").addEventListener("change", async () => { state.mech = $("mech").value; renderGuarantee(); connect(); if (state.live) await refreshAll(); else await loadSnapshot(state.ticks[$("scrub").value]); });
    let timer = null;
    $("scrub").addEventListener("input", () => {
      setLive(false);
      const t = state.ticks[Number($("scrub").value)];
      $("when").textContent = fmtTime(t);
      clearTimeout(timer); timer = setTimeout(() => loadSnapshot(t), 60);
    });
    $("live").addEventListener("click", () => setLive(true));
    $("play").addEventListener("click", () => {
      if (state.playing) { stopPlay(); return; }
      setLive(false);
      const s = $("scrub"); if (Number(s.value) >= state.ticks.length - 1) s.value = 0;
      $("play").textContent = "❚❚";
      state.playing = setInterval(async () => {
        const i = Number(s.value) + 1;
        if (i >= state.ticks.length) { stopPlay(); setLive(true); return; }
        s.value = i; await loadSnapshot(state.ticks[i]);
      }, 350);
    });
    document.addEventListener("keydown", (ev) => { if (ev.key === "Escape") hideTip(); });
  }

  async function start() {
    if (!(await signIn())) return;
    state.site = await api("/api/site");
    $("site-name").textContent = state.site.name;
    document.title = state.site.name + " — occustream";
    for (const b of state.site.buildings) for (const l of b.locations) state.locIndex[l.id] = l;
    state.building = state.site.buildings[0].id;
    state.floor = state.site.buildings[0].floors.length > 1 ? "*" : state.site.buildings[0].floors[0].id;
    renderLegend();
    await refreshAll();
    renderAll();
    await loadIncidents();
    paint();
    connect();
    renderPrivacyHead().catch((e) => console.error("privacy: " + e.message));
    setInterval(() => renderPrivacyHead().catch(() => {}), 30000);
    renderLedger().catch((e) => console.error("ledger: " + e.message));
    // keep the mechanism list fresh while empty (first data arriving)
    setInterval(async () => { if (!state.mechs.length) { await refreshAll(); connect(); } }, 3000);
    document.body.dataset.ready = "1";
  }
  wire();
  start();
})();
