"""Fire-code alerts under the device-day budget on simulated weeks: FNR, FPR and α.

``python -m research.device_day_eval [--days 7] [--seeds 101,102,103]`` simulates dbh
(with the over-capacity scenario), takes one reading per room per hour (the count at
the tick closing the hour, as the release stage does), runs the Gaussian threshold test
of :func:`mechanisms.device_day.threshold_alerts` at the default design's σ (the alert
share of ε_day = 4, δ = 1e-6) and reports, per seed and pooled:

* FNR: missed / room-hours at or above capacity (target ≤ β);
* FPR: alerts / room-hours below capacity, overall, for rooms whose capacity exceeds α
  (where the test can tell), and for room-hours more than α below capacity (≤ β by design);
* α: the uncertainty width stated with each alert.

The heatmap comparison at equal device-day (ε, δ) is ``python -m bench device_day``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

from mechanisms.device_day import DeviceDayConfig, alert_alpha, threshold_alerts
from mechanisms.noise import keyed_rng

KEY = b"device-day-eval-key-not-a-secret"


def alert_rates(days: float = 7.0, seed: int = 101, beta: float = 0.05,
                cfg: DeviceDayConfig | None = None) -> dict[str, Any]:
    """FNR / FPR / α of the hourly device-day alerts on one simulated dbh run."""
    from simulator import simulate

    cfg = cfg or DeviceDayConfig()
    sim = simulate("dbh", days=days, seed=seed, scenarios=["overcapacity"])
    occ = sim.occupancy(tick_s=300)
    caps = np.asarray(sim.site.capacities, dtype=float)
    ticks = np.asarray(occ.ticks, dtype=float)
    hour_end = (ticks + 300) % 3600 == 0
    counts = np.asarray(occ.counts)[hour_end]
    sigma = cfg.alert_sigma
    alpha = alert_alpha(sigma, beta)
    over = under = missed = false = 0
    far = far_false = big = big_false = 0
    for t, c in zip(ticks[hour_end], counts, strict=True):
        res = threshold_alerts(c, caps, sigma, beta, rng=keyed_rng(KEY, "alerts", seed, t))
        at = c >= caps
        over += int(at.sum())
        missed += int((at & ~res.positive).sum())
        below = ~at
        under += int(below.sum())
        false += int((below & res.positive).sum())
        f = c <= caps - alpha
        far += int(f.sum())
        far_false += int((f & res.positive).sum())
        b = below & (caps > alpha)
        big += int(b.sum())
        big_false += int((b & res.positive).sum())
    return {"seed": seed, "days": days, "beta": beta, "sigma": round(sigma, 2),
            "alpha": round(alpha, 1), "room_hours_over": over, "missed": missed,
            "fnr": missed / over if over else None,
            "fpr": false / under if under else None,
            "fpr_rooms_cap_over_alpha": big_false / big if big else None,
            "fpr_alpha_below": far_false / far if far else None}


def main(argv: list[str] | None = None) -> int:
    """CLI: print the rates per seed and pooled as JSON."""
    p = argparse.ArgumentParser(prog="python -m research.device_day_eval")
    p.add_argument("--days", type=float, default=7.0)
    p.add_argument("--seeds", default="101,102,103")
    p.add_argument("--beta", type=float, default=0.05)
    a = p.parse_args(argv)
    rows = [alert_rates(a.days, int(s), a.beta) for s in a.seeds.split(",")]
    print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
