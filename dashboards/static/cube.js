/* occustream daily cube page — plain JS, no build step. Reads /api/histogram/* with the
   dashboard's bearer token (sessionStorage "occ.token", or #token=… in the address). */
(function () {
  "use strict";
  const $ = (id) => document.getElementById(id);
  const NS = "http://www.w3.org/2000/svg";
  const Z90 = 1.645;  // two-sided 90 % interval of a Gaussian error
  let doc = null;

  function token() {
    const m = location.hash.match(/token=([^&]+)/);
    if (m) { sessionStorage.setItem("occ.token", decodeURIComponent(m[1])); history.replaceState(null, "", location.pathname); }
    return sessionStorage.getItem("occ.token");
  }

  async function api(path) {
    const r = await fetch(path, { headers: { Authorization: "Bearer " + token() } });
    const body = await r.json();
    if (!r.ok) throw new Error(body.error || r.statusText);
    return body;
  }

  function el(name, attrs, text) {
    const e = document.createElementNS(NS, name);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function plot(node) {
    const svg = $("cube-plot");
    svg.replaceChildren();
    const vals = doc.hourly[node] || [];
    const e90 = Z90 * (doc.hourly_sd[node] || 0);
    const W = 760, H = 300, L = 48, B = 28, T = 10;
    const top = Math.max(1, ...vals.map((v) => v + e90));
    const y = (v) => H - B - (H - B - T) * Math.max(v, 0) / top;
    const bw = (W - L - 10) / Math.max(vals.length, 1);
    svg.append(el("line", { class: "axis", x1: L, y1: H - B, x2: W - 5, y2: H - B }));
    svg.append(el("line", { class: "axis", x1: L, y1: T, x2: L, y2: H - B }));
    for (const f of [0, 0.5, 1]) svg.append(el("text", { x: 4, y: y(top * f) + 4 }, (top * f).toFixed(0)));
    const body = $("cube-table").tBodies[0];
    body.replaceChildren();
    vals.forEach((v, h) => {
      const x = L + h * bw;
      svg.append(el("rect", { class: "bar", x: x + 2, y: y(v), width: bw - 4, height: H - B - y(v) }));
      const cx = x + bw / 2;
      svg.append(el("line", { class: "err", x1: cx, x2: cx, y1: y(v + e90), y2: y(Math.max(v - e90, 0)) }));
      if (h % 3 === 0) svg.append(el("text", { x: x + 2, y: H - 10 }, String(h).padStart(2, "0") + ":00"));
      const tr = body.insertRow();
      tr.insertCell().textContent = String(h).padStart(2, "0") + ":00";
      tr.insertCell().textContent = v.toFixed(1);
      tr.insertCell().textContent = e90.toFixed(1);
    });
    $("cube-table").hidden = vals.length === 0;
    $("cube-cap").textContent =
      `${node}, ${doc.day}: bars = mean occupancy per hour (consistent, ≥ 0); red = ±${e90.toFixed(1)} people (90 %, after ` +
      `least squares, before the non-negativity step, which narrows it). ${doc.algorithm} release, discrete Gaussian, ρ = ${doc.rho.toPrecision(3)} ` +
      `(ε ${doc.epsilon_alone.toFixed(2)} alone, δ = ${doc.delta}) of the device-day budget; ` +
      `${doc.slots_observed} of ${doc.slots} slots observed.`;
  }

  async function loadDay(day) {
    doc = await api(`/api/histogram/${encodeURIComponent(day)}?cube=false`);
    const sel = $("cube-node");
    const keep = sel.value;
    sel.replaceChildren();
    // building and floors first, then rooms (depth order), as the tree lists them
    const order = doc.nodes.map((n, i) => [doc.depth[i], n]).sort((a, b) => a[0] - b[0]);
    for (const [d, n] of order) {
      const o = document.createElement("option");
      o.value = n; o.textContent = "  ".repeat(d) + n;
      sel.append(o);
    }
    sel.value = doc.nodes.includes(keep) ? keep : order[0][1];
    $("cube-msg").textContent = "";
    plot(sel.value);
  }

  async function start() {
    if (!token()) { $("cube-msg").textContent = "Sign in on the live heatmap first (the token is kept for this tab)."; return; }
    try {
      const { days } = await api("/api/histogram");
      if (!days.length) { $("cube-msg").textContent = "No day released yet: the worker releases a day's cube once the event clock has passed its midnight."; return; }
      const sel = $("cube-day");
      for (const d of days.slice().reverse()) { const o = document.createElement("option"); o.value = o.textContent = d; sel.append(o); }
      sel.addEventListener("change", () => loadDay(sel.value).catch(fail));
      $("cube-node").addEventListener("change", () => plot($("cube-node").value));
      await loadDay(sel.value);
    } catch (e) { fail(e); }
  }

  function fail(e) { $("cube-msg").textContent = "Could not load the daily cube: " + e.message; }

  start();
})();
