"""One tick for 10,000 locations: Laplace, PeGaSus (each smoother), hierarchical PeGaSus.

Figures: median wall and CPU time per tick over repeats (ms; the machine is shared, so
CPU time is the steadier figure), ratios against a baseline timed in
the same process (numpy's float ``rng.laplace`` for 10,000 values — the insecure sampler
the exact one replaces), PeGaSus state bytes per location, and the MAE of PeGaSus vs
Laplace at equal total ε on a synthetic piecewise-constant stream.
Targets (issue 3): Laplace < 2 ms, PeGaSus < 20 ms, hierarchical < 50 ms.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable

import numpy as np

from mechanisms import hierarchical as hi
from mechanisms import pegasus as pg
from mechanisms.laplace import laplace_release
from mechanisms.noise import keyed_rng, laplace_mae

N_LOC = 10_000
KEY = b"bench-mechanisms-key-0123456789"


_CPU: dict[int, float] = {}


def _median_ms(fn: Callable[[int], object], repeats: int) -> float:
    """Median wall time in ms; the median CPU time of the same calls goes to ``_CPU``."""
    times, cpu = [], []
    for i in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        fn(i)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    _CPU[id(fn)] = 1e3 * statistics.median(cpu)
    return 1e3 * statistics.median(times)


def _timed(out: dict, label: str, fn: Callable[[int], object], repeats: int) -> float:
    ms = _median_ms(fn, repeats)
    out[f"{label}_ms"] = round(ms, 3)
    out[f"{label}_cpu_ms"] = round(_CPU.pop(id(fn)), 3)
    return ms


def _warm_pegasus(cfg: pg.PegasusConfig, counts: np.ndarray, ticks: int) -> pg.PegasusState:
    state = pg.initialize(N_LOC, cfg)
    rng = np.random.default_rng(0)
    for _ in range(ticks):
        state, _ = pg.update(state, counts, cfg, rng=rng)
    return state


def _mae_ratio(smoother: str, eps: float, n_loc: int, seg: int, theta_x: float = 5) -> float:
    """MAE(PeGaSus)/MAE(Laplace) at equal ε on 3 constant segments; θ = theta_x/ε_g."""
    rng = np.random.default_rng(1)
    counts = np.repeat(rng.integers(0, 40, (3, n_loc)), seg, axis=0)
    theta = theta_x / (0.2 * eps)
    cfg = pg.PegasusConfig(eps, smoother=smoother, theta=theta)  # type: ignore[arg-type]
    state = pg.initialize(n_loc, cfg)
    err = 0.0
    for t in range(counts.shape[0]):
        state, rel = pg.update(state, counts[t], cfg, rng=rng)
        err += float(np.abs(rel - counts[t]).sum())
    return err / counts.size / laplace_mae(eps)


def run(quick: bool = False) -> dict:
    repeats = 15 if quick else 60
    rng = np.random.default_rng(42)
    counts = rng.integers(0, 30, N_LOC)
    out: dict = {"n_locations": N_LOC, "repeats": repeats}

    laplace_release(counts, 1.0, rng=rng)  # warm the threshold table cache
    out["load_average_1min"] = os.getloadavg()[0]
    base = _timed(out, "baseline_float_laplace", lambda i: rng.laplace(0.0, 1.0, N_LOC), repeats)
    lap = _timed(
        out, "laplace",
        lambda i: laplace_release(counts, 1.0, rng=keyed_rng(KEY, "l", i, "all")), repeats,
    )
    out["laplace_vs_float_baseline"] = round(lap / base, 2)
    out["laplace_target_ms"] = 2

    for smoother in ("average", "median", "js"):
        cfg = pg.PegasusConfig(1.0, smoother=smoother)  # type: ignore[arg-type]
        state = _warm_pegasus(cfg, counts, 30)
        ms = _timed(
            out, f"pegasus_{smoother}",
            lambda i, s=state, c=cfg: pg.update(s, counts, c, rng=keyed_rng(KEY, "p", i, "all")),
            repeats,
        )
        out[f"pegasus_{smoother}_vs_laplace"] = round(ms / lap, 2)
        out[f"pegasus_{smoother}_state_bytes_per_location"] = state.nbytes / N_LOC
    out["pegasus_target_ms"] = 20

    paths = [(f"b{i // 2000}", f"b{i // 2000}/f{i // 100}", f"r{i}") for i in range(N_LOC)]
    tree = hi.tree_from_paths(paths)
    out["hierarchy_nodes"] = tree.n_nodes
    for label, prune in (("hierarchical", None), ("hierarchical_pruned", 0.1)):
        hcfg = hi.HierarchicalConfig(1.0, prune_epsilon=prune)
        hstate = hi.initialize(tree, hcfg)
        for t in range(30):
            hstate, _ = hi.update(hstate, counts, tree, hcfg, rng=np.random.default_rng(t))
        _timed(
            out, label,
            lambda i, s=hstate, c=hcfg: hi.update(
                s, counts, tree, c, rng=keyed_rng(KEY, "h", i, "all")
            ),
            repeats,
        )
    out["hierarchical_target_ms"] = 50

    n_loc, seg = (300, 200) if quick else (1000, 400)
    for theta_x in (5, 20):
        for smoother in ("average", "median", "js"):
            key = f"mae_ratio_pegasus_{smoother}_theta{theta_x}_vs_laplace_eps1_constant_segments"
            out[key] = round(_mae_ratio(smoother, 1.0, n_loc, seg, theta_x), 3)
    return out
