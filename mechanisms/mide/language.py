"""A small query language for complex MIDE queries a facility manager can read.

Examples::

    count(location) > 0.8*capacity AND avg_dwell(location) > 30min ± 5min
    count(location WHERE kind = 'laptop') > 0.8*capacity
        AND avg_dwell(location WHERE dwell > 10min) > 30min ± 5min

Grammar (keywords AND/OR/WHERE case-insensitive; AND binds tighter than OR)::

    query      := or_expr END
    or_expr    := and_expr ("OR" and_expr)*
    and_expr   := primary ("AND" primary)*
    primary    := "(" or_expr ")" | condition
    condition  := AGG "(" NAME ["WHERE" filter] ")" ">" threshold [("±" | "+-") quantity]
    AGG        := "count" | ("sum" | "avg") "_" FIELD        e.g. avg_dwell, sum_fare
    threshold  := quantity ["*" NAME] | NAME ["*" NUMBER]     e.g. 30min, 0.8*capacity
    quantity   := NUMBER [UNIT]      UNIT: s | sec | min | h | % (durations in seconds)
    filter     := term ("AND" term)*                          e.g. kind = 'laptop'
    term       := FIELD CMP ["-"] quantity | FIELD ("=" | "!=") TEXT
    CMP        := "=" | "!=" | "<" | "<=" | ">" | ">="        ("==" is read as "=")
    TEXT       := "'" chars "'" | '"' chars '"'               exact, case-sensitive

The name in parentheses is the group-by (the predicates); all conditions must use the
same one. ``WHERE`` filters the records before aggregation (thesis §6.1, the filter f
and D^f_λ); each sub-query has its own filter, and a filter is a fixed per-record rule,
so it leaves the sensitivity unchanged (:mod:`~mechanisms.mide.aggregates`). Inside the
parentheses AND joins filter terms; OR is not supported there. Durations in filters are
in seconds like the record fields (``dwell > 10min`` compares with 600). ``± u`` is the
condition's uncertainty width (thesis §6.3, u_j); without it the binder's default for
that aggregate is used. :func:`parse` returns an AST (:class:`Condition`,
:class:`AndExpr`, :class:`OrExpr`; a condition's filter is a
:class:`~mechanisms.mide.aggregates.Filter`); :func:`unparse` writes it back as
canonical text (durations in seconds); :func:`bind` turns it into a
:mod:`~mechanisms.mide.complex` tree given per-predicate data and attributes.
Errors are :class:`QuerySyntaxError` with the column and what was expected; binding
errors are one-line :class:`~mechanisms.errors.InvalidParameterError`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Union

import numpy as np

from mechanisms.errors import InvalidParameterError
from mechanisms.mide.aggregates import (
    COMPARISONS,
    Comparison,
    Filter,
    ThresholdQuery,
    avg_query,
    count_query,
    record_count_query,
    sum_query,
)
from mechanisms.mide.complex import And, Leaf, Node, Or

__all__ = [
    "AndExpr",
    "Condition",
    "CountSource",
    "OrExpr",
    "QuerySyntaxError",
    "RecordCountSource",
    "RecordSource",
    "bind",
    "parse",
    "unparse",
]

_UNITS = {"s": 1.0, "sec": 1.0, "min": 60.0, "h": 3600.0, "%": 0.01}
_TOKEN = re.compile(
    r"\s*(?:(?P<num>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)"
    r"(?P<unit>(?:sec|min|s|h|%)(?![A-Za-z0-9_]))?"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|'(?P<sq>[^']*)'|\"(?P<dq>[^\"]*)\""
    r"|(?P<op>±|\+-|>=|<=|!=|==|[()>*<=\-]))"
)
_CMP_OPS = tuple(COMPARISONS) + ("==",)


class QuerySyntaxError(InvalidParameterError):
    """The query text does not follow the grammar; the message gives the column."""


@dataclass(frozen=True)
class Condition:
    """``aggregate(group_by [WHERE filter]) > factor*reference`` with optional width u.

    ``text`` (the condition as written, for messages) does not take part in equality.
    """

    aggregate: str  # "count", "sum_<field>", "avg_<field>"
    group_by: str
    factor: float
    reference: str | None
    u: float | None
    text: str = field(default="", compare=False)
    where: Filter | None = None


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
    kind: str  # num | name | str | op | end
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
        col = pos + len(text[pos:]) - len(text[pos:].lstrip()) + 1
        if not m or m.end() == pos:
            what = ("quoted text without its closing quote" if text[col - 1] in "'\""
                    else "unexpected character")
            raise QuerySyntaxError(
                f"query syntax error at column {col}: {what} {text[col - 1]!r} in {text!r}"
            )
        if m.group("num") is not None:
            toks.append(_Tok("num", m.group("num"), col, m.group("unit")))
        elif m.group("name") is not None:
            toks.append(_Tok("name", m.group("name"), col))
        elif m.group("sq") is not None or m.group("dq") is not None:
            quoted = m.group("sq") if m.group("sq") is not None else m.group("dq")
            toks.append(_Tok("str", quoted, col))
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
        found = ("end of query" if t.kind == "end" else
                 repr(t.value + (t.unit or "")) if t.kind == "num" else
                 f"text {t.value!r}" if t.kind == "str" else repr(t.value))
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
        where = None
        if self.is_kw("WHERE"):
            self.i += 1
            where = self.filter()
            if self.is_kw("OR"):
                raise self.fail("')' or AND (OR is not supported inside WHERE)")
            self.take("op", ")", "')' or AND")
        else:
            self.take("op", ")", "')' or WHERE")
        op = self.peek()
        if op.kind == "op" and op.value in ("<", "<=", "=", "==", "!=", ">="):
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
        return Condition(name, group, factor, ref, u, self.text[start.col - 1:end].strip(),
                         where)

    def filter(self) -> Filter:
        terms = [self.comparison()]
        while self.is_kw("AND"):
            self.i += 1
            terms.append(self.comparison())
        return Filter(tuple(terms))

    def comparison(self) -> Comparison:
        t = self.peek()
        if t.kind != "name" or t.value.upper() in ("AND", "OR", "WHERE"):
            raise self.fail("a record field, e.g. kind or dwell")
        self.i += 1
        op = self.peek()
        if op.kind != "op" or op.value not in _CMP_OPS:
            raise self.fail(f"a comparison = != < <= > >= after {t.value!r}")
        self.i += 1
        cmp = "=" if op.value == "==" else op.value
        v = self.peek()
        if v.kind == "str":
            if cmp not in ("=", "!="):
                raise QuerySyntaxError(
                    f"query syntax error at column {op.col}: text can only be compared with "
                    f"= or !=, not {op.value!r} in {self.text!r}"
                )
            self.i += 1
            return Comparison(t.value, cmp, v.value)
        sign = 1.0
        if v.kind == "op" and v.value == "-":
            self.i += 1
            sign = -1.0
        elif v.kind == "name":
            raise self.fail(f"a number or a quoted text (write '{v.value}' in quotes)")
        return Comparison(t.value, cmp, sign * self.quantity_or("a number or a quoted text"))

    def quantity_or(self, expected: str) -> float:
        if self.peek().kind != "num":
            raise self.fail(expected)
        return self.quantity()

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


def _number(x: float) -> str:
    """Shortest text that parses back to ``x`` (integers without '.0')."""
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else repr(float(x))


def _term_text(t: Comparison) -> str:
    if isinstance(t.value, str):
        if "'" not in t.value:
            return f"{t.field} {t.op} '{t.value}'"
        if '"' not in t.value:
            return f'{t.field} {t.op} "{t.value}"'
        raise InvalidParameterError(
            f"filter text must not contain both quote characters, not {t.value!r}")
    v = float(t.value)
    return f"{t.field} {t.op} {'-' if v < 0 else ''}{_number(abs(v))}"


def unparse(e: Expr) -> str:
    """Canonical text of a parsed query: ``parse(unparse(e)) == e``.

    Numbers are written in base units (durations in seconds, 50% as 0.5).
    """
    if isinstance(e, Condition):
        where = "" if e.where is None else " WHERE " + " AND ".join(
            _term_text(t) for t in e.where.terms)
        if e.reference is None:
            thr = _number(e.factor)
        else:
            thr = e.reference if e.factor == 1.0 else f"{_number(e.factor)}*{e.reference}"
        u = "" if e.u is None else f" ± {_number(e.u)}"
        return f"{e.aggregate}({e.group_by}{where}) > {thr}{u}"
    if isinstance(e, (AndExpr, OrExpr)):
        def part(c: Expr) -> str:
            bare = isinstance(c, Condition) or (isinstance(e, OrExpr) and isinstance(c, AndExpr))
            return unparse(c) if bare else f"({unparse(c)})"
        return (" AND " if isinstance(e, AndExpr) else " OR ").join(part(c) for c in e.children)
    raise InvalidParameterError(
        f"query must be a Condition, AndExpr or OrExpr, not {type(e).__name__}")


@dataclass(frozen=True)
class CountSource:
    """Per-predicate counts (Δ = max_contributions); no records, so no filters."""

    counts: np.ndarray
    max_contributions: int = 1

    def query(self, thresholds: np.ndarray, where: Filter | None = None) -> ThresholdQuery:
        """The count threshold query at ``thresholds``."""
        if where is not None:
            raise InvalidParameterError(
                f"filter fields {list(where.fields)} need per-record data, not the "
                "per-predicate counts of a CountSource (fields available: []); bind a "
                "RecordCountSource instead")
        return count_query(self.counts, thresholds, max_contributions=self.max_contributions)

    def alpha(self, u: float) -> float:
        """Width in query units for a width ``u`` in the condition's units."""
        return u


@dataclass(frozen=True, eq=False)
class RecordCountSource:
    """Records with a predicate index and ``fields`` for filters: ``count(λ WHERE f)``.

    Δ = max_contributions with or without a filter (see
    :func:`~mechanisms.mide.aggregates.record_count_query`).
    """

    predicate: np.ndarray
    n_predicates: int
    fields: Mapping[str, np.ndarray] | None = None
    max_contributions: int = 1

    def query(self, thresholds: np.ndarray, where: Filter | None = None) -> ThresholdQuery:
        """The (filtered) count threshold query at ``thresholds``."""
        return record_count_query(self.predicate, self.n_predicates, thresholds, where=where,
                                  fields=self.fields,
                                  max_contributions=self.max_contributions)

    def alpha(self, u: float) -> float:
        """Width in query units: u (records)."""
        return u


@dataclass(frozen=True, eq=False)
class RecordSource:
    """Per-record values with predicate index, clipped to [lower, upper].

    ``n_min`` is a public lower bound on the records per predicate — after the filter,
    if the conditions on this source have one — used to convert an average's width into
    excess-sum units (see :mod:`~mechanisms.mide.aggregates`). ``fields`` are the
    record fields filters may read; the aggregated field itself (``dwell`` for
    ``avg_dwell``) is available to filters under its name without repeating it there.
    """

    values: np.ndarray
    predicate: np.ndarray
    n_predicates: int
    lower: float
    upper: float
    max_contributions: int = 1
    n_min: float = 1.0
    kind: str = "avg"
    fields: Mapping[str, np.ndarray] | None = None

    def query(self, thresholds: np.ndarray, where: Filter | None = None,
              value_field: str | None = None) -> ThresholdQuery:
        """The sum or average threshold query at ``thresholds``, filtered by ``where``.

        Args:
            thresholds: per-predicate thresholds.
            where: optional filter over ``fields`` (and ``value_field``).
            value_field: name under which filters see the raw aggregated values.
        """
        f: Callable[..., ThresholdQuery] = avg_query if self.kind == "avg" else sum_query
        fields = dict(self.fields or {})
        if value_field is not None:
            fields.setdefault(value_field, self.values)
        return f(self.values, self.predicate, self.n_predicates, thresholds, lower=self.lower,
                 upper=self.upper, max_contributions=self.max_contributions, where=where,
                 fields=fields)

    def alpha(self, u: float) -> float:
        """Width in query units: u·n_min for averages, u for sums."""
        return u * self.n_min if self.kind == "avg" else u


Source = Union[CountSource, RecordCountSource, RecordSource]  # noqa: UP007


def bind(
    expr: Expr | str,
    sources: Mapping[str, Source],
    attributes: Mapping[str, np.ndarray] | None = None,
    default_u: Mapping[str, float] | None = None,
) -> Node:
    """Turn a parsed query into a :mod:`~mechanisms.mide.complex` tree.

    Args:
        expr: parsed query or its text.
        sources: aggregate name (``count``, ``avg_dwell`` …) → data source; a condition
            with ``WHERE`` needs a record source (:class:`RecordCountSource` for
            ``count``, :class:`RecordSource` for ``sum_``/``avg_``).
        attributes: per-predicate attributes named in thresholds (e.g. ``capacity``).
        default_u: width per aggregate name when the condition has no ``± u``.

    Raises:
        InvalidParameterError: unknown aggregate/attribute, a missing width, or a filter
            naming a field the source does not have or comparing it with the wrong type
            (one line naming the field and the fields available).
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
        try:
            if isinstance(src, RecordSource):
                q = src.query(thr_arr, node.where, node.aggregate.partition("_")[2] or None)
            else:
                q = src.query(thr_arr, node.where)
        except InvalidParameterError as err:
            raise InvalidParameterError(f"{err} (in {node.text!r})") from err
        return Leaf(q, src.alpha(float(u)), node.text)

    return build(e)
