"""Complex decision-support queries: AND/OR trees of threshold queries (thesis ch. 6).

All sub-queries share the predicates Λ (e.g. the locations) and each has its own
aggregate, filter, threshold and uncertainty width u_j (§6.2). A predicate is returned
by a conjunction when every child returns it and by a disjunction when any child does
(Def. 6.9–6.10).

β split. A true positive of the tree is missed only if some leaf that is true for it
misses it, so by the union bound FNR ≤ Σ_j β_j (eq. 6.12, 6.19, 6.22; for any tree
eq. 6.23–6.25) — no independence assumption is needed. The ε of the tree is Σ_j ε_j
(sequential composition: every leaf reads the same individuals), ε_j = Δ_j·ln(1/(2β_j))/u_j
for a TSLM leaf (Alg. 6–7). Splits:

* naive: β_j = β/n (Alg. 6–7 lines 2–3);
* optimal: minimise Σ_j (Δ_j/u_j)·ln(1/(2β_j)) subject to Σ β_j = β. The Lagrange condition
  gives β_j ∝ Δ_j/u_j; for unit sensitivities this is eq. 6.21,
  β_j = β·Π_{x≠j} u_x / Σ_y Π_{x≠y} u_x.

The tree is denied when Σ ε_j > ε_max (nothing is run). Leaves may use any MIDE mechanism
(TSLM as in the thesis by default); a multi-step leaf is charged its worst case ε_m.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Union

import numpy as np

from mechanisms.errors import InvalidParameterError, check_positive, check_probability
from mechanisms.mide.aggregates import ThresholdQuery
from mechanisms.mide.mechanisms import MideResult, decide, single_step_epsilon
from mechanisms.noise import resolve_rng

__all__ = [
    "And",
    "ComplexResult",
    "Leaf",
    "Or",
    "answer",
    "leaf_epsilons",
    "leaves",
    "optimal_gain",
    "split_beta",
    "truth",
]


@dataclass(frozen=True)
class Leaf:
    """One aggregate threshold query with its uncertainty width u (aggregate units)."""

    query: ThresholdQuery
    u: float
    label: str = ""


@dataclass(frozen=True)
class And:
    """Conjunction of sub-queries (Def. 6.3)."""

    children: tuple[Node, ...]


@dataclass(frozen=True)
class Or:
    """Disjunction of sub-queries (Def. 6.6)."""

    children: tuple[Node, ...]


Node = Union[Leaf, And, Or]  # noqa: UP007 - runtime alias used in isinstance-free code


def leaves(node: Node) -> list[Leaf]:
    """Leaves of the tree, left to right."""
    if isinstance(node, Leaf):
        return [node]
    if isinstance(node, (And, Or)):
        if not node.children:
            raise InvalidParameterError("AND/OR nodes must have at least one child")
        return [leaf for child in node.children for leaf in leaves(child)]
    raise InvalidParameterError(f"node must be Leaf, And or Or, not {type(node).__name__}")


def split_beta(node: Node, beta: float, method: str = "optimal") -> np.ndarray:
    """β_j per leaf (left-to-right) with Σ β_j = β.

    Args:
        node: the query tree.
        beta: FNR bound of the whole tree.
        method: "naive" (β/n) or "optimal" (eq. 6.21, weighted by Δ_j/u_j).
    """
    b = check_probability("beta", beta)
    ls = leaves(node)
    if method == "naive":
        return np.full(len(ls), b / len(ls))
    if method == "optimal":
        w = np.array([leaf.query.sensitivity / check_positive("u", leaf.u) for leaf in ls])
        return b * w / w.sum()
    raise InvalidParameterError(f"method must be 'naive' or 'optimal', not {method!r}")


def leaf_epsilons(node: Node, betas: Sequence[float], algorithm: str = "tslm",
                  steps: int = 4) -> np.ndarray:
    """Worst-case ε_j of each leaf for its β_j (TSLM/naive: eq. in Alg. 6 line 4)."""
    ls = leaves(node)
    out = []
    for leaf, bj in zip(ls, betas, strict=True):
        per_step = bj / steps if algorithm in ("ppwlm", "dppwlm") else bj
        out.append(single_step_epsilon(per_step, check_positive("u", leaf.u),
                                       leaf.query.sensitivity))
    return np.array(out)


@dataclass(frozen=True)
class ComplexResult:
    """Answer of a complex query.

    Attributes:
        positive: bool per predicate.
        denied: Σ ε_j > ε_max.
        epsilon_spent: Σ ε_j (public, worst case).
        betas: β_j per leaf (public, data-independent).
        leaf_results: INTERNAL per-leaf results (carry ex-post ε); never publish.
    """

    positive: np.ndarray
    denied: bool
    epsilon_spent: float
    betas: np.ndarray
    leaf_results: tuple[MideResult, ...] = field(repr=False, default=())

    def public(self) -> dict[str, Any]:
        """What may leave the system: the answer and data-independent parameters."""
        return {"denied": self.denied, "epsilon": self.epsilon_spent,
                "betas": [float(b) for b in self.betas],
                "positive": [int(i) for i in np.flatnonzero(self.positive)]}


def _combine(node: Node, answers: dict[int, np.ndarray]) -> np.ndarray:
    if isinstance(node, Leaf):
        return answers[id(node)]
    parts = [_combine(child, answers) for child in node.children]
    return np.logical_and.reduce(parts) if isinstance(node, And) else np.logical_or.reduce(parts)


def answer(
    node: Node, *, beta: float, epsilon_max: float, split: str = "optimal",
    algorithm: str = "tslm", rng: np.random.Generator | None = None, **params: Any,
) -> ComplexResult:
    """Answer an AND/OR tree with β-FNR for the whole tree (Alg. 6–7 generalised).

    Args:
        node: the tree (leaves share the predicates).
        beta: FNR bound of the tree.
        epsilon_max: deny when Σ ε_j exceeds it.
        split: "naive" or "optimal" β split.
        algorithm: leaf mechanism ("tslm" as in the thesis, or "ppwlm"/"dppwlm").
        rng: generator; None → the project's CSPRNG-seeded generator.
        **params: extra parameters for the leaf mechanism (e.g. ``steps``).
    """
    emax = check_positive("epsilon_max", epsilon_max)
    ls = leaves(node)
    n = ls[0].query.values.size
    if any(leaf.query.values.size != n for leaf in ls):
        raise InvalidParameterError("all sub-queries must range over the same predicates")
    if algorithm == "naive":
        raise InvalidParameterError("algorithm must be a β-FNR mechanism, not 'naive'")
    betas = split_beta(node, beta, split)
    eps = leaf_epsilons(node, betas, algorithm, int(params.get("steps", 4)))
    total = float(eps.sum())
    if total > emax * (1 + 1e-12):
        return ComplexResult(np.zeros(n, dtype=bool), True, 0.0, betas, ())
    gen = resolve_rng(rng)
    results = []
    answers: dict[int, np.ndarray] = {}
    for leaf, bj, ej in zip(ls, betas, eps, strict=True):
        res = decide(leaf.query.values, leaf.query.thresholds, algorithm=algorithm,
                     beta=float(bj), alpha=leaf.u, epsilon_max=float(ej) * (1 + 1e-9),
                     rng=gen, sensitivity=leaf.query.sensitivity, **params)
        results.append(res)
        answers[id(leaf)] = res.positive
    positive = _combine(node, answers)
    return ComplexResult(positive, False, total, betas, tuple(results))


def truth(node: Node) -> np.ndarray:
    """True answer of the tree (for evaluation only; reads true values)."""
    answers = {id(leaf): leaf.query.values > leaf.query.thresholds for leaf in leaves(node)}
    return _combine(node, answers)


def optimal_gain(node: Node, beta: float) -> float:
    """Ratio ε(naive split)/ε(optimal split) for TSLM leaves (≥ 1)."""
    naive = leaf_epsilons(node, split_beta(node, beta, "naive")).sum()
    opt = leaf_epsilons(node, split_beta(node, beta, "optimal")).sum()
    return float(naive / opt) if opt > 0 else math.inf
