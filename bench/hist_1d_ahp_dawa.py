"""Before/after of issue 17 step 1 (AHP merge rule, DAWA's GreedyH) on the DPBench grid.

``python -m bench.hist_1d_ahp_dawa ALGS > out.json`` writes the median (over 5 trials)
scaled error ‖Wx − Wx̂‖₂/(q·scale) of every (data set, scale, ε, workload, algorithm):
7 DPBench 1-D files at 4096 bins, scales 1e4/1e5/1e6 (the shape resampled to that many
records, seed (0, data set, scale, trial)), ε ∈ {0.1, 1}, workloads identity / prefix /
2000 random ranges (endpoints uniform, seed (0, 77)); noise seed
(1, data set, scale, 10ε, trial, workload). Run it once on the old tree and once on the
new one; ``python -m bench.hist_1d_ahp_dawa --compare before.json after.json`` prints
the geo-mean ratios (results in bench/results/hist_1d/).
"""

from __future__ import annotations

import json
import sys

import numpy as np

from mechanisms.histograms import evaluation as ev
from mechanisms.histograms import parse_config, run_config
from research.histogram import DPBENCH_1D, dpbench_dir, load_array

DATASETS = ("ADULT", "HEPTH", "INCOME", "MEDCOST", "NETTRACE", "PATENT", "SEARCHLOGS")


def _seq(*k: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(list(k))))


def workloads(n: int) -> list[ev.Workload]:
    """identity, prefix and 2000 random ranges (DPBench's 1-D workloads)."""
    r = _seq(0, 77)
    a, b = r.integers(0, n, 2000), r.integers(0, n, 2000)
    rand = ev.Workload("random", n, np.minimum(a, b), np.maximum(a, b) + 1)
    return [ev.identity_workload(n), ev.prefix_workload(n), rand]


def measure(algs: list[str]) -> dict[str, float]:
    """Median errors per cell, keyed ``data|scale|eps|workload|alg``."""
    out = {}
    dd = dpbench_dir()
    for di, d in enumerate(DATASETS):
        shape = load_array(dd / DPBENCH_1D[d]).ravel()
        wls = workloads(len(shape))
        for scale in (10**4, 10**5, 10**6):
            for eps in (0.1, 1.0):
                for a in algs:
                    cfg = parse_config(a)
                    errs = np.zeros((3, 5))
                    for t in range(5):
                        x = ev.resample(shape, scale, rng=_seq(0, di, scale, t))
                        rel = None
                        for wi, w in enumerate(wls):
                            if rel is None or cfg.finalizer == "dawa":
                                rng = _seq(1, di, scale, int(eps * 10), t, wi)
                                rel = run_config(cfg, x, eps, workload=(w.lo, w.hi), rng=rng)
                            errs[wi, t] = ev.scaled_error(x, rel.estimate, w)
                    for wi, w in enumerate(wls):
                        out[f"{d}|{scale}|{eps}|{w.name}|{a}"] = float(np.median(errs[wi]))
    return out


def compare(before: dict[str, float], after: dict[str, float]) -> list[str]:
    """Geo-mean after/before per algorithm, workload and ε."""
    lines = []
    algs = sorted({k.rsplit("|", 1)[1] for k in before})
    for alg in algs:
        for w in ("identity", "prefix", "random"):
            row = []
            for eps in ("0.1", "1.0"):
                r = [
                    after[k] / before[k]
                    for k in before
                    if k.endswith("|" + alg) and f"|{eps}|{w}|" in k and k in after
                ]
                g = float(np.exp(np.mean(np.log(r))))
                row.append(f"ε={eps}: {g:.3f} (min {min(r):.2f}, max {max(r):.2f})")
            lines.append(f"{alg} {w}: " + " | ".join(row))
    return lines


if __name__ == "__main__":
    if sys.argv[1] == "--compare":
        from pathlib import Path

        b, a = (json.loads(Path(p).read_text()) for p in sys.argv[2:4])
        print("\n".join(compare(b, a)))
    else:
        print(json.dumps(measure(sys.argv[1].split(","))))
