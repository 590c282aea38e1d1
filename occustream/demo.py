"""``occustream demo`` — simulator → Kafka → pipeline workers → Redis (→ dashboard), live.

Starts, on one machine and with nothing installed but this package:

1. embedded Kafka (Tansu) and Redis (or uses ``KAFKA_BOOTSTRAP`` / ``REDIS_URL``);
2. ``--workers`` pipeline workers (``occustream worker`` subprocesses, demo secret);
3. the simulator, sending a building's WiFi events at accelerated simulated time;
4. the dashboard (``occustream dashboard``) when it is installed;

then prints, every couple of seconds, the latest released occupancy per location and
the fire-code alerts. Ctrl-C (or SIGTERM) stops everything it started; children are
also tied to this process with PDEATHSIG, so none is left behind.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from infra.services import _die_with_parent, free_port, running_services
from infra.urls import safe_url
from mechanisms.errors import InvalidParameterError, check_positive
from occupancy import redis_layout as rl
from streams.settings import add_arguments, load_settings

log = logging.getLogger("occustream.demo")

#: The live start of ``make demo``: Tuesday 2026-01-13, 08:30 building time.
DEFAULT_START = "2026-01-13T08:30"


def build_parser() -> argparse.ArgumentParser:
    """The ``occustream demo`` argument parser."""
    p = argparse.ArgumentParser(
        prog="occustream demo",
        description="Run the whole pipeline on embedded services with simulated events and "
        "print live released occupancy and alerts. Ctrl-C stops everything.",
    )
    p.add_argument("--days", type=float, default=1.0,
                   help="simulated days played live from --start (default 1; the injected "
                        "over-capacity crowds are on the first day, 10:00 and 15:00)")
    p.add_argument("--start", default=DEFAULT_START,
                   help="first live simulated instant, building time = UTC (default "
                        f"{DEFAULT_START}: a Tuesday morning, so the lounge crowd opens an "
                        "incident at the 10:55 hourly reading, about 5 minutes into "
                        "watching at ×30, and it resolves at the 11:55 reading, the "
                        "first negative one; docs/demo-walkthrough.md)")
    p.add_argument("--speed", type=float, default=30.0,
                   help="initial pace: simulated seconds per wall second (default 30: a "
                        "5-min tick every 10 s); the page's speed control changes it")
    p.add_argument("--seed", type=int, default=1, help="simulator seed (default 1)")
    p.add_argument("--scenarios", default="overcapacity,malformed",
                   help="simulator scenarios (default overcapacity,malformed)")
    p.add_argument("--workers", type=int, default=1, help="pipeline workers (default 1)")
    p.add_argument("--dashboard-port", type=int, default=8080,
                   help="dashboard port (default 8080; 0 = any free; -1 = no dashboard)")
    p.add_argument("--duration", type=float, default=0.0,
                   help="stop after this many wall seconds (default 0: until Ctrl-C)")
    p.add_argument("--show", type=int, default=12,
                   help="locations shown per refresh (default 12, busiest first)")
    p.add_argument("--history-days", type=float, default=7.0,
                   help="release this many simulated days before the day of --start into the "
                        "read model first (the usual population, through the pipeline's "
                        "release stage, charged to its accountant, and the read model's "
                        "writer), so colours compare against the usual day from the first "
                        "frame; the start's day up to --start is then sent to the workers "
                        "at full speed (default 7; 0: none, the page colours by share of "
                        "capacity until a day is complete)")
    p.add_argument("--cache-dir", default=str(_default_cache()),
                   help="where released history is kept for the next start (keyed by the "
                        "settings, secret, window, seed and code; 'none': never cached)")
    p.add_argument("--synthetic", action="store_true",
                   help="no pipeline: the dashboard alone on a week of made-up values "
                        "(occustream dashboard --synthetic)")
    p.add_argument("--log-dir", type=Path, default=None,
                   help="where child logs go (default a temp dir)")
    add_arguments(p)
    return p


def _default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "occustream"


def _port_free(port: int) -> bool:
    import socket

    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _spawn(argv: list[str], env: dict[str, str], log_path: Path) -> subprocess.Popen[bytes]:
    f = open(log_path, "ab")  # noqa: SIM115 - closed when the process ends
    return subprocess.Popen(argv, env=env, stdout=f, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                p.terminate()
    deadline = time.monotonic() + 10
    for p in procs:
        try:
            p.wait(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                p.kill()
            p.wait()


def _render(r: Any, mech: str, locations: list[str], show: int, names: dict[str, str],
            capacity: dict[str, int], tick_s: float) -> str:
    latest = {k.decode(): json.loads(v) for k, v in r.hgetall(rl.latest(mech)).items()}
    if not latest:
        return f"[{mech}] waiting for the first final tick…"
    tick = max(v["tick"] for v in latest.values())
    when = time.strftime("%a %H:%M", time.gmtime(tick))
    rows = sorted(((v["value"], loc) for loc, v in latest.items() if loc in capacity),
                  reverse=True)[:show]
    n_ticks = r.zcard(rl.ticks(mech))
    lines = [f"── {mech}: tick {when} UTC ({n_ticks} ticks released) ──"]
    for value, loc in rows:
        lines.append(f"  {names.get(loc, loc)[:28]:<28} {value:>8.1f}  / cap {capacity[loc]}")
    alerts = r.xrevrange(rl.ALERTS_STREAM, count=3)
    lines.append(f"  alerts: {r.xlen(rl.ALERTS_STREAM)} in total")
    for _, fields in alerts:
        lines.append(_alert_line(json.loads(fields[b"data"]), names, tick_s))
    lines += _incident_lines(r, names)
    return "\n".join(lines)


def _incident_lines(r: Any, names: dict[str, str], show: int = 3) -> list[str]:
    """The incidents (one per location and crowd): counts, then the newest, open first."""
    total = r.zcard(rl.INCIDENTS_INDEX)
    if not total:
        return []
    active = r.zcard(rl.INCIDENTS_ACTIVE)
    ids = [i.decode() for i in r.zrevrange(rl.INCIDENTS_ACTIVE, 0, show - 1)]
    ids += [i.decode() for i in r.zrevrange(rl.INCIDENTS_INDEX, 0, show - 1)
            if i.decode() not in ids]
    out = [f"  incidents: {active} open, {total} in total"]
    for raw in r.hmget(rl.INCIDENTS, ids[:show]):
        if raw is None:
            continue
        i = json.loads(raw)
        hm = lambda t: time.strftime("%H:%M", time.gmtime(float(t)))  # noqa: E731
        state = (f"OPEN since {time.strftime('%a %H:%M', time.gmtime(i['opened']))}, "
                 f"last seen {hm(i['last_seen'])}" if i["state"] == "open" else
                 f"resolved {time.strftime('%a', time.gmtime(i['opened']))} "
                 f"{hm(i['opened'])}–{hm(i['last_seen'])}")
        peak = f", peak ≈ {max(0.0, float(i['peak'])):.0f}" if i.get("peak") is not None else ""
        d = i.get("decisions") or {}
        out.append(f"   {'●' if i['state'] == 'open' else '✓'} "
                   f"{names.get(i['location'], i['location'])}: {state}{peak} "
                   f"({d.get('tick', 0)} tick + {d.get('hour', 0)} hour decisions)")
    return out


def _alert_line(a: dict[str, Any], names: dict[str, str], tick_s: float) -> str:
    """One alert for the terminal, with its window: a tick, or the hour ending at it.

    MIDE raises the same location both per tick and per hour (hourly peak); the window
    tells the two apart (``alerts.firecode`` ``window``: ``tick`` or ``hour``).
    """
    tick = float(a["tick"])
    if a.get("uncertainty"):  # device-day: one reading at the hour's last tick
        when = f"{time.strftime('%a %H:%M', time.gmtime(tick + tick_s))} hourly reading"
        return (f"   ! {when}: {names.get(a['location'], a['location'])} over capacity "
                f"{a['capacity']} ({a['algorithm']}, β={a['beta']}; {a['uncertainty']})")
    if a.get("window") == "hour":
        end = tick + tick_s  # the hour's last tick closes it
        when = (f"{time.strftime('%a %H:%M', time.gmtime(end - 3600))}–"
                f"{time.strftime('%H:%M', time.gmtime(end))} hourly peak")
    else:
        when = f"{time.strftime('%a %H:%M', time.gmtime(tick))} tick"
    return (f"   ! {when}: {names.get(a['location'], a['location'])} over capacity "
            f"{a['capacity']} ({a['algorithm']}, β={a['beta']})")


def _check_args(args: argparse.Namespace) -> None:
    """Fail on a bad demo option before any service starts (the simulator would die alone)."""
    from simulator.simulation import Scenarios

    check_positive("--days", args.days)
    check_positive("--speed", args.speed)
    Scenarios.from_names(args.scenarios.split(","))
    for name, value, low in (("--workers", args.workers, 1), ("--show", args.show, 1),
                             ("--duration", args.duration, 0),
                             ("--history-days", args.history_days, 0)):
        if value < low:
            raise InvalidParameterError(f"{name} must be >= {low}, not {value!r}")


class _HistoryThread:
    """The week behind the demo, released in a thread while the services start.

    Release is CPU only (:func:`occustream.history.release_history`); writing needs Redis
    and waits for :meth:`write`.
    """

    def __init__(self, s: Any, args: argparse.Namespace) -> None:
        import threading

        from occustream.history import start_of

        self.result: Any = None
        self.cached = False
        self.error: BaseException | None = None
        cache = None if args.cache_dir in ("", "none") else Path(args.cache_dir)
        self._args = (s, history_end(start_of(args.start), s.tick_s), args.history_days,
                      args.seed, cache)
        self._thread = threading.Thread(target=self._run, name="demo-history", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from occustream.history import release_history_cached

        s, start_ts, days, seed, cache = self._args
        try:
            # the live seed: the same people and timetable, so the usual day is theirs
            self.result, self.cached = release_history_cached(
                s, start_ts=start_ts, days=days, seed=seed, cache_dir=cache)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the main thread
            self.error = exc

    def write(self, redis_url: str) -> dict[str, Any]:
        """Wait for the release, write it through the read model's writer."""
        from occustream.history import write_history

        self._thread.join()
        if self.error is not None:
            raise self.error
        return write_history(redis_url, self.result)


def history_end(start_ts: float, tick_s: float) -> float:
    """The last history tick: the tick before the start's midnight.

    Whole days before the live day: the live day, from its midnight, is the workers' (the
    morning is sent to them at full speed), so its device-day budget is charged once, by
    them, never by the history too.
    """
    return _midnight(start_ts) - tick_s


def _midnight(ts: float) -> float:
    """The (UTC = building time) midnight before ``ts``."""
    return ts - ts % 86400.0


def _start_clock(r: Any, start_ts: float, speed: float) -> None:
    """The demo's clock at its start and the initial pace (the page shows both at once)."""
    from readmodel.writer import queue_demo_clock, queue_demo_speed

    pipe = r.pipeline(transaction=False)
    queue_demo_speed(pipe, speed)
    queue_demo_clock(pipe, start_ts, speed)
    pipe.execute()


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``occustream demo``."""
    import tempfile

    import redis

    from occupancy.buildings import load_site
    from occustream.history import start_of
    from streams.app import pipeline_topics

    args = build_parser().parse_args(argv)
    _check_args(args)
    # Ctrl-C / SIGINT stops the demo even when it was started with SIGINT ignored (a
    # background job, or a parent that ignores it: Python then installs no handler)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if args.synthetic:
        from dashboards.app import main as dashboard

        port = args.dashboard_port if args.dashboard_port > 0 else 0
        return dashboard(["--synthetic", "--port", str(port)]
                         + (["--building", args.set_site] if args.set_site else []))
    for noisy in ("kafka", "aiokafka"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    overrides = {}
    if args.set_idle_s is None and "OCCUSTREAM_IDLE_S" not in os.environ:
        overrides["idle_s"] = 2.0  # accelerated time: unblock quiet partitions quickly
    s = load_settings(args, demo=True, overrides=overrides)  # warns about the dev secret
    if args.set_retention_ticks is None and "OCCUSTREAM_RETENTION_TICKS" not in os.environ:
        # keep the whole history and the live days in the series (not only the last 7 days)
        keep = int(math.ceil((args.history_days + args.days + 1) * 86400 / s.tick_s))
        s = replace(s, retention_ticks=max(s.retention_ticks, keep))
    site = load_site(s.site)
    t_start = time.monotonic()
    history = _HistoryThread(s, args) if args.history_days > 0 else None
    log_dir = args.log_dir or Path(tempfile.mkdtemp(prefix="occustream-demo-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    procs: list[subprocess.Popen[bytes]] = []
    with running_services(log_dir=log_dir, topics=pipeline_topics(s)) as svc:
        env = dict(os.environ, KAFKA_BOOTSTRAP=svc.kafka_bootstrap or "",
                   REDIS_URL=svc.redis_url or "", OCCUSTREAM_DEMO="true")
        # the settings reach the workers through the environment
        for k, v in s.public().items():
            if k in ("kafka_bootstrap", "redis_url", "state_redis_url", "demo"):
                continue  # public() masks URL credentials: pass the real URLs
            env[f"OCCUSTREAM_{k.upper()}"] = ",".join(v) if isinstance(v, list) else str(v)
        if s.state_redis_url:
            env["OCCUSTREAM_STATE_REDIS_URL"] = s.state_redis_url
        try:
            r = redis.Redis.from_url(env["REDIS_URL"])
            _start_clock(r, start_of(args.start), args.speed)
            for i in range(max(args.workers, 1)):
                procs.append(_spawn([sys.executable, "-m", "occustream.worker"], env,
                                    log_dir / f"worker-{i}.log"))
            dash_url = None
            if args.dashboard_port >= 0:
                try:
                    import dashboards.app  # noqa: F401
                    port = args.dashboard_port or free_port()
                    if not _port_free(port):
                        port = free_port()  # 8080 taken: any free port
                    tokens = {
                        "admin": env.setdefault("OCCUSTREAM_ADMIN_TOKEN",
                                                secrets.token_urlsafe(18)),
                        "analyst": env.setdefault("OCCUSTREAM_ANALYST_TOKEN",
                                                  secrets.token_urlsafe(18)),
                    }
                    procs.append(_spawn(
                        [sys.executable, "-m", "occustream.cli", "dashboard", "--building",
                         s.site, "--redis-url", env["REDIS_URL"], "--port", str(port)],
                        env, log_dir / "dashboard.log"))
                    dash_url = f"http://127.0.0.1:{port}/"
                except ImportError:
                    log.info("no dashboard installed")
            if history is not None:
                print(f"{args.history_days:g} days of history…", flush=True)
                got = history.write(env["REDIS_URL"])
                how = "loaded from the cache" if history.cached else "released"
                print(f"  history: {got['ticks']} ticks {how} and written "
                      f"({time.monotonic() - t_start:.1f} s after start)", flush=True)
            procs.append(_spawn(
                [sys.executable, "-m", "occustream.demo_feed", "--building", s.site,
                 "--days", str(args.days), "--start", args.start, "--seed", str(args.seed),
                 "--scenarios", args.scenarios, "--kafka", env["KAFKA_BOOTSTRAP"],
                 "--topic", s.topic("wifi.observations"), "--speed", str(args.speed),
                 "--redis-url", env["REDIS_URL"]]
                + (["--mechanism", s.mechanisms[0]] if history is not None else []),
                env, log_dir / "simulator.log"))
            print(f"occustream demo — site {site.name} ({len(site.location_ids)} locations)")
            print(f"  Kafka  {safe_url(svc.kafka_bootstrap)}   Redis {safe_url(svc.redis_url)}")
            if dash_url:
                for role, token in tokens.items():
                    print(f"  dashboard ({role}) {dash_url}#token={token}")
            if s.device_day:
                plan = s.day_plan()
                print(f"  privacy device-day (a device's whole day): ε_day {s.epsilon_day:g}, "
                      f"δ {s.delta:g}; releases "
                      f"{', '.join(r['release'] for r in plan['releases'])}; projected ε "
                      f"{plan['projected_epsilon']:.2f} per device-day")
            else:
                print(f"  privacy EVENT-LEVEL only: ε {s.epsilon_per_tick():g} per tick; a device "
                      f"present all day loses ε {s.epsilon_per_day():.1f}")
            print(f"  pace   ×{args.speed:g} from {args.start} (change it on the page: "
                  "Pause ×1 ×10 ×30 ×120 ×600)")
            print(f"  logs   {log_dir}")
            print("  Ctrl-C to stop\n", flush=True)
            names = {loc.id: loc.name for loc in site.locations}
            capacity = {loc.id: loc.capacity for loc in site.locations}
            mech = s.mechanisms[0]
            t0 = time.monotonic()
            while not args.duration or time.monotonic() - t0 < args.duration:
                time.sleep(2.0)
                dead = [p for p in procs[: max(args.workers, 1)] if p.poll() is not None]
                if dead:
                    print(f"a worker exited (code {dead[0].returncode}); see {log_dir}",
                          file=sys.stderr)
                    return 1
                print(_render(r, mech, list(site.location_ids), args.show, names, capacity,
                              s.tick_s),
                      flush=True)
            return 0
        except KeyboardInterrupt:
            print("\nstopping…", file=sys.stderr)
            return 0
        finally:
            _stop(procs)
