"""One entry point for every 1-D algorithm, and the selection rule (Pythia spirit).

:func:`release_1d` runs any 1-D algorithm by name — the SORTaki Table II
configurations (:mod:`.sortaki`), HB, Privelet, GreedyH, MWEM and HDMM — and charges
the whole ε to an :class:`~mechanisms.accounting.Accountant` before any noise is drawn.

:func:`auto_release` is the default release: like Pythia (Kotsogiannis, Machanavajjhala,
Hay & Miklau, SIGMOD 2017, §4) it chooses the algorithm from *public* features only —
the domain size n, the workload kind (identity / prefix / range, read off the public
workload), ε — plus a differentially private estimate of the scale: a share
:data:`SCALE_SHARE` of ε buys ``ŝ = ‖x‖₁ + Lap(1/(share·ε))`` and the rest runs the
chosen algorithm (sequential composition: ε in total). Pythia learns a decision tree;
here the tree is a one-feature threshold rule per workload kind on the per-cell
signal-to-noise ``snr = ε·ŝ/n``: :data:`RULE` lists, per kind, ``(upper bound on
log10(snr), algorithm)`` pairs. The rule was derived by ``bench/hist_1d_rule.py``
from measurements on the DPBench 1-D files *not* used in the report (BIDS, BIDS-FJ,
BIDS-FM, MDSALARY, MDSALARY-FA, LC-REQ-ALL, LC-DTIR-ALL; n = 4096) — see that script
and bench/results/hist_1d/rule.json; the reported data sets (ADULT, HEPTH, INCOME, MEDCOST,
NETTRACE, PATENT, SEARCHLOGS) are held out.
"""

from __future__ import annotations

import math

import numpy as np

from mechanisms.accounting import Accountant, Budget
from mechanisms.errors import InvalidParameterError, check_positive
from mechanisms.histograms import sortaki
from mechanisms.histograms._noise import laplace_noise, resolve_rng
from mechanisms.histograms.greedyh import greedyh_release
from mechanisms.histograms.hb import hb_release
from mechanisms.histograms.hdmm import hdmm_release
from mechanisms.histograms.mwem import mwem_release
from mechanisms.histograms.privelet import privelet_release

__all__ = [
    "NEW_1D",
    "WORKLOAD_AWARE",
    "SCALE_SHARE",
    "RULE",
    "workload_kind",
    "release_1d",
    "select_algorithm",
    "auto_release",
]

#: the 1-D algorithms added next to SORTaki's Table II
NEW_1D = ("HB", "Privelet", "GreedyH", "MWEM", "HDMM", "auto")
#: algorithms whose output depends on the workload
WORKLOAD_AWARE = ("DAWA", "GreedyH", "MWEM", "HDMM", "auto")
#: share of ε spent on the scale estimate by :func:`auto_release`
SCALE_SHARE = 0.01

#: per workload kind: (upper bound on log10(ε·ŝ/n), algorithm), first match wins.
#: Fitted by bench/hist_1d_rule.py on the held-out files (2 trials, scales 1e3…1e7,
#: ε ∈ {0.1, 1}; bench/results/hist_1d/rule.json holds every geo-mean): sparse signal →
#: DAWA everywhere; denser → AHP then DPCube for single counts, HB for prefixes and ranges.
RULE: dict[str, tuple[tuple[float, str], ...]] = {
    "identity": ((-0.112, "DAWA"), (0.888, "AHP"), (math.inf, "DPC")),
    "prefix": ((-0.112, "DAWA"), (math.inf, "HB")),
    "range": ((0.888, "DAWA"), (math.inf, "HB")),
}


def workload_kind(n: int, workload: tuple[np.ndarray, np.ndarray] | None) -> str:
    """"identity", "prefix" or "range" from the public workload (None: identity)."""
    if workload is None:
        return "identity"
    lo, hi = (np.asarray(v, np.int64) for v in workload)
    if np.all(hi - lo == 1):
        return "identity"
    if np.all(lo == 0):
        return "prefix"
    return "range"


def release_1d(
    name: str,
    x: np.ndarray,
    epsilon: float,
    *,
    workload: tuple[np.ndarray, np.ndarray] | None = None,
    accountant: Accountant | None = None,
    rng: np.random.Generator | None = None,
    discrete: bool = False,
    **options: object,
) -> np.ndarray:
    """The ε-DP estimate of the 1-D histogram ``x`` by the algorithm ``name``.

    Args:
        name: a Table II configuration, HB, Privelet, GreedyH, MWEM, HDMM or auto.
        x: the true histogram.
        epsilon: budget ε, charged to ``accountant`` (fresh, capped at ε, when None).
        workload: range queries ``(lo, hi)`` (used by the workload-aware algorithms).
        accountant: the accountant charged.
        rng: noise source (None: the project's CSPRNG).
        discrete: exact discrete Laplace where the algorithm measures integer counts.
        **options: passed to :func:`~mechanisms.histograms.sortaki.run_config`.
    """
    epsilon = check_positive("epsilon", epsilon)
    x = np.asarray(x, np.float64).ravel()
    acct = accountant if accountant is not None else Accountant(Budget(epsilon), name="histogram")
    if name == "auto":
        return auto_release(x, epsilon, workload=workload, accountant=acct, rng=rng)[0]
    if name == "HB":
        return hb_release(x, epsilon, accountant=acct, rng=rng, discrete=discrete)
    if name == "Privelet":
        return privelet_release(x, epsilon, accountant=acct, rng=rng)
    if name == "GreedyH":
        return greedyh_release(
            x, epsilon, workload, accountant=acct, rng=rng, discrete=discrete
        )
    if name == "MWEM":
        return mwem_release(x, epsilon, workload, accountant=acct, rng=rng)
    if name == "HDMM":
        return hdmm_release(x, epsilon, workload, accountant=acct, rng=rng)
    cfg = sortaki.parse_config(name)  # raises InvalidParameterError for unknown names
    acct.spend(epsilon, mechanism=f"histogram:{name}", sampler="laplace")
    rel = sortaki.run_config(
        cfg, x, epsilon, workload=workload, rng=rng, discrete=discrete, **options  # type: ignore[arg-type]
    )
    return rel.estimate


def select_algorithm(n: int, kind: str, epsilon: float, scale_estimate: float) -> str:
    """The rule's algorithm for public features and the noisy scale (no data read)."""
    if kind not in RULE:
        raise InvalidParameterError(f"kind must be one of {', '.join(RULE)}, not {kind!r}")
    epsilon = check_positive("epsilon", epsilon)
    snr = epsilon * max(float(scale_estimate), 1.0) / max(int(n), 1)
    level = math.log10(snr)
    for bound, alg in RULE[kind]:
        if level <= bound:
            return alg
    return RULE[kind][-1][1]


def _child(gen: np.random.Generator) -> np.random.Generator:
    """An independent child stream of ``gen`` for the selection features (``gen.spawn``).

    The chosen algorithm then draws from ``gen`` exactly as it would alone, so a
    benchmark can compare it with the same algorithm on common random numbers. A
    generator without a seed sequence (the CSPRNG) is used directly.
    """
    try:
        return gen.spawn(1)[0]
    except (TypeError, ValueError, AttributeError):
        return gen


def auto_release(
    x: np.ndarray,
    epsilon: float,
    *,
    workload: tuple[np.ndarray, np.ndarray] | None = None,
    scale_share: float = SCALE_SHARE,
    accountant: Accountant | None = None,
    rng: np.random.Generator | None = None,
    discrete: bool = False,
) -> tuple[np.ndarray, dict]:
    """Default release: spend ``scale_share``·ε on ŝ, select, run with the rest.

    Returns:
        (estimate, facts) — facts are public: the chosen algorithm, ŝ, the ε split.
    """
    epsilon = check_positive("epsilon", epsilon)
    if not 0.0 < scale_share < 1.0:
        raise InvalidParameterError(f"scale_share must be in (0, 1), not {scale_share!r}")
    x = np.asarray(x, np.float64).ravel()
    n = len(x)
    gen = resolve_rng(rng)
    acct = accountant if accountant is not None else Accountant(Budget(epsilon), name="histogram")
    eps_s = scale_share * epsilon
    acct.spend(eps_s, mechanism="histogram:auto:scale", sampler="laplace")
    s_hat = float(
        x.sum() + laplace_noise(1.0 / eps_s, 1, rng=_child(gen), discrete=discrete)[0]
    )
    kind = workload_kind(n, workload)
    name = select_algorithm(n, kind, epsilon - eps_s, s_hat)
    est = release_1d(
        name, x, epsilon - eps_s, workload=workload, accountant=acct, rng=gen, discrete=discrete
    )
    facts = {"algorithm": name, "scale_estimate": s_hat, "eps_scale": eps_s, "kind": kind}
    return est, facts
