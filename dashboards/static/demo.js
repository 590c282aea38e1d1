/* occustream demo — the simulated clock and the speed control (only inside `occustream demo`).
   Reads GET /api/demo every 2 s; the clock runs between reads at the reported pace.
   A button POSTs /api/demo/speed; the demo's producer picks it up within a second. */
(function () {
  "use strict";
  const $ = (id) => document.getElementById(id);
  const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
  let clock = null, speeds = [], built = false, busy = false;
  const token = () => sessionStorage.getItem("occ.token");
  const label = (s) => (s === 0 ? "Pause" : `×${s}`);

  function simNow() {
    if (!clock || clock.sim_ts == null) return null;
    const lag = Math.min(Math.max(Date.now() / 1000 - clock.wall_ts, 0), 5);
    return clock.sim_ts + lag * (clock.speed || 0);
  }
  function show() {
    const t = simNow();
    if (t == null) return;
    const d = new Date(t * 1000), p = (n) => String(n).padStart(2, "0");
    const sp = clock.speed || 0;
    $("demo-clock").textContent = `${DAYS[d.getUTCDay()]} ${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())}`;
    $("demo-speed").textContent = sp === 0 ? "paused" : `×${sp}`;
    for (const b of document.querySelectorAll("#demo-pace button")) {
      b.setAttribute("aria-pressed", String(Number(b.dataset.speed) === (clock.requested ?? sp)));
    }
  }
  function build() {
    const box = $("demo-buttons");
    for (const s of speeds) {
      const b = document.createElement("button");
      b.type = "button"; b.dataset.speed = String(s); b.textContent = label(s);
      b.title = s === 0 ? "pause the simulated building" : `${s} simulated seconds per second`;
      b.addEventListener("click", () => setSpeed(s));
      box.appendChild(b);
    }
    built = true;
  }
  async function setSpeed(s) {
    if (busy) return;
    busy = true;
    try {
      const r = await fetch("/api/demo/speed", { method: "POST", body: JSON.stringify({ speed: s }),
        headers: { Authorization: "Bearer " + token(), "Content-Type": "application/json" } });
      if (r.ok && clock) { clock.requested = s; show(); }
      setTimeout(poll, 600);
    } finally { busy = false; }
  }
  async function poll() {
    if (!token()) return;
    try {
      const r = await fetch("/api/demo", { headers: { Authorization: "Bearer " + token() } });
      if (!r.ok) return;
      const body = await r.json();
      if (!body.enabled || !body.clock) return;
      speeds = body.speeds; clock = body.clock;
      if (!built) build();
      $("demo-pace").hidden = false;
      show();
    } catch (e) { /* the page's own status shows a lost connection */ }
  }
  poll();
  setInterval(poll, 2000);
  setInterval(show, 250);
})();
