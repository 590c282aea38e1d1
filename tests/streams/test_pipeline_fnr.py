"""Statistical tier: the pipeline's MIDE alerts keep the β-FNR promise end to end of the
release step (keyed replay-safe noise per tick, thresholds = capacity × factor).

The mechanism itself is tested by tests/mechanisms/mide; this checks the wiring: fresh
noise per tick (keyed by tick), the right thresholds, the configured β and α.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from occupancy.buildings import load_site
from streams.pipeline.release import Releaser
from streams.settings import load_settings

pytestmark = pytest.mark.slow

#: false-alarm rate of the test itself (rejecting a correct pipeline)
ALPHA_TEST = 1e-6
#: the FNR bound configured
BETA = 0.05
#: ticks × 53 locations = predicate decisions. At the bound (miss rate β) the one-sided
#: binomial critical value for ALPHA_TEST is about β·n + 4.8·sqrt(n·β(1−β)); a broken
#: wiring that misses with rate ≥ 0.3 (naive comparison at c: ~0.5) exceeds it with
#: probability ≈ 1 for n ≥ 2000 (power > 1 − 1e-9 by the normal approximation).
TICKS = 60


def _miss_rate(algorithm: str, over_by: float, alpha: float = 3.0) -> tuple[int, int]:
    site = load_site("dbh")
    s = load_settings(None, {"OCCUSTREAM_SECRET": "fnr-test-secret-0123456789",
                             "OCCUSTREAM_PRIVACY_UNIT": "event",
                             "OCCUSTREAM_MECHANISMS": "ttl",
                             "OCCUSTREAM_MIDE_ALGORITHM": algorithm,
                             "OCCUSTREAM_MIDE_BETA": str(BETA),
                             "OCCUSTREAM_MIDE_ALPHA": str(alpha),
                             "OCCUSTREAM_MIDE_HOURLY": "false"})
    rel = Releaser(s.release_config(), site)
    caps = np.asarray(site.capacities)
    counts = np.ceil(caps * s.capacity_factor + over_by).astype(int).tolist()
    misses = n = 0
    for k in range(TICKS):
        out, _ = rel.run(1767600000.0 + 300 * k, counts, counts, {})
        hit = {a["location"] for a in out.alerts}
        misses += sum(loc not in hit for loc in site.location_ids)
        n += len(site.location_ids)
    return misses, n


def _critical(n: int) -> int:
    return int(stats.binom.isf(ALPHA_TEST, n, BETA))


@pytest.mark.parametrize("algorithm,alpha", [("tslm", 3.0), ("ppwlm", 8.0), ("dppwlm", 8.0)])
def test_alerts_respect_beta_fnr(algorithm, alpha):
    misses, n = _miss_rate(algorithm, over_by=0.01, alpha=alpha)
    assert n >= 2000
    assert misses <= _critical(n), f"{misses}/{n} missed over-capacity rooms"


def test_naive_comparison_is_rejected():
    # power: the naive Laplace comparison (no β guarantee) misses far more often
    misses, n = _miss_rate("naive", over_by=0.01)
    assert misses > _critical(n)
