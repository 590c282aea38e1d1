"""``Releaser.prepare`` builds the first tick's sampler tables ahead, draws unchanged.

The worker runs it in a thread when the occupancy stage loads; without it the first
device-day tick built the exact discrete-Gaussian tables on the event loop (0.3 s, the
tick latency in bench/bench_pipeline.py).
"""

from __future__ import annotations

import numpy as np

from mechanisms import gaussian
from occupancy.buildings import load_site
from streams.pipeline.release import Releaser
from streams.settings import load_settings

ENV = {"OCCUSTREAM_SECRET": "release-prepare-secret-0123456789", "OCCUSTREAM_DAILY_CUBE": "0"}
T0 = 20_000 * 86400 + 10 * 3600 + 55 * 60  # 10:55 UTC: the second tick closes an hour


def _release(rel: Releaser, counts: np.ndarray) -> tuple[list, int]:
    """Two ticks' released values, and the sampler tables built while releasing them."""
    states: dict = {}
    before = gaussian._table.cache_info().misses
    vals = []
    for i, c in enumerate(counts):
        out, new = rel.run(T0 + 300 * i, [int(x) for x in c], [], states)
        states.update(new)
        vals.append([[float(v) for v in r.values] for r in out.releases] + [out.alerts])
    return vals, gaussian._table.cache_info().misses - before


def test_prepare_builds_the_first_ticks_tables_and_changes_no_draw() -> None:
    s = load_settings(None, ENV)
    assert s.privacy_unit == "device-day" and not s.daily_cube
    site = load_site("dbh")
    counts = np.random.default_rng(3).integers(0, 40, (2, len(site.capacities)))
    gaussian._table.cache_clear()
    cold, built_cold = _release(Releaser(s.release_config(), site), counts)
    assert built_cold > 0  # else this test shows nothing
    gaussian._table.cache_clear()
    rel = Releaser(s.release_config(), site)
    rel.prepare()
    warm, built_warm = _release(rel, counts)
    assert built_warm == 0
    assert warm == cold
