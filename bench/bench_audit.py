"""Posterior evaluation speed of the privacy audit (issue 8 benchmark).

64 locations × 144 time points (10-minute spans) × all people of a simulated day
(up to ~900 at the peak, the thesis' DBH scale), Laplace ε = 0.5:

* worst-case DP bound (thesis Table 4.1: 0.6 s),
* eq. 4.4 with the known Laplace density (thesis: 5.4 s),
* eq. 4.4 with the KDE-learned density: training on 7 days (thesis: 6.9 s) and
  evaluation (thesis: 7.3 s).

Figures are medians over repeats; the same-process baseline is a straightforward
per-(time, location) loop of eq. 4.4 with ``scipy.stats`` (timed on a subset of
time points and scaled to 144), and ``scipy.stats.gaussian_kde`` per true count for
the KDE (evaluated for a few locations at one busy time point, scaled up).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from bench._timing import median_seconds
from research.attacker import (
    LaplaceLikelihood,
    dp_worst_case_bound,
    fit_conditional_kde,
    noisy_posterior,
)

THESIS_S = {"bound": 0.6, "known": 5.4, "kde_train": 6.9, "kde_eval": 7.3}
N_LOC, N_T, EPS = 64, 144, 0.5


def _day(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    hours = np.arange(N_T) / 6
    m = np.round(20 + 880 * np.exp(-(((hours - 13) / 3.5) ** 2))).astype(int)
    prior = rng.dirichlet(np.full(N_LOC, 0.7), size=N_T)
    counts = np.array([rng.multinomial(n, p) for n, p in zip(m, prior, strict=True)])
    return m, prior, counts




def _naive_known(y: np.ndarray, prior: np.ndarray, m: np.ndarray, rows: range) -> None:
    for t in rows:
        z = np.arange(m[t] + 1)
        for j in range(N_LOC):
            w = stats.binom.pmf(z, m[t], prior[t, j]) * stats.laplace.pdf(y[t, j], z, 1 / EPS)
            _ = (w * z).sum() / m[t] / w.sum()


def _naive_kde_train(z: np.ndarray, y: np.ndarray) -> dict[int, stats.gaussian_kde]:
    out = {}
    for v in np.unique(z):
        sel = y[z == v]
        if sel.size > 1 and np.ptp(sel) > 0:
            out[int(v)] = stats.gaussian_kde(sel, bw_method=0.1)
    return out


def _naive_kde_eval(kdes: dict[int, stats.gaussian_kde], y: np.ndarray, prior: np.ndarray,
                    m: np.ndarray, rows: range, n_loc: int) -> None:
    for t in rows:
        z = np.arange(m[t] + 1)
        for j in range(n_loc):
            f = np.array([kdes[v](y[t, j])[0] if v in kdes else 0.0 for v in z])
            w = stats.binom.pmf(z, m[t], prior[t, j]) * f
            _ = (w * z).sum() / m[t] / max(w.sum(), 1e-300)


def run(quick: bool = False) -> dict:
    rng = np.random.default_rng(0)
    repeats = 3 if quick else 7
    m, prior, counts = _day(rng)
    y = counts + rng.laplace(0, 1 / EPS, counts.shape)
    lik = LaplaceLikelihood(EPS)
    train_days = 2 if quick else 7
    z_train = np.concatenate([_day(rng)[2] for _ in range(train_days)])
    y_train = z_train + rng.laplace(0, 1 / EPS, z_train.shape)

    t_bound = median_seconds(lambda: dp_worst_case_bound(prior, EPS), repeats)
    t_known = median_seconds(lambda: noisy_posterior(y, prior, m, lik), repeats)
    kde = fit_conditional_kde(z_train, y_train)
    t_train = median_seconds(lambda: fit_conditional_kde(z_train, y_train), repeats)
    t_kde = median_seconds(lambda: noisy_posterior(y, prior, m, kde), repeats)

    sub = range(60, 64 if quick else 68)  # busy afternoon time points
    t_naive = median_seconds(lambda: _naive_known(y, prior, m, sub), 1) / len(sub) * N_T
    naive_sub = 2_000 if quick else 10_000
    t_naive_train = median_seconds(lambda: _naive_kde_train(z_train.ravel()[:naive_sub],
                                                     y_train.ravel()[:naive_sub]), 1)
    t_naive_train *= z_train.size / naive_sub
    kdes = _naive_kde_train(z_train.ravel(), y_train.ravel())
    sub_kde = range(64, 65)
    n_loc_sub = 2 if quick else 6
    t_naive_kde = median_seconds(lambda: _naive_kde_eval(kdes, y, prior, m, sub_kde, n_loc_sub), 1)
    t_naive_kde *= N_T * N_LOC / n_loc_sub
    return {
        "locations": N_LOC,
        "time_points": N_T,
        "people_peak": int(m.max()),
        "person_time_points": int(m.sum()),
        "training_pairs": int(z_train.size),
        "bound_s": round(t_bound, 5),
        "known_density_s": round(t_known, 4),
        "kde_train_s": round(t_train, 4),
        "kde_eval_s": round(t_kde, 4),
        "speedup_vs_thesis_bound": round(THESIS_S["bound"] / t_bound, 1),
        "speedup_vs_thesis_known": round(THESIS_S["known"] / t_known, 1),
        "speedup_vs_thesis_kde_train": round(THESIS_S["kde_train"] / t_train, 1),
        "speedup_vs_thesis_kde_eval": round(THESIS_S["kde_eval"] / t_kde, 1),
        "speedup_vs_thesis_kde_total": round(
            (THESIS_S["kde_train"] + THESIS_S["kde_eval"]) / (t_train + t_kde), 1),
        "naive_loop_known_s_extrapolated": round(t_naive, 3),
        "ratio_naive_loop_vs_vectorised_known": round(t_naive / t_known, 1),
        "naive_scipy_kde_train_s": round(t_naive_train, 3),
        "naive_scipy_kde_eval_s_extrapolated": round(t_naive_kde, 2),
        "ratio_naive_scipy_kde_vs_ours_total": round(
            (t_naive_train + t_naive_kde) / (t_train + t_kde), 1),
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick=True), indent=2))
