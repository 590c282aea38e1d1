"""Queries on released streams — post-processing only (no ``rng``, no budget).

PeGaSus query classes (Chen et al., CCS 2017, §2.2 and §6; thesis §3.1.2): unit
counts (the released stream itself), sliding-window sums over the last w ticks, and
event monitoring — jumps/drops between consecutive windows and low-signal points —
swept over a threshold to draw ROC curves against events found on the true stream.

Every function here reads released values (and, for scoring only, true values in an
offline evaluation); none draws noise, so none changes the ledger.

Arrays are ``(T,)`` or ``(T, L)``: time first, locations second.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from mechanisms.errors import InvalidParameterError

__all__ = [
    "EventKind",
    "RocCurve",
    "clip_nonnegative",
    "detect_events",
    "mean_absolute_error",
    "roc_sweep",
    "sliding_window_sum",
    "window_change",
]

EventKind = Literal["jump", "drop", "low"]


def _check_window(w: int) -> int:
    if not isinstance(w, int | np.integer) or int(w) < 1:
        raise InvalidParameterError(f"w must be an integer ≥ 1, not {w!r}")
    return int(w)


def _series(x: np.ndarray | Sequence[float], name: str = "series") -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim not in (1, 2):
        raise InvalidParameterError(f"{name} must be (T,) or (T, L), not shape {a.shape!r}")
    return a


def clip_nonnegative(released: np.ndarray) -> np.ndarray:
    """Released values clipped at 0 (occupancy is never negative)."""
    return np.maximum(np.asarray(released, dtype=np.float64), 0.0)


def mean_absolute_error(released: np.ndarray, true: np.ndarray) -> float:
    """Mean |released − true| over all cells."""
    r, t = np.asarray(released, dtype=float), np.asarray(true, dtype=float)
    if r.shape != t.shape:
        raise InvalidParameterError(f"released must have shape {t.shape}, not {r.shape}")
    return float(np.mean(np.abs(r - t))) if r.size else float("nan")


def sliding_window_sum(series: np.ndarray | Sequence[float], w: int) -> np.ndarray:
    """Sum over the last ``w`` ticks (t−w+1 … t) at every t.

    The first w−1 ticks sum what exists (a truncated window). Same shape as the input.
    """
    x = _series(series)
    w = _check_window(w)
    c = np.cumsum(x, axis=0)
    out = c.copy()
    out[w:] = c[w:] - c[:-w]
    return out


def window_change(series: np.ndarray | Sequence[float], w: int) -> np.ndarray:
    """Sum of the last w ticks minus the sum of the w ticks before (NaN until 2w ticks)."""
    x = _series(series)
    w = _check_window(w)
    s = sliding_window_sum(x, w)
    out = np.full_like(s, np.nan)
    out[2 * w - 1 :] = s[2 * w - 1 :] - s[w - 1 : -w]
    return out


def detect_events(
    series: np.ndarray | Sequence[float], kind: EventKind, threshold: float, w: int = 1
) -> np.ndarray:
    """Boolean event indicator per tick (and location).

    * ``"jump"``: window_change(w) > threshold;
    * ``"drop"``: window_change(w) < −threshold;
    * ``"low"``: the sliding-window mean over w ticks < threshold (low signal).

    Ticks without a full history (NaN change) are never events.
    """
    x = _series(series)
    if kind == "jump":
        ch = window_change(x, w)
        return np.nan_to_num(ch, nan=-np.inf) > threshold
    if kind == "drop":
        ch = window_change(x, w)
        return np.nan_to_num(ch, nan=np.inf) < -threshold
    if kind == "low":
        w = _check_window(w)
        mean = sliding_window_sum(x, w) / w
        valid = np.arange(x.shape[0]) >= w - 1
        valid = valid.reshape((-1,) + (1,) * (x.ndim - 1))
        return (mean < threshold) & valid
    raise InvalidParameterError(f"kind must be 'jump', 'drop' or 'low', not {kind!r}")


@dataclass(frozen=True)
class RocCurve:
    """ROC points of an event detector swept over thresholds.

    Attributes:
        thresholds: detection thresholds applied to the released stream.
        tpr: true-positive rate per threshold (detections among true events).
        fpr: false-positive rate per threshold (detections among non-events).
        n_events: number of true events (positives).
        n_non_events: number of negatives.
    """

    thresholds: np.ndarray
    tpr: np.ndarray
    fpr: np.ndarray
    n_events: int
    n_non_events: int

    def auc(self) -> float:
        """Area under the curve (trapezoid over FPR, with (0,0) and (1,1) added)."""
        order = np.lexsort((self.tpr, self.fpr))
        f = np.concatenate([[0.0], self.fpr[order], [1.0]])
        t = np.concatenate([[0.0], self.tpr[order], [1.0]])
        return float(np.sum(np.diff(f) * (t[1:] + t[:-1]) / 2))

    def to_dict(self) -> dict[str, object]:
        """JSON-friendly form."""
        return {
            "thresholds": self.thresholds.tolist(),
            "tpr": self.tpr.tolist(),
            "fpr": self.fpr.tolist(),
            "n_events": self.n_events,
            "n_non_events": self.n_non_events,
            "auc": self.auc(),
        }


def roc_sweep(
    released: np.ndarray,
    true: np.ndarray,
    kind: EventKind,
    event_threshold: float,
    thresholds: Sequence[float] | np.ndarray,
    w: int = 1,
) -> RocCurve:
    """ROC of detecting ``kind`` events on the released stream.

    Ground truth: :func:`detect_events` on the true stream at ``event_threshold``.
    Detections: :func:`detect_events` on the released stream at each of ``thresholds``.
    Only ticks with full history are scored.
    """
    r, t = _series(released, "released"), _series(true, "true")
    if r.shape != t.shape:
        raise InvalidParameterError(f"released must have shape {t.shape}, not {r.shape}")
    w = _check_window(w)
    first = 2 * w - 1 if kind in ("jump", "drop") else w - 1
    truth = detect_events(t, kind, event_threshold, w)[first:]
    pos = int(truth.sum())
    neg = int(truth.size - pos)
    th = np.asarray(thresholds, dtype=float)
    tpr = np.empty(th.size)
    fpr = np.empty(th.size)
    for i, x in enumerate(th):
        det = detect_events(r, kind, float(x), w)[first:]
        tpr[i] = (det & truth).sum() / pos if pos else np.nan
        fpr[i] = (det & ~truth).sum() / neg if neg else np.nan
    return RocCurve(thresholds=th, tpr=tpr, fpr=fpr, n_events=pos, n_non_events=neg)
