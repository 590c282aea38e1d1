"""A small query language for complex MIDE queries a facility manager can read.

Example::

    count(location) > 0.8*capacity AND avg_dwell(location) > 30min ± 5min

Grammar (keywords AND/OR case-insensitive; AND binds tighter than OR)::

    query      := or_expr END
    or_expr    := and_expr ("OR" and_expr)*
    and_expr   := primary ("AND" primary)*
    primary    := "(" or_expr ")" | condition
    condition  := AGG "(" NAME ")" ">" threshold [("±" | "+-") quantity]
    AGG        := "count" | ("sum" | "avg") "_" FIELD        e.g. avg_dwell, sum_fare
    threshold  := quantity ["*" NAME] | NAME ["*" NUMBER]     e.g. 30min, 0.8*capacity
    quantity   := NUMBER [UNIT]      UNIT: s | sec | min | h | % (durations in seconds)

The name in parentheses is the group-by (the predicates); all conditions must use the
same one. ``± u`` is the condition's uncertainty width (thesis §6.3, u_j); without it the
binder's default for that aggregate is used. :func:`parse` returns an AST
(:class:`Condition`, :class:`AndExpr`, :class:`OrExpr`); :func:`bind` turns it into a
:mod:`~mechanisms.mide.complex` tree given per-predicate data and attributes.
Errors are :class:`QuerySyntaxError` with the column and what was expected.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Union

import numpy as np

from mechanisms.errors import InvalidParameterError
from mechanisms.mide.aggregates import ThresholdQuery, avg_query, count_query, sum_query
from mechanisms.mide.complex import And, Leaf, Node, Or

__all__ = [
    "AndExpr",
    "Condition",
    "CountSource",
    "OrExpr",
    "QuerySyntaxError",
    "RecordSource",
    "bind",
    "parse",
]

_UNITS = {"s": 1.0, "sec": 1.0, "min": 60.0, "h": 3600.0, "%": 0.01}
_TOKEN = re.compile(
    r"\s*(?:(?P<num>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)"
    r"(?P<unit>(?:sec|min|s|h|%)(?![A-Za-z0-9_]))?"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<op>±|\+-|>=|[()>*<=]))"
)


class QuerySyntaxError(InvalidParameterError):
    """The query text does not follow the grammar; the message gives the column."""


@dataclass(frozen=True)
class Condition:
    """``aggregate(group_by) > factor*reference`` (or a constant) with optional width u."""

    aggregate: str  # "count", "sum_<field>", "avg_<field>"
    group_by: str
    factor: float
    reference: str | None
    u: float | None
    text: str


@dataclass(frozen=True)
class AndExpr:
    """Conjunction."""

    children: tuple[Expr, ...]


@dataclass(frozen=True)
class OrExpr:
    """Disjunction."""

    children: tuple[Expr, ...]


Expr = Union[Condition, AndExpr, OrExpr]  # noqa: UP007


@dataclass(frozen=True)
class _Tok:
    kind: str  # num | name | op | end
    value: str
    col: int
    unit: str | None = None


def _tokenize(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            col = pos + len(text[pos:]) - len(text[pos:].lstrip()) + 1
            raise QuerySyntaxError(
                f"query syntax error at column {col}: unexpected character "
                f"{text[col - 1]!r} in {text!r}"
            )
        col = m.start(m.lastgroup or 0) + 1
        if m.group("num") is not None:
            toks.append(_Tok("num", m.group("num"), col, m.group("unit")))
        elif m.group("name") is not None:
            toks.append(_Tok("name", m.group("name"), col))
        else:
            toks.append(_Tok("op", m.group("op"), col))
        pos = m.end()
    toks.append(_Tok("end", "", len(text) + 1))
    return toks


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0

    def peek(self) -> _Tok:
        return self.toks[self.i]

    def fail(self, expected: str) -> QuerySyntaxError:
        t = self.peek()
        found = "end of query" if t.kind == "end" else repr(t.value)
        return QuerySyntaxError(
            f"query syntax error at column {t.col}: expected {expected}, found {found} "
            f"in {self.text!r}"
        )

    def take(self, kind: str, value: str | None = None, expected: str = "") -> _Tok:
        t = self.peek()
        if t.kind != kind or (value is not None and t.value.upper() != value.upper()):
            raise self.fail(expected or (value or kind))
        self.i += 1
        return t

    def is_kw(self, word: str) -> bool:
        t = self.peek()
        return t.kind == "name" and t.value.upper() == word

    def parse(self) -> Expr:
        if self.peek().kind == "end":
            raise self.fail("a condition such as 'count(location) > 0.8*capacity'")
        e = self.or_expr()
        if self.peek().kind != "end":
            raise self.fail("AND, OR or end of query")
        return e

    def or_expr(self) -> Expr:
        parts = [self.and_expr()]
        while self.is_kw("OR"):
            self.i += 1
            parts.append(self.and_expr())
        return parts[0] if len(parts) == 1 else OrExpr(tuple(parts))

    def and_expr(self) -> Expr:
        parts = [self.primary()]
        while self.is_kw("AND"):
            self.i += 1
            parts.append(self.primary())
        return parts[0] if len(parts) == 1 else AndExpr(tuple(parts))

    def primary(self) -> Expr:
        t = self.peek()
        if t.kind == "op" and t.value == "(":
            self.i += 1
            e = self.or_expr()
            self.take("op", ")", "')'")
            return e
        return self.condition()

    def quantity(self) -> float:
        t = self.take("num", expected="a number")
        return float(t.value) * (_UNITS[t.unit] if t.unit else 1.0)

    def condition(self) -> Condition:
        start = self.peek()
        agg = self.take("name", expected="an aggregate such as count, avg_dwell, sum_fare")
        name = agg.value.lower()
        if name in ("and", "or"):
            raise self.fail_at(agg, "an aggregate before " + agg.value)
        if not (name == "count" or re.fullmatch(r"(sum|avg)_[a-z0-9_]+", name)):
            raise QuerySyntaxError(
                f"query syntax error at column {agg.col}: aggregate must be count, "
                f"sum_<field> or avg_<field>, not {agg.value!r}"
            )
        self.take("op", "(", "'(' after the aggregate")
        group = self.take("name", expected="the group-by name, e.g. location").value
        self.take("op", ")", "')'")
        op = self.peek()
        if op.kind == "op" and op.value in ("<", "=", ">="):
            raise QuerySyntaxError(
                f"query syntax error at column {op.col}: only '>' is supported (write the "
                f"dual condition, thesis §6.2), not {op.value!r}"
            )
        self.take("op", ">", "'>'")
        factor, ref = 1.0, None
        t = self.peek()
        if t.kind == "num":
            factor = self.quantity()
            if self.peek().kind == "op" and self.peek().value == "*":
                self.i += 1
                ref = self.take("name", expected="an attribute name after '*'").value
        elif t.kind == "name" and not self.is_kw("AND") and not self.is_kw("OR"):
            ref = t.value
            self.i += 1
            if self.peek().kind == "op" and self.peek().value == "*":
                self.i += 1
                factor = self.quantity()
        else:
            raise self.fail("a threshold such as 30min or 0.8*capacity")
        u = None
        if self.peek().kind == "op" and self.peek().value in ("±", "+-"):
            self.i += 1
            u = self.quantity()
            if u <= 0:
                raise QuerySyntaxError(
                    f"query syntax error at column {self.toks[self.i - 1].col}: the "
                    f"uncertainty width must be > 0, not {u!r}"
                )
        end = self.peek().col - 1
        return Condition(name, group, factor, ref, u, self.text[start.col - 1:end].strip())

    def fail_at(self, tok: _Tok, expected: str) -> QuerySyntaxError:
        return QuerySyntaxError(
            f"query syntax error at column {tok.col}: expected {expected} in {self.text!r}"
        )


def _conditions(e: Expr) -> list[Condition]:
    if isinstance(e, Condition):
        return [e]
    return [c for child in e.children for c in _conditions(child)]


def parse(text: str) -> Expr:
    """Parse a query; raise :class:`QuerySyntaxError` with the column on bad input."""
    if not isinstance(text, str):
        raise QuerySyntaxError(f"query must be a string, not {type(text).__name__}")
    e = _Parser(text).parse()
    groups = {c.group_by for c in _conditions(e)}
    if len(groups) > 1:
        raise QuerySyntaxError(
            f"all conditions must group by the same predicates, not {sorted(groups)!r}"
        )
    return e


@dataclass(frozen=True)
class CountSource:
    """Per-predicate counts (Δ = max_contributions)."""

    counts: np.ndarray
    max_contributions: int = 1

    def query(self, thresholds: np.ndarray) -> ThresholdQuery:
        """The count threshold query at ``thresholds``."""
        return count_query(self.counts, thresholds, max_contributions=self.max_contributions)

    def alpha(self, u: float) -> float:
        """Width in query units for a width ``u`` in the condition's units."""
        return u


@dataclass(frozen=True)
class RecordSource:
    """Per-record values with predicate index, clipped to [lower, upper].

    ``n_min`` is a public lower bound on the records per predicate, used to convert an
    average's width into excess-sum units (see :mod:`~mechanisms.mide.aggregates`).
    """

    values: np.ndarray
    predicate: np.ndarray
    n_predicates: int
    lower: float
    upper: float
    max_contributions: int = 1
    n_min: float = 1.0
    kind: str = "avg"

    def query(self, thresholds: np.ndarray) -> ThresholdQuery:
        """The sum or average threshold query at ``thresholds``."""
        f: Callable[..., ThresholdQuery] = avg_query if self.kind == "avg" else sum_query
        return f(self.values, self.predicate, self.n_predicates, thresholds, lower=self.lower,
                 upper=self.upper, max_contributions=self.max_contributions)

    def alpha(self, u: float) -> float:
        """Width in query units: u·n_min for averages, u for sums."""
        return u * self.n_min if self.kind == "avg" else u


def bind(
    expr: Expr | str,
    sources: Mapping[str, CountSource | RecordSource],
    attributes: Mapping[str, np.ndarray] | None = None,
    default_u: Mapping[str, float] | None = None,
) -> Node:
    """Turn a parsed query into a :mod:`~mechanisms.mide.complex` tree.

    Args:
        expr: parsed query or its text.
        sources: aggregate name (``count``, ``avg_dwell`` …) → data source.
        attributes: per-predicate attributes named in thresholds (e.g. ``capacity``).
        default_u: width per aggregate name when the condition has no ``± u``.

    Raises:
        InvalidParameterError: unknown aggregate/attribute or a missing width.
    """
    e = parse(expr) if isinstance(expr, str) else expr
    attrs = dict(attributes or {})
    widths = dict(default_u or {})

    def build(node: Expr) -> Node:
        if isinstance(node, AndExpr):
            return And(tuple(build(c) for c in node.children))
        if isinstance(node, OrExpr):
            return Or(tuple(build(c) for c in node.children))
        if node.aggregate not in sources:
            raise InvalidParameterError(
                f"aggregate must be one of {sorted(sources)}, not {node.aggregate!r} "
                f"(in {node.text!r})"
            )
        src = sources[node.aggregate]
        if node.reference is None:
            thr: np.ndarray | float = node.factor
        elif node.reference in attrs:
            thr = node.factor * np.asarray(attrs[node.reference], dtype=float)
        else:
            raise InvalidParameterError(
                f"attribute must be one of {sorted(attrs)}, not {node.reference!r} "
                f"(in {node.text!r})"
            )
        u = node.u if node.u is not None else widths.get(node.aggregate)
        if u is None:
            raise InvalidParameterError(
                f"uncertainty width for {node.aggregate} must be given: write '± <width>' "
                f"after {node.text!r} or pass default_u"
            )
        n = src.counts.size if isinstance(src, CountSource) else src.n_predicates
        thr_arr = np.broadcast_to(np.asarray(thr, dtype=float), (n,))
        return Leaf(src.query(thr_arr), src.alpha(float(u)), node.text)

    return build(e)
