"""The release stage under the default unit (device-day): charged once per day, replay-safe."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mechanisms.errors import ConfigError
from occupancy.buildings import load_site
from streams.pipeline.release import Releaser
from streams.settings import load_settings

ENV = {"OCCUSTREAM_SECRET": "device-day-stage-secret-0123456789"}
DAY = 86400
T0 = 20_000 * DAY + 23 * 3600  # 23:00 UTC: the run crosses midnight


def _run(rel: Releaser, ticks: list[float], counts: np.ndarray, states: dict) -> list:
    outs = []
    for t, c in zip(ticks, counts, strict=True):
        out, new = rel.run(t, [int(x) for x in c], [], states)
        states.update(new)
        outs.append(out)
    return outs


def test_default_worker_releases_device_day_charged_once_per_day_and_replays() -> None:
    s = load_settings(None, ENV)
    assert s.privacy_unit == "device-day" and s.mechanisms == ("device-day",)
    site = load_site("dbh")
    caps = np.asarray(site.capacities)
    rng = np.random.default_rng(5)
    ticks = [T0 + 300 * i for i in range(26)]  # 23:00 .. 01:05 next day
    counts = rng.integers(0, 40, (len(ticks), len(caps)))
    counts[11] = caps + 80  # the tick closing 00:00 has every room far over capacity
    states: dict = {}
    outs = _run(Releaser(s.release_config(), site), ticks, counts, states)
    charged = [(i, r["mechanism"], r["release_id"]) for i, o in enumerate(outs)
               for r in o.ledger]
    # day 1: heatmap + alerts at the first tick; day 2: at its first tick (00:00), where
    # day 1's daily cube is released too (charged to day 1's histogram share)
    assert [(i, m) for i, m, _ in charged] == [(0, "device-day"), (0, "alerts"),
                                               (12, "device-day"), (12, "alerts"),
                                               (12, "daily-cube:tree")]
    assert len({rid for _, _, rid in charged}) == 5
    assert "/day:20000/histogram|daily-cube:tree|" in charged[-1][2]
    for o in outs:
        p = o.privacy
        assert p["unit"] == "device-day" and p["delta"] == 1e-6
        assert 0 < p["epsilon_spent_today"] <= p["epsilon_day"] == 4.0
        assert p["within_cap"]
    # alerts: hourly, with the uncertainty width
    hourly = outs[11].alerts
    alpha = hourly[0]["alpha"]
    watched = {loc for loc, cap in zip(site.location_ids, caps, strict=True)
               if cap * s.capacity_factor >= alpha}
    assert 0 < len(watched) < len(caps)  # dbh has rooms smaller than α at the default budget
    assert len(hourly) >= 0.9 * len(watched)
    assert {a["location"] for a in hourly} <= watched  # rooms below α are never alerted on
    assert sorted(outs[11].privacy["alerts_unmonitored"]) == sorted(set(site.location_ids)
                                                                    - watched)
    assert all(a["window"] == "hour" and a["alpha"] > 0 and "below capacity" in a["uncertainty"]
               for a in hourly)
    assert not any(o.alerts for i, o in enumerate(outs) if i not in (11, 23))
    # restart mid-day from the checkpointed states of tick 15: same values, no new charge
    saved = dict(states)
    states2: dict = {}
    _run(Releaser(s.release_config(), site), ticks[:16], counts[:16], states2)
    again = _run(Releaser(s.release_config(), site), ticks[16:], counts[16:], states2)
    assert not any(o.ledger for o in again)
    for a, b in zip(outs[16:], again, strict=True):
        assert a.releases[0].values == b.releases[0].values
        assert a.releases[0].extra == b.releases[0].extra
        assert [x["location"] for x in a.alerts] == [x["location"] for x in b.alerts]
    assert json.loads(saved["day-budget"]) == json.loads(states2["day-budget"])
    # a replay of an already charged first tick (from the state before it) charges nothing new
    rel = Releaser(s.release_config(), site)
    pre = {k: v for k, v in states2.items() if k == "day-budget"}
    out, _ = rel.run(ticks[12], [int(x) for x in counts[12]], [], pre)
    assert out.ledger == []


def test_configs_over_the_day_budget_refuse_in_one_line() -> None:
    with pytest.raises(ConfigError, match=r"laplace.*overshoot") as exc:
        load_settings(None, {**ENV, "OCCUSTREAM_MECHANISMS": "device-day,laplace"})
    assert "\n" not in str(exc.value)
    with pytest.raises(ConfigError, match=r"pegasus-post ε 288.*overshoot 28"):
        load_settings(None, {**ENV, "OCCUSTREAM_MECHANISMS": "device-day,pegasus-post"})
    # the device-day releases take shares of ε_day: a smaller ε_day means more noise
    small = load_settings(None, {**ENV, "OCCUSTREAM_EPSILON_DAY": "1"})
    plan = small.day_plan()
    assert plan["projected_epsilon"] <= 1.0 < load_settings(None, ENV).day_plan()[
        "projected_epsilon"] <= 4.0
    with pytest.raises(ConfigError, match="privacy_unit"):
        load_settings(None, {**ENV, "OCCUSTREAM_PRIVACY_UNIT": "week"})
    with pytest.raises(ConfigError, match="device-day unit"):
        load_settings(None, {**ENV, "OCCUSTREAM_PRIVACY_UNIT": "event",
                             "OCCUSTREAM_MECHANISMS": "device-day"})
    with pytest.raises(ConfigError, match=r"window:12 budget exceeded.*overshoot"):
        load_settings(None, {**ENV, "OCCUSTREAM_PRIVACY_UNIT": "window:12"})


def test_event_level_unit_is_labelled_and_never_called_protected() -> None:
    s = load_settings(None, {**ENV, "OCCUSTREAM_PRIVACY_UNIT": "event"})
    assert s.mechanisms == ("laplace", "pegasus-filter", "hpegasus-filter", "ttl")
    site = load_site("dbh")
    out, _ = Releaser(s.release_config(), site).run(T0, [1] * len(site.capacities),
                                                     [1] * len(site.capacities), {})
    assert out.privacy["unit"] == "event" and out.privacy["within_cap"] is False
    assert out.privacy["epsilon_projected_day"] == pytest.approx(
        out.privacy["epsilon_tick"] * 288)


def test_health_line_and_metrics_carry_the_day_figures() -> None:
    import time as _time

    from streams.runtime.health import health_line, prometheus_text

    s = load_settings(None, ENV)
    site = load_site("dbh")
    out, _ = Releaser(s.release_config(), site).run(T0, [3] * len(site.capacities), [], {})
    h = health_line(worker="w", started=_time.monotonic(), events_in=0, ticks_out=1,
                    last_tick=T0, watermarks={}, lag={}, dlq={}, latency=[],
                    privacy=out.privacy)
    pv = h["privacy"]
    assert pv["unit"] == "device-day" and pv["epsilon_day"] == 4.0 and pv["delta"] == 1e-6
    assert 0 < pv["epsilon_spent_today"] <= pv["epsilon_projected_day"] <= 4.0
    text = prometheus_text(h)
    assert f"occustream_privacy_epsilon_spent_today {pv['epsilon_spent_today']}" in text


def test_window_unit_is_labelled_with_its_window_bound() -> None:
    s = load_settings(None, {**ENV, "OCCUSTREAM_PRIVACY_UNIT": "window:12",
                             "OCCUSTREAM_MECHANISMS": "laplace",
                             "OCCUSTREAM_LAPLACE_EPSILON": "0.25", "OCCUSTREAM_MIDE": "0"})
    site = load_site("dbh")
    out, _ = Releaser(s.release_config(), site).run(T0, [1] * len(site.capacities), [], {})
    p = out.privacy
    assert p["unit"] == "window:12" and p["epsilon_window"] == pytest.approx(3.0)
    assert p["within_cap"] and p["epsilon_projected_day"] == pytest.approx(72.0)


def test_published_values_are_the_last_complete_quarter_hour_mean() -> None:
    """Values change only when a 15-minute window completes, and then they are its mean."""
    s = load_settings(None, {**ENV, "OCCUSTREAM_MIDE": "0"})
    site = load_site("dbh")
    rng = np.random.default_rng(9)
    start = 20_000 * DAY + 8 * 3600
    ticks = [start + 300 * i for i in range(9)]
    counts = rng.integers(0, 60, (9, len(site.capacities)))
    outs = _run(Releaser(s.release_config(), site), ticks, counts, {})
    vals = [o.releases[0].values for o in outs]
    assert vals[2] != vals[1] and vals[3] == vals[2] == vals[4] and vals[5] != vals[4]
    # the quarter's mean tracks the quarter's mean count far better than one tick's σ
    q = counts[3:6].mean(axis=0)
    err = np.abs(np.asarray(vals[5]) - q).mean()
    assert err < 0.8 * 73.8 * np.sqrt(2 / np.pi)  # a live tick's room MAE ≈ 58.9
