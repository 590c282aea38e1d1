"""Charging the 2-D histogram releases to an accountant before any noise is drawn.

Every NOISE DRAWING function of :mod:`~mechanisms.histograms.grids`,
:mod:`~mechanisms.histograms.quadtree`, :mod:`~mechanisms.histograms.kdtree` and
:mod:`~mechanisms.histograms.select2d` takes ``accountant: Accountant | None``. ``None``
gives a fresh accountant capped at the release's ε, so a release whose parts add up to
more than its ε is refused (``BudgetExhaustedError``) before any noise is drawn, whether
or not the caller keeps a ledger.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mechanisms.accounting import Accountant, Budget, LedgerRecord
from mechanisms.errors import BudgetExhaustedError, check_positive
from mechanisms.histograms._noise import laplace_noise

__all__ = [
    "SCALE_SHARE",
    "SpatialRelease",
    "charge",
    "ledger",
    "noisy_total",
    "sampler_name",
    "split_scale",
]

#: share ρ of ε spent on a DP estimate of the scale N = ‖x‖₁ when an algorithm needs N
#: (UG, AG, the 2-D selection rule). DPBench (Hay et al. SIGMOD 2016, §4 "scale")
#: requires the scale not to be assumed public; 5 % costs ~5 % more noise elsewhere
#: while Lap(1/(0.05 ε)) on N ≥ 10⁴ is a relative error ≤ 2 % at ε = 0.1.
SCALE_SHARE = 0.05


def ledger(accountant: Accountant | None, epsilon: float, name: str) -> Accountant:
    """The accountant to charge: ``accountant`` or a fresh one capped at ``epsilon``.

    A given accountant must have ``epsilon`` left in its scope and every ancestor;
    otherwise the release is refused here, before any of its parts draws noise.

    Raises:
        BudgetExhaustedError: ``epsilon`` does not fit.
    """
    epsilon = check_positive("epsilon", epsilon)
    if accountant is None:
        return Accountant(Budget(epsilon), name=name)
    node: Accountant | None = accountant
    while node is not None:
        left = node.remaining().epsilon
        if left < epsilon - 1e-9:
            raise BudgetExhaustedError(epsilon, left, node.path)
        node = node.parent
    return accountant


def sampler_name(discrete: bool) -> str:
    """The ledger's sampler string for the noise used."""
    return "discrete-laplace (exact)" if discrete else "continuous laplace (experiments)"


def charge(
    accountant: Accountant,
    epsilon: float,
    *,
    mechanism: str,
    n_values: int,
    discrete: bool,
    note: str = "",
) -> LedgerRecord:
    """Charge one measurement of ``n_values`` disjoint counts at ``epsilon`` (sensitivity 1)."""
    return accountant.spend(
        float(epsilon),
        mechanism=mechanism,
        n_locations=int(n_values),
        sampler=sampler_name(discrete),
        note=note,
    )


def noisy_total(
    x: np.ndarray,
    epsilon: float,
    *,
    accountant: Accountant,
    rng: np.random.Generator | None = None,
    discrete: bool = False,
    mechanism: str = "histogram:scale",
) -> float:
    """NOISE DRAWING — N̂ = ‖x‖₁ + Lap(1/ε), clipped at 1 (post-processing); ε-DP.

    One record changes the total by one (sensitivity 1). Charged before the draw.
    """
    epsilon = check_positive("epsilon", epsilon)
    charge(accountant, epsilon, mechanism=mechanism, n_values=1, discrete=discrete)
    total = float(np.asarray(x, np.float64).sum())
    return max(1.0, total + float(laplace_noise(1.0 / epsilon, 1, rng=rng, discrete=discrete)[0]))


Box = tuple[tuple[int, int], ...]


@dataclass(frozen=True, eq=False)
class SpatialRelease:
    """A 2-D (or k-D) histogram release.

    Attributes:
        estimate: the estimated cube (post-processed, same shape as the input).
        algorithm: the algorithm's name.
        epsilon: the total ε charged (scale estimate included).
        boxes: the leaf regions the estimate is uniform in (the data-dependent part of
            the output; empty for data-independent layouts when not recorded).
        parts: ε of each measurement, by name (they add up to ``epsilon``).
        scale: the DP estimate of N used (None when not needed).
    """

    estimate: np.ndarray
    algorithm: str
    epsilon: float
    boxes: tuple[Box, ...] = ()
    parts: dict[str, float] = field(default_factory=dict)
    scale: float | None = None


def split_scale(
    x: np.ndarray,
    epsilon: float,
    scale: float | None,
    *,
    accountant: Accountant,
    rng: np.random.Generator | None,
    discrete: bool,
    mechanism: str,
) -> tuple[float, float, dict[str, float]]:
    """(N̂, ε left, parts): spend ``SCALE_SHARE·ε`` on N̂ unless ``scale`` is given.

    A given ``scale`` must itself be public or a DP estimate charged elsewhere (the
    2-D selection rule passes the one it paid for).
    """
    if scale is not None:
        return max(1.0, float(scale)), epsilon, {}
    eps_n = SCALE_SHARE * epsilon
    n_hat = noisy_total(
        x, eps_n, accountant=accountant, rng=rng, discrete=discrete, mechanism=mechanism
    )
    return n_hat, epsilon - eps_n, {"scale": eps_n}
