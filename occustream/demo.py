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
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from infra.services import _die_with_parent, free_port, running_services
from infra.urls import safe_url
from mechanisms.errors import InvalidParameterError, check_positive
from occupancy import redis_layout as rl
from streams.settings import add_arguments, load_settings

log = logging.getLogger("occustream.demo")


def build_parser() -> argparse.ArgumentParser:
    """The ``occustream demo`` argument parser."""
    p = argparse.ArgumentParser(
        prog="occustream demo",
        description="Run the whole pipeline on embedded services with simulated events and "
        "print live released occupancy and alerts. Ctrl-C stops everything.",
    )
    p.add_argument("--days", type=float, default=1.0,
                   help="simulated days (default 1: the injected over-capacity crowd alerts "
                        "within two minutes; use 7 so that from day 2 on the heatmap colours "
                        "against the usual occupancy of past days — the first crowd is then "
                        "on day 3)")
    p.add_argument("--start", default="2026-01-05T00:00",
                   help="first simulated instant (default Monday 2026-01-05 00:00 UTC; the "
                   "injected over-capacity crowds are at 10:00 and 15:00)")
    p.add_argument("--speed", type=float, default=600.0,
                   help="simulated seconds per wall second (default 600: two 5-min ticks/s)")
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
    p.add_argument("--history-days", type=float, default=0.0,
                   help="release this many simulated days before --start into the read model "
                        "first (the usual population, through the pipeline's release stage "
                        "and writer), so colours compare against the usual day from the first "
                        "frame; e.g. --history-days 7 --start 2026-01-12T07:00 --speed 60 "
                        "(default 0: none)")
    p.add_argument("--log-dir", type=Path, default=None,
                   help="where child logs go (default a temp dir)")
    add_arguments(p)
    return p


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


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``occustream demo``."""
    import tempfile

    import redis

    from occupancy.buildings import load_site
    from streams.app import pipeline_topics

    args = build_parser().parse_args(argv)
    _check_args(args)
    for noisy in ("kafka", "aiokafka"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    overrides = {}
    if args.set_idle_s is None and "OCCUSTREAM_IDLE_S" not in os.environ:
        overrides["idle_s"] = 2.0  # accelerated time: unblock quiet partitions quickly
    s = load_settings(args, demo=True, overrides=overrides)  # warns about the dev secret
    site = load_site(s.site)
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
            if args.history_days > 0:
                from occustream.history import backfill, start_of

                print(f"writing {args.history_days:g} days of released history…", flush=True)
                backfill(env["REDIS_URL"], s, start_ts=start_of(args.start),
                         days=args.history_days, seed=args.seed + 1)
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
            procs.append(_spawn(
                [sys.executable, "-m", "occustream.cli", "simulate", "--building", s.site,
                 "--days", str(args.days), "--start", args.start, "--seed", str(args.seed),
                 "--scenarios", args.scenarios, "--kafka", env["KAFKA_BOOTSTRAP"],
                 "--topic", s.topic("wifi.observations"), "--speed", str(args.speed), "-q"],
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
            print(f"  logs   {log_dir}")
            print("  Ctrl-C to stop\n", flush=True)
            r = redis.Redis.from_url(env["REDIS_URL"])
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
