"""`occustream demo --history-days`: released history behind the live start."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from occupancy import redis_layout as rl

START = 1_767_938_400  # Fri 2026-01-09 06:00 UTC


def test_backfill_writes_days_before_the_start_through_the_one_writer(
        redis_url: str, redis_client: Any) -> None:
    from occustream.history import backfill
    from streams.settings import Settings

    s = Settings(site="dbh", mechanisms=("laplace", "ttl"), secret=b"history-test-secret",
                 privacy_unit="event")  # the thesis MIDE alerts, charged per tick
    got = backfill(redis_url, s, start_ts=START, days=2, seed=3)
    assert got["mechanisms"] == ["laplace"]  # TTL needs the presence stage's chains
    # ticks close (t − 300, t]: the last one closes at the start, the live stream's
    # first tick is the next
    assert got["ticks"] == 2 * 288 and got["last_tick"] == START
    assert got["first_tick"] == START - 2 * 86400 + 300
    ticks = [t for _, t in redis_client.zrange(rl.ticks("laplace"), 0, -1, withscores=True)]
    assert ticks[-1] == START and len(ticks) == got["ticks"]
    # the first live tick's slot already has a baseline from a past day (n = 1 here:
    # two days of history, the second still pending), like a worker would have left it
    b = json.loads(redis_client.hget(rl.baseline("laplace"),
                                     rl.baseline_field("dbh-325", rl.slot_of(START + 300, 300))))
    assert b["n"] == 1 and b["mu"] is not None
    # the releases were charged: one ledger record per mechanism, MIDE and hour query
    assert redis_client.xlen(rl.LEDGER_STREAM) == 2 * 288 * 2 + 2 * 24
    assert json.loads(redis_client.hget(rl.meta("laplace"), "epsilon")) == s.laplace_epsilon
    # released values, not true counts: noisy (non-integer spread around a day curve)
    vals = [json.loads(m)["value"] for m in redis_client.zrange(rl.series("laplace", "dbh-325"),
                                                                0, -1)]
    assert len(vals) == got["ticks"] and np.std(vals) > 0
