"""Restarts, a reset broker and a lost Redis, end to end (issue 14, scenarios D, E, F).

Real embedded Tansu and Redis on loopback, ``occustream worker`` subprocesses killed
with SIGKILL and restarted (the way :mod:`test_pipeline_e2e` runs them). Each scenario
replays two simulated hours of dbh plus one valid observation 30 minutes after the
last, on one partition only, so the last ticks become final only through the occupancy
stage's watermark markers to the idle partitions. Every wait is bounded.

* D — a restart with every partial already consumed still finishes every tick
  (the state is loaded at start, not when a partial arrives); Kafka's outputs carry
  deterministic ids and hold each id once.
* E — Tansu restarted with an empty log between two halves of the input: the worker
  reports it (ERROR line, health ``degraded``), continues on the new log, and the true
  counts of all ticks equal the oracle; no tick released before is released again.
* F — Redis (no persistence) killed mid-run and restarted empty, then once more while
  the worker is down: the worker keeps running, health says degraded during the
  outage, the read model is rebuilt from Kafka with the values first released, and
  Kafka and the read model count each ledger entry once.
"""

from __future__ import annotations

import asyncio
import collections
import json
import math
import signal
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import redis
from aiokafka.partitioner import murmur2
from test_pipeline_e2e import Run, read_topic

from infra.services import EmbeddedKafka, EmbeddedRedis, create_topics
from occupancy import redis_layout as rl
from occupancy.buildings import load_site
from occupancy.oracle import occupancy_oracle
from streams.app import pipeline_topics
from streams.runtime.kafkalog import check_position, fingerprint

pytestmark = pytest.mark.e2e

DAY0 = 1_767_600_000.0  # 2026-01-05 08:00 UTC
HOURS = 2
LATE_S = 1800.0  # the extra observation, after the last one (below max_future_s)
WAIT_S = 90.0  # bound of every wait for the pipeline
PARTITIONS = 4  # of wifi.observations (the settings' default)
MECHS = ("laplace", "pegasus-filter", "hpegasus-filter", "ttl")  # the event unit's default
#: The data end with ONE late observation that moves its partition's clock past the last
#: ticks (then markers carry it to the others): with the quorum clock
#: (docs/ARCHITECTURE.md "Event time") that needs a quorum of 1. The clock is not the
#: subject here (tests/occupancy/test_clock.py, test_clock_e2e.py are); restarts are.
QUORUM = 1
QUORUM_1 = {"OCCUSTREAM_CLOCK_QUORUM": str(QUORUM)}


@pytest.fixture(scope="module")
def data() -> dict[str, Any]:
    """Records (key, value, arrival) of the simulated hours + the late one, and events."""
    from simulator import simulate

    sim = simulate("dbh", days=HOURS / 24, seed=11, start=DAY0)
    recs = list(sim.records())
    events = [json.loads(v) for _, v, _ in recs]
    # one late observation at g for a device of each of partitions 1..3 (the producer's
    # murmur2 partitioner over 4 partitions): a majority of partitions reach g, so the
    # quorum clock's global clock is g, and partition 0 stays behind until an idle
    # marker carries g to it (the quorum clock never copies ONE pushed partition)
    g = round(json.loads(recs[-1][1])["ts"] + LATE_S, 3)
    done: set[int] = set()
    for key, value, arrival in reversed(list(recs)):
        p = (murmur2(key) & 0x7FFFFFFF) % PARTITIONS
        if p == 0 or p in done:
            continue
        done.add(p)
        late = dict(json.loads(value), ts=g)
        recs.append((key, json.dumps(late).encode(), arrival + LATE_S))
        events.append(late)
        if len(done) == PARTITIONS - 1:
            break
    return {"records": recs, "events": events, "max_ts": g}


def expected_last_tick(run: Run, max_ts: float) -> float:
    """The last tick final once every partition's clock is at ``max_ts`` (markers)."""
    s = run.settings
    wm = max_ts - s.lateness_s
    return (math.ceil(wm / s.tick_s) - 1) * s.tick_s


def produce(recs: list[Any], bootstrap: str, topic: str, rate: float | None = None) -> None:
    from simulator.kafka import produce as sim_produce

    sim_produce(recs, bootstrap, topic, max_rate=rate)


def released_ticks(r: redis.Redis, mech: str = "laplace") -> list[float]:
    return sorted(float(t) for t in r.zrange(rl.ticks(mech), 0, -1))


def wait_for(pred: Any, what: str, timeout_s: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.3)
    raise AssertionError(f"not within {timeout_s:g} s: {what}")


def wait_settled(r: redis.Redis, quiet_s: float = 6.0, at_least: int = 1) -> list[float]:
    """Wait until the released ticks stop changing for ``quiet_s``."""
    deadline = time.monotonic() + WAIT_S
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        ticks = released_ticks(r)
        if ticks != last:
            last, since = ticks, time.monotonic()
        elif len(ticks) >= at_least and time.monotonic() - since > quiet_s:
            return ticks
        time.sleep(0.3)
    raise AssertionError(f"pipeline did not settle ({len(last or [])} ticks)")


def kill(proc: Any) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def worker_log(run: Run) -> str:
    return "\n".join(p.read_text(errors="replace")
                     for p in sorted(Path(run.log_dir).glob(f"{run.tag}-worker*.log")))


def health_lines(run: Run, worker: int | None = None) -> list[dict[str, Any]]:
    """Health lines logged by the run's workers (or by worker number ``worker``)."""
    out = []
    text = worker_log(run) if worker is None else (
        Path(run.log_dir) / f"{run.tag}-worker{worker}.log").read_text(errors="replace")
    for line in text.splitlines():
        if "health {" in line:
            out.append(json.loads(line.split("health ", 1)[1]))
    return out


def outputs(bootstrap: str, run: Run) -> dict[str, list[dict[str, Any]]]:
    """Every record of the four output topics, decoded."""
    return {role: [json.loads(v) for _, v in read_topic(bootstrap, run.topic(name))]
            for role, name in (("true", "occupancy.true"), ("released", "occupancy.released"),
                               ("alerts", "alerts.firecode"), ("ledger", "privacy.ledger"))}


def ids_once(recs: list[dict[str, Any]]) -> tuple[int, int]:
    """(records, records whose id was already seen) — every record must carry an id."""
    ids = [d.get("id") or d.get("release_id") for d in recs]
    assert all(ids), "an output record without a deterministic id"
    return len(ids), len(ids) - len(set(ids))


def values_by_key(released: list[dict[str, Any]]) -> dict[tuple[str, float, str], set[float]]:
    seen: dict[tuple[str, float, str], set[float]] = collections.defaultdict(set)
    for d in released:
        seen[(d["mechanism"], float(d["tick"]), d["location"])].add(d["value"])
    return seen


def assert_oracle(run: Run, true_recs: list[dict[str, Any]], events: list[Any]) -> int:
    """True counts of every tick sent equal the oracle's (each tick sent with one vector)."""
    site = load_site(run.settings.site)
    table: dict[float, dict[str, int]] = {}
    for d in true_recs:
        prev = table.setdefault(float(d["tick"]), d["counts"])
        assert prev == d["counts"], f"tick {d['tick']}: true counts sent twice, differently"
    ticks = sorted(table)
    assert np.all(np.diff(ticks) == run.settings.tick_s), "a tick is missing"
    oracle = occupancy_oracle(events, site.ap_location, site.location_ids, ticks=ticks,
                              quorum=QUORUM)
    got = np.array([[table[t][loc] for loc in site.location_ids] for t in ticks])
    assert got.sum() > 0
    bad = [(t, int(np.abs(got[i] - oracle.counts[i]).sum()))
           for i, t in enumerate(ticks) if not np.array_equal(got[i], oracle.counts[i])]
    assert not bad, f"true counts differ from the oracle at (tick, |diff|) {bad}"
    return len(ticks)


def ledger_once(r: redis.Redis, ticks: list[float]) -> None:
    """The read model's ledger holds each (mechanism, tick) once, for every tick."""
    ledger = [json.loads(f[b"data"]) for _, f in r.xrange(rl.LEDGER_STREAM)]
    per = collections.Counter((d["mechanism"], float(d["tick"])) for d in ledger)
    assert set(per.values()) == {1}, "a release was accounted twice in the read model"
    assert {t for _, t in per} == set(ticks)


def series_values(r: redis.Redis, mech: str, loc: str) -> dict[float, float]:
    out: dict[float, float] = {}
    for member, score in r.zrange(rl.series(mech, loc), 0, -1, withscores=True):
        assert score not in out, f"{mech} {loc}: two values for tick {score}"
        out[score] = json.loads(member)["value"]
    return out


# ------------------------------------------------------------------ unit-sized check


def test_check_position_detects_a_replaced_record(kafka_bootstrap, topic_prefix):
    """Same offset, different record (a reset log refilled past the checkpoint) → reported."""
    topic = f"{topic_prefix}pos"
    create_topics(kafka_bootstrap, {topic: 1})
    produce([(b"k", f"v{i}".encode(), 0.0) for i in range(5)], kafka_bootstrap, topic)

    async def check(offset: int, fp: str) -> Any:
        return await check_position(kafka_bootstrap, topic, 0, offset, fp)

    assert asyncio.run(check(3, fingerprint(b"v3"))).problem is None
    assert "not the one processed" in asyncio.run(check(3, fingerprint(b"other"))).problem
    assert "beyond the log end" in asyncio.run(check(5, fingerprint(b"v5"))).problem
    assert asyncio.run(check(-1, "")).problem is None


def test_embedded_redis_has_aof_by_default(tmp_path):
    server = EmbeddedRedis(log_dir=tmp_path).start()
    try:
        c = redis.Redis.from_url(server.url)
        assert c.config_get("appendonly") == {"appendonly": "yes"}
        assert c.config_get("appendfsync") == {"appendfsync": "everysec"}
        c.close()
    finally:
        server.stop()


# ------------------------------------------------------------------------------ D


def test_restart_with_backlog_never_stalls_and_sends_no_duplicates(
        data, kafka_bootstrap, redis_url, tmp_path):
    """D: two SIGKILLs, the second after every partial was consumed; all ticks final."""
    run = Run(kafka_bootstrap, redis_url, tmp_path, "stall", **QUORUM_1)
    r = redis.Redis.from_url(redis_url)
    r.flushdb()
    last = expected_last_tick(run, data["max_ts"])
    try:
        run.env["OCCUSTREAM_IDLE_S"] = "600"  # these two workers never send markers
        w = run.start_worker()
        obs = run.topic("wifi.observations")
        produce(data["records"], kafka_bootstrap, obs, rate=4000)
        wait_for(lambda: len(released_ticks(r)) >= 3, "first ticks released")
        kill(w)
        w = run.start_worker()
        wait_for(lambda: health_lines(run, worker=1), "second worker running")
        stuck = wait_settled(r, at_least=5)
        kill(w)
        # the input is consumed and the last ticks wait for markers to idle partitions
        assert stuck[-1] < last - run.settings.tick_s, (stuck[-1], last)
        run.env["OCCUSTREAM_IDLE_S"] = "2"
        t0 = time.monotonic()
        run.start_worker()
        wait_for(lambda: released_ticks(r)[-1:] == [last],
                 f"tick {last} final after the restart (stuck at {stuck[-1]})")
        print(f"D: {len(stuck)} ticks before, {len(released_ticks(r))} after the restart, "
              f"in {time.monotonic() - t0:.1f} s")
    finally:
        run.stop()
    out = outputs(kafka_bootstrap, run)
    n_ticks = assert_oracle(run, out["true"], data["events"])
    assert released_ticks(r) == sorted({float(d["tick"]) for d in out["true"]})
    for role, recs in out.items():
        n, dup = ids_once(recs)
        print(f"D: {role}: {n} records, {dup} duplicates")
        assert dup == 0, f"{role}: {dup} records sent twice"
    assert all(len(v) == 1 for v in values_by_key(out["released"]).values())
    ledger_once(r, released_ticks(r))
    assert n_ticks == len(released_ticks(r))
    r.close()


# ------------------------------------------------------------------------------ E


def test_reset_broker_log_is_detected_and_nothing_released_twice(
        data, redis_url, tmp_path):
    """E: Tansu restarted empty twice: under a live worker, then while it is down."""
    broker = EmbeddedKafka(log_dir=tmp_path).start()
    r = redis.Redis.from_url(redis_url)
    r.flushdb()
    run = Run(broker.bootstrap, redis_url, tmp_path, "reset", **QUORUM_1)
    recs = data["records"]
    cuts = [0, int(len(recs) * 0.5), int(len(recs) * 0.75), len(recs)]
    obs = run.topic("wifi.observations")
    logs: list[dict[str, list[dict[str, Any]]]] = []
    befores: list[list[float]] = []

    def reset() -> None:
        broker.stop()
        broker.start()  # memory storage: an empty log on the same address
        create_topics(broker.bootstrap, pipeline_topics(run.settings))

    try:
        w = run.start_worker()
        produce(recs[cuts[0]:cuts[1]], broker.bootstrap, obs)
        wait_settled(r, quiet_s=8.0, at_least=5)  # every partial read before the reset
        befores.append(released_ticks(r))
        logs.append(outputs(broker.bootstrap, run))
        reset()  # under the live worker
        produce(recs[cuts[1]:cuts[2]], broker.bootstrap, obs)
        wait_settled(r, quiet_s=8.0, at_least=len(befores[0]) + 1)
        assert w.poll() is None, "the worker died on the broker reset"
        kill(w)
        befores.append(released_ticks(r))
        logs.append(outputs(broker.bootstrap, run))
        reset()  # while the worker is down
        w = run.start_worker()
        produce(recs[cuts[2]:], broker.bootstrap, obs)
        last = expected_last_tick(run, data["max_ts"])
        wait_for(lambda: released_ticks(r)[-1:] == [last], f"tick {last} after the resets")
        wait_for(lambda: any("reset" in (json.loads(v).get("degraded") or "")
                             for v in r.hgetall(rl.health(run.settings.app_id)).values()),
                 "health degraded: log reset")
        assert w.poll() is None
        logs.append(outputs(broker.bootstrap, run))
    finally:
        run.stop()
        broker.stop()
    for i in (0, 1):
        text = (Path(run.log_dir) / f"{run.tag}-worker{i}.log").read_text(errors="replace")
        assert "[ERROR] LOG RESET DETECTED" in text, f"worker {i}: reset not reported"
    ticks = [{float(d["tick"]) for d in log["true"]} for log in logs]
    assert ticks[0] == set(befores[0])
    assert ticks[0] | ticks[1] == set(befores[1])
    for i, j in ((0, 1), (0, 2), (1, 2)):
        assert not ticks[i] & ticks[j], "a tick released before a reset was released again"
    vals = [values_by_key(log["released"]) for log in logs]
    for i, j in ((0, 1), (0, 2), (1, 2)):
        assert not set(vals[i]) & set(vals[j])
    every = {role: [d for log in logs for d in log[role]] for role in logs[0]}
    n_ticks = assert_oracle(run, every["true"], data["events"])
    all_ticks = released_ticks(r)
    assert n_ticks == len(all_ticks)
    locations = set(load_site(run.settings.site).location_ids)
    for part in vals[:2]:
        for (mech, tick, loc), v in part.items():
            if loc in locations and mech == "laplace":
                assert series_values(r, mech, loc)[tick] == next(iter(v))
    ledger_once(r, all_ticks)
    for role, recs_ in every.items():
        assert ids_once(recs_)[1] == 0, f"{role}: a record sent twice"
    print(f"E: ticks per log {[len(t) for t in ticks]}; {n_ticks} ticks equal to the oracle; "
          f"{len(every['released'])} released records, none twice")
    r.close()


# ------------------------------------------------------------------------------ F


def test_redis_lost_without_persistence_never_rereleases(data, kafka_bootstrap, tmp_path):
    """F: Redis killed and restarted empty under a live worker, then while it is down."""
    server = EmbeddedRedis(log_dir=tmp_path, persistence=False).start()
    run = Run(kafka_bootstrap, server.url, tmp_path, "redis", **QUORUM_1)
    run.env["OCCUSTREAM_METRICS_INTERVAL_S"] = "1"
    r = redis.Redis.from_url(server.url)
    recs = data["records"]
    half = int(len(recs) * 0.6)
    site = load_site(run.settings.site)
    try:
        w = run.start_worker()
        obs = run.topic("wifi.observations")
        produce(recs[:half], kafka_bootstrap, obs)
        first = wait_settled(r, at_least=5)
        first_release = values_by_key(outputs(kafka_bootstrap, run)["released"])
        server.stop()  # no persistence: everything in Redis is gone
        t_down = time.monotonic()
        produce(recs[half:], kafka_bootstrap, obs)
        wait_for(lambda: any("redis" in (h.get("degraded") or "")
                             for h in health_lines(run)), "health degraded during the outage",
                 timeout_s=30)
        assert w.poll() is None, "the worker died during the Redis outage"
        server.start()
        print(f"F: Redis down {time.monotonic() - t_down:.1f} s")
        last = expected_last_tick(run, data["max_ts"])
        full = [first[0] + i * run.settings.tick_s
                for i in range(int((last - first[0]) / run.settings.tick_s) + 1)]
        wait_for(lambda: released_ticks(r) == full, "read model rebuilt after the outage")
        assert w.poll() is None
        after_outage = {loc: series_values(r, "laplace", loc) for loc in site.location_ids}
        # lost again while the worker is down: the restart rebuilds from Kafka
        kill(w)
        server.stop()
        server.start()
        run.start_worker()
        wait_for(lambda: released_ticks(r) == full, "read model rebuilt after the restart")
        time.sleep(3)
    finally:
        run.stop()
    text = worker_log(run)
    assert "STATE STORE LOST" in text
    out = outputs(kafka_bootstrap, run)
    vals = values_by_key(out["released"])
    twice = [k for k, v in vals.items() if len(v) > 1]
    assert not twice, f"{len(twice)} releases noised twice with different values"
    changed = [k for k, v in first_release.items() if vals[k] != v]
    assert not changed, f"{len(changed)} releases differ from the first release"
    for role, recs_ in out.items():
        n, dup = ids_once(recs_)
        print(f"F: {role}: {n} records, {dup} duplicates")
        assert dup == 0, f"{role}: {dup} records sent twice"
    n_ticks = assert_oracle(run, out["true"], data["events"])
    assert n_ticks == len(full)
    kafka_ledger = collections.Counter((d["mechanism"], float(d["tick"])) for d in out["ledger"])
    assert set(kafka_ledger.values()) == {1}
    ledger_once(r, full)
    for loc in site.location_ids:
        got = series_values(r, "laplace", loc)
        assert got == after_outage[loc]
        for t, v in got.items():
            assert vals[("laplace", t, loc)] == {v}
    print(f"F: {len(first_release)} releases of {len(first)} ticks compared with the first "
          f"release; {n_ticks} ticks in total")
    r.close()
    server.stop()
