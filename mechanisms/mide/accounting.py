"""Predicate-wise DP accounting for MIDE (thesis §5.2.1: Def. 5.2–5.3, Thm 5.1–5.3).

**Internal only.** The ex-post vectors recorded here are data-dependent; publishing them
(or anything derived from them other than what :meth:`PredicateLedger.public_summary`
returns) breaks the ε_max-DP guarantee of the mechanisms.

Predicates are identified by *atoms*: hashable keys of the finest mutually exclusive
partition the ledger sees (e.g. ``(location, window)``). A mechanism run over predicates
that are unions of atoms charges its predicate's ε to every atom of it. Then

* Thm 5.1 — a run over mutually exclusive predicates with ε_i each is Θ-PWDP;
* Thm 5.2 — composing runs intersects the predicates and *adds* their ε: with atoms as
  the common refinement, an atom's loss is the sum of the ε charged to it;
* Thm 5.3 — the composition is ε-DP with ε = max over atoms (ex-ante: of the worst-case
  charges; ex-post: of the ex-post charges).

The ledger keeps both the ex-ante (worst-case ε_m, public, what budgets are charged with)
and the ex-post (Def. 5.3) totals per atom.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mechanisms.errors import InvalidParameterError
from mechanisms.mide.entropy import min_entropy

__all__ = ["PredicateCharge", "PredicateLedger"]


@dataclass(frozen=True)
class PredicateCharge:
    """One recorded run. INTERNAL (holds the ex-post vector).

    Attributes:
        label: what ran (e.g. ``"mide:dppwlm:tick=…"``).
        atoms: the atoms charged, one entry per predicate (tuple of atoms per predicate).
        epsilon_ex_ante: worst-case ε of the run (public).
        ex_post: per-predicate ex-post ε (internal).
    """

    label: str
    atoms: tuple[tuple[Hashable, ...], ...]
    epsilon_ex_ante: float
    ex_post: np.ndarray = field(repr=False)


class PredicateLedger:
    """Accumulates predicate-wise ε per atom (Thm 5.2) and reports ex-post DP (Thm 5.3)."""

    def __init__(self) -> None:
        self._charges: list[PredicateCharge] = []
        self._ante: dict[Hashable, float] = {}
        self._post: dict[Hashable, float] = {}

    @staticmethod
    def _as_atom_sets(
        predicates: Sequence[Hashable] | Mapping[Hashable, Iterable[Hashable]],
    ) -> tuple[tuple[Hashable, ...], ...]:
        if isinstance(predicates, Mapping):
            sets = tuple(tuple(v) for v in predicates.values())
        else:
            sets = tuple((p,) for p in predicates)
        seen: set[Hashable] = set()
        for s in sets:
            if not s:
                raise InvalidParameterError("every predicate must cover at least one atom")
            for a in s:
                if a in seen:
                    raise InvalidParameterError(
                        f"predicates must be mutually exclusive; atom {a!r} appears twice"
                    )
                seen.add(a)
        return sets

    def record(
        self,
        label: str,
        predicates: Sequence[Hashable] | Mapping[Hashable, Iterable[Hashable]],
        *,
        epsilon_ex_ante: float,
        ex_post: np.ndarray,
    ) -> PredicateCharge:
        """Record one run over mutually exclusive predicates.

        Args:
            label: what ran.
            predicates: a sequence of atom keys (one predicate = one atom) or a mapping
                predicate → atoms it covers (the predicates must not share atoms).
            epsilon_ex_ante: the run's worst-case ε (``MideResult.epsilon_spent``).
            ex_post: per-predicate ex-post ε in the same order (``MideResult.ex_post``).

        Returns:
            The stored charge.
        """
        sets = self._as_atom_sets(predicates)
        post = np.asarray(ex_post, dtype=float).ravel()
        if post.size != len(sets):
            raise InvalidParameterError(
                f"ex_post must have one ε per predicate ({len(sets)}), not {post.size}"
            )
        if np.any(post < 0) or np.any(post > epsilon_ex_ante * (1 + 1e-12)):
            raise InvalidParameterError(
                f"ex_post must lie in [0, epsilon_ex_ante={epsilon_ex_ante!r}]"
            )
        charge = PredicateCharge(label, sets, float(epsilon_ex_ante), post.copy())
        for atoms, e in zip(sets, post, strict=True):
            for a in atoms:
                self._ante[a] = self._ante.get(a, 0.0) + float(epsilon_ex_ante)
                self._post[a] = self._post.get(a, 0.0) + float(e)
        self._charges.append(charge)
        return charge

    @property
    def charges(self) -> tuple[PredicateCharge, ...]:
        """All recorded runs (internal)."""
        return tuple(self._charges)

    def per_atom_ex_post(self) -> dict[Hashable, float]:
        """INTERNAL: composed ex-post ε per atom (Thm 5.2)."""
        return dict(self._post)

    def per_atom_ex_ante(self) -> dict[Hashable, float]:
        """Composed worst-case ε per atom (Thm 5.2); data-independent."""
        return dict(self._ante)

    def ex_post_dp(self) -> float:
        """INTERNAL: ex-post DP of everything recorded, max over atoms (Thm 5.3)."""
        return max(self._post.values(), default=0.0)

    def ex_ante_dp(self) -> float:
        """Worst-case DP of everything recorded, max over atoms (Thm 5.1, 5.3)."""
        return max(self._ante.values(), default=0.0)

    def min_entropy(self, atoms: Sequence[Hashable] | None = None) -> float:
        """INTERNAL: γ(Θ) of the composed ex-post ε over ``atoms`` (default: all seen)."""
        keys = list(self._post) if atoms is None else list(atoms)
        if not keys:
            raise InvalidParameterError("min_entropy needs at least one atom")
        return min_entropy(np.array([self._post.get(a, 0.0) for a in keys]))

    def public_summary(self) -> dict[str, Any]:
        """What may be shown to a privacy officer outside the trusted core.

        Only data-independent figures: number of runs and worst-case ε totals.
        """
        return {"runs": len(self._charges), "epsilon_ex_ante_max": self.ex_ante_dp(),
                "unit": "predicate-wise; event-level (device, tick) for occupancy counts"}
