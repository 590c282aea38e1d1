"""Fast (non-slow) smoke version of the β-FNR check of the pipeline's MIDE alerts
(the slow tier, tests/streams/test_pipeline_fnr.py, runs 60 ticks per algorithm at a
false-alarm rate of 1e-6).

Design: TICKS ticks × 53 dbh locations = n predicate decisions, every room just over
its threshold (capacity × factor + 0.01), so each missed alert is a false negative.
With keyed per-tick noise the misses are independent Bernoulli(≤ β), so
``misses > binom.isf(ALPHA_TEST, n, β)`` has probability ≤ ALPHA_TEST under a correct
pipeline (the false-alarm rate). Power: a wiring that misses at rate ≥ MISS_BROKEN is
rejected with probability ≥ POWER, computed below from the binomial; the naive
comparison (no β guarantee) is shown to be rejected.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from occupancy.buildings import load_site
from streams.pipeline.release import Releaser
from streams.settings import load_settings

ALPHA_TEST = 1e-3
POWER = 0.999
BETA = 0.05
MISS_BROKEN = 0.3  # a 30 %-off-style broken wiring (the naive comparison misses ~25-50 %)
TICKS = 20


def _misses(algorithm: str, alpha: float = 3.0) -> tuple[int, int]:
    site = load_site("dbh")
    s = load_settings(None, {"OCCUSTREAM_SECRET": "fnr-smoke-secret-0123456789",
                             "OCCUSTREAM_PRIVACY_UNIT": "event",
                             "OCCUSTREAM_MECHANISMS": "ttl",
                             "OCCUSTREAM_MIDE_ALGORITHM": algorithm,
                             "OCCUSTREAM_MIDE_BETA": str(BETA),
                             "OCCUSTREAM_MIDE_ALPHA": str(alpha),
                             "OCCUSTREAM_MIDE_HOURLY": "false"})
    rel = Releaser(s.release_config(), site)
    counts = np.ceil(np.asarray(site.capacities) * s.capacity_factor + 0.01).astype(int)
    misses = n = 0
    for k in range(TICKS):
        out, _ = rel.run(1767600000.0 + 300 * k, counts.tolist(), counts.tolist(), {})
        hit = {a["location"] for a in out.alerts}
        misses += sum(loc not in hit for loc in site.location_ids)
        n += len(site.location_ids)
    return misses, n


def test_beta_fnr_smoke() -> None:
    misses, n = _misses("tslm")
    crit = int(stats.binom.isf(ALPHA_TEST, n, BETA))
    assert stats.binom.cdf(crit, n, MISS_BROKEN) <= 1 - POWER  # the design's power
    assert misses <= crit, f"{misses}/{n} over-capacity rooms missed (critical {crit})"
    naive, n2 = _misses("naive")
    assert naive > crit, f"the naive comparison missed only {naive}/{n2}"
