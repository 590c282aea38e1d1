"""Per-tick cost of pegasus-filter with level ranges from the site's capacities.

``python -m bench pegasus_filter_cost`` (``--quick``: dbh only, fewer repeats). For each
site: milliseconds per tick of the registry mechanism (what the release stage runs,
including the state's bytes round trip) and of the filter alone, for the capacity-sized
banks (3 × capacity, docs/pegasus.md) against one uniform range of 511 (the previous
default, which clips rooms above 511) and of 2047 (one range covering campus' largest
room), plus the state size. Medians over repeats of 10 ticks each; counts = half the
capacity (at most 300), ε = 1, noise seed 0.
"""

from __future__ import annotations

import numpy as np

from bench._timing import median_seconds
from mechanisms import pegasus_filter as pf
from mechanisms import registry
from occupancy.buildings import load_site

TICKS = 10


def _site_cost(name: str, repeats: int) -> dict[str, float]:
    site = load_site(name)
    caps = tuple(site.capacities)
    n = len(caps)
    counts = np.minimum(np.asarray(caps) // 2, 300)
    out: dict[str, float] = {"locations": n, "max_capacity": max(caps)}
    for label, capacities, k in (("banks", caps, 511), ("uniform511", (), 511),
                                 ("uniform2047", (), 2047)):
        cfg = pf.PegasusFilterConfig(1.0, max_count=k)
        ks = pf.max_counts_for(capacities, cfg) if capacities else np.full(n, k)
        rng = np.random.default_rng(0)
        st, _ = pf.update_banks(None, counts, cfg, ks, rng=rng)
        box = {"st": st}

        def filt(cfg=cfg, ks=ks, rng=rng, box=box) -> None:
            for _ in range(TICKS):
                box["st"], _ = pf.update_banks(box["st"], counts, cfg, ks, rng=rng)

        out[f"{label}_filter_ms_per_tick"] = round(
            median_seconds(filt, repeats) / TICKS * 1000, 2)
        out[f"{label}_state_mb"] = round(len(pf.banks_to_bytes(box["st"])) / 1e6, 3)
        if label == "banks":
            mech = registry.build("pegasus-filter",
                                  registry.ReleaseParams(epsilon=1.0, capacities=caps))
            sbox = {"s": mech.update(None, counts, rng=rng).state}

            def reg(mech=mech, rng=rng, sbox=sbox) -> None:
                for _ in range(TICKS):
                    sbox["s"] = mech.update(sbox["s"], counts, rng=rng).state

            out["banks_registry_ms_per_tick"] = round(
                median_seconds(reg, repeats) / TICKS * 1000, 2)
    out["banks"] = [(k, len(idx)) for k, idx in pf.banks_of(
        pf.max_counts_for(caps, pf.PegasusFilterConfig(1.0)))]
    return out


def run(quick: bool = False) -> dict:
    """Figures per site (see the module docstring)."""
    sites = ("dbh",) if quick else ("dbh", "campus")
    return {s: _site_cost(s, 3 if quick else 5) for s in sites}
