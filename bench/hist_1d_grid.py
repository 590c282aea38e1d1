"""The DPBench 1-D grid shared by the selection-rule derivation and ``bench hist_1d``.

Cell = (data set, scale, ε, workload). Data: the DPBench 1-D shape resampled to
``scale`` records (seed (0, data set index, scale, trial); the index in REPORT + TRAIN);
workloads identity, prefix and 2000 random ranges with uniform endpoints (seed (0, 77)); noise seed
(1, data set index, scale, round(100ε), trial, workload index) — the same for every
algorithm (common random numbers: the comparison of two algorithms on a cell is not
blurred by independent noise draws; ``auto`` draws its scale estimate from a child
stream, so the algorithm it selects sees the same stream as that algorithm run alone).
Error: DPBench's ‖Wx − Wx̂‖₂/(q·scale), median over the trials.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from mechanisms.histograms import evaluation as ev
from mechanisms.histograms.projection import project_nonnegative
from mechanisms.histograms.select import WORKLOAD_AWARE, release_1d
from research.histogram import DPBENCH_1D, dpbench_dir, load_array

log = logging.getLogger(__name__)

#: reported data sets (issue 17) and the held-out ones the selection rule is fitted on
REPORT = ("ADULT", "HEPTH", "INCOME", "MEDCOST", "NETTRACE", "PATENT", "SEARCHLOGS")
TRAIN = (
    "BIDS", "BIDS-FJ", "BIDS-FM", "MDSALARY", "MDSALARY-FA", "LC-REQ-ALL", "LC-DTIR-ALL",
    "LC-REQ-F1", "LC-REQ-F2", "LC-DTIR-F1", "LC-DTIR-F2",
)


def seq(*k: int) -> np.random.Generator:
    """A generator keyed by integers."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(list(k))))


def workloads(n: int) -> list[ev.Workload]:
    """identity, prefix and 2000 random ranges."""
    r = seq(0, 77)
    a, b = r.integers(0, n, 2000), r.integers(0, n, 2000)
    rand = ev.Workload("random", n, np.minimum(a, b), np.maximum(a, b) + 1)
    return [ev.identity_workload(n), ev.prefix_workload(n), rand]


def load(name: str) -> np.ndarray:
    """A DPBench 1-D shape."""
    d = dpbench_dir()
    if d is None:
        raise FileNotFoundError("DPBench folder not found (set OCCUSTREAM_DPBENCH)")
    return load_array(d / DPBENCH_1D[name]).ravel()


def run_trials(
    datasets: tuple[str, ...],
    algorithms: tuple[str, ...],
    scales: tuple[int, ...],
    epsilons: tuple[float, ...],
    trials: int,
    progress: bool = False,
    project: bool = False,
) -> tuple[dict[tuple, list[float]], dict[str, float]]:
    """Every trial's error per (data, scale, ε, workload, algorithm) and seconds per algorithm.

    Trial ``t`` has the same seeds whatever ``trials`` is, so the first k trials of a long
    run are the whole of a k-trial run. ``project``: also the error of every release after
    :func:`~mechanisms.histograms.projection.project_nonnegative` (post-processing of the
    same release), under the algorithm's name + ``"+P"``.
    """
    out: dict[tuple, list[float]] = {}
    secs = dict.fromkeys(algorithms, 0.0)
    for d in datasets:
        di = (*REPORT, *TRAIN).index(d)  # seeds do not depend on which subset runs
        shape = load(d)
        wls = workloads(len(shape))
        for scale in scales:
            xs = [ev.resample(shape, scale, rng=seq(0, di, scale, t)) for t in range(trials)]
            for eps in epsilons:
                for a in algorithms:
                    errs = np.zeros((len(wls), trials))
                    errs_p = np.zeros((len(wls), trials))
                    t0 = time.perf_counter()
                    for t, x in enumerate(xs):
                        est = None
                        for wi, w in enumerate(wls):
                            if est is None or a in WORKLOAD_AWARE:
                                rng = seq(1, di, scale, round(100 * eps), t, wi)
                                est = release_1d(a, x, eps, workload=(w.lo, w.hi), rng=rng)
                            errs[wi, t] = ev.scaled_error(x, est, w)
                            if project:
                                proj = project_nonnegative(est, (w.lo, w.hi))
                                errs_p[wi, t] = ev.scaled_error(x, proj, w)
                    secs[a] += time.perf_counter() - t0
                    for wi, w in enumerate(wls):
                        out[(d, scale, eps, w.name, a)] = errs[wi].tolist()
                        if project:
                            out[(d, scale, eps, w.name, a + "+P")] = errs_p[wi].tolist()
                if progress:
                    log.info("  %s scale %g ε %g done", d, scale, eps)
    return out, secs


def medians(errors: dict[tuple, list[float]], first: int | None = None) -> dict[tuple, float]:
    """Median over the trials of every cell (over the first ``first`` trials when given)."""
    return {k: float(np.median(v[:first])) for k, v in errors.items()}

