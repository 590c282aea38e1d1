"""DPBench-style evaluation (Hay et al. 2016; SORTaki §VI), pure numpy.

* Data generator: :func:`resample` draws ``scale`` records from a shape (the
  normalised histogram) — same domain size and shape, any scale (DPBench's generator);
  :func:`coarsen` changes the domain size by merging adjacent cells.
* Workloads (range queries ``[lo, hi)``): identity, prefix, random small ranges
  (sizes 1..10) and random large ranges (sizes 100..1000 step 100), after SORTaki §VI;
  2-D random rectangles for the kd-tree.
* Error: DPBench's scaled average per-query L2 error ``‖Wx − Wx̂‖₂ / (q·s)``,
  ``s = ‖x‖₁`` (SORTaki Def. VI.1); ``measure="sortaki"``: the *squared* L2 error
  ``‖Wx − Wx̂‖₂² / (q·s)`` that SORTaki's tables report (issue 17: Identity on NetTrace
  reproduces Table IX only under the squared measure), with the ``allrange`` workload
  (all n(n+1)/2 ranges, n ≤ :data:`ALLRANGE_MAX_N`, error in closed form).
* ``random``: DPBench's random ranges (both endpoints uniform).
* Trials: :func:`seeded_rngs` gives independent, reproducible generators per trial.

The random workload and data generators take an ``rng`` (they are not privacy noise).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mechanisms.errors import InvalidParameterError, check_positive

__all__ = [
    "Workload",
    "resample",
    "coarsen",
    "identity_workload",
    "prefix_workload",
    "random_range_workload",
    "make_workload",
    "answer",
    "scaled_error",
    "squared_scaled_error",
    "allrange_workload",
    "uniform_range_workload",
    "random_boxes",
    "answer_boxes",
    "scaled_error_boxes",
    "scaled_error_cells",
    "seeded_rngs",
    "WORKLOADS",
    "ResultRow",
    "synthetic_shape",
    "evaluate_1d",
    "evaluate_2d",
    "KD_VS_CELL",
    "WORKLOADS_2D_EVAL",
]

WORKLOADS = ("identity", "prefix", "small", "large", "random", "allrange")
MEASURES = ("dpbench", "sortaki")
#: largest domain for the all-range workload (n(n+1)/2 queries are materialised)
ALLRANGE_MAX_N = 4096
SMALL_SIZES = tuple(range(1, 11))
LARGE_SIZES = tuple(range(100, 1001, 100))


@dataclass(frozen=True, eq=False)
class Workload:
    """Range queries ``[lo[i], hi[i])`` over a 1-D domain of size ``n``."""

    name: str
    n: int
    lo: np.ndarray
    hi: np.ndarray

    @property
    def size(self) -> int:
        """Number of queries q."""
        return int(len(self.lo))


def resample(shape: np.ndarray, scale: int, *, rng: np.random.Generator) -> np.ndarray:
    """DPBench data generator: ``scale`` records drawn i.i.d. from the normalised shape."""
    p = np.asarray(shape, np.float64).ravel()
    if np.any(p < 0) or p.sum() <= 0:
        raise InvalidParameterError("shape must be non-negative with a positive total")
    if int(scale) < 1:
        raise InvalidParameterError(f"scale must be >= 1, not {scale!r}")
    counts = rng.multinomial(int(scale), p / p.sum())
    return counts.astype(np.float64).reshape(np.shape(shape))


def coarsen(x: np.ndarray, n: int) -> np.ndarray:
    """Domain size ``n`` by summing groups of adjacent cells (``len(x)`` divisible by n)."""
    x = np.asarray(x, np.float64).ravel()
    if n < 1 or len(x) % n:
        raise InvalidParameterError(f"n must divide the domain size {len(x)}, not {n!r}")
    return x.reshape(n, -1).sum(axis=1)


def identity_workload(n: int) -> Workload:
    """All counts of single values (categorical attributes)."""
    i = np.arange(n, dtype=np.int64)
    return Workload("identity", n, i, i + 1)


def prefix_workload(n: int) -> Workload:
    """All ranges starting at the first value (DPBench's prefix workload)."""
    return Workload("prefix", n, np.zeros(n, np.int64), np.arange(1, n + 1, dtype=np.int64))


def random_range_workload(
    n: int, sizes: tuple[int, ...], n_queries: int, name: str, *, rng: np.random.Generator
) -> Workload:
    """``n_queries`` ranges with length drawn from ``sizes`` (capped at n), uniform position."""
    size = np.minimum(rng.choice(np.asarray(sizes, np.int64), n_queries), n)
    lo = (rng.random(n_queries) * (n - size + 1)).astype(np.int64)
    return Workload(name, n, lo, lo + size)


def uniform_range_workload(n: int, n_queries: int, *, rng: np.random.Generator) -> Workload:
    """DPBench's random ranges: two uniform endpoints, ``[min, max]`` inclusive."""
    a, b = rng.integers(0, n, n_queries), rng.integers(0, n, n_queries)
    return Workload("random", n, np.minimum(a, b), np.maximum(a, b) + 1)


def allrange_workload(n: int) -> Workload:
    """All n(n+1)/2 ranges (SORTaki §VI); n ≤ :data:`ALLRANGE_MAX_N`."""
    if not 1 <= n <= ALLRANGE_MAX_N:
        raise InvalidParameterError(f"n must be in [1, {ALLRANGE_MAX_N}] for allrange, not {n!r}")
    lo, hi = np.triu_indices(n + 1, 1)
    return Workload("allrange", n, lo.astype(np.int64), hi.astype(np.int64))


def make_workload(
    name: str, n: int, *, n_queries: int = 2000, rng: np.random.Generator | None = None
) -> Workload:
    """Workload by name.

    identity, prefix, small (1..10), large (100..1000 step 100), random (uniform
    endpoints), allrange (every range).
    """
    if name == "identity":
        return identity_workload(n)
    if name == "prefix":
        return prefix_workload(n)
    if name == "allrange":
        return allrange_workload(n)
    if name in {"small", "large", "random"}:
        if rng is None:
            raise InvalidParameterError("rng is required for random range workloads")
        if name == "random":
            return uniform_range_workload(n, n_queries, rng=rng)
        sizes = SMALL_SIZES if name == "small" else LARGE_SIZES
        return random_range_workload(n, sizes, n_queries, name, rng=rng)
    raise InvalidParameterError(f"workload must be one of {', '.join(WORKLOADS)}, not {name!r}")


def answer(x: np.ndarray, w: Workload) -> np.ndarray:
    """``W x``: every range sum, O(n + q) with a prefix sum."""
    c = np.concatenate(([0.0], np.cumsum(np.asarray(x, np.float64).ravel())))
    return c[w.hi] - c[w.lo]


def scaled_error(
    x: np.ndarray, estimate: np.ndarray, w: Workload, measure: str = "dpbench"
) -> float:
    """DPBench scaled average per-query L2 error ``‖Wx − Wx̂‖₂ / (q · ‖x‖₁)``.

    ``measure="sortaki"`` gives :func:`squared_scaled_error` instead.
    """
    if measure == "sortaki":
        return squared_scaled_error(x, estimate, w)
    if measure != "dpbench":
        raise InvalidParameterError(
            f"measure must be one of {', '.join(MEASURES)}, not {measure!r}"
        )
    scale = float(np.asarray(x, np.float64).sum())
    check_positive("scale of x", scale)
    diff = answer(x, w) - answer(estimate, w)
    return float(np.linalg.norm(diff) / (w.size * scale))


def squared_scaled_error(x: np.ndarray, estimate: np.ndarray, w: Workload) -> float:
    """SORTaki's measure ``‖Wx − Wx̂‖₂² / (q · ‖x‖₁)`` (squared, not rooted).

    For ``allrange`` the sum over all ranges is ``(n+1)·ΣP² − (ΣP)²`` with P the n+1
    prefix sums of ``x − x̂`` (every pair of prefix positions is one range): O(n).
    """
    scale = float(np.asarray(x, np.float64).sum())
    check_positive("scale of x", scale)
    if w.name == "allrange":
        d = np.asarray(x, np.float64).ravel() - np.asarray(estimate, np.float64).ravel()
        p = np.concatenate(([0.0], np.cumsum(d)))
        total = (len(p)) * float(p @ p) - float(p.sum()) ** 2
        return float(total / (w.size * scale))
    diff = answer(x, w) - answer(estimate, w)
    return float(diff @ diff / (w.size * scale))


def random_boxes(
    shape: tuple[int, ...],
    n_queries: int,
    *,
    max_extent: int | None = None,
    rng: np.random.Generator,
) -> np.ndarray:
    """Random hyper-rectangles, array (q, ndim, 2) of [lo, hi) per dimension."""
    out = np.empty((n_queries, len(shape), 2), np.int64)
    for d, size in enumerate(shape):
        cap = size if max_extent is None else min(size, max_extent)
        ext = rng.integers(1, cap + 1, n_queries)
        lo = (rng.random(n_queries) * (size - ext + 1)).astype(np.int64)
        out[:, d, 0], out[:, d, 1] = lo, lo + ext
    return out


def answer_boxes(cube: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """Range counts of 2-D boxes with a summed-area table (any ndim ≤ 2 supported)."""
    c = np.asarray(cube, np.float64)
    if c.ndim != 2:
        raise InvalidParameterError(f"cube must be 2-D, not {c.ndim}-D")
    s = np.zeros((c.shape[0] + 1, c.shape[1] + 1))
    s[1:, 1:] = c.cumsum(0).cumsum(1)
    r0, r1, c0, c1 = boxes[:, 0, 0], boxes[:, 0, 1], boxes[:, 1, 0], boxes[:, 1, 1]
    return s[r1, c1] - s[r0, c1] - s[r1, c0] + s[r0, c0]


def scaled_error_boxes(cube: np.ndarray, estimate: np.ndarray, boxes: np.ndarray) -> float:
    """Scaled average per-query L2 error over 2-D boxes."""
    scale = float(np.asarray(cube, np.float64).sum())
    check_positive("scale of cube", scale)
    diff = answer_boxes(cube, boxes) - answer_boxes(estimate, boxes)
    return float(np.linalg.norm(diff) / (len(boxes) * scale))


def scaled_error_cells(cube: np.ndarray, estimate: np.ndarray) -> float:
    """Scaled average per-query L2 error of the identity workload on a cube of any shape.

    ``‖x − x̂‖₂ / (n · ‖x‖₁)``: every cell one query.
    """
    x = np.asarray(cube, np.float64)
    return float(np.linalg.norm(x - estimate) / (x.size * x.sum()))


def seeded_rngs(seed: int, n: int) -> list[np.random.Generator]:
    """``n`` independent generators derived from ``seed`` (reproducible trials)."""
    return [np.random.Generator(np.random.PCG64(s)) for s in np.random.SeedSequence(seed).spawn(n)]


# --- experiment drivers (pure; the CLI adds I/O, tables and plots) ---------------------


@dataclass(frozen=True)
class ResultRow:
    """Mean, standard deviation and median of the scaled error over the trials of one cell."""

    dataset: str
    algorithm: str
    epsilon: float
    workload: str
    error: float
    error_std: float
    error_median: float
    trials: int
    seconds: float
    n_bins: float


def synthetic_shape(kind: str, n: int, *, rng: np.random.Generator) -> np.ndarray:
    """A generated shape for when the DPBench files are absent.

    ``kind``: "step" (piecewise-constant, contiguous-friendly), "zipf" (a "sorted"
    power law), "random" (i.i.d. heavy-tailed values — SORTaki's "random" shape).
    """
    if kind == "step":
        cuts = np.sort(rng.choice(np.arange(1, n), size=min(15, n - 1), replace=False))
        levels = rng.gamma(0.7, 50.0, len(cuts) + 1)
        return np.repeat(levels, np.diff(np.concatenate(([0], cuts, [n]))))
    if kind == "zipf":
        return 1.0 / np.arange(1, n + 1) ** 1.1
    if kind == "random":
        return rng.pareto(1.5, n) + (rng.random(n) < 0.3)
    raise InvalidParameterError(f"kind must be step, zipf or random, not {kind!r}")


@dataclass(frozen=True, eq=False)
class _Est:
    estimate: np.ndarray
    n_bins: int


def _seq(*key: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(list(key))))


def evaluate_1d(
    datasets: dict[str, np.ndarray],
    algorithms: tuple[str, ...] | list[str],
    epsilons: tuple[float, ...] | list[float],
    workloads: tuple[str, ...] | list[str],
    *,
    trials: int = 5,
    seed: int = 0,
    scale: int | None = None,
    gamma_in: float | None = None,
    n_queries: int = 2000,
    progress: object = None,
    measure: str = "dpbench",
    **options: object,
) -> list[ResultRow]:
    """Seeded repeated trials of every (dataset, algorithm, ε) on every workload.

    Each trial resamples the data set to ``scale`` records (DPBench generator; as-is
    when None), runs the algorithm once and scores the one release on all workloads
    (DAWA, being workload-aware, is run once per workload, with that workload).
    Seeds are derived from ``seed`` and the loop indices (common random numbers:
    every algorithm sees the same resampled data and workloads).

    Args:
        datasets: name → 1-D histogram (shape).
        algorithms: configuration names (SORTaki Table II).
        epsilons: privacy budgets.
        workloads: workload names (identity, prefix, small, large).
        trials: repetitions per cell.
        seed: master seed.
        scale: target scale for the data generator (None → the data as given).
        gamma_in: initializer share (None → each configuration's default).
        n_queries: queries per random range workload.
        progress: optional callable invoked once per finished run (progress bars).
        measure: "dpbench" (‖·‖₂/(q·s)) or "sortaki" (‖·‖₂²/(q·s)).
        **options: passed to :func:`~mechanisms.histograms.sortaki.run_config`.
    """
    from time import perf_counter

    from mechanisms.histograms.select import NEW_1D, WORKLOAD_AWARE, release_1d
    from mechanisms.histograms.sortaki import Config, parse_config, run_config

    configs = [Config(a) if a in NEW_1D else parse_config(a) for a in algorithms]
    rows: list[ResultRow] = []
    for d_i, (dname, shape) in enumerate(datasets.items()):
        shape = np.asarray(shape, np.float64).ravel()
        n = len(shape)
        wls = [
            make_workload(w, n, n_queries=n_queries, rng=_seq(seed, d_i, 7, w_i))
            for w_i, w in enumerate(workloads)
        ]
        data = [
            shape if scale is None else resample(shape, scale, rng=_seq(seed, d_i, 9, t))
            for t in range(trials)
        ]
        for a_i, cfg in enumerate(configs):
            for e_i, eps in enumerate(epsilons):
                errs = np.zeros((len(wls), trials))
                bins = np.zeros(trials)
                t0 = perf_counter()
                for t in range(trials):
                    rng = _seq(seed, d_i, a_i, e_i, t)
                    rel = None
                    for w_i, w in enumerate(wls):
                        aware = cfg.finalizer == "dawa" or cfg.name in WORKLOAD_AWARE
                        if rel is None or aware:
                            # workload-aware algorithms get one release per workload
                            if cfg.name in NEW_1D:
                                est = release_1d(
                                    cfg.name, data[t], eps, workload=(w.lo, w.hi), rng=rng
                                )
                                rel = _Est(est, len(est))
                            else:
                                rel = run_config(
                                    cfg,
                                    data[t],
                                    eps,
                                    gamma_in=gamma_in,
                                    workload=(w.lo, w.hi),
                                    rng=rng,
                                    **options,
                                )  # type: ignore[arg-type]
                        bins[t] = rel.n_bins
                        errs[w_i, t] = scaled_error(data[t], rel.estimate, w, measure)
                    if callable(progress):
                        progress()
                sec = (perf_counter() - t0) / trials
                for w_i, w in enumerate(wls):
                    rows.append(
                        ResultRow(
                            dname,
                            cfg.name,
                            float(eps),
                            w.name,
                            float(errs[w_i].mean()),
                            float(errs[w_i].std()),
                            float(np.median(errs[w_i])),
                            trials,
                            sec,
                            float(bins.mean()),
                        )
                    )
    return rows


#: the 2-D evaluation's own algorithms (Xiao et al. Alg. 1 and Alg. 2); any other name
#: needs a ``runner`` (the CLI's: every algorithm of mechanisms.histograms.select2d)
KD_VS_CELL = ("cell", "kdtree")
#: workloads of the 2-D evaluation
WORKLOADS_2D_EVAL = ("rectangles", "identity")


def _alg_key(name: str) -> int:
    """A stable noise-stream key per algorithm.

    100 / 101 for cell / kd-tree (the seeds of every earlier report), a CRC of the name
    for the others.
    """
    if name in KD_VS_CELL:
        return 100 + KD_VS_CELL.index(name)
    return 1000 + zlib.crc32(name.encode()) % 1_000_000


def evaluate_2d(
    cubes: dict[str, np.ndarray],
    epsilons: tuple[float, ...] | list[float],
    *,
    trials: int = 3,
    seed: int = 0,
    scale: int | None = None,
    n_queries: int = 2000,
    xi0: float | None = None,
    xi1: float | None = None,
    progress: object = None,
    algorithms: tuple[str, ...] | list[str] = KD_VS_CELL,
    runner: Callable[..., tuple[np.ndarray, float]] | None = None,
    workload: str = "rectangles",
) -> list[ResultRow]:
    """2-D algorithms on random rectangles (or every cell), DPBench's error measure.

    Cell-based (Xiao et al. Alg. 1, ``"cell"``) and the two-step kd-tree (Alg. 2,
    ``"kdtree"``, thresholds ``xi0`` / ``xi1``) run here; every other name goes to
    ``runner(name, x, epsilon, boxes, rng) -> (estimate, n_buckets)`` (``boxes`` None for
    the identity workload). ``workload="identity"``: error ``‖x − x̂‖₂ / (n·scale)``
    (every cell one query). Every trial's data and noise come from seeded streams: the
    same data for every algorithm, each algorithm its own noise stream
    (:func:`_alg_key`), so adding an algorithm leaves the others' figures unchanged.
    """
    from time import perf_counter

    from mechanisms.histograms.kdtree import cell_based_release, kd_tree_release

    if workload not in WORKLOADS_2D_EVAL:
        raise InvalidParameterError(
            f"2-D workload must be one of {', '.join(WORKLOADS_2D_EVAL)}, not {workload!r}"
        )
    unknown = [a for a in algorithms if a not in KD_VS_CELL] if runner is None else []
    if unknown:
        raise InvalidParameterError(
            f"2-D algorithms without a runner must be among {', '.join(KD_VS_CELL)}, "
            f"not {', '.join(unknown)}"
        )
    rows: list[ResultRow] = []
    for d_i, (dname, cube) in enumerate(cubes.items()):
        cube = np.asarray(cube, np.float64)
        boxes = random_boxes(cube.shape, n_queries, rng=_seq(seed, d_i, 7))
        data = [
            cube if scale is None else resample(cube, scale, rng=_seq(seed, d_i, 9, t))
            for t in range(trials)
        ]
        for e_i, eps in enumerate(epsilons):
            for alg in algorithms:
                errs, nb = np.zeros(trials), np.zeros(trials)
                t0 = perf_counter()
                for t in range(trials):
                    rng = _seq(seed, d_i, _alg_key(alg), e_i, t)
                    if alg == "cell":
                        est = cell_based_release(data[t], eps, rng=rng)
                        nb[t] = cube.size
                    elif alg == "kdtree":
                        rel = kd_tree_release(data[t], eps, xi0=xi0, xi1=xi1, rng=rng)
                        est, nb[t] = rel.estimate, len(rel.boxes)
                    else:
                        q = None if workload == "identity" else boxes
                        est, nb[t] = runner(alg, data[t], eps, q, rng)
                    if workload == "identity":
                        errs[t] = scaled_error_cells(data[t], est)
                    else:
                        errs[t] = scaled_error_boxes(data[t], est, boxes)
                    if callable(progress):
                        progress()
                rows.append(
                    ResultRow(
                        dname,
                        alg,
                        float(eps),
                        workload,
                        float(errs.mean()),
                        float(errs.std()),
                        float(np.median(errs)),
                        trials,
                        (perf_counter() - t0) / trials,
                        float(nb.mean()),
                    )
                )
    return rows
