"""Bin error formulas (SORTaki §V-A): EE (eq. 4) and UEE (eq. 5), O(1) per bin.

A bin ``v`` is a range ``[s, e)`` of positions in some order of the domain
(:mod:`~mechanisms.histograms.bins`). With prefix sums of the values and of their
squares, the sum of squared deviations is ``Σf² − (Σf)²/|v|`` (Xu et al. [19], the
decomposition behind SORTaki eq. 5), so every formula costs O(1) per bin after an O(n)
precomputation — the O(|v|) form of the paper with the sums shared across bins.

Noise terms (derived in SORTaki eqs. 2–4): the expected squared error of the released
bin average, summed over the bin's |v| values,

* WAF finalizer (eq. 3 weights): ``2 / (ε_in² + |v|·ε_f²)`` (eq. 4);
* AHP finalizer (average learned with ε_f only): ``2 / (|v|·ε_f²)`` (eq. 4 with ε_in = 0).

Generalisation term: on real data (EE) the sum of squared deviations; on the
initializer's noisy data (UEE) the same sum minus its bias ``(|v| − 1)·2/ε_in²``.
These are all post-processing (no rng).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from mechanisms.errors import InvalidParameterError

__all__ = ["PrefixStats", "BinErrorFormula", "bin_error", "FORMULAS"]


class PrefixStats:
    """Prefix sums of ``y`` and ``y²`` for O(1) bin statistics over ranges ``[s, e)``."""

    def __init__(self, y: np.ndarray) -> None:
        y = np.asarray(y, dtype=np.float64).ravel()
        self.n = len(y)
        self.c1 = np.concatenate(([0.0], np.cumsum(y)))
        self.c2 = np.concatenate(([0.0], np.cumsum(y * y)))

    def sums(self, s: np.ndarray, e: np.ndarray) -> np.ndarray:
        """Σy over ``[s, e)``."""
        return self.c1[e] - self.c1[s]

    def sse(self, s: np.ndarray, e: np.ndarray) -> np.ndarray:
        """Σ(y − mean)² over ``[s, e)`` (clipped at 0 against rounding)."""
        size = np.asarray(e) - np.asarray(s)
        s1 = self.c1[e] - self.c1[s]
        s2 = self.c2[e] - self.c2[s]
        return np.maximum(s2 - s1 * s1 / size, 0.0)


#: (stats, s, e, eps_in, eps_f) -> error per bin
BinErrorFormula = Callable[[PrefixStats, np.ndarray, np.ndarray, float, float], np.ndarray]


def _noise_waf(size: np.ndarray, eps_in: float, eps_f: float) -> np.ndarray:
    return 2.0 / (eps_in**2 + size * eps_f**2)


def _noise_ahp(size: np.ndarray, eps_in: float, eps_f: float) -> np.ndarray:
    return 2.0 / (size * eps_f**2)


def _bias(size: np.ndarray, eps_in: float) -> np.ndarray:
    return (size - 1) * 2.0 / eps_in**2


def _formula(
    noise: Callable[[np.ndarray, float, float], np.ndarray], noisy_data: bool, doc: str
) -> BinErrorFormula:
    """A bin error formula: SSE (bias-corrected on noisy data) + the finalizer's noise term."""

    def formula(
        st: PrefixStats, s: np.ndarray, e: np.ndarray, eps_in: float, eps_f: float
    ) -> np.ndarray:
        size = np.asarray(e) - np.asarray(s)
        err = st.sse(s, e) + noise(size, eps_in, eps_f)
        return err - _bias(size, eps_in) if noisy_data else err

    formula.__doc__ = doc
    return formula


ee_waf = _formula(_noise_waf, False, "EE, SORTaki eq. (4): real-data SSE + 2/(ε_in² + |v|ε_f²).")
uee_waf = _formula(
    _noise_waf, True, "UEE, SORTaki eq. (5): noisy SSE − (|v|−1)·2/ε_in² + 2/(ε_in² + |v|ε_f²)."
)
ee_ahp = _formula(_noise_ahp, False, "EE for AHP's finalizer: real-data SSE + 2/(|v|ε_f²).")
uee_ahp = _formula(
    _noise_ahp, True, "UEE for AHP's finalizer: noisy SSE − (|v|−1)·2/ε_in² + 2/(|v|ε_f²)."
)


FORMULAS: dict[str, BinErrorFormula] = {
    "ee": ee_waf,
    "uee": uee_waf,
    "ee_ahp": ee_ahp,
    "uee_ahp": uee_ahp,
}


def bin_error(name: str, values: np.ndarray, eps_in: float, eps_f: float) -> float:
    """Error of one bin holding ``values`` under formula ``name`` (O(|v|) form, for checks)."""
    if name not in FORMULAS:
        raise InvalidParameterError(f"formula must be one of {sorted(FORMULAS)}, not {name!r}")
    st = PrefixStats(values)
    s, e = np.array([0]), np.array([st.n])
    return float(FORMULAS[name](st, s, e, eps_in, eps_f)[0])
