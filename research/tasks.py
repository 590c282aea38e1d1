"""Analysis tasks of the IoT-DETECTIVE game (thesis §3.2), answered from a released stream.

Post-processing only (no ``rng``, no budget): each task has an *answer* function
applied identically to a released stream and to the true stream, and a *score*
function giving the game's accuracy measure and a normalised accuracy in [0, 1]
(1 = the true answer), so accuracy-vs-ε curves of different tasks share one axis.

Tasks (thesis §3.2 "Example Tasks"):

* **exceed** — count the ticks in which a room's occupancy exceeds ``N``. Measure:
  absolute difference of the counts; accuracy ``1 − |Δ| / max(true, 1)`` (≥ 0).
* **night region** — the region (e.g. floor) with the highest average occupancy at
  night (18:00–06:00). Measure: the rank of the chosen region in the true ranking
  (0 = correct); accuracy ``1 − rank / (R − 1)``.
* **broken sensor** — the earliest tick from which a sensor's location reports zero
  continuously. Estimator: the suffix start maximising ``Σ_{s≥t} (level − y_s)``
  (a CUSUM change point towards zero; on an exact stream ending in zeros with
  ``level`` below the smallest non-zero count over the final stretch it is the start
  of the trailing zero run). Measure: distance in ticks; accuracy
  ``1 − min(1, |Δ| / tolerance)``.
* **weekly event** — the start of a routine weekly event in a room. Estimator: fold
  the stream by week (mean per tick-of-week), pick the largest rise between the
  ``window`` ticks before and after. Measure: circular distance in ticks within the
  week; accuracy as for the broken sensor.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mechanisms.errors import InvalidParameterError

TASKS: tuple[str, ...] = ("exceed", "night_region", "broken_sensor", "weekly_event")


@dataclass(frozen=True)
class TaskScore:
    """One task answered from a released stream, against the true answer."""

    task: str
    estimate: float
    truth: float
    error: float
    accuracy: float


def _stream(x: np.ndarray, name: str = "stream") -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.ndim != 1 or x.size == 0:
        raise InvalidParameterError(f"{name} must be a non-empty 1-D array, not shape {x.shape}")
    return x


# --- exceed -----------------------------------------------------------------------------

def ticks_exceeding(stream: np.ndarray, threshold: float) -> int:
    """Number of ticks with occupancy strictly above ``threshold``."""
    return int(np.sum(_stream(stream) > threshold))


def score_exceed(released: np.ndarray, true: np.ndarray, threshold: float) -> TaskScore:
    """Score the exceed task for one room (module docstring)."""
    est, tru = ticks_exceeding(released, threshold), ticks_exceeding(true, threshold)
    err = abs(est - tru)
    return TaskScore("exceed", est, tru, err, max(0.0, 1.0 - err / max(tru, 1)))


# --- night region -----------------------------------------------------------------------

def night_mask(seconds_of_day: np.ndarray, start_h: float = 18.0, end_h: float = 6.0) -> np.ndarray:
    """True for ticks at night (``start_h`` to ``end_h`` local time, wrapping midnight)."""
    h = (np.asarray(seconds_of_day, dtype=float) % 86400) / 3600
    return (h >= start_h) | (h < end_h) if start_h > end_h else (h >= start_h) & (h < end_h)


def region_means(counts: np.ndarray, region_of: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Average total occupancy per region over the ticks in ``mask``.

    Args:
        counts: shape (T, L).
        region_of: region index per location, shape (L,), ints in [0, R).
        mask: ticks to average over, shape (T,).
    """
    counts = np.asarray(counts, dtype=float)
    region_of = np.asarray(region_of, dtype=np.int64)
    mask = np.asarray(mask, dtype=bool)
    n_t = counts.shape[0]
    if counts.ndim != 2 or region_of.shape != (counts.shape[1],) or mask.shape != (n_t,):
        raise InvalidParameterError("counts (T, L), region_of (L,) and mask (T,) do not match")
    if not mask.any():
        raise InvalidParameterError("mask selects no ticks")
    per_tick = np.zeros((int(mask.sum()), int(region_of.max()) + 1))
    np.add.at(per_tick.T, region_of, counts[mask].T)
    return per_tick.mean(axis=0)


def score_night_region(
    released: np.ndarray, true: np.ndarray, region_of: np.ndarray, mask: np.ndarray
) -> TaskScore:
    """Score the most-occupied-region-at-night task (module docstring)."""
    est = int(np.argmax(region_means(released, region_of, mask)))
    true_means = region_means(true, region_of, mask)
    tru = int(np.argmax(true_means))
    rank = int(np.sum(true_means > true_means[est]))
    n_r = len(true_means)
    return TaskScore("night_region", est, tru, rank, 1.0 - rank / max(n_r - 1, 1))


# --- broken sensor ----------------------------------------------------------------------

def broken_since(stream: np.ndarray, level: float = 0.5) -> int:
    """Tick index from which the stream reads (about) zero to the end (CUSUM suffix)."""
    y = _stream(stream)
    suffix = np.cumsum((level - y)[::-1])[::-1]
    return int(np.argmax(suffix))


def trailing_zero_start(stream: np.ndarray) -> int:
    """Start of the run of exact zeros ending the stream (len(stream) if it ends non-zero)."""
    y = _stream(stream)
    nz = np.flatnonzero(y != 0)
    return 0 if nz.size == 0 else int(nz[-1]) + 1


def score_broken_sensor(
    released: np.ndarray,
    true: np.ndarray,
    *,
    truth_tick: int | None = None,
    level: float = 0.5,
    tolerance_ticks: float = 12,
) -> TaskScore:
    """Score the broken-sensor task (truth: ``truth_tick`` or the trailing zero run)."""
    est = broken_since(released, level)
    tru = trailing_zero_start(true) if truth_tick is None else int(truth_tick)
    err = abs(est - tru)
    return TaskScore("broken_sensor", est, tru, err, max(0.0, 1.0 - err / tolerance_ticks))


# --- weekly event -----------------------------------------------------------------------

def weekly_profile(stream: np.ndarray, ticks_per_week: int, offset: int = 0) -> np.ndarray:
    """Mean per tick-of-week (``offset`` = tick-of-week of the stream's first tick)."""
    y = _stream(stream)
    if ticks_per_week < 2:
        raise InvalidParameterError(f"ticks_per_week must be >= 2, not {ticks_per_week!r}")
    pos = (np.arange(y.size) + offset) % ticks_per_week
    s = np.bincount(pos, weights=y, minlength=ticks_per_week)
    n = np.bincount(pos, minlength=ticks_per_week)
    return np.where(n > 0, s / np.maximum(n, 1), np.nan)


def event_start(
    stream: np.ndarray, ticks_per_week: int, *, window: int = 6, offset: int = 0
) -> int:
    """Tick-of-week of the largest rise between the ``window`` ticks before and after."""
    prof = weekly_profile(stream, ticks_per_week, offset)
    prof = np.where(np.isnan(prof), np.nanmean(prof), prof)
    c = np.concatenate([prof, prof])  # circular week
    cs = np.concatenate([[0.0], np.cumsum(c)])
    t = np.arange(ticks_per_week) + ticks_per_week
    after = (cs[np.minimum(t + window, 2 * ticks_per_week)] - cs[t]) / window
    before = (cs[t] - cs[t - window]) / window
    return int(np.argmax(after - before))


def score_weekly_event(
    released: np.ndarray,
    true: np.ndarray,
    ticks_per_week: int,
    *,
    truth_tick: int | None = None,
    window: int = 6,
    offset: int = 0,
    tolerance_ticks: float = 12,
) -> TaskScore:
    """Score the weekly-event start task (truth: ``truth_tick`` or the estimator on truth)."""
    est = event_start(released, ticks_per_week, window=window, offset=offset)
    tru = (
        event_start(true, ticks_per_week, window=window, offset=offset)
        if truth_tick is None
        else int(truth_tick) % ticks_per_week
    )
    d = abs(est - tru) % ticks_per_week
    err = min(d, ticks_per_week - d)
    return TaskScore("weekly_event", est, tru, err, max(0.0, 1.0 - err / tolerance_ticks))
