"""MIDE timings on 10,000 predicates: TSLM, PPWLM, DPPWLM and exact min-entropy.

Targets (issue 4): TSLM < 50 ms, PPWLM < 200 ms, DPPWLM < 2 s, min-entropy < 1 s.
Medians over repeats; ratios vs TSLM in the same process. Inputs: counts around
capacities (a busy campus tick) with thresholds 0.8 × capacity, β = 0.05, α = 1.

Min-entropy is also measured where it is hard (mechanisms/mide/hardness.py): three
near-equal ε levels (polynomial level enumeration, O(k²)), 10,000 distinct ε spread
over [0, 3], and Theorem 2's K-subset-sum instances of growing size — for those the
figures are the search's nodes, whether it finished exactly, and the width of the
certified interval [value, upper] when it did not.
"""

from __future__ import annotations

import logging

import numpy as np

from bench._timing import median_seconds
from mechanisms.mide import decide
from mechanisms.mide.entropy import min_entropy_solution, posterior_bounds
from mechanisms.mide.hardness import epsilon_subset_sum_instance

K = 10_000
HARD_SIZES = (12, 20, 40, 80)


def _min_entropy_case(out: dict, name: str, eps: np.ndarray, repeats: int) -> None:
    lo, hi = posterior_bounds(eps)
    sol = min_entropy_solution(lo, hi)
    out[f"min_entropy_{name}_ms"] = round(
        1e3 * median_seconds(lambda: min_entropy_solution(lo, hi), repeats), 2)
    out[f"min_entropy_{name}_exact"] = str(sol.exact)
    out[f"min_entropy_{name}_nodes"] = sol.nodes
    if not sol.exact:
        out[f"min_entropy_{name}_interval_nats"] = float(f"{sol.upper - sol.value:.3g}")



def run(quick: bool = False) -> dict:
    repeats = 3 if quick else 11
    rng = np.random.default_rng(0)
    cap = rng.integers(20, 400, K).astype(float)
    counts = np.round(cap * rng.uniform(0.2, 1.4, K))
    thr = 0.8 * cap
    out: dict[str, float | int | str] = {"predicates": K, "repeats": repeats}
    for alg in ("tslm", "ppwlm", "dppwlm"):
        out[f"{alg}_ms"] = round(1e3 * median_seconds(
            lambda a=alg: decide(counts, thr, algorithm=a, beta=0.05, alpha=1.0,
                                 epsilon_max=4.0, rng=rng), repeats), 2)
    out["dppwlm_range_ms"] = round(1e3 * median_seconds(
        lambda: decide(counts, thr, algorithm="dppwlm", beta=0.05, alpha=1.0, epsilon_max=4.0,
                       rng=rng, value_range=(0.0, 3 * cap)), repeats), 2)
    out["ppwlm_vs_tslm"] = round(out["ppwlm_ms"] / out["tslm_ms"], 1)
    out["dppwlm_vs_tslm"] = round(out["dppwlm_ms"] / out["tslm_ms"], 1)
    # min-entropy on MIDE output (few distinct ε) and on pairwise-distinct ε
    ex_post = decide(counts, thr, algorithm="dppwlm", beta=0.05, alpha=1.0, epsilon_max=4.0,
                     rng=rng).ex_post
    lo, hi = posterior_bounds(ex_post)
    out["min_entropy_dppwlm_output_ms"] = round(
        1e3 * median_seconds(lambda: min_entropy_solution(lo, hi), repeats), 2)
    lo2, hi2 = posterior_bounds(rng.exponential(1.0, K))
    sol = min_entropy_solution(lo2, hi2)
    out["min_entropy_distinct_eps_ms"] = round(
        1e3 * median_seconds(lambda: min_entropy_solution(lo2, hi2), repeats), 2)
    out["min_entropy_distinct_eps_exact"] = str(sol.exact)
    # hard inputs: a stop at the node budget logs a warning per call; keep the report clean
    hard_repeats = 1 if quick else 3
    logging.getLogger("mechanisms.mide.entropy").setLevel(logging.ERROR)
    _min_entropy_case(out, "3_close_levels", np.repeat([0.3, 0.3001, 0.3002], [3334, 3333, 3333]),
                      hard_repeats)
    _min_entropy_case(out, "uniform_0_3", rng.uniform(0.0, 3.0, K), hard_repeats)
    for n in HARD_SIZES:
        weights = rng.integers(1, 1000, n).tolist()
        size = n // 4
        target = int(sum(sorted(weights)[n // 2 - size // 2: n // 2 + size - size // 2]))
        inst = epsilon_subset_sum_instance(weights, size, target)
        _min_entropy_case(out, f"subset_sum_{n}", inst.epsilons, hard_repeats)
    out["targets_ms"] = "tslm<50 ppwlm<200 dppwlm<2000 min_entropy<1000"
    checks = {"tslm": ("tslm_ms", 50), "ppwlm": ("ppwlm_ms", 200),
              "dppwlm": ("dppwlm_ms", 2000),
              "min_entropy_mide_output": ("min_entropy_dppwlm_output_ms", 1000),
              "min_entropy_distinct_eps": ("min_entropy_distinct_eps_ms", 1000),
              "min_entropy_3_close_levels": ("min_entropy_3_close_levels_ms", 1000)}
    missed = [f"{name} ({out[key]} ms > {limit} ms)" for name, (key, limit) in checks.items()
              if out[key] >= limit]
    inexact = [k.removeprefix("min_entropy_").removesuffix("_exact") for k, v in out.items()
               if k.endswith("_exact") and v != "True"]
    out["targets_missed"] = "; ".join(missed) or "none"
    # inexact on adversarial inputs is expected (mechanisms/mide/hardness.py): reported
    out["min_entropy_inexact_cases"] = ", ".join(inexact) or "none"
    return out
