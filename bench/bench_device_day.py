"""Device-day privacy benchmark (issue 15 targets; issue 16 item 2 hierarchical release).

``python -m bench device_day [--quick]``. All figures are medians over (seed × noise
repeat); seeds are in the output. Every comparison is at equal device-day (ε, δ) and run
in the same process on the same simulated weeks.

1. **Design** (:mod:`mechanisms.device_day`, defaults: ε_day = 4, δ = 10⁻⁶, shares
   heatmap/alerts/histogram 0.85/0.10/0.05, level weights building/floor/room
   0.2/0.7/0.1, B = 288 ticks per device-day — bound (a) alone) run tick by tick over a
   simulated dbh week through ``update`` (exact discrete Gaussian, keyed generator),
   the alerts and histogram shares charged too, so the day's ε is the total. Targets:
   building hourly MAE ≤ 2 % of the building's weekly peak (of the hourly series);
   every floor ≤ 6 % of its own weekly peak; every room ≥ 100 seats ≤ 8 % of capacity;
   live view every ≤ 15 min (here: every 5-min tick, plus 15-min consistent means);
   one campus tick (1,392 locations) < 50 ms. A variant with B = 120 (ten hours,
   :class:`~mechanisms.device_day.ContributionBounder`) is measured against the
   *unbounded* truth (its bias included).
2. **Baselines at the same device-day (ε, δ) = (4, 10⁻⁶)**: event-level discrete Laplace
   at ε_day/288 per tick on the rooms (a device present in all 288 ticks spends 4;
   floors and building as sums of noisy rooms), raw and with the same free
   post-processing (non-negativity); and w-event Budget Absorption (Kellaris et al.
   VLDB 2014, Alg. 3) with w = 288 and ε_w = 4 (any 288 consecutive ticks, hence any
   device-day, cost ≤ 4). Both are pure ε-DP, so they are *given* the whole ε = 4 and
   δ = 0 (no alerts / histogram reserve): the comparison favours them.
3. **Continual counting**: the binary-tree mechanism (Dwork et al. 2010; Chan, Shi &
   Song 2011) against flat per-tick release under the device-day bound, as the exact
   L2 sensitivity of a device present in B consecutive ticks and the resulting noise
   variance ratios for an hourly mean and for the day's running total; and where the
   tree wins: a one-shot live counter ("devices arrived today", each device once per
   day) at ρ = 0.01, running-total MAE of the tree vs flat noise.
4. **Hierarchical release made consistent** (issue 16 item 2), event level ε per tick
   on two dbh days: flat Laplace rooms (floors/building = sums of noisy rooms) vs
   hierarchical Laplace with level shares 0.2/0.2/0.6 (+ least squares and
   non-negativity), equal shares, and without the consistency step.

The simulated weeks and the design / baseline runs of items 1–2 live in
:mod:`research.device_day_eval` (also behind ``occustream device-day-eval``, which adds
colour agreement, window sums and alerts); this benchmark calls them.
"""

from __future__ import annotations

import math
import time

import numpy as np

from mechanisms import consistency, continual, device_day, hierarchical
from mechanisms.gaussian import discrete_gaussian
from mechanisms.noise import discrete_laplace, keyed_rng
from occupancy.buildings import load_site
from research.device_day_eval import (
    laplace_event,
    run_design,
    w_event_ba,
    week,
)
from simulator import simulate

KEY = b"bench-device-day-secret-0123456789"
SEEDS_FULL = (101, 102, 103)
SEEDS_QUICK = (101,)


# --------------------------------------------------------------------------- data


def _bounded_leaf_counts(w: dict, b: int) -> np.ndarray:
    """Leaf counts with each device counted in at most b ticks per day (the bounder)."""
    rows_d, rows_t, rows_l = w["rows"]
    n_t, n_l = w["leaf_counts"].shape
    bounder = device_day.ContributionBounder(n_l, b)
    order = np.argsort(rows_t, kind="stable")
    rd, rt, rl = rows_d[order], rows_t[order], rows_l[order]
    cuts = np.searchsorted(rt, np.arange(n_t + 1))
    out = np.zeros((n_t, n_l), dtype=np.int64)
    for i in range(n_t):
        a, z = cuts[i], cuts[i + 1]
        out[i] = bounder.counts(rd[a:z].tolist(), rl[a:z], int(w["abs_tick"][i]))
    return out


def _tree_vs_flat(b: int = 288, t: int = 288) -> dict:
    """Exact L2² of a device present in b consecutive ticks under a binary tree vs flat."""
    size = 1 << math.ceil(math.log2(t))
    best = 0.0
    for start in range(0, t - b + 1, max(1, (t - b) // 16 or 1)):
        x = np.zeros(size)
        x[start:start + b] = 1
        tot, level = 0.0, x
        while level.size >= 1:
            tot += float(np.sum(level**2))
            if level.size == 1:
                break
            level = level.reshape(-1, 2).sum(axis=1)
        best = max(best, tot)
    flat = float(b)
    levels = int(math.log2(size)) + 1
    # hourly mean: flat = 12 leaves; tree ≥ one node (best case) of the tree's σ²
    return {
        "tree_l2sq_device_day": best,
        "flat_l2sq_device_day": flat,
        "tree_vs_flat_hourly_mean_variance_ratio_at_least": best / (12 * flat),
        "tree_vs_flat_day_total_variance_ratio": (levels - 1) * best / (t * flat)
        if levels > 1 else best / (t * flat),
    }


def _one_shot_counter(w: dict, rho: float, repeats: int) -> dict:
    """'Devices arrived today' (each device counted once per day, building level):
    running-total MAE of the binary tree vs flat per-tick noise at the same ρ."""
    rows_d, rows_t, _ = w["rows"]
    day = w["abs_tick"][rows_t] // 288
    key = rows_d.astype(np.int64) * 100_000 + day
    _, first = np.unique(key, return_index=True)
    arrivals = np.bincount(rows_t[first], minlength=w["abs_tick"].size)
    days = w["abs_tick"] // 288
    tree_err, flat_err = [], []
    for r in range(repeats):
        rng = np.random.default_rng([9, r])
        for d in np.unique(days):
            x = arrivals[days == d]
            truth = np.cumsum(x)
            lv = continual.levels_for(288)
            st = continual.initialize(1, 288, math.sqrt(lv / (2 * rho)))
            est = []
            for v in x:
                st, e = continual.update(st, np.array([v]), rng=rng)
                est.append(e[0])
            tree_err.append(np.abs(np.array(est) - truth).mean())
            flat = np.cumsum(x + discrete_gaussian(math.sqrt(1 / (2 * rho)), x.size, rng=rng))
            flat_err.append(np.abs(flat - truth).mean())
    return {"one_shot_counter_rho": rho,
            "one_shot_counter_tree_mae": float(np.median(tree_err)),
            "one_shot_counter_flat_mae": float(np.median(flat_err)),
            "one_shot_counter_tree_vs_flat": float(np.median(tree_err) / np.median(flat_err))}


def _hierarchical(eps: float, seed: int) -> dict:
    sim = simulate("dbh", days=2, seed=seed)
    counts = sim.occupancy().counts
    tree = hierarchical.tree_from_paths(sim.site.hierarchy())
    truth = np.array([tree.aggregate(c) for c in counts])

    def mae(x: np.ndarray) -> list[float]:
        e = np.abs(x - truth)
        return [float(e[:, tree.depth == d].mean()) for d in range(tree.height)]

    noisy = counts + discrete_laplace(1.0 / eps, counts.shape, rng=np.random.default_rng(3))
    flat = np.zeros(truth.shape)
    flat[:, tree.leaves] = noisy
    var = np.full(tree.n_nodes, np.inf)
    var[tree.leaves] = 1.0
    flat = consistency.least_squares(flat, var, tree.plan)
    out = {"flat_laplace": mae(flat),
           "flat_laplace_clipped_rooms": float(np.abs(np.maximum(noisy, 0) - counts).mean())}
    for name, cfg in {
        "hier_0.2/0.2/0.6+LS": hierarchical.HierarchicalConfig(
            eps, grouping=False, perturb_share=1.0, consistency=True, level_shares=(0.2, 0.2, 0.6)),
        "hier_equal+LS": hierarchical.HierarchicalConfig(
            eps, grouping=False, perturb_share=1.0, consistency=True),
        "hier_0.2/0.2/0.6_noLS": hierarchical.HierarchicalConfig(
            eps, grouping=False, perturb_share=1.0, level_shares=(0.2, 0.2, 0.6)),
        "hpegasus+LS": hierarchical.HierarchicalConfig(eps, consistency=True),
    }.items():
        st = hierarchical.initialize(tree, cfg)
        rel = []
        for i, c in enumerate(counts):
            st, r = hierarchical.update(st, c, tree, cfg, rng=np.random.default_rng([4, i]))
            rel.append(r)
        out[name] = mae(np.array(rel))
    base = out["flat_laplace"]
    for k in list(out):
        if k.startswith(("hier", "hpeg")):
            out[f"{k}_vs_flat"] = [round(a / b, 3) for a, b in zip(out[k], base, strict=True)]
    return {f"hier_eps{eps}_{k}(bldg,floor,room)": v for k, v in out.items()}


def _campus_tick_ms(repeats: int) -> dict:
    site = load_site("campus")
    tree = hierarchical.tree_from_paths(site.hierarchy())
    cfg = device_day.DeviceDayConfig()
    budget = cfg.budget()
    st = device_day.initialize(tree.plan, cfg)
    rng = np.random.default_rng(0)
    caps = np.array(site.capacities)
    times = []
    for k in range(repeats + 1):
        c = tree.aggregate(rng.poisson(caps * 0.3))
        t0 = time.perf_counter()
        st, _ = device_day.update(st, c, tree.plan, cfg, tick=288 * 10 + k, budget=budget,
                                  rng=keyed_rng(KEY, "device-day", 288 * 10 + k, "all"))
        times.append(time.perf_counter() - t0)
    t = np.array(times[1:]) * 1e3  # the first tick warms caches (tables, dp-accounting)
    return {"campus_locations": len(site.locations), "campus_nodes": tree.n_nodes,
            "campus_tick_ms_median": float(np.median(t)), "campus_tick_ms_max": float(t.max()),
            "campus_first_tick_ms": times[0] * 1e3}


def _median(rows: list[dict]) -> dict:
    out = {}
    for k in rows[0]:
        vals = [r[k] for r in rows]
        out[k] = float(f"{np.median(vals):.4g}") if isinstance(vals[0], float | int) else vals[0]
    return out


def run(quick: bool = False) -> dict:
    seeds = SEEDS_QUICK if quick else SEEDS_FULL
    repeats = 2 if quick else 3
    design, bounded, lap, ba = [], [], [], []
    cfg = device_day.DeviceDayConfig()
    cfg_b = device_day.DeviceDayConfig(max_ticks_per_device=120)
    for seed in seeds:
        w = week(seed)
        nodes = w["truth"]
        nodes_b = np.array([w["tree"].aggregate(c) for c in _bounded_leaf_counts(w, 120)])
        for r in range(repeats):
            design.append(run_design(w, cfg, nodes, r, key=KEY))
            bounded.append(run_design(w, cfg_b, nodes_b, r, key=KEY))
            lap.append(laplace_event(w, r, 4.0 / 288))
            ba.append(w_event_ba(w, r, 4.0, 288))
    out: dict = {"seeds": list(seeds), "noise_repeats": repeats, "days": 7,
                 "sigma_per_level(bldg,floor,room)": cfg.sigmas(3).round(2).tolist(),
                 "sigma_per_level_B120": cfg_b.sigmas(3).round(2).tolist(),
                 "alert_sigma": round(cfg.alert_sigma, 2),
                 # one-sided β = 0.05: an alert is raised from z₀.₉₅·σ people below capacity
                 "alert_alpha_people_beta_0.05": round(1.6449 * cfg.alert_sigma, 1),
                 "histogram_sigma": round(cfg.histogram_sigma, 2),
                 "rho_day": round(cfg.rho_day, 5)}
    out.update({f"design_{k}": v for k, v in _median(design).items()})
    for k in ("building_pct_of_peak", "floor_max_pct_of_peak", "room100_max_pct_of_capacity"):
        out[f"design_worst_run_{k}"] = float(f"{max(r[k] for r in design):.4g}")
        out[f"design_B120_worst_run_{k}"] = float(f"{max(r[k] for r in bounded):.4g}")
    out.update({f"design_B120_{k}": v for k, v in _median(bounded).items()})
    out.update({f"eq_budget_{k}": v for k, v in _median(lap).items()})
    out.update({f"eq_budget_{k}": v for k, v in _median(ba).items()})
    out["targets"] = {"building_pct_of_peak": 2.0, "floor_max_pct_of_peak": 6.0,
                      "room100_max_pct_of_capacity": 8.0, "live_update_minutes": 15,
                      "campus_tick_ms": 50}
    out["design_live_update_minutes"] = 5
    out.update(_tree_vs_flat())
    out.update(_one_shot_counter(week(seeds[0]), 0.01, repeats))
    out.update(_campus_tick_ms(20 if quick else 60))
    for eps in ((1.0,) if quick else (0.5, 1.0)):
        out.update(_hierarchical(eps, seed=11))
    return out
