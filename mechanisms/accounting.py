"""Privacy accounting: budgets, a scoped accountant, ledger records, predicate-wise DP.

Device-day budget (:class:`DayBudget`, issue 15)
    The unit is one device's whole day (:data:`DEVICE_DAY_UNIT`): a per-day (ε_day, δ)
    that every default release of the day is charged against before its noise is drawn,
    composed on one Rényi curve (zCDP events and discrete-Laplace events) and converted to
    (ε, δ) by Google's ``dp-accounting``; named shares (heatmap / alerts / histogram),
    refusals as :class:`~mechanisms.errors.BudgetExhaustedError`, exactly-once charges by
    release id and :meth:`DayBudget.restore` after a restart. It reuses
    :class:`LedgerRecord` and the error type of the event-level accountant below.

Unit of privacy of :class:`Accountant`
    Everything else here is **event-level**: neighbouring streams differ in one device at
    one tick (:data:`UNIT_OF_PRIVACY`). Laplace and PeGaSus releases are ε-DP at that
    level; a device that is present in k ticks is protected, as a whole, only at
    k·ε by sequential composition. A device present all day at 5-minute ticks is in
    288 ticks: **288·ε per device-day**. :meth:`Accountant.device_day_report` says so
    in numbers; w-event privacy (Kellaris, Papadopoulos, Xiao & Papadias, VLDB 2014:
    any w consecutive ticks together cost at most ε_w) is available with
    ``Accountant(..., window_ticks=w)``.

Budgets and scopes
    :class:`Budget` is a frozen (ε, δ) value. An :class:`Accountant` is a tree of
    weighted scopes, e.g. building → mechanism → component; a child's cap is its
    weight times its parent's cap and the weights of siblings add to at most 1.
    Spending in a scope is charged to the scope and every ancestor; it is refused with
    :class:`~mechanisms.errors.BudgetExhaustedError` (``requested``, ``remaining``,
    ``scope``) if any of them would exceed its cap. The tick is a dimension, not a scope:
    under event-level privacy ticks are disjoint data, so spending at different ticks
    composes in parallel (the cap applies per tick), spending within one tick
    sequentially. With ``window_ticks=w`` the cap applies to every window of w ticks.
    Composition rules: :func:`compose_sequential` (ε and δ add) and
    :func:`compose_parallel` (disjoint data: the maximum).

Ledger
    Every spend returns a :class:`LedgerRecord` (mechanism, tick, ε, scope, unit of
    privacy, composition, sampler, guarantee, …) with ``to_dict``/``to_json``; the
    accountant keeps them in order (:attr:`Accountant.records`).

Predicate-wise DP (thesis §5.2.1, Def. 5.2–5.3, Thm 5.1–5.3)
    :class:`PredicateLedger` tracks an ε per predicate (e.g. per location: mutually
    exclusive predicates). Composing mechanisms intersects their predicates and adds
    their ε (Thm 5.2, :func:`compose_predicatewise`); the DP guarantee is the maximum
    (Thm 5.3). Ex-post vectors are data dependent: they belong to the internal ledger
    only, never to an analyst, an alert or a public page.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from mechanisms.errors import BudgetExhaustedError, InvalidParameterError

__all__ = [
    "TICKS_PER_DAY",
    "UNIT_OF_PRIVACY",
    "Accountant",
    "DEVICE_DAY_UNIT",
    "Budget",
    "DayBudget",
    "DeviceDayReport",
    "LedgerRecord",
    "PredicateEntry",
    "PredicateLedger",
    "compose_parallel",
    "compose_predicatewise",
    "compose_sequential",
    "device_day_epsilon",
    "epsilon_to_zcdp",
    "w_event_per_tick",
    "zcdp_to_epsilon",
]

#: The unit of privacy of every mechanism in occustream.
UNIT_OF_PRIVACY = "event-level (device, tick)"

#: 5-minute ticks in a day.
TICKS_PER_DAY = 288

#: Float slack when comparing sums of ε with a cap (ε values are O(1)).
_TOL = 1e-9


def _check_eps(name: str, value: float) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InvalidParameterError(f"{name} must be a number ≥ 0, not {value!r}") from None
    if not (v >= 0 and math.isfinite(v)):
        raise InvalidParameterError(f"{name} must be a finite number ≥ 0, not {value!r}")
    return v


@dataclass(frozen=True)
class Budget:
    """An (ε, δ) privacy budget (δ = 0: pure DP).

    Attributes:
        epsilon: ε ≥ 0.
        delta: δ in [0, 1).
    """

    epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _check_eps("epsilon", self.epsilon))
        d = _check_eps("delta", self.delta)
        if d >= 1:
            raise InvalidParameterError(f"delta must be in [0, 1), not {self.delta!r}")
        object.__setattr__(self, "delta", d)

    def __add__(self, other: Budget) -> Budget:
        """Sequential composition."""
        if not isinstance(other, Budget):
            return NotImplemented
        return Budget(self.epsilon + other.epsilon, min(self.delta + other.delta, 1 - 1e-300))

    def scale(self, weight: float) -> Budget:
        """This budget times ``weight`` (a scope's share)."""
        w = _check_eps("weight", weight)
        return Budget(self.epsilon * w, self.delta * w)

    def fits_in(self, cap: Budget, tol: float = _TOL) -> bool:
        """Whether this spending is within ``cap`` (up to float slack ``tol``)."""
        return self.epsilon <= cap.epsilon + tol and self.delta <= cap.delta + tol

    def to_dict(self) -> dict[str, float]:
        """JSON-friendly form."""
        return {"epsilon": self.epsilon, "delta": self.delta}


def _as_budget(b: Budget | float) -> Budget:
    return b if isinstance(b, Budget) else Budget(float(b))


def compose_sequential(budgets: Iterable[Budget | float]) -> Budget:
    """Budgets of mechanisms run on the same data: ε and δ add (basic composition)."""
    out = Budget(0.0)
    for b in budgets:
        out = out + _as_budget(b)
    return out


def compose_parallel(budgets: Iterable[Budget | float]) -> Budget:
    """Budgets of mechanisms run on disjoint data (e.g. locations): the maximum."""
    bs = [_as_budget(b) for b in budgets]
    if not bs:
        return Budget(0.0)
    return Budget(max(b.epsilon for b in bs), max(b.delta for b in bs))


def w_event_per_tick(epsilon_w: float, window_ticks: int) -> float:
    """Budget-division w-event allocation (Kellaris et al. 2014): ε_w / w per tick."""
    eps = _check_eps("epsilon_w", epsilon_w)
    w = int(window_ticks)
    if w < 1:
        raise InvalidParameterError(f"window_ticks must be ≥ 1, not {window_ticks!r}")
    return eps / w


def device_day_epsilon(epsilon_per_tick: float, ticks_per_day: int = TICKS_PER_DAY) -> float:
    """Cumulative ε of a device present in every tick of a day: ``ticks_per_day · ε``.

    Sequential composition over the ticks the device appears in (288·ε for 5-minute
    ticks). Under w-event budgeting with ε_w per window, pass ``w_event_per_tick(ε_w, w)``:
    the day then costs ⌈ticks/w⌉·ε_w at most.
    """
    eps = _check_eps("epsilon_per_tick", epsilon_per_tick)
    n = int(ticks_per_day)
    if n < 1:
        raise InvalidParameterError(f"ticks_per_day must be ≥ 1, not {ticks_per_day!r}")
    return n * eps


@dataclass(frozen=True)
class LedgerRecord:
    """Machine-readable record of one release (what was spent, where, on what unit).

    Attributes:
        mechanism: e.g. ``"laplace"``, ``"pegasus"``, ``"mide:tslm"``.
        tick: tick index of the release (None: not tied to one tick).
        epsilon: ε charged to the scope by this release.
        scope: path of the charged scope, e.g. ``"building:dbh/mechanism:pegasus"``.
        unit: unit of privacy (:data:`UNIT_OF_PRIVACY`).
        composition: ``"sequential"`` or ``"parallel"`` (how ``parts`` combined).
        parts: ε of the parts this release composed (e.g. per component).
        delta: δ charged.
        n_locations: number of released values (disjoint locations: parallel).
        sensitivity: L1 sensitivity assumed per tick.
        sampler: noise sampler of the values that left the system.
        guarantee: the guarantee shipped, in words.
        note: free text (e.g. the grouper/perturber split).
    """

    mechanism: str
    tick: int | None
    epsilon: float
    scope: str
    unit: str = UNIT_OF_PRIVACY
    composition: str = "sequential"
    parts: tuple[float, ...] = ()
    delta: float = 0.0
    n_locations: int | None = None
    sensitivity: float = 1.0
    sampler: str = "discrete-laplace (exact)"
    guarantee: str = "pure ε-DP"
    note: str = ""

    @property
    def release_id(self) -> str:
        """Deterministic id ``scope|mechanism|tick`` (replays produce the same id)."""
        return f"{self.scope}|{self.mechanism}|{'-' if self.tick is None else self.tick}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dict (with ``release_id``)."""
        d = asdict(self)
        d["parts"] = list(self.parts)
        d["release_id"] = self.release_id
        return d

    def to_json(self) -> str:
        """Compact JSON, keys sorted."""
        return json.dumps(self.to_dict(), sort_keys=True, ensure_ascii=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> LedgerRecord:
        """Inverse of :meth:`to_dict` (``release_id`` ignored)."""
        kw = {k: v for k, v in d.items() if k != "release_id"}
        kw["parts"] = tuple(float(x) for x in kw.get("parts", ()))
        return cls(**kw)


@dataclass(frozen=True)
class DeviceDayReport:
    """Honest cumulative loss of one device over one day.

    Attributes:
        unit: unit of privacy of the per-tick figures.
        day_start_tick: first tick of the day.
        ticks_per_day: ticks in the day.
        ticks_with_releases: ticks of the day with any spending.
        event_level_epsilon: max over the day's ticks of the ε spent at a tick — the
            guarantee for one (device, tick) event.
        device_day_epsilon: Σ over the day's ticks of the ε spent (plus stream-wide
            spending): the loss of a device present in every tick.
        window_ticks: w for w-event budgeting, or None.
        w_event_epsilon: max ε over any w consecutive ticks (None without w).
        statement: the sentence a report must print.
    """

    unit: str
    day_start_tick: int
    ticks_per_day: int
    ticks_with_releases: int
    event_level_epsilon: float
    device_day_epsilon: float
    window_ticks: int | None
    w_event_epsilon: float | None
    statement: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return asdict(self)


class Accountant:
    """Scoped privacy accountant (a tree of weighted scopes; see the module docstring).

    Example::

        acct = Accountant(Budget(1.0), name="building:dbh")
        peg = acct.scope("mechanism:pegasus", weight=0.5)
        rec = peg.spend(0.5, mechanism="pegasus", tick=12, n_locations=64)

    Args:
        total: the cap of this (root) scope, per tick (or per window of ``window_ticks``).
        name: the root scope's name.
        window_ticks: None for event-level per-tick caps; w for w-event caps over any
            w consecutive ticks.
    """

    def __init__(
        self,
        total: Budget | float,
        *,
        name: str = "building",
        window_ticks: int | None = None,
        _parent: Accountant | None = None,
        _weight: float = 1.0,
    ) -> None:
        if not name or "/" in name:
            raise InvalidParameterError(f"name must be non-empty without '/', not {name!r}")
        if window_ticks is not None and int(window_ticks) < 1:
            raise InvalidParameterError(f"window_ticks must be ≥ 1 or None, not {window_ticks!r}")
        self.name = name
        self.parent = _parent
        self.weight = float(_weight)
        self.cap: Budget = _as_budget(total)
        self.window_ticks = None if window_ticks is None else int(window_ticks)
        self._children: dict[str, Accountant] = {}
        self._per_tick: dict[int, Budget] = {}
        self._static = Budget(0.0)
        self._records: list[LedgerRecord] = [] if _parent is None else _parent._records

    # ---------------------------------------------------------------- structure
    @property
    def path(self) -> str:
        """Scope path from the root, ``/``-separated."""
        return self.name if self.parent is None else f"{self.parent.path}/{self.name}"

    @property
    def root(self) -> Accountant:
        """The root accountant."""
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def scope(self, name: str, weight: float = 1.0) -> Accountant:
        """The child scope ``name`` with ``weight`` of this scope's cap (created once).

        Raises:
            InvalidParameterError: weight outside (0, 1], sibling weights adding to more
                than 1, or an existing child asked for with another weight.
        """
        w = _check_eps("weight", weight)
        if not (0 < w <= 1):
            raise InvalidParameterError(f"weight must be in (0, 1], not {weight!r}")
        if name in self._children:
            child = self._children[name]
            if abs(child.weight - w) > _TOL:
                raise InvalidParameterError(
                    f"weight must be {child.weight:g} for existing scope {name!r}, not {weight!r}"
                )
            return child
        used = sum(c.weight for c in self._children.values())
        if used + w > 1 + _TOL:
            raise InvalidParameterError(
                f"weight must be ≤ {1 - used:g} (siblings already use {used:g}) in scope "
                f"{self.path!r}, not {weight!r}"
            )
        child = Accountant(
            self.cap.scale(w), name=name, window_ticks=self.window_ticks, _parent=self, _weight=w
        )
        self._children[name] = child
        return child

    # ---------------------------------------------------------------- figures
    def _window_spent(self, tick: int | None) -> Budget:
        if tick is None:
            per = compose_parallel(self._per_tick.values())
            return self._static + per
        w = self.window_ticks or 1
        return self._static + compose_sequential(
            b for t, b in self._per_tick.items() if tick - w < t <= tick
        )

    def _worst_window_after(self, tick: int | None, extra: Budget) -> Budget:
        """Largest spending of any window affected if ``extra`` is added at ``tick``."""
        if tick is None:  # counts against every tick (every window)
            return self.spent(None) + extra
        w = self.window_ticks or 1
        if w == 1:
            return self._window_spent(tick) + extra
        lo, hi = tick - w + 1, tick + w - 1
        eps = np.zeros(hi - lo + 1)
        dl = np.zeros(hi - lo + 1)
        for t, b in self._per_tick.items():
            if lo <= t <= hi:
                eps[t - lo] += b.epsilon
                dl[t - lo] += b.delta
        eps[tick - lo] += extra.epsilon
        dl[tick - lo] += extra.delta
        ce = np.concatenate([[0.0], np.cumsum(eps)])
        cd = np.concatenate([[0.0], np.cumsum(dl)])
        win_e = ce[w:] - ce[:-w]
        win_d = cd[w:] - cd[:-w]
        return Budget(
            self._static.epsilon + float(win_e.max()), min(self._static.delta + win_d.max(), 0.999)
        )

    def spent(self, tick: int | None = None) -> Budget:
        """Spending at ``tick`` (its window with w-event); None: worst tick/window."""
        if tick is None and self.window_ticks and self.window_ticks > 1 and self._per_tick:
            return max(
                (self._window_spent(t) for t in self._per_tick), key=lambda b: b.epsilon
            )
        return self._window_spent(tick)

    def remaining(self, tick: int | None = None) -> Budget:
        """What this scope can still spend at ``tick`` (ignoring ancestors' caps)."""
        s = self.spent(tick)
        return Budget(max(self.cap.epsilon - s.epsilon, 0.0), max(self.cap.delta - s.delta, 0.0))

    @property
    def records(self) -> tuple[LedgerRecord, ...]:
        """Every record of the whole tree, in spending order."""
        return tuple(self._records)

    # ---------------------------------------------------------------- spending
    def _check(self, tick: int | None, amount: Budget) -> None:
        node: Accountant | None = self
        while node is not None:
            after = node._worst_window_after(tick, amount)
            if not after.fits_in(node.cap):
                before = node.spent(tick)
                remaining = max(node.cap.epsilon - before.epsilon, 0.0)
                if node.window_ticks and node.window_ticks > 1 and tick is not None:
                    remaining = max(node.cap.epsilon - (after.epsilon - amount.epsilon), 0.0)
                raise BudgetExhaustedError(amount.epsilon, remaining, node.path)
            node = node.parent

    def _charge(self, tick: int | None, amount: Budget) -> None:
        node: Accountant | None = self
        while node is not None:
            if tick is None:
                node._static = node._static + amount
            else:
                node._per_tick[tick] = node._per_tick.get(tick, Budget(0.0)) + amount
            node = node.parent

    def spend(
        self,
        epsilon: float,
        *,
        mechanism: str,
        tick: int | None = None,
        delta: float = 0.0,
        parts: Sequence[float] = (),
        n_locations: int | None = None,
        sensitivity: float = 1.0,
        sampler: str = "discrete-laplace (exact)",
        guarantee: str = "pure ε-DP",
        note: str = "",
        composition: str = "sequential",
    ) -> LedgerRecord:
        """Charge ε (sequential composition within the tick) and return the record.

        Args:
            epsilon: ε of the release (e.g. ``PegasusConfig.spent_epsilon``).
            mechanism: mechanism name for the ledger.
            tick: the tick released (None: spending not tied to a tick, counts against
                every tick).
            delta: δ of the release.
            parts: ε of the parts it consists of (recorded only; e.g. (ε_p, ε_g)).
            n_locations: number of values released (disjoint locations).
            sensitivity: L1 sensitivity per tick assumed by the release.
            sampler: the noise sampler of released values.
            guarantee: the guarantee shipped, in words.
            note: free text.
            composition: how the release composed its ``parts`` (recorded only; e.g.
                ``"parallel"`` for one value per disjoint location).

        Raises:
            BudgetExhaustedError: this scope or an ancestor would exceed its cap; nothing
                is charged then.
        """
        amount = Budget(epsilon, delta)
        t = None if tick is None else int(tick)
        self._check(t, amount)
        self._charge(t, amount)
        rec = LedgerRecord(
            mechanism=mechanism,
            tick=t,
            epsilon=amount.epsilon,
            scope=self.path,
            composition=composition,
            parts=tuple(float(p) for p in parts),
            delta=amount.delta,
            n_locations=n_locations,
            sensitivity=float(sensitivity),
            sampler=sampler,
            guarantee=guarantee,
            note=note,
        )
        self._records.append(rec)
        return rec

    def spend_parallel(
        self, epsilons: Sequence[float], *, mechanism: str, tick: int | None = None, **kw: Any
    ) -> LedgerRecord:
        """Charge releases on disjoint data (parallel composition: the maximum ε)."""
        eps = [_check_eps("epsilon", e) for e in epsilons]
        if not eps:
            raise InvalidParameterError("epsilons must be non-empty, not []")
        kw.setdefault("n_locations", len(eps))
        return self.spend(max(eps), mechanism=mechanism, tick=tick, parts=eps,
                          composition="parallel", **kw)

    def forget_before(self, tick: int) -> None:
        """Drop per-tick spending older than ``tick`` − w (keeps memory bounded)."""
        keep_from = int(tick) - (self.window_ticks or 1) + 1
        stack: list[Accountant] = [self.root]
        while stack:
            node = stack.pop()
            node._per_tick = {t: b for t, b in node._per_tick.items() if t >= keep_from}
            stack.extend(node._children.values())

    def device_day_report(
        self, day_start_tick: int, ticks_per_day: int = TICKS_PER_DAY
    ) -> DeviceDayReport:
        """Cumulative loss of a device present all day in this scope (see the module)."""
        start = int(day_start_tick)
        n = int(ticks_per_day)
        ticks = [t for t in self._per_tick if start <= t < start + n]
        per = [self._per_tick[t].epsilon + self._static.epsilon for t in ticks]
        event = max(per, default=self._static.epsilon)
        day = sum(self._per_tick[t].epsilon for t in ticks) + self._static.epsilon
        w_eps = None
        if self.window_ticks:
            w_eps = max((self._window_spent(t).epsilon for t in ticks), default=0.0)
        statement = (
            f"Each (device, tick) event is protected at ε = {event:g} ({UNIT_OF_PRIVACY}). "
            f"A device present in all {len(ticks)} released ticks of this day has spent "
            f"ε = {day:g} under sequential composition"
            + (f"; any {self.window_ticks} consecutive ticks cost at most ε = {w_eps:g}"
               if w_eps is not None else "")
            + f" (a full day of {n} ticks at ε = {event:g} per tick is {n * event:g})."
        )
        return DeviceDayReport(
            unit=UNIT_OF_PRIVACY,
            day_start_tick=start,
            ticks_per_day=n,
            ticks_with_releases=len(ticks),
            event_level_epsilon=event,
            device_day_epsilon=day,
            window_ticks=self.window_ticks,
            w_event_epsilon=w_eps,
            statement=statement,
        )


# ------------------------------------------------------------------ predicate-wise DP


def compose_predicatewise(
    theta1: Mapping[frozenset[Hashable], float], theta2: Mapping[frozenset[Hashable], float]
) -> dict[frozenset[Hashable], float]:
    """Thm 5.2 (thesis): compose two predicate-wise DP guarantees.

    Each Θ maps a predicate — the set of atoms (e.g. locations) it holds; the predicates
    of one Θ are mutually exclusive — to its ε. The result holds λ ∧ λ' for every
    overlapping pair with ε + ε'; atoms covered by only one side keep that side's ε
    (the other side's implicit "rest" predicate has ε = 0).
    """
    out: dict[frozenset[Hashable], float] = {}
    covered2: set[Hashable] = set().union(*theta2.keys()) if theta2 else set()
    covered1: set[Hashable] = set().union(*theta1.keys()) if theta1 else set()
    for l1, e1 in theta1.items():
        for l2, e2 in theta2.items():
            both = frozenset(l1 & l2)
            if both:
                out[both] = float(e1) + float(e2)
        only = frozenset(l1 - covered2)
        if only:
            out[only] = float(e1)
    for l2, e2 in theta2.items():
        only = frozenset(l2 - covered1)
        if only:
            out[only] = float(e2)
    return out


@dataclass(frozen=True)
class PredicateEntry:
    """One predicate-wise release in the internal ledger (never published).

    Attributes:
        mechanism: e.g. ``"mide:ppwlm"``.
        tick: tick of the release (None: not tied to a tick).
        predicates: the predicates (atoms, e.g. location ids) in ledger order.
        epsilons: ε per predicate (ex-post: data dependent, internal only).
        ex_post: whether the vector is an ex-post (data-dependent) cost (Def. 5.3).
        scope: ledger scope.
        unit: unit of privacy.
        internal: always True — these figures must not reach analysts or alerts.
    """

    mechanism: str
    tick: int | None
    predicates: tuple[str, ...]
    epsilons: tuple[float, ...]
    ex_post: bool = True
    scope: str = ""
    unit: str = UNIT_OF_PRIVACY
    internal: bool = field(default=True, init=False)

    @property
    def max_epsilon(self) -> float:
        """The (ex-post) DP cost of this release: max over predicates (Thm 5.3)."""
        return max(self.epsilons, default=0.0)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dict."""
        d = asdict(self)
        d["predicates"] = list(self.predicates)
        d["epsilons"] = list(self.epsilons)
        d["max_epsilon"] = self.max_epsilon
        return d

    def to_json(self) -> str:
        """Compact JSON, keys sorted."""
        return json.dumps(self.to_dict(), sort_keys=True, ensure_ascii=False)


class PredicateLedger:
    """Per-predicate ε over a fixed set of mutually exclusive predicates (thesis §5.2.1).

    Typical use (MIDE, predicates = locations, one tick):
    ``ledger.record(eps_vector, mechanism="mide:ppwlm", tick=t)`` after each decision;
    ``ledger.ex_post_epsilon(t)`` is the max over locations (Thm 5.3). Records at the
    same tick compose by Thm 5.2 (same atoms: ε add per predicate); different ticks
    are disjoint events (parallel). A mechanism whose predicates are unions of atoms
    (e.g. floors) is recorded with :meth:`record_partition`.

    The optional cap ``epsilon_max`` is checked against **data-independent** figures
    only: whether a record is refused must not depend on the data, or the refusal itself
    leaks what the ex-post vector hides. A data-dependent (``ex_post=True``) record on a
    capped ledger therefore needs its worst case (``worst_case``, e.g. MIDE's public
    ``epsilon_spent``); the ledger keeps the worst-case sums beside the ex-post ones.

    Args:
        predicates: the atoms (e.g. location ids), mutually exclusive.
        epsilon_max: optional cap per predicate and tick (data-independent ε_max).
        scope: ledger scope label.
    """

    def __init__(
        self, predicates: Sequence[str], *, epsilon_max: float | None = None, scope: str = ""
    ) -> None:
        self.predicates = tuple(str(p) for p in predicates)
        if len(set(self.predicates)) != len(self.predicates):
            raise InvalidParameterError("predicates must be distinct, not with duplicates")
        self._index = {p: i for i, p in enumerate(self.predicates)}
        self.epsilon_max = None if epsilon_max is None else _check_eps("epsilon_max", epsilon_max)
        self.scope = scope
        self._per_tick: dict[int | None, np.ndarray] = {}
        self._worst_per_tick: dict[int | None, np.ndarray] = {}  # what the cap checks
        self._entries: list[PredicateEntry] = []

    def _vector(self, epsilons: np.ndarray | Mapping[str, float] | Sequence[float]) -> np.ndarray:
        if isinstance(epsilons, Mapping):
            vec = np.zeros(len(self.predicates))
            for p, e in epsilons.items():
                if str(p) not in self._index:
                    raise InvalidParameterError(f"predicate must be one of the ledger's, not {p!r}")
                vec[self._index[str(p)]] = _check_eps("epsilon", e)
            return vec
        vec = np.asarray(epsilons, dtype=float)
        if vec.shape != (len(self.predicates),):
            raise InvalidParameterError(
                f"epsilons must have shape ({len(self.predicates)},), not {vec.shape!r}"
            )
        if np.any(~np.isfinite(vec)) or np.any(vec < 0):
            raise InvalidParameterError("epsilons must be finite and ≥ 0")
        return vec

    def record(
        self,
        epsilons: np.ndarray | Mapping[str, float] | Sequence[float],
        *,
        mechanism: str,
        tick: int | None = None,
        ex_post: bool = True,
        worst_case: float | np.ndarray | Mapping[str, float] | Sequence[float] | None = None,
    ) -> PredicateEntry:
        """Add a release's per-predicate ε (Thm 5.2 composition with earlier ones).

        Args:
            epsilons: ε per predicate (vector in ledger order, or predicate → ε).
            mechanism: label.
            tick: tick of the release (None: counts against every tick).
            ex_post: the vector is data-dependent (Def. 5.3).
            worst_case: data-independent upper bound on ``epsilons`` (a scalar for every
                predicate, or a vector/mapping); required for an ex-post record when the
                ledger has ``epsilon_max``. Defaults to ``epsilons`` for a
                data-independent record.

        Raises:
            BudgetExhaustedError: a predicate's worst case would exceed ``epsilon_max``
                at this tick (decided on data-independent figures only).
            InvalidParameterError: malformed vectors, or an ex-post record on a capped
                ledger without ``worst_case``, or ``epsilons`` above ``worst_case``.
        """
        vec = self._vector(epsilons)
        if worst_case is None:
            if ex_post and self.epsilon_max is not None:
                raise InvalidParameterError(
                    "worst_case must be given for an ex-post record on a ledger with "
                    "epsilon_max (the cap may only depend on data-independent ε), not None"
                )
            worst = vec
        elif np.ndim(worst_case) == 0:  # type: ignore[arg-type]
            worst = np.full(len(self.predicates), _check_eps("worst_case", float(worst_case)))
        else:
            worst = self._vector(worst_case)  # type: ignore[arg-type]
        if np.any(vec > worst + _TOL):
            raise InvalidParameterError(
                "worst_case must bound epsilons for every predicate, not fall below them"
            )
        t = None if tick is None else int(tick)
        zero = np.zeros(len(self.predicates))
        if self.epsilon_max is not None:
            cur = self._worst_per_tick.get(t, zero)
            if t is None:  # tick-less spending counts against every tick: check the worst
                others = [v for k, v in self._worst_per_tick.items() if k is not None]
                static = np.max(others, axis=0) if others else zero
            else:
                static = self._worst_per_tick.get(None, zero)
            after = cur + worst + static
            if after.size and after.max() > self.epsilon_max + _TOL:
                i = int(np.argmax(after))
                raise BudgetExhaustedError(
                    float(worst[i]), max(self.epsilon_max - float((cur + static)[i]), 0.0),
                    f"{self.scope or 'predicates'}:{self.predicates[i]}",
                )
            self._worst_per_tick[t] = cur + worst
        self._per_tick[t] = self._per_tick.get(t, zero) + vec
        entry = PredicateEntry(
            mechanism=mechanism,
            tick=t,
            predicates=self.predicates,
            epsilons=tuple(float(e) for e in vec),
            ex_post=ex_post,
            scope=self.scope,
        )
        self._entries.append(entry)
        return entry

    def record_partition(
        self,
        groups: Mapping[str, tuple[Sequence[str], float]],
        *,
        mechanism: str,
        tick: int | None = None,
        ex_post: bool = True,
        worst_case: float | None = None,
    ) -> PredicateEntry:
        """Record a mechanism whose predicates are unions of atoms: name → (atoms, ε).

        Every atom of a group takes the group's ε (Thm 5.2: the intersection of the group
        with each atom is the atom). ``worst_case`` (one data-independent ε for every
        atom) is passed to :meth:`record`; it is required for an ex-post record on a
        capped ledger.
        """
        vec = np.zeros(len(self.predicates))
        seen: set[str] = set()
        for name, (atoms, eps) in groups.items():
            e = _check_eps("epsilon", eps)
            for a in atoms:
                a = str(a)
                if a not in self._index:
                    raise InvalidParameterError(f"atoms of {name!r} must be predicates, not {a!r}")
                if a in seen:
                    raise InvalidParameterError(
                        f"groups must be mutually exclusive, not sharing {a!r}"
                    )
                seen.add(a)
                vec[self._index[a]] = e
        return self.record(vec, mechanism=mechanism, tick=tick, ex_post=ex_post,
                           worst_case=worst_case)

    def epsilons(self, tick: int | None = None) -> np.ndarray:
        """Cumulative ε per predicate at ``tick`` (plus tick-less records)."""
        z = np.zeros(len(self.predicates))
        base = self._per_tick.get(None, z)
        return base if tick is None else base + self._per_tick.get(int(tick), z)

    def ex_post_epsilon(self, tick: int | None = None) -> float:
        """DP cost at ``tick``: max over predicates (Thm 5.3); None: worst tick."""
        if tick is None:
            ticks = [t for t in self._per_tick if t is not None] or [None]
            return max(float(self.epsilons(t).max(initial=0.0)) for t in ticks)
        return float(self.epsilons(tick).max(initial=0.0))

    @property
    def entries(self) -> tuple[PredicateEntry, ...]:
        """Every entry, in order."""
        return tuple(self._entries)


# ------------------------------------------------------------------ device-day budget

#: Unit of privacy of :class:`DayBudget`: neighbouring streams differ in one device's
#: whole day (every tick of one calendar day, at any locations).
DEVICE_DAY_UNIT = "device-day (one device's whole day added or removed)"


@functools.lru_cache(maxsize=8192)
def _rdp_epsilon(rho: float, laplace: tuple[tuple[float, int], ...], delta: float) -> float:
    """ε at δ of ρ-zCDP composed with pure-ε Laplace releases (dp-accounting RDP).

    ``laplace`` holds (ε of one discrete-Laplace release with L1 sensitivity 1, how many).
    dp-accounting is imported here, not at module level: its import costs ≈ 1 s (it
    loads its PLD and calibration modules) and most users of this module never convert.
    """
    import dp_accounting  # noqa: PLC0415  (see the docstring: ≈ 1 s import)
    from dp_accounting.rdp import RdpAccountant  # noqa: PLC0415

    acc = RdpAccountant()
    if rho > 0:
        acc.compose(dp_accounting.ZCDpEvent(rho))
    for eps, count in laplace:
        acc.compose(dp_accounting.LaplaceDpEvent(1.0 / eps), count)
    if rho <= 0 and not laplace:
        return 0.0
    return float(acc.get_epsilon(delta))


def zcdp_to_epsilon(rho: float, delta: float) -> float:
    """Smallest ε with ρ-zCDP ⇒ (ε, δ)-DP per dp-accounting's RDP conversion.

    dp-accounting's :class:`RdpAccountant` converts with the bound of Canonne, Kamath &
    Steinke 2020 (Prop. 12) / Asoodeh et al. 2021, tighter than Bun & Steinke 2016
    Prop. 1.3 (ρ + 2√(ρ ln 1/δ)): ρ = 0.25, δ = 10⁻⁶ gives ε = 3.54 instead of 3.97.
    """
    r = _check_eps("rho", rho)
    d = _check_eps("delta", delta)
    if not 0 < d < 1:
        raise InvalidParameterError(f"delta must be in (0, 1), not {delta!r}")
    return _rdp_epsilon(r, (), d)


@functools.lru_cache(maxsize=256)
def epsilon_to_zcdp(epsilon: float, delta: float) -> float:
    """Largest ρ (to relative 10⁻¹²) with :func:`zcdp_to_epsilon` (ρ, δ) ≤ ε (bisection)."""
    eps = _check_eps("epsilon", epsilon)
    if eps <= 0:
        raise InvalidParameterError(f"epsilon must be > 0, not {epsilon!r}")
    lo, hi = 0.0, eps  # ε ≥ ρ for every conversion, so ρ ≤ ε
    while hi - lo > 1e-12 * hi:
        mid = (lo + hi) / 2
        if zcdp_to_epsilon(mid, delta) <= eps:
            lo = mid
        else:
            hi = mid
    return lo


class DayBudget:
    """A per-day (ε_day, δ) budget for every default release of the day (device-day unit).

    Unit of privacy: :data:`DEVICE_DAY_UNIT`. Each release is charged **before** its
    noise is drawn, as a ρ-zCDP event (Gaussian / discrete Gaussian with L2
    sensitivity Δ₂ under the documented contribution bound: ρ = Δ₂²/(2σ²), Canonne,
    Kamath & Steinke 2020 Thm 4) or as a pure-ε discrete Laplace event (L1 sensitivity
    1 at that ε). A day's events compose by Rényi DP (zCDP adds: Bun & Steinke 2016
    Lemma 2.3) and the day's (ε, δ) is the conversion of the composed RDP curve by
    dp-accounting (:func:`zcdp_to_epsilon`). Different days are different units
    (disjoint data); a deployment that wants a week guarantee multiplies.

    Library choice: Google's ``dp-accounting`` over OpenDP because (1) its
    :class:`RdpAccountant` composes exactly the events this project ships — zCDP
    (``ZCDpEvent``) and Laplace (``LaplaceDpEvent``) — on one Rényi curve with a tight
    conversion, while OpenDP's accounting is tied to building its measurements (a
    transformation/measurement chain) that the keyed replay-safe samplers here cannot
    use; (2) it is pure Python on numpy/scipy (OpenDP ships a Rust binary); (3) it is
    the accountant behind Google's deployed releases. The discrete Gaussian is charged
    as a zCDP event, not with dp-accounting's Gaussian PLD: its (ε, δ) curve is only
    *bounded* by the continuous Gaussian's via its zCDP (CKS 2020 §4), so the RDP
    route is the sound one.

    Shares: ``shares`` splits the day's ρ between named purposes (e.g. heatmap 0.85,
    alerts 0.10, histogram 0.05); a charge to a share is refused when either the share
    or the day would be exceeded. Refusals raise
    :class:`~mechanisms.errors.BudgetExhaustedError` with the requested and remaining ε
    and a scope naming the day, the share and the ρ figures; nothing is charged then.

    Args:
        epsilon_day: ε of the whole day (> 0).
        delta: δ of the whole day, in (0, 1).
        shares: purpose → fraction of the day's ρ (fractions add up to at most 1);
            None: one share ``"all"``.
        name: ledger scope prefix.
    """

    def __init__(
        self,
        epsilon_day: float,
        delta: float,
        *,
        shares: Mapping[str, float] | None = None,
        name: str = "device-day",
    ) -> None:
        self.epsilon_day = _check_eps("epsilon_day", epsilon_day)
        if self.epsilon_day <= 0:
            raise InvalidParameterError(f"epsilon_day must be > 0, not {epsilon_day!r}")
        self.delta = float(delta)
        if not (0 < self.delta < 1):
            raise InvalidParameterError(f"delta must be in (0, 1), not {delta!r}")
        sh = dict(shares) if shares is not None else {"all": 1.0}
        for k, v in sh.items():
            if not (0 < float(v) <= 1):
                raise InvalidParameterError(f"share {k!r} must be in (0, 1], not {v!r}")
        if sum(sh.values()) > 1 + _TOL:
            raise InvalidParameterError(
                f"shares must add up to at most 1, not {sum(sh.values())!r}"
            )
        self.shares = {k: float(v) for k, v in sh.items()}
        self.name = name
        #: ρ of the whole day: the largest ρ whose conversion is ≤ ε_day at δ.
        self.rho_day = epsilon_to_zcdp(self.epsilon_day, self.delta)
        self._rho: dict[int, float] = {}
        self._share_rho: dict[tuple[int, str], float] = {}
        self._laplace: dict[int, dict[float, int]] = {}
        self._records: list[LedgerRecord] = []
        self._by_id: dict[str, LedgerRecord] = {}

    # ---------------------------------------------------------------- figures
    def share_rho(self, share: str) -> float:
        """ρ cap of ``share`` per day."""
        if share not in self.shares:
            raise InvalidParameterError(
                f"share must be one of {sorted(self.shares)}, not {share!r}"
            )
        return self.shares[share] * self.rho_day

    def _epsilon(self, rho: float, lap: Mapping[float, int]) -> float:
        return _rdp_epsilon(rho, tuple(sorted(lap.items())), self.delta)

    def spent(self, day: int) -> Budget:
        """(ε, δ) of everything charged on ``day`` so far."""
        d = int(day)
        return Budget(self._epsilon(self._rho.get(d, 0.0), self._laplace.get(d, {})), self.delta)

    def spent_rho(self, day: int, share: str | None = None) -> float:
        """ρ charged on ``day`` (as zCDP events), in total or in ``share``."""
        if share is None:
            return self._rho.get(int(day), 0.0)
        return self._share_rho.get((int(day), share), 0.0)

    def remaining(self, day: int) -> Budget:
        """ε_day minus the ε spent on ``day`` (δ is the day's)."""
        return Budget(max(self.epsilon_day - self.spent(day).epsilon, 0.0), self.delta)

    @property
    def records(self) -> tuple[LedgerRecord, ...]:
        """Every record, in charging order."""
        return tuple(self._records)

    # ---------------------------------------------------------------- charging
    def _refuse(self, day: int, share: str, after: float, why: str) -> BudgetExhaustedError:
        before = self.spent(day).epsilon
        return BudgetExhaustedError(
            max(after - before, 0.0),
            max(self.epsilon_day - before, 0.0),
            f"{self.name}/day:{day}/{share} ({why})",
        )

    def charge(
        self,
        *,
        day: int,
        share: str,
        mechanism: str,
        rho: float = 0.0,
        laplace_epsilon: float | None = None,
        tick: int | None = None,
        n_locations: int | None = None,
        sensitivity: float = 1.0,
        note: str = "",
    ) -> LedgerRecord:
        """Charge one release to ``day`` and ``share`` before its noise is drawn.

        Args:
            day: day index (e.g. ⌊tick time / 86 400⌋).
            share: purpose charged (a key of ``shares``).
            mechanism: ledger label.
            rho: ρ of a zCDP release (Δ₂²/(2σ²)); 0 for a Laplace release.
            laplace_epsilon: ε of a pure discrete-Laplace release (L1 sensitivity 1
                under the unit), charged as its Rényi curve; None for zCDP.
            tick: tick released (ledger only).
            n_locations: number of released values (ledger only).
            sensitivity: the release's sensitivity under the contribution bound (ledger).
            note: free text.

        Returns:
            The ledger record. Exactly once: a charge with the release id of an earlier
            one (same day, share, mechanism and tick, e.g. replayed after a crash)
            returns the earlier record and charges nothing.

        Raises:
            BudgetExhaustedError: the day's ε would exceed ε_day, or the share's ρ its
                cap; nothing is charged.
        """
        d = int(day)
        rid = f"{self.name}/day:{d}/{share}|{mechanism}|{'-' if tick is None else int(tick)}"
        if tick is not None and rid in self._by_id:
            return self._by_id[rid]
        r = _check_eps("rho", rho)
        cap = self.share_rho(share)
        lap = dict(self._laplace.get(d, {}))
        if laplace_epsilon is not None:
            le = _check_eps("laplace_epsilon", laplace_epsilon)
            if le <= 0:
                raise InvalidParameterError(f"laplace_epsilon must be > 0, not {laplace_epsilon!r}")
            lap[le] = lap.get(le, 0) + 1
            # a pure ε-DP release is (ε²/2)-zCDP (Bun & Steinke 2016 Prop. 1.4): its share
            share_cost = r + le * le / 2
        else:
            if r <= 0:
                raise InvalidParameterError("rho must be > 0 for a zCDP release, not 0")
            share_cost = r
        share_after = self._share_rho.get((d, share), 0.0) + share_cost
        rho_after = self._rho.get(d, 0.0) + r
        eps_after = self._epsilon(rho_after, lap)
        if share_after > cap * (1 + 1e-9):
            raise self._refuse(d, share, eps_after, f"ρ {share_after:.6g} > share cap {cap:.6g}")
        if eps_after > self.epsilon_day:
            raise self._refuse(d, share, eps_after, f"ε {eps_after:.6g} > ε_day")
        self._rho[d] = rho_after
        self._share_rho[(d, share)] = share_after
        self._laplace[d] = lap
        alone = self._epsilon(r, {laplace_epsilon: 1} if laplace_epsilon is not None else {})
        rec = LedgerRecord(
            mechanism=mechanism,
            tick=None if tick is None else int(tick),
            epsilon=alone,
            scope=f"{self.name}/day:{d}/{share}",
            unit=DEVICE_DAY_UNIT,
            composition="zCDP (Rényi), converted by dp-accounting",
            parts=(r,) if laplace_epsilon is None else (float(laplace_epsilon),),
            delta=self.delta,
            n_locations=n_locations,
            sensitivity=float(sensitivity),
            sampler="discrete-gaussian (exact)" if laplace_epsilon is None
            else "discrete-laplace (exact)",
            guarantee=f"ρ={r:.6g}-zCDP" if laplace_epsilon is None else "pure ε-DP",
            note=note or f"day ε after this release: {eps_after:.6g} of {self.epsilon_day:g}",
        )
        self._records.append(rec)
        self._by_id[rec.release_id] = rec
        return rec

    def restore(self, records: Iterable[LedgerRecord]) -> None:
        """Re-charge persisted records after a restart (each once; see :meth:`charge`)."""
        for rec in records:
            day, share = rec.scope.split("/day:")[1].split("/", 1)
            lap = rec.sampler.startswith("discrete-laplace")
            self.charge(
                day=int(day), share=share, mechanism=rec.mechanism,
                rho=0.0 if lap else rec.parts[0],
                laplace_epsilon=rec.parts[0] if lap else None,
                tick=rec.tick, n_locations=rec.n_locations, sensitivity=rec.sensitivity,
                note=rec.note,
            )

    def check_plan(self, plan: Mapping[str, tuple[str, float]]) -> Budget:
        """Check a day's configured releases before starting: release → (share, ρ per day).

        Returns:
            The day's (ε, δ) if every release ran in full.

        Raises:
            BudgetExhaustedError: the plan overshoots a share or the day; the scope names
                the releases and the overshoot.
        """
        per_share: dict[str, float] = {}
        for share, r in plan.values():
            per_share[share] = per_share.get(share, 0.0) + _check_eps("rho", r)
        names = ", ".join(sorted(plan))
        for share, r in per_share.items():
            cap = self.share_rho(share)
            if r > cap * (1 + 1e-9):
                raise BudgetExhaustedError(
                    self._epsilon(r, {}), self._epsilon(cap, {}),
                    f"{self.name}/{share}: releases {names} need ρ {r:.6g}, "
                    f"share allows {cap:.6g} (overshoot {r - cap:.3g})",
                )
        total = sum(per_share.values())
        eps = self._epsilon(total, {})
        if eps > self.epsilon_day:
            raise BudgetExhaustedError(
                eps, self.epsilon_day,
                f"{self.name}: releases {names} need ε {eps:.6g} > ε_day "
                f"(overshoot {eps - self.epsilon_day:.3g})",
            )
        return Budget(eps, self.delta)
