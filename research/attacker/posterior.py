"""Attacker priors and posteriors over a victim's location (thesis §4.4–4.5, app. B).

Everything here is post-processing of counts the attacker sees (plus, for the
audit's ground truth, the true counts); no randomness, no budget.

Notation (thesis §4.4): at a time point ``t`` there are locations ``L``; the attacker
has a non-individualised prior ``p_l^t`` (an "average user", §4.5.1), sees either
the true counts ``c`` or a mechanism's released counts ``y``, and may know exactly
who is inside some *open regions* (§4.4.1 "Increasing attacker's knowledge").
Victims are the people in closed regions; their prior is renormalised over the
closed regions (§4.5.2) and ``m`` (the number of people in closed regions) is a
public parameter (app. B.3: "we treat m as a public parameter").

* :func:`true_count_posterior` — eq. 4.3, ``Pr[u ∈ l | C] = c_l / m``.
* :func:`noisy_posterior` — eq. 4.4 for one region at a time (§4.5.2):
  ``Σ_z (z/m) f(y|z) Bin(z; m, p) / Σ_z f(y|z) Bin(z; m, p)``. The thesis prints the
  sums from ``z = 1``; the denominator must include ``z = 0`` (an empty room is a
  possible true count), otherwise the ε → 0 limit of app. B.2 (the prior) fails.
  Computed in log space, vectorised over (time, location, z).
* :func:`dp_worst_case_bound` — §4.4.2, ``1 / (1 + e^{-ε} (1 − p) / p)``.
* :func:`localized_by_class` — §4.5 step 4–5 and §4.6: people localised correctly
  per confidence class, excluding those the prior already localises as well.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
from scipy.special import gammaln

from mechanisms.errors import InvalidParameterError, check_positive

#: Confidence class edges (thesis §4.6): (0, 0.1], (0.1, 0.25], …, (0.9, 1].
CONFIDENCE_EDGES: tuple[float, ...] = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0)
CONFIDENCE_LABELS: tuple[str, ...] = tuple(
    f"{lo:g}–{hi:g}" for lo, hi in zip(CONFIDENCE_EDGES[:-1], CONFIDENCE_EDGES[1:], strict=True)
)
N_CLASSES = len(CONFIDENCE_LABELS)

#: Max elements of one (time, location, z) block; bounds memory of noisy_posterior.
_BLOCK_ELEMENTS = 4_000_000


class Likelihood(Protocol):
    """A noise model: log f_Y(y | C = z), broadcasting over ``y`` and ``z``."""

    def logpdf(self, y: np.ndarray, z: np.ndarray) -> np.ndarray:
        """Log density (or log mass) of releasing ``y`` when the true count is ``z``."""
        ...


class LaplaceLikelihood:
    """Known Laplace noise, ``f(y|z) = ε/2 · exp(−ε|y − z|)`` (thesis §4.6.1).

    The discrete Laplace (two-sided geometric) mass ``∝ exp(−ε|y − z|)`` differs only
    by a constant factor, which cancels in eq. 4.4, so this serves both samplers.

    Args:
        epsilon: the per-count ε of the release (sensitivity 1).
    """

    def __init__(self, epsilon: float) -> None:
        self.epsilon = check_positive("epsilon", epsilon)
        #: Upper bound of :meth:`logpdf` (enables exact pruning in :func:`noisy_posterior`).
        self.max_logpdf = float(np.log(self.epsilon / 2))

    def logpdf(self, y: np.ndarray, z: np.ndarray) -> np.ndarray:
        """Log Laplace density of ``y`` centred at ``z``."""
        return np.log(self.epsilon / 2) - self.epsilon * np.abs(np.asarray(y) - np.asarray(z))


def priors(history: np.ndarray, slots: np.ndarray, n_slots: int) -> np.ndarray:
    """Prior ``p_l^t = m_l^t / Σ_l m_l^t`` per time-of-day slot (thesis §4.5.1).

    Args:
        history: true counts of the training days, shape (T, L).
        slots: time-of-day slot of each row, ints in [0, n_slots), shape (T,).
        n_slots: slots per day (144 for 10-minute spans).

    Returns:
        Shape (n_slots, L); rows sum to 1 (uniform where a slot saw nobody).
    """
    history = np.asarray(history, dtype=float)
    slots = np.asarray(slots, dtype=np.int64)
    if history.ndim != 2 or slots.shape != (history.shape[0],):
        raise InvalidParameterError(
            f"history must be (T, L) with slots of shape (T,), not {history.shape}/{slots.shape}"
        )
    if slots.size and (slots.min() < 0 or slots.max() >= n_slots):
        raise InvalidParameterError(f"slots must lie in [0, {n_slots}), not {slots.min()}…")
    m = np.zeros((n_slots, history.shape[1]))
    np.add.at(m, slots, history)
    tot = m.sum(axis=1, keepdims=True)
    uniform = np.full_like(m, 1.0 / max(history.shape[1], 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(tot > 0, m / np.where(tot > 0, tot, 1.0), uniform)


def condition_prior(prior: np.ndarray, open_mask: np.ndarray) -> np.ndarray:
    """Renormalise a prior over the closed regions; open regions get 0 (thesis §4.5.2).

    Args:
        prior: shape (..., L), rows summing to 1.
        open_mask: shape (L,), True where the attacker sees who is inside.
    """
    prior = np.asarray(prior, dtype=float)
    closed = ~np.asarray(open_mask, dtype=bool)
    p = np.where(closed, prior, 0.0)
    tot = p.sum(axis=-1, keepdims=True)
    n_closed = max(int(closed.sum()), 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(tot > 0, p / np.where(tot > 0, tot, 1.0), closed / n_closed)


def closed_total(counts: np.ndarray, open_mask: np.ndarray) -> np.ndarray:
    """``m``: the number of people in closed regions at each time, shape (T,)."""
    closed = ~np.asarray(open_mask, dtype=bool)
    return np.asarray(counts)[..., closed].sum(axis=-1).astype(np.int64)


def true_count_posterior(counts: np.ndarray, open_mask: np.ndarray | None = None) -> np.ndarray:
    """Eq. 4.3 with open regions: ``Pr[u ∈ l | C] = c_l / m`` for closed ``l``.

    Args:
        counts: true counts, shape (T, L).
        open_mask: shape (L,), default all closed.

    Returns:
        Shape (T, L); 0 on open regions and where nobody is in a closed region.
    """
    counts = np.asarray(counts, dtype=float)
    if open_mask is None:
        open_mask = np.zeros(counts.shape[-1], dtype=bool)
    closed = ~np.asarray(open_mask, dtype=bool)
    c = np.where(closed, counts, 0.0)
    m = c.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(m > 0, c / np.where(m > 0, m, 1.0), 0.0)


def noisy_posterior(
    released: np.ndarray,
    prior: np.ndarray,
    m: np.ndarray,
    likelihood: Likelihood,
) -> np.ndarray:
    """Eq. 4.4 per region (thesis §4.5.2): the attacker's posterior from one noisy count.

    ``Pr[u ∈ l | y_l] = Σ_{z=0}^{m} (z/m) f(y_l|z) Bin(z; m, p_l) / Σ_{z=0}^{m} f(y_l|z)
    Bin(z; m, p_l)``, vectorised.

    Exact pruning of the sum: when the likelihood exposes ``max_logpdf`` (an upper
    bound of ``log f``), only the ``z`` whose weight can be within ``e^-40`` of the
    largest term are summed. With ``M`` a lower bound of the largest log-weight (taken
    at the binomial mode and at ``round(y)``), a term is dropped only when the
    Chernoff bound ``log Bin(z) ≤ −m·KL(z/m ‖ p)`` plus ``max_logpdf`` is below
    ``M − 40``; that set is an interval around the mode, found by vectorised bisection.
    The dropped mass is below ``(m + 1)·e^-40`` relative (≈ 10⁻¹⁴ for m = 10⁴).

    Args:
        released: released counts ``y``, shape (T, L).
        prior: the (open-region conditioned) prior ``p_l`` at each time, shape (T, L).
        m: people in closed regions at each time, shape (T,).
        likelihood: the noise model (known :class:`LaplaceLikelihood` or a fitted KDE).

    Returns:
        Shape (T, L), between the prior and the true-count posterior (app. B.2);
        0 where ``m = 0`` or the prior is 0.
    """
    y = np.asarray(released, dtype=float)
    p = np.clip(np.asarray(prior, dtype=float), 0.0, 1.0)
    m = np.asarray(m, dtype=np.int64)
    if y.shape != p.shape or m.shape != (y.shape[0],):
        raise InvalidParameterError(
            f"released and prior must both be (T, L) and m (T,), not {y.shape}, {p.shape}, "
            f"{m.shape}"
        )
    if np.any(m < 0):
        raise InvalidParameterError("m must be >= 0")
    n_t, n_l = y.shape
    out = np.zeros((n_t, n_l))
    if n_t == 0:
        return out
    lmax = getattr(likelihood, "max_logpdf", None)
    if lmax is not None and np.isfinite(lmax):
        return _pruned(y, p, m, likelihood, float(lmax))
    order = np.argsort(m, kind="stable")  # similar m per block keeps padding small
    start = 0
    while start < n_t:
        m_first = int(m[order[start]])
        step = max(1, _BLOCK_ELEMENTS // max(1, n_l * (m_first + 1)))
        stop = min(n_t, start + step)
        while stop - start > 1 and (stop - start) * n_l * (int(m[order[stop - 1]]) + 1) > (
            2 * _BLOCK_ELEMENTS
        ):
            stop = start + (stop - start) // 2
        idx = order[start:stop]
        out[idx] = _posterior_block(y[idx], p[idx], m[idx], int(m[idx].max()), likelihood)
        start = stop
    return out


#: Terms more than this many nats below the largest are dropped (see noisy_posterior).
PRUNE_NATS = 40.0


def _pruned(
    y2: np.ndarray, p2: np.ndarray, m1: np.ndarray, likelihood: Likelihood, lmax: float
) -> np.ndarray:
    n_t, n_l = y2.shape
    y = y2.ravel()
    p = p2.ravel()
    m = np.repeat(m1, n_l)
    out = np.zeros(y.size)
    out[(p >= 1) & (m > 0)] = 1.0  # everyone is there: z = m surely
    live = np.flatnonzero((p > 0) & (p < 1) & (m > 0))
    if live.size == 0:
        return out.reshape(n_t, n_l)
    y, p, m = y[live], p[live], m[live]
    lgf = gammaln(np.arange(int(m.max()) + 2, dtype=float) + 1)
    lp, lq = np.log(p), np.log1p(-p)

    def log_bin(z: np.ndarray) -> np.ndarray:
        return lgf[m] - lgf[z] - lgf[m - z] + z * lp + (m - z) * lq

    def chernoff(z: np.ndarray) -> np.ndarray:  # −m·KL(z/m ‖ p) ≥ log Bin(z)
        q = z / m
        with np.errstate(divide="ignore", invalid="ignore"):
            a = np.where(z > 0, z * (np.log(q) - lp), 0.0)
            b = np.where(z < m, (m - z) * (np.log1p(-q) - lq), 0.0)
        return -(a + b)

    mode = np.clip(np.floor((m + 1) * p).astype(np.int64), 0, m)
    near_y = np.clip(np.rint(y).astype(np.int64), 0, m)
    best = np.maximum(
        log_bin(mode) + likelihood.logpdf(y, mode), log_bin(near_y) + likelihood.logpdf(y, near_y)
    )
    thr = best - PRUNE_NATS - lmax
    # Super-level set {chernoff ≥ thr} is an interval containing mode and near_y.
    anchor_lo = np.minimum(mode, near_y)
    anchor_hi = np.maximum(mode, near_y)
    lo, hi = np.zeros_like(m), anchor_lo.copy()
    while np.any(lo < hi):
        mid = (lo + hi) // 2
        ok = chernoff(mid) >= thr
        hi = np.where(ok, mid, hi)
        lo = np.where(ok, lo, mid + 1)
    left = lo
    lo, hi = anchor_hi.copy(), m.copy()
    while np.any(lo < hi):
        mid = (lo + hi + 1) // 2
        ok = chernoff(mid) >= thr
        lo = np.where(ok, mid, lo)
        hi = np.where(ok, hi, mid - 1)
    right = lo
    width = right - left + 1
    # Buckets of similar width (ratio ≤ 1.25) keep the padding of each block small.
    bucket = np.floor(np.log(width) / np.log(1.25)).astype(np.int64)
    order = np.lexsort((width, bucket))
    cuts = np.flatnonzero(np.diff(bucket[order])) + 1
    bounds = [0, *cuts.tolist(), order.size]
    chunks: list[np.ndarray] = []
    for b0, b1 in zip(bounds[:-1], bounds[1:], strict=True):
        step = max(1, _BLOCK_ELEMENTS // int(width[order[b1 - 1]]))
        chunks += [order[i : min(b1, i + step)] for i in range(b0, b1, step)]
    res = np.empty(y.size)
    for idx in chunks:
        w = int(width[idx].max())
        z = left[idx, None] + np.arange(w)
        valid = z <= right[idx, None]
        z = np.minimum(z, right[idx, None])
        mi = m[idx, None]
        log_w = lgf[mi] - lgf[z] - lgf[mi - z] + z * lp[idx, None] + (mi - z) * lq[idx, None]
        log_w += likelihood.logpdf(y[idx, None], z)
        log_w[~valid] = -np.inf
        top = log_w.max(axis=1, keepdims=True)
        np.subtract(log_w, np.where(np.isfinite(top), top, 0.0), out=log_w)
        np.exp(log_w, out=log_w)
        den = log_w.sum(axis=1)
        num = (log_w * z).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            post = num / np.where(den > 0, den, 1.0) / m[idx]
        res[idx] = np.where(np.isfinite(top[:, 0]) & (den > 0), post, p[idx])
    out[live] = np.clip(np.nan_to_num(res, nan=0.0), 0.0, 1.0)
    return out.reshape(n_t, n_l)


def _posterior_block(
    y: np.ndarray, p: np.ndarray, m: np.ndarray, m_hi: int, likelihood: Likelihood
) -> np.ndarray:
    if m_hi == 0:
        return np.zeros_like(y)
    z = np.arange(m_hi + 1, dtype=float)
    mm = m.astype(float)[:, None]
    # log C(m, z) depends on (t, z) only; z > m is masked with -inf.
    with np.errstate(invalid="ignore", divide="ignore"):
        log_c = gammaln(mm + 1) - gammaln(z + 1) - gammaln(np.maximum(mm - z, 0) + 1)
        log_c = np.where(z <= mm, log_c, -np.inf)[:, None, :]
        lp = np.log(p)[:, :, None]
        lq = np.log1p(-p)[:, :, None]
    # z·log p + (m − z)·log(1 − p) with the 0·log 0 = 0 convention (p ∈ {0, 1}).
    p3 = p[:, :, None]
    a = np.where(p3 > 0, lp, 0.0) if np.any(p == 0) else lp
    b = np.where(p3 < 1, lq, 0.0) if np.any(p == 1) else lq
    log_w = z * (a - b)
    log_w += (mm * b[..., 0])[:, :, None]
    log_w += log_c
    log_w += likelihood.logpdf(y[:, :, None], z)
    if np.any(p == 0):
        log_w = np.where((p3 == 0) & (z > 0), -np.inf, log_w)
    if np.any(p == 1):
        log_w = np.where((p3 == 1) & (z < mm[:, :, None]), -np.inf, log_w)
    top = log_w.max(axis=-1, keepdims=True)
    finite = np.isfinite(top[..., 0])
    np.subtract(log_w, np.where(np.isfinite(top), top, 0.0), out=log_w)
    np.exp(log_w, out=log_w)
    den = log_w.sum(axis=-1)
    num = log_w @ z
    with np.errstate(invalid="ignore", divide="ignore"):
        post = num / np.where(den > 0, den, 1.0) / np.where(m > 0, m, 1)[:, None]
    # No admissible z (density 0 everywhere): the output tells nothing; fall back to prior.
    post = np.where(finite & (den > 0), post, p)
    post = np.where((m > 0)[:, None] & (p > 0), post, 0.0)
    return np.clip(np.nan_to_num(post, nan=0.0), 0.0, 1.0)


def dp_worst_case_bound(prior: np.ndarray, epsilon: float) -> np.ndarray:
    """Upper bound on any ε-DP attacker's posterior, ``1/(1 + e^{−ε}(1−p)/p)`` (thesis §4.4.2).

    Assumes the attacker already knows everyone else's location; independent of the
    released values. ``p = 0`` gives 0.
    """
    epsilon = check_positive("epsilon", epsilon)
    p = np.asarray(prior, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        b = 1.0 / (1.0 + np.exp(-epsilon) * (1.0 - p) / p)
    return np.where(p > 0, b, 0.0)


def confidence_class(prob: np.ndarray) -> np.ndarray:
    """Class index 0..5 of each probability per :data:`CONFIDENCE_EDGES`; −1 for p ≤ 0."""
    prob = np.asarray(prob, dtype=float)
    cls = np.searchsorted(np.asarray(CONFIDENCE_EDGES[1:-1]), prob, side="left")
    return np.where(prob > 0, cls, -1)


def localized_by_class(
    posterior: np.ndarray,
    counts: np.ndarray,
    prior: np.ndarray,
    open_mask: np.ndarray | None = None,
    *,
    guess: str = "argmax",
) -> np.ndarray:
    """People localised correctly per confidence class at each time (thesis §4.5–4.6).

    Under the non-individualised prior every person in location ``l`` at time ``t``
    has the same confidence ``posterior[t, l]`` (the posterior of their true room,
    §4.5 step 4). A person is counted when

    * they are in a closed region (people in open regions are already known, §4.6.2);
    * the confidence class of the posterior is higher than that of the prior
      (those the prior already localises as well are excluded, §4.5 step 5);
    * with ``guess="argmax"``: their room is the attacker's guess, i.e. a room of
      maximal posterior at ``t`` (§4.5.2: the attacker "makes a particular guess" and
      a wrong guess nullifies the advantage); with ``guess="all"`` every person counts.

    Args:
        posterior: attacker confidence per (time, location), shape (T, L).
        counts: true counts (who is where), shape (T, L).
        prior: the attacker's conditioned prior, shape (T, L).
        open_mask: shape (L,), default all closed.
        guess: ``"argmax"`` or ``"all"``.

    Returns:
        Shape (T, N_CLASSES): number of people per class.
    """
    if guess not in {"argmax", "all"}:
        raise InvalidParameterError(f"guess must be 'argmax' or 'all', not {guess!r}")
    post = np.asarray(posterior, dtype=float)
    counts = np.asarray(counts, dtype=float)
    if open_mask is None:
        open_mask = np.zeros(post.shape[-1], dtype=bool)
    closed = ~np.asarray(open_mask, dtype=bool)
    post_c = np.where(closed, post, 0.0)
    cls = confidence_class(post_c)
    keep = closed[None, :] & (cls > confidence_class(prior)) & (cls >= 0)
    if guess == "argmax":
        keep &= post_c >= post_c.max(axis=-1, keepdims=True)
    out = np.zeros((post.shape[0], N_CLASSES))
    rows = np.broadcast_to(np.arange(post.shape[0])[:, None], post.shape)
    np.add.at(out, (rows[keep], cls[keep]), counts[keep])
    return out


ATTACKERS: tuple[str, ...] = ("external", "student", "administrator")

#: Location kinds a student can walk into and observe (thesis §4.6.2: "classrooms and
#: public areas"): classrooms, lobbies/cafés, lounges and corridors.
STUDENT_KINDS = frozenset({"classroom", "public", "lounge", "corridor"})


#: Location kinds an administrator sees besides the camera feeds (thesis §4.6.2: "the
#: set of open regions is different including those that contain offices", 39 of 64
#: regions, more of the population than the student's 37): staff and service spaces.
#: On dbh this opens 33 of 53 locations (62 %; thesis 61 %) holding ≈ 74 % of the
#: population, against the student's 31 (58 %; thesis 58 %) holding ≈ 58 %.
ADMIN_KINDS = frozenset({"office", "lab", "meeting", "lounge", "corridor", "public",
                         "restroom"})


def open_regions(
    attacker: str,
    kinds: Sequence[str],
    camera: Sequence[bool],
    *,
    administrator_kinds: frozenset[str] | None = None,
) -> np.ndarray:
    """Open-region mask of one of the three attackers of thesis §4.6.2.

    Args:
        attacker: ``"external"`` (none open), ``"student"`` (kinds in
            :data:`STUDENT_KINDS`) or ``"administrator"`` (camera-covered locations, plus
            the kinds in ``administrator_kinds``).
        kinds: location kind per location (building model, vector order).
        camera: camera flag per location.
        administrator_kinds: extra kinds the administrator sees; None → cameras only.
            :data:`ADMIN_KINDS` gives the thesis' proportions (``occustream audit``).

    Returns:
        Bool array of shape (L,).
    """
    kinds = list(kinds)
    if len(camera) != len(kinds):
        raise InvalidParameterError(
            f"kinds and camera must have the same length, not {len(kinds)} and {len(camera)}"
        )
    if attacker == "external":
        return np.zeros(len(kinds), dtype=bool)
    if attacker == "student":
        return np.array([k in STUDENT_KINDS for k in kinds], dtype=bool)
    if attacker == "administrator":
        extra = administrator_kinds or frozenset()
        return np.asarray(camera, dtype=bool) | np.array([k in extra for k in kinds], dtype=bool)
    raise InvalidParameterError(f"attacker must be one of {list(ATTACKERS)}, not {attacker!r}")
