"""The default worker (device-day unit) on embedded Tansu + Redis, SIGKILLed mid-day.

After the restart: the released values are exactly the release stage's values on the
true counts (same secret → same noise, the day's budget restored from the checkpoint),
the day's charges are in the ledger exactly once, and nothing is over ε_day. The run
crosses midnight: the first day's daily cube is released once the event clock has
passed it, the worker is SIGKILLed again right after, and the cube stays identical
(keyed noise) with its histogram share in the ledger exactly once.
"""

from __future__ import annotations

import collections
import json
import signal
import time

import numpy as np
import pytest
import redis
from test_pipeline_e2e import Run, produce, read_topic, true_table

from occupancy import redis_layout as rl
from occupancy.buildings import load_site
from streams.pipeline.release import Releaser

pytestmark = pytest.mark.e2e

MECH = "device-day"
CUBE_KEY = rl.histogram("2026-01-05", "daily-cube")


def _n(r: redis.Redis) -> int:
    return int(r.zcard(rl.ticks(MECH)))


@pytest.fixture(scope="module")
def dd_run(kafka_bootstrap, redis_url, tmp_path_factory):
    from simulator import simulate

    # 14:00–02:00: 144 ticks, an over-capacity crowd at 15:00–16:00, midnight at tick 120
    sim = simulate("dbh", days=0.5, seed=7, start="2026-01-05T14:00",
                   scenarios=["overcapacity"])
    run = Run(kafka_bootstrap, redis_url, tmp_path_factory.mktemp("dd"), "dd",
              OCCUSTREAM_PRIVACY_UNIT="device-day")
    assert run.settings.mechanisms == (MECH,)
    r = redis.Redis.from_url(redis_url)
    r.flushdb()
    try:
        w = run.start_worker()
        producer = produce(sim, kafka_bootstrap, run.topic("wifi.observations"), 8000)
        deadline = time.monotonic() + 120
        while _n(r) < 50 and time.monotonic() < deadline:
            time.sleep(0.2)
        killed_at = _n(r)
        w.send_signal(signal.SIGKILL)
        w.wait()
        assert 0 < killed_at < 130, f"kill came at {killed_at} ticks"
        w = run.start_worker()
        deadline = time.monotonic() + 150
        while not r.exists(CUBE_KEY) and time.monotonic() < deadline:
            time.sleep(0.2)
        run.cube_text = r.get(CUBE_KEY)  # type: ignore[attr-defined]
        assert run.cube_text, "no daily cube after midnight"  # type: ignore[attr-defined]
        w.send_signal(signal.SIGKILL)  # right after the release: it may be replayed
        w.wait()
        before = set(r.hkeys(rl.health(run.settings.app_id)))
        run.start_worker()
        producer.join(120)
        # the settling below must not start before the new worker owns its partitions
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(
                k not in before and json.loads(v).get("partitions")
                for k, v in r.hgetall(rl.health(run.settings.app_id)).items()):
            time.sleep(0.3)
        deadline, last, since = time.monotonic() + 150, -1, time.monotonic()
        while time.monotonic() < deadline:
            n = _n(r)
            if n != last:
                last, since = n, time.monotonic()
            elif n >= 130 and time.monotonic() - since > 8.0:
                break
            time.sleep(0.5)
        run.total = last  # type: ignore[attr-defined]
        yield run
    finally:
        run.stop()
        r.close()


def test_device_day_worker_crash_restart_same_values_ledger_once_within_budget(
        dd_run, redis_url):
    r = redis.Redis.from_url(redis_url)
    site = load_site(dd_run.settings.site)
    table = true_table(dd_run)
    ticks = sorted(table)
    assert len(ticks) == dd_run.total >= 130
    # the same values: the release stage on the true counts, from the day's start
    rel, states = Releaser(dd_run.settings.release_config(), site), {}
    expect, cubes = {}, []
    for t in ticks:
        out, new = rel.run(t, [table[t][loc] for loc in site.location_ids], [], states)
        states.update(new)
        expect[t] = out.releases[0].values
        if out.cube is not None:
            cubes.append(out.cube)
    # the daily cube: once, identical to the replay and to what was first written
    assert len(cubes) == 1 and cubes[0]["day"] == "2026-01-05"
    midnight = 20459 * 86400  # 2026-01-06T00:00Z
    assert cubes[0]["slots_observed"] == sum(t < midnight for t in ticks) >= 115
    stored = r.get(CUBE_KEY)
    assert stored == dd_run.cube_text, "the cube changed after the restart"
    assert json.loads(stored) == json.loads(json.dumps(cubes[0]))
    seen: dict[tuple[float, str], set[float]] = collections.defaultdict(set)
    for _, v in read_topic(dd_run.bootstrap, dd_run.topic("occupancy.released")):
        d = json.loads(v)
        assert d["mechanism"] == MECH
        seen[(d["tick"], d["location"])].add(d["value"])
    assert all(len(v) == 1 for v in seen.values()), "a tick released twice, differently"
    for t in ticks:
        got = [next(iter(seen[(t, loc)])) for loc in site.location_ids]
        assert np.allclose(got, expect[t]), f"tick {t}: values differ from the replay"
    # the ledger: each day's heatmap and alert charges and the first day's cube, once
    ledger = [json.loads(f[b"data"]) for _, f in r.xrange(rl.LEDGER_STREAM)]
    ids = collections.Counter(d["release_id"] for d in ledger)
    assert sorted(d["mechanism"] for d in ledger) == [
        "alerts", "alerts", "daily-cube:tree", MECH, MECH], [
        (d["release_id"], d["note"]) for d in ledger]
    cube_rec = next(d for d in ledger if d["mechanism"] == "daily-cube:tree")
    assert cube_rec["release_id"] == cubes[0]["release_id"]
    assert set(ids.values()) == {1}
    kafka = collections.defaultdict(set)
    for _, v in read_topic(dd_run.bootstrap, dd_run.topic("privacy.ledger")):
        d = json.loads(v)
        kafka[d["release_id"]].add(json.dumps(d, sort_keys=True))
    assert set(kafka) == set(ids) and all(len(v) == 1 for v in kafka.values())
    # nothing over budget: status, health line and the ledger's day total
    status = json.loads(r.get(rl.PRIVACY_STATUS))
    assert status["unit"] == "device-day" and status["delta"] == 1e-6
    assert 0 < status["epsilon_spent_today"] <= status["epsilon_projected_day"] <= 4.0
    health = [json.loads(v) for v in r.hgetall(rl.health(dd_run.settings.app_id)).values()]
    assert any(h.get("privacy", {}).get("epsilon_day") == 4.0 for h in health)
    from readmodel.reader import _device_day_rows

    total = [row for row in _device_day_rows({(d["tick"], d["mechanism"]): d for d in ledger})
             if row["total"]]
    assert len(total) == 2 and all(row["epsilon"] <= 4.0 for row in total)
    # alerts: hourly, with their uncertainty width; the crowd's hour raised one
    alerts = [json.loads(f[b"data"]) for _, f in r.xrange(rl.ALERTS_STREAM)]
    assert alerts and all("below capacity" in a["uncertainty"] for a in alerts)
    assert all((a["tick"] + 300) % 3600 == 0 for a in alerts)
    r.close()
