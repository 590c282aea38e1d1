/* IoT-DETECTIVE (thesis §3.2) — plain JS, no build step. Reads /api/game/* with a bearer token.
   The page holds released values only until the answers are submitted; the server sends the
   true day with the result. */
(function () {
  "use strict";
  const NS = "http://www.w3.org/2000/svg";
  const W = 900, H = 300, PAD = { l: 44, r: 12, t: 12, b: 26 };
  const TASK_TITLES = {
    threshold: "Over the threshold",
    night_region: "Most occupied region at night",
    broken_sensor: "The broken sensor",
    routine_event: "A routine event",
  };
  const $ = (id) => document.getElementById(id);
  const state = { token: null, round: null, issued: 0, timer: null, view: null, truth: {}, player: null };
  window.__game = state; // for tests and debugging

  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function svg(tag, attrs) {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    return e;
  }
  function hhmm(minutes) {
    const m = Math.round(minutes);
    return String(Math.floor(m / 60)).padStart(2, "0") + ":" + String(m % 60).padStart(2, "0");
  }
  function clock(s) { s = Math.max(0, Math.ceil(s)); return Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0"); }

  async function api(path, opts = {}) {
    const r = await fetch(path, { ...opts, headers: { Authorization: "Bearer " + state.token, "Content-Type": "application/json", ...(opts.headers || {}) } });
    const body = await r.json().catch(() => ({}));
    if (!r.ok) { const e = new Error(body.error || r.statusText); e.status = r.status; throw e; }
    return body;
  }

  // ---------- auth (the dashboard's token, kept for the tab) ----------
  function readToken() {
    const m = location.hash.match(/token=([^&]+)/);
    if (m) { sessionStorage.setItem("occ.token", decodeURIComponent(m[1])); history.replaceState(null, "", location.pathname + location.search); }
    return sessionStorage.getItem("occ.token");
  }
  function showLogin(msg) { $("login").hidden = false; $("login-error").textContent = msg || ""; $("token").focus(); }
  $("login-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    sessionStorage.setItem("occ.token", $("token").value.trim());
    $("login").hidden = true;
    start();
  });

  // ---------- leaderboard ----------
  function renderBoard(players) {
    const ol = $("board");
    ol.replaceChildren();
    for (const p of players) {
      const li = el("li", { "data-player": p.name });
      if (p.name === state.player) li.className = "me";
      li.append(el("span", { class: "name" }, p.name), el("span", { class: "pts" }, `${p.points} pts · ${p.rounds} round${p.rounds === 1 ? "" : "s"}`));
      ol.append(li);
    }
    $("no-board").hidden = players.length > 0;
    const me = players.find((p) => p.name === state.player);
    if (me) $("score").textContent = `${me.points} points`;
  }
  async function loadBoard() {
    try { renderBoard((await api("/api/game/leaderboard")).players); } catch (e) { if (e.status === 401) throw e; }
  }

  // ---------- the chart ----------
  function series(view) {
    const r = state.round;
    const [kind, id] = view.split(":");
    const ids = kind === "region" ? r.regions.find((g) => g.id === id).locations : [id];
    const rel = r.ticks.map((_, i) => ids.reduce((s, l) => s + r.released[l][i], 0));
    const truthOk = ids.every((l) => state.truth[l]);
    const tru = truthOk ? r.ticks.map((_, i) => ids.reduce((s, l) => s + state.truth[l][i], 0)) : null;
    return { rel, tru, ids };
  }
  function thresholdFor(ids) {
    const t = state.round.tasks.find((x) => x.id === "threshold");
    return t && ids.length === 1 && ids[0] === t.params.location ? t.params.threshold : null;
  }
  function drawChart() {
    const r = state.round, chart = $("chart");
    chart.replaceChildren();
    if (!r || !state.view) return;
    const { rel, tru, ids } = series(state.view);
    const thr = thresholdFor(ids);
    const all = rel.concat(tru || [], thr === null ? [] : [thr]);
    let lo = Math.min(0, ...all), hi = Math.max(1, ...all);
    const span = hi - lo; hi += span * 0.05; lo -= lo < 0 ? span * 0.05 : 0;
    const x = (t) => PAD.l + ((t - r.midnight) / 86400) * (W - PAD.l - PAD.r);
    const y = (v) => H - PAD.b - ((v - lo) / (hi - lo)) * (H - PAD.t - PAD.b);
    // night shading, grid, axes
    chart.append(svg("rect", { class: "night", x: x(r.midnight), y: PAD.t, width: x(r.midnight + 6 * 3600) - x(r.midnight), height: H - PAD.t - PAD.b }));
    chart.append(svg("rect", { class: "night", x: x(r.midnight + 18 * 3600), y: PAD.t, width: x(r.midnight + 86400) - x(r.midnight + 18 * 3600), height: H - PAD.t - PAD.b }));
    for (let h = 0; h <= 24; h += 3) {
      const xx = x(r.midnight + h * 3600);
      chart.append(svg("line", { class: "grid", x1: xx, x2: xx, y1: PAD.t, y2: H - PAD.b }));
      const t = svg("text", { x: xx, y: H - 8, "text-anchor": "middle" }); t.textContent = String(h).padStart(2, "0") + ":00"; chart.append(t);
    }
    const step = niceStep((hi - lo) / 5);
    for (let v = Math.ceil(lo / step) * step; v <= hi; v += step) {
      chart.append(svg("line", { class: "grid", x1: PAD.l, x2: W - PAD.r, y1: y(v), y2: y(v) }));
      const t = svg("text", { x: PAD.l - 6, y: y(v) + 4, "text-anchor": "end" }); t.textContent = String(Math.round(v * 10) / 10); chart.append(t);
    }
    chart.append(svg("line", { class: "axis", x1: PAD.l, x2: W - PAD.r, y1: y(0), y2: y(0) }));
    if (thr !== null) chart.append(svg("line", { class: "threshold", x1: PAD.l, x2: W - PAD.r, y1: y(thr), y2: y(thr), "data-threshold": thr }));
    const path = (vals) => vals.map((v, i) => (i ? "L" : "M") + x(r.ticks[i]).toFixed(1) + "," + y(v).toFixed(1)).join("");
    chart.append(svg("path", { class: "released", d: path(rel), "data-values": JSON.stringify(rel.map((v) => Math.round(v * 10) / 10)) }));
    if (tru) chart.append(svg("path", { class: "true", d: path(tru), "data-values": JSON.stringify(tru) }));
    const cursor = svg("line", { class: "cursor", x1: -10, x2: -10, y1: PAD.t, y2: H - PAD.b });
    chart.append(cursor);
    chart.onmousemove = (ev) => {
      const box = chart.getBoundingClientRect();
      const px = ((ev.clientX - box.left) / box.width) * W;
      const t = r.midnight + ((px - PAD.l) / (W - PAD.l - PAD.r)) * 86400;
      let i = 0, best = Infinity;
      r.ticks.forEach((tk, k) => { const d = Math.abs(tk - t); if (d < best) { best = d; i = k; } });
      cursor.setAttribute("x1", x(r.ticks[i])); cursor.setAttribute("x2", x(r.ticks[i]));
      $("hover").textContent = `${hhmm((r.ticks[i] - r.midnight) / 60)} — released ${rel[i].toFixed(1)}` + (tru ? ` · true ${tru[i]}` : "");
    };
    chart.dataset.view = state.view;
  }
  function niceStep(raw) {
    const p = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1e-9))));
    for (const m of [1, 2, 5, 10]) if (raw <= m * p) return m * p;
    return 10 * p;
  }
  function setView(view) { state.view = view; $("view").value = view; drawChart(); }

  // ---------- a round ----------
  function privacyText(r) {
    const p = r.privacy;
    const perDay = p.charged_per === "day";
    const unit = perDay ? "per device-day (one device's whole day)" : "per 5-minute tick (one person's presence in one tick)";
    return `Released with ${r.mechanism} — ${r.description} — at ε = ${r.epsilon} ${unit}; guarantee: ${p.guarantee}. ` +
      (perDay ? `The whole day was charged once (ε = ${Number(p.epsilon_release).toFixed(3)}, δ = ${p.delta}) `
              : `Each of the ${p.releases_charged} ticks was charged ε = ${Number(p.epsilon_release).toFixed(3)} `) +
      `to this round's accountant before its noise was drawn.` +
      (r.meta && r.meta.noise_scale ? ` Noise per released room value: ${r.meta.noise || "Laplace"} of scale ${Number(r.meta.noise_scale).toFixed(1)}` +
        (r.meta.noise_note ? ` (${r.meta.noise_note}).` : ".") : "");
  }
  function taskField(t, i) {
    const r = state.round;
    const fs = el("fieldset", { "data-task": t.id });
    fs.append(el("legend", {}, `${i + 1}. ${TASK_TITLES[t.id] || t.id}`), el("p", { class: "q" }, t.question));
    const row = el("div", { class: "row" });
    let input;
    if (t.params.answer === "count") {
      input = el("input", { id: "a-" + t.id, type: "number", min: "0", max: String(t.params.max), step: "1", placeholder: "intervals", "aria-label": "number of intervals" });
    } else if (t.params.answer === "region") {
      input = el("select", { id: "a-" + t.id, "aria-label": "region" });
      input.append(el("option", { value: "" }, "— choose a region —"));
      for (const c of t.params.choices) input.append(el("option", { value: c.id }, c.name));
    } else {
      input = el("input", { id: "a-" + t.id, type: "time", step: "300", "aria-label": "time of day" });
    }
    row.append(input);
    if (t.params.location) {
      const b = el("button", { type: "button", class: "link", "data-show": "loc:" + t.params.location }, "show " + r.locations.find((l) => l.id === t.params.location).name);
      b.addEventListener("click", () => setView("loc:" + t.params.location));
      row.append(b);
    }
    fs.append(row);
    return fs;
  }
  function showRound(r) {
    state.round = r; state.truth = {}; state.issued = performance.now();
    $("round").hidden = false; $("result").hidden = true;
    $("round").dataset.roundId = r.id;
    $("round-day").textContent = `${r.day} · ${r.mechanism} at ε = ${r.epsilon}`;
    $("round-privacy").textContent = privacyText(r);
    const view = $("view"); view.replaceChildren();
    for (const g of r.regions) {
      const og = el("optgroup", { label: g.name });
      og.append(el("option", { value: "region:" + g.id }, `${g.name} — all rooms`));
      for (const lid of g.locations) og.append(el("option", { value: "loc:" + lid }, r.locations.find((l) => l.id === lid).name));
      view.append(og);
    }
    const tasks = $("tasks"); tasks.replaceChildren(...r.tasks.map(taskField));
    $("submit").disabled = false;
    setView("loc:" + r.tasks[0].params.location);
    startTimer(r);
    document.body.dataset.round = r.id;
  }
  function startTimer(r) {
    clearInterval(state.timer);
    const tick = () => {
      const s = (performance.now() - state.issued) / 1000, left = r.time_limit_s - s;
      const t = $("timer");
      if (left <= 0) { t.textContent = "time is up — answers revealed, no points"; t.className = "status late"; return; }
      const par = r.par_s - s;
      t.textContent = `${clock(left)} left` + (par > 0 ? ` · full points for ${clock(par)}` : "");
      t.className = "status " + (par > 0 ? "par" : "");
    };
    tick(); state.timer = setInterval(tick, 500);
  }
  async function newRound(ev) {
    ev.preventDefault();
    const player = $("player").value.trim();
    $("error").textContent = ""; $("busy").textContent = "simulating and releasing a day…";
    $("new-round").disabled = true;
    try {
      const r = await api("/api/game/rounds", { method: "POST", body: JSON.stringify({ player }) });
      state.player = r.player; localStorage.setItem("occ.player", r.player);
      showRound(r);
      $("busy").textContent = r.rounds_played ? `rounds bonus ×${r.bonus.toFixed(1)}` : "";
    } catch (e) {
      $("error").textContent = e.message; $("busy").textContent = "";
      if (e.status === 401) { sessionStorage.removeItem("occ.token"); showLogin("That token was not accepted."); }
    } finally { $("new-round").disabled = false; }
  }
  async function submit(ev) {
    ev.preventDefault();
    const r = state.round; if (!r) return;
    const answers = {};
    for (const t of r.tasks) {
      const v = $("a-" + t.id).value.trim();
      if (v !== "") answers[t.id] = t.params.answer === "count" ? Number(v) : v;
    }
    $("submit").disabled = true; $("error").textContent = "";
    try {
      const res = await api(`/api/game/rounds/${encodeURIComponent(r.id)}/answer`, { method: "POST", body: JSON.stringify({ answers }) });
      clearInterval(state.timer);
      showResult(res);
    } catch (e) {
      $("error").textContent = e.message; $("submit").disabled = e.status === 404 || e.status === 409;
    }
  }
  function fmt(t, v) {
    if (v === null || v === undefined) return "—";
    if (t.task === "night_region") return (state.round.regions.find((g) => g.id === v) || { name: v }).name;
    if (t.truth_hhmm !== undefined) return hhmm(v);
    return String(v);
  }
  function showResult(res) {
    for (const t of res.tasks) if (t.location && t.true_series) state.truth[t.location] = t.true_series;
    const rows = $("result-rows"); rows.replaceChildren();
    for (const t of res.tasks) {
      const tr = el("tr", { "data-task": t.task });
      const one = t.error === 1;
      const unit = t.task === "threshold" ? (one ? " interval" : " intervals") : t.task === "night_region" ? (one ? " rank" : " ranks") : " min";
      tr.append(el("td", {}, TASK_TITLES[t.task] || t.task), el("td", { class: "estimate" }, fmt(t, t.estimate)),
        el("td", { class: "truth" }, fmt(t, t.truth)),
        el("td", {}, t.error === null ? "—" : Math.round(t.error * 10) / 10 + unit),
        el("td", { class: t.accuracy >= 0.75 ? "good" : t.accuracy < 0.25 ? "bad" : "" }, Math.round(t.accuracy * 100) + " %"),
        el("td", { class: "points" }, String(t.points)));
      rows.append(tr);
    }
    $("result-points").textContent = String(res.points);
    $("result").dataset.points = String(res.points);
    $("result").dataset.total = String(res.total);
    $("result-note").textContent = (res.late ? "Answered after the time limit: the truth is shown, no points. " : "") +
      `Answered in ${res.elapsed_s.toFixed(0)} s: time factor ×${res.time_factor.toFixed(2)}, rounds bonus ×${res.bonus.toFixed(1)}. ` +
      `Your total: ${res.total} points. The red line in the chart is the true day (pick a task's room).`;
    $("result").hidden = false;
    $("timer").textContent = "round over"; $("timer").className = "status";
    renderBoard(res.leaderboard);
    $("score").textContent = `${res.total} points`;
    drawChart();
    $("result").scrollIntoView({ behavior: "smooth", block: "start" });
    document.body.dataset.answered = res.round;
  }

  async function start() {
    state.token = readToken();
    if (!state.token) { showLogin(""); return; }
    try { await api("/api/whoami"); } catch (e) {
      sessionStorage.removeItem("occ.token"); showLogin(e.status === 401 ? "That token was not accepted." : e.message); return;
    }
    const saved = localStorage.getItem("occ.player");
    if (saved && !$("player").value) $("player").value = saved;
    state.player = $("player").value.trim() || null;
    await loadBoard();
    document.body.dataset.ready = "1";
  }
  $("start-form").addEventListener("submit", newRound);
  $("answers").addEventListener("submit", submit);
  $("view").addEventListener("change", () => { state.view = $("view").value; drawChart(); });
  start();
})();
