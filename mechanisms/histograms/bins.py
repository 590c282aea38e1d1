"""Generalised bins (SORTaki §IV-B "Bin as a subset of the domain").

A partition of a domain of ``n`` values into ``k`` non-overlapping bins whose union is
the domain. A bin is any subset of the domain; partitioners produce bins that are
contiguous in *some* order of the domain (the original order, or the order chosen by a
Sorter), and :meth:`Partition.from_boundaries` maps them back to the original domain —
the Sorter's inverse mapping. Pure bookkeeping: no noise, no budget.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mechanisms.errors import InvalidParameterError

__all__ = ["Partition", "identity_order", "sort_order"]


def identity_order(n: int) -> np.ndarray:
    """The original domain order ``0 .. n-1`` (SORTaki's Identity(|H|) bins)."""
    return np.arange(int(n), dtype=np.int64)


def sort_order(noisy: np.ndarray) -> np.ndarray:
    """Sorter (SORTaki §IV-B, Alg. 3 line 3): domain positions by decreasing noisy frequency.

    Post-processing of the initializer's noisy histogram (no extra budget). Ties keep
    the original order (stable sort), so the result is deterministic.

    Returns:
        ``order`` with ``order[p]`` = original index of the value at sorted position ``p``.
    """
    v = np.asarray(noisy, dtype=np.float64).ravel()
    return np.argsort(-v, kind="stable").astype(np.int64)


@dataclass(frozen=True, eq=False)
class Partition:
    """A set of generalised bins: ``labels[i]`` is the bin of domain value ``i``.

    Attributes:
        labels: int64 array of length ``n`` with values ``0 .. n_bins-1`` (all used).
        order: the order in which the bins are contiguous (``None`` if unknown).
        starts: start positions of the bins in ``order`` (``None`` if unknown).
    """

    labels: np.ndarray
    order: np.ndarray | None = None
    starts: np.ndarray | None = None

    @classmethod
    def from_boundaries(cls, order: np.ndarray, starts: np.ndarray) -> Partition:
        """Bins contiguous in ``order``: bin ``b`` holds ``order[starts[b]:starts[b+1]]``.

        Args:
            order: a permutation of ``0 .. n-1`` (the sorted or the original order).
            starts: strictly increasing start positions, ``starts[0] == 0``.
        """
        order = np.asarray(order, dtype=np.int64)
        starts = np.asarray(starts, dtype=np.int64)
        n = len(order)
        if n == 0:
            raise InvalidParameterError("order must not be empty")
        if len(starts) == 0 or starts[0] != 0 or np.any(np.diff(starts) <= 0) or starts[-1] >= n:
            raise InvalidParameterError(
                f"starts must be strictly increasing from 0 and < {n}, not {starts[:10]!r}"
            )
        pos_label = np.zeros(n, dtype=np.int64)
        pos_label[starts[1:]] = 1
        pos_label = np.cumsum(pos_label)
        labels = np.empty(n, dtype=np.int64)
        labels[order] = pos_label
        return cls(labels=labels, order=order, starts=starts)

    @classmethod
    def singletons(cls, n: int) -> Partition:
        """One bin per value (the Identity partition)."""
        order = identity_order(n)
        return cls(labels=order.copy(), order=order, starts=order.copy())

    @property
    def n(self) -> int:
        """Domain size."""
        return int(len(self.labels))

    @property
    def n_bins(self) -> int:
        """Number of bins."""
        return int(self.labels.max()) + 1 if len(self.labels) else 0

    def sizes(self) -> np.ndarray:
        """``|v|`` for every bin."""
        return np.bincount(self.labels, minlength=self.n_bins)

    def bin_sums(self, values: np.ndarray) -> np.ndarray:
        """Sum of ``values`` over every bin."""
        return np.bincount(
            self.labels, weights=np.asarray(values, np.float64).ravel(), minlength=self.n_bins
        )

    def bin_means(self, values: np.ndarray) -> np.ndarray:
        """Average of ``values`` over every bin."""
        return self.bin_sums(values) / self.sizes()

    def spread(self, per_bin: np.ndarray) -> np.ndarray:
        """Give every domain value its bin's value (uniformity assumption)."""
        return np.asarray(per_bin, dtype=np.float64)[self.labels]

    def is_contiguous(self) -> bool:
        """Whether every bin is an interval of the original domain order."""
        lab = self.labels
        if len(lab) <= 1:
            return True
        changes = int(np.count_nonzero(np.diff(lab)))
        return changes == self.n_bins - 1
