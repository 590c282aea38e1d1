"""SORTaki's Tables I and III–IX (docs/MECHANISMS.md "SORTaki") and the shape tests.

The paper's numbers are transcribed here once (values × the table's error scale give
the scaled average per-query *squared* error, SORTaki Def. VI.1 with L = ‖·‖₂²; see
``mechanisms.histograms.evaluation.squared_scaled_error``). A *grid* maps
``(algorithm, dataset, ε, γ_in)`` to an error; the paper's grid and ours go through
the same functions, so a shape test that holds on the paper's grid and fails on ours
is a real disagreement, not an artefact of the test.

Shape tests (defined once, applied to every table):

* **winner** — per column (data set, ε, γ_in), our lowest-error algorithm is one of
  the paper's near-winners (within :data:`TIE` of the paper's column minimum).
* **order** — of the algorithm pairs the paper separates clearly (ratio > 1 +
  :data:`CLEAR`), the share we order the same way (Kendall-style concordance).
* **best γ_in** (Tables III, V, VIII) — per algorithm and ε, our best γ_in is one
  of the paper's near-best γ_in (within :data:`TIE`).
* **ε trend** — per algorithm (≠ Identity), whether its error *relative to Identity*
  rises or falls from the largest to the smallest ε; compared where the paper's
  ratio moves by more than :data:`CLEAR`.

A score ≥ :data:`AGREE` is "yes", ≥ :data:`PARTLY` "partly", else "no". Each table
also has the claims its text makes (``CLAIMS``), each a predicate on a grid.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from mechanisms.errors import InvalidParameterError

__all__ = [
    "PaperTable",
    "TABLES",
    "TABLE_I",
    "SCALES",
    "CLAIMS",
    "Claim",
    "Grid",
    "Score",
    "paper_grid",
    "shape_scores",
    "verdict",
]

#: values within this relative distance of the column minimum count as ties (the
#: paper prints two decimals, so 0.24 and 0.245 are indistinguishable)
TIE = 0.05
#: a paper difference larger than this ratio − 1 is "clear" (order / trend tests)
CLEAR = 0.10
#: score thresholds of the verdicts
AGREE = 0.75
PARTLY = 0.5

Key = tuple[str, str, float, float]  # (algorithm, dataset, epsilon, gamma_in)
Grid = dict[Key, float]

#: SORTaki Table I: domain, scale, # bins of AHP's partitioner (γ = 0.5) at ε = 1, 0.5, 0.1
TABLE_I: dict[str, tuple[int, int, tuple[int, int, int]]] = {
    "NetTrace": (1024, 100_000, (65, 37, 19)),
    "Wage-Per-Hour": (1024, 100_000, (431, 261, 144)),
    "Amazon": (500_000, 7_500_000, (311_000, 235_000, 95_000)),
    "Bid-IP": (500_000, 7_500_000, (266_000, 167_000, 38_000)),
    "Bid-Freq": (500_000, 7_500_000, (154_000, 58_000, 4_000)),
    "Ipums-Inc": (48_000, 1_000_000, (16_000, 11_000, 5_000)),
    "MD-Sal-Orig": (99_081, 136_000, (6_000, 4_000, 1_000)),
    "MD-Sal": (48_000, 1_000_000, (30_000, 19_000, 5_000)),
}
#: the scale of each data set in the experiments (Table I)
SCALES = {k: v[1] for k, v in TABLE_I.items()}


@dataclass(frozen=True)
class PaperTable:
    """One of SORTaki's Tables III–IX: its setting and its values."""

    key: str
    title: str
    workload: str  # identity | small | big
    datasets: tuple[str, ...]
    epsilons: tuple[float, ...]
    gammas: tuple[float, ...]
    error_scale: float
    rows: dict[str, tuple[float, ...]]  # algorithm → values, columns in :meth:`columns` order

    @property
    def algorithms(self) -> tuple[str, ...]:
        """Rows, in the paper's order."""
        return tuple(self.rows)

    @property
    def sweeps_gamma(self) -> bool:
        """Whether the table varies γ_in (Tables III, V, VIII)."""
        return len(self.gammas) > 1

    def columns(self) -> list[tuple[str, float, float]]:
        """(dataset, ε, γ_in) of each column, in the paper's order."""
        return [(d, e, g) for d in self.datasets for e in self.epsilons for g in self.gammas]


_G4 = (0.3, 0.5, 0.7, 0.9)
_SORT_ALGOS = ("sDAHP", "sDWF", "DPC", "sDPC", "DAWA", "sDAWA")


def _rows(text: str) -> dict[str, tuple[float, ...]]:
    out = {}
    for line in text.strip().splitlines():
        name, *vals = line.split()
        out[name] = tuple(float(v) for v in vals)
    return out


TABLES: dict[str, PaperTable] = {
    "III": PaperTable(
        "III", "Large categorical, Amazon, error vs ε and γ_in (identity workload)",
        "identity", ("Amazon",), (1.0, 0.1), _G4, 1e-6, _rows("""
Identity 0.27 0.27 0.27 0.27 26.67 26.67 26.67 26.67
GAHP 0.61 0.79 1.44 6.35 34.26 32.56 33.68 99.41
sGAHP 1.67 0.82 0.79 2.89 54.05 28.72 23.18 51.03
stGAHP 1.67 0.82 0.79 2.89 54.46 28.59 23.18 50.80
sDAHP 1.59 0.67 0.37 0.24 52.99 25.82 15.85 10.91
sDWF 1.61 0.67 0.37 0.24 53.43 26.00 15.90 11.26
DPC 0.70 0.55 0.46 0.33 30.59 36.77 39.17 30.68
sDPC 1.60 0.67 0.37 0.24 53.31 25.92 15.88 11.36
DAWA 0.80 0.80 0.80 0.80 30.93 30.93 30.93 30.93
sDAWA 0.93 0.60 0.38 0.28 31.33 25.76 19.73 18.03
""")),
    "IV": PaperTable(
        "IV", "Large categorical, error vs shape and ε, γ_in = 0.9 (identity workload)",
        "identity", ("Amazon", "Bid-IP", "Bid-Freq"), (1.0, 0.5, 0.1), (0.9,), 1e-6, _rows("""
Identity 0.27 1.07 26.67 0.27 1.07 26.67 0.27 1.07 26.67
sDAHP 0.24 0.82 10.91 0.27 0.80 6.44 0.25 0.72 5.83
sDWF 0.24 0.82 11.26 0.26 0.78 6.50 0.24 0.70 6.06
DPC 0.33 1.31 30.68 0.34 1.31 29.85 0.33 1.26 29.16
sDPC 0.24 0.83 11.36 0.26 0.78 6.55 0.24 0.70 6.13
DAWA 0.80 2.68 30.93 0.85 2.21 11.83 0.47 0.71 1.51
sDAWA 0.28 1.03 18.03 0.33 1.10 15.14 0.31 1.04 13.93
""")),
    "V": PaperTable(
        "V", "Large continuous, MD-Sal-Orig, error vs ε and γ_in (small ranges)",
        "small", ("MD-Sal-Orig",), (1.0, 0.5), _G4, 1e-4, _rows("""
Identity 0.81 0.81 0.81 0.81 3.24 3.24 3.24 3.24
GAHP 0.93 0.85 0.43 0.86 3.76 3.28 1.34 2.14
sGAHP 0.62 0.32 0.25 0.42 1.68 0.86 0.61 0.94
stGAHP 0.62 0.33 0.24 0.43 1.76 0.87 0.62 0.93
sDAHP 0.60 0.30 0.19 0.14 1.65 0.79 0.51 0.38
sDWF 0.64 0.30 0.19 0.18 1.68 0.80 0.51 0.55
DPC 0.69 1.06 1.23 0.98 2.68 4.17 4.90 3.91
sDPC 0.61 0.31 0.19 0.18 1.73 0.81 0.52 0.59
DAWA 0.26 0.26 0.26 0.26 0.77 0.77 0.77 0.77
sDAWA 0.39 0.39 0.36 0.38 1.03 1.01 1.00 1.14
""")),
    "VI": PaperTable(
        "VI", "Large continuous, error vs shape and ε, γ_in = 0.9 (small ranges)",
        "small", ("MD-Sal", "Ipums-Inc"), (1.0, 0.5, 0.1), (0.9,), 1e-4, _rows("""
Identity 0.11 0.44 11.00 0.11 0.44 11.00
sDAHP 0.13 0.41 3.63 0.08 0.27 2.64
sDWF 0.12 0.39 4.08 0.06 0.22 3.00
DPC 0.13 0.53 13.23 0.13 0.54 13.43
sDPC 0.12 0.40 4.40 0.07 0.22 3.32
DAWA 0.20 0.59 5.37 0.11 0.33 4.08
sDAWA 0.15 0.54 8.79 0.18 0.48 9.81
""")),
    "VII": PaperTable(
        "VII", "Large continuous, error vs shape and ε, γ_in = 0.9 (big ranges)",
        "big", ("MD-Sal", "Ipums-Inc"), (1.0, 0.5, 0.1), (0.9,), 1e-2, _rows("""
Identity 0.11 0.44 10.97 0.11 0.44 10.97
sDAHP 0.14 0.59 24.87 0.45 2.37 20.46
sDWF 0.12 0.44 15.91 0.30 1.63 14.16
DPC 0.13 0.57 14.56 0.13 0.55 13.06
sDPC 0.13 0.42 15.90 0.28 1.42 12.19
DAWA 0.11 0.31 2.55 0.07 0.19 2.46
sDAWA 0.30 1.11 67.98 1.03 5.27 172.15
""")),
    "VIII": PaperTable(
        "VIII", "Small continuous, Wage-Per-Hour, error vs ε and γ_in (small ranges)",
        "small", ("Wage-Per-Hour",), (1.0, 0.5), _G4, 1e-4, _rows("""
Identity 1.10 1.10 1.10 1.10 4.39 4.39 4.39 4.39
GAHP 1.59 2.04 2.47 6.45 5.67 5.95 6.05 23.16
sGAHP 2.83 1.66 1.60 4.66 7.19 3.73 3.77 7.35
stGAHP 3.99 2.68 1.98 3.56 10.70 5.57 4.39 7.33
sDAHP 2.48 1.47 1.14 1.85 5.93 3.25 2.77 4.95
sDWF 2.66 1.46 1.10 1.01 7.66 3.55 3.00 3.71
DPC 1.21 1.62 1.80 1.35 4.25 6.64 6.80 5.44
sDPC 2.57 1.52 1.17 1.12 6.50 3.64 3.03 4.33
DAWA 1.18 1.18 1.18 1.18 3.09 3.09 3.09 3.09
sDAWA 2.54 2.16 1.72 1.73 5.97 5.97 5.45 5.58
""")),
    "IX": PaperTable(
        "IX", "Small continuous, error vs shape and ε, γ_in = 0.9 (small ranges)",
        "small", ("Wage-Per-Hour", "NetTrace"), (1.0, 0.5, 0.1), (0.9,), 1e-4, _rows("""
Identity 1.10 4.39 109.84 1.10 4.39 109.84
sDAHP 1.85 4.95 39.83 1.69 3.95 93.39
sDWF 1.01 3.71 82.05 0.89 3.36 75.26
DPC 1.35 5.44 132.36 1.43 5.07 141.11
sDPC 1.12 4.33 87.68 0.89 3.60 85.64
DAWA 1.18 3.09 63.45 0.18 0.38 6.26
sDAWA 7.35 12.96 122.89 2.66 18.66 133.68
""")),
}


def paper_grid(table: PaperTable) -> Grid:
    """The paper's values of ``table`` as a grid (in units of its error scale)."""
    cols = table.columns()
    grid: Grid = {}
    for alg, vals in table.rows.items():
        if len(vals) != len(cols):
            raise InvalidParameterError(
                f"Table {table.key} row {alg} must have {len(cols)} values, not {len(vals)!r}"
            )
        for (d, e, g), v in zip(cols, vals, strict=True):
            grid[(alg, d, e, g)] = v
    return grid


# --- shape tests ----------------------------------------------------------------------


@dataclass(frozen=True)
class Score:
    """One shape test on one table: agreeing cases / cases, and a verdict."""

    test: str
    agree: int
    total: int
    detail: str

    @property
    def value(self) -> float:
        """Share of agreeing cases (NaN when there is nothing to compare)."""
        return self.agree / self.total if self.total else math.nan

    @property
    def verdict(self) -> str:
        """The verdict of :attr:`value`: yes / partly / no / n/a."""
        return verdict(self.value)


def verdict(share: float) -> str:
    """``yes`` (≥ AGREE), ``partly`` (≥ PARTLY), ``no``, or ``n/a`` for NaN."""
    if math.isnan(share):
        return "n/a"
    return "yes" if share >= AGREE else "partly" if share >= PARTLY else "no"


def _near(values: dict[str, float], tie: float = TIE) -> set[str]:
    lo = min(values.values())
    return {a for a, v in values.items() if v <= lo * (1 + tie) + 1e-12}


def _column(grid: Grid, table: PaperTable, col: tuple[str, float, float]) -> dict[str, float]:
    d, e, g = col
    return {a: grid[(a, d, e, g)] for a in table.algorithms if (a, d, e, g) in grid}


def _argmin(values: dict[str, float]) -> str:
    return min(values, key=values.__getitem__)


def winner_score(table: PaperTable, paper: Grid, ours: Grid) -> Score:
    """Columns where our best algorithm is one of the paper's near-winners."""
    hits, misses = 0, []
    for col in table.columns():
        p, o = _column(paper, table, col), _column(ours, table, col)
        best = _argmin(o)
        if best in _near(p):
            hits += 1
        else:
            misses.append(f"{_col_label(table, col)}: ours {best}, paper {_argmin(p)}")
    return Score("winner", hits, len(table.columns()), "; ".join(misses) or "every column")


def order_score(table: PaperTable, paper: Grid, ours: Grid) -> Score:
    """Pairs the paper separates clearly (> CLEAR apart) that we order the same way."""
    agree = total = 0
    for col in table.columns():
        p, o = _column(paper, table, col), _column(ours, table, col)
        algs = sorted(p)
        for i, a in enumerate(algs):
            for b in algs[i + 1:]:
                lo, hi = sorted((p[a], p[b]))
                if hi <= lo * (1 + CLEAR):
                    continue
                total += 1
                agree += (p[a] < p[b]) == (o[a] < o[b])
    return Score("order", agree, total, f"{agree} of {total} clearly ordered pairs")


def gamma_score(table: PaperTable, paper: Grid, ours: Grid) -> Score:
    """Per (algorithm, dataset, ε): our best γ_in is one of the paper's near-best."""
    if not table.sweeps_gamma:
        return Score("best γ_in", 0, 0, "no γ_in sweep")
    hits, total, misses = 0, 0, []
    for a in table.algorithms:
        for d in table.datasets:
            for e in table.epsilons:
                p = {str(g): paper[(a, d, e, g)] for g in table.gammas}
                if len(set(p.values())) == 1:  # the row does not use γ_in
                    continue
                o = {str(g): ours[(a, d, e, g)] for g in table.gammas}
                total += 1
                if _argmin(o) in _near(p):
                    hits += 1
                else:
                    misses.append(f"{a} ε={e:g}: ours {_argmin(o)}, paper {_argmin(p)}")
    return Score("best γ_in", hits, total, "; ".join(misses) or "every row")


def eps_trend_score(table: PaperTable, paper: Grid, ours: Grid) -> Score:
    """Direction of error / Identity from the largest to the smallest ε, per algorithm."""
    e_hi, e_lo = max(table.epsilons), min(table.epsilons)
    agree = total = 0
    misses = []
    for a in table.algorithms:
        if a == "Identity":
            continue
        for d in table.datasets:
            for g in table.gammas:
                def ratio(grid: Grid, e: float, a: str = a, d: str = d, g: float = g) -> float:
                    return grid[(a, d, e, g)] / grid[("Identity", d, e, g)]

                p0, p1 = ratio(paper, e_hi), ratio(paper, e_lo)
                lo, hi = sorted((p0, p1))
                if hi <= lo * (1 + CLEAR):
                    continue
                total += 1
                if (p1 > p0) == (ratio(ours, e_lo) > ratio(ours, e_hi)):
                    agree += 1
                else:
                    misses.append(f"{a} {d}" + (f" γ={g:g}" if table.sweeps_gamma else ""))
    return Score("ε trend", agree, total,
                 f"{agree} of {total}" + (f"; differs: {', '.join(misses)}" if misses else ""))


def shape_scores(table: PaperTable, paper: Grid, ours: Grid) -> list[Score]:
    """Every generic shape test of ``table``: winner, order, best γ_in, ε trend."""
    out = [winner_score(table, paper, ours), order_score(table, paper, ours)]
    if table.sweeps_gamma:
        out.append(gamma_score(table, paper, ours))
    out.append(eps_trend_score(table, paper, ours))
    return out


def _col_label(table: PaperTable, col: tuple[str, float, float]) -> str:
    d, e, g = col
    parts = [d] if len(table.datasets) > 1 else []
    parts.append(f"ε={e:g}")
    if table.sweeps_gamma:
        parts.append(f"γ={g:g}")
    return " ".join(parts)


# --- the claims of the paper's text ---------------------------------------------------


@dataclass(frozen=True)
class Claim:
    """A sentence of the paper's §VII about one table, as a predicate on a grid."""

    table: str
    text: str
    check: Callable[[PaperTable, Grid], tuple[bool, str]]


def _best_gamma(t: PaperTable, g: Grid, a: str, d: str, e: float) -> tuple[float, float]:
    vals = {gm: g[(a, d, e, gm)] for gm in t.gammas}
    gm = min(vals, key=vals.__getitem__)
    return gm, vals[gm]


def _best(t: PaperTable, g: Grid, d: str, e: float, gm: float,
          among: Iterable[str] | None = None) -> str:
    algs = t.algorithms if among is None else tuple(among)
    return min(algs, key=lambda a: g[(a, d, e, gm)])


def _is_sorting(a: str) -> bool:
    return a.startswith("s")


def _c_dp_beats_greedy(t: PaperTable, g: Grid) -> tuple[bool, str]:
    d = t.datasets[0]
    parts, ok = [], True
    for e in t.epsilons:
        dp, gr = _best_gamma(t, g, "sDAHP", d, e)[1], _best_gamma(t, g, "sGAHP", d, e)[1]
        ok &= dp < gr
        parts.append(f"ε={e:g}: sDAHP {dp:.3g} vs sGAHP {gr:.3g}")
    return ok, "; ".join(parts)


def _c_only_sorting_beats_identity(t: PaperTable, g: Grid) -> tuple[bool, str]:
    d, e = t.datasets[0], max(t.epsilons)
    ident = g[("Identity", d, e, t.gammas[0])]
    winners = [a for a in t.algorithms if a != "Identity"
               and _best_gamma(t, g, a, d, e)[1] < ident]
    allowed = {"sDAHP", "sDWF", "sDPC", "sDAWA"}
    ok = bool(winners) and set(winners) <= allowed
    return ok, f"below Identity at ε={e:g}: {', '.join(winners) or 'none'}"


def _c_gamma_09_vs_07(t: PaperTable, g: Grid) -> tuple[bool, str]:
    d, ok, parts = t.datasets[0], True, []
    for e in t.epsilons:
        got = {a: _best_gamma(t, g, a, d, e)[0] for a in ("sDAHP", "sDWF", "sDPC", "sDAWA",
                                                          "sGAHP")}
        ok &= all(got[a] == 0.9 for a in ("sDAHP", "sDWF", "sDPC", "sDAWA"))
        ok &= got["sGAHP"] == 0.7
        parts.append(f"ε={e:g}: " + ", ".join(f"{a} {v:g}" for a, v in got.items()))
    return ok, "; ".join(parts)


def _c_random_shapes_sorting_wins(t: PaperTable, g: Grid) -> tuple[bool, str]:
    ok, parts = True, []
    for d in t.datasets[:2]:
        for e in t.epsilons:
            b = _best(t, g, d, e, t.gammas[0])
            ok &= _is_sorting(b)
            parts.append(f"{d} ε={e:g}: {b}")
    return ok, "; ".join(parts)


def _c_sorted_shape_dawa_small_eps(t: PaperTable, g: Grid) -> tuple[bool, str]:
    d, gm = t.datasets[-1], t.gammas[0]
    small, big = _best(t, g, d, min(t.epsilons), gm), _best(t, g, d, max(t.epsilons), gm)
    return small == "DAWA" and _is_sorting(big), (
        f"{d}: ε={min(t.epsilons):g} best {small}, ε={max(t.epsilons):g} best {big}")


def _c_ahp_wf_close(t: PaperTable, g: Grid) -> tuple[bool, str]:
    worst = max(max(g[("sDAHP", d, e, gm)], g[("sDWF", d, e, gm)])
                / min(g[("sDAHP", d, e, gm)], g[("sDWF", d, e, gm)])
                for d, e, gm in t.columns())
    return worst <= 1.15, f"largest sDAHP/sDWF gap {worst:.2f}×"


def _c_sorting_helps_partitioners(t: PaperTable, g: Grid) -> tuple[bool, str]:
    d, ok, parts = t.datasets[0], True, []
    for e in t.epsilons:
        for s, u in (("sGAHP", "GAHP"), ("sDPC", "DPC")):
            vs, vu = _best_gamma(t, g, s, d, e)[1], _best_gamma(t, g, u, d, e)[1]
            ok &= vs < vu
            parts.append(f"ε={e:g} {s} {vs:.3g} vs {u} {vu:.3g}")
    return ok, "; ".join(parts)


def _c_sorted_dp_beats_identity(t: PaperTable, g: Grid) -> tuple[bool, str]:
    d, ok, parts = t.datasets[0], True, []
    for e in t.epsilons:
        v, ident = _best_gamma(t, g, "sDAHP", d, e)[1], g[("Identity", d, e, t.gammas[0])]
        ok &= v < ident
        parts.append(f"ε={e:g}: sDAHP {v:.3g} vs Identity {ident:.3g}")
    return ok, "; ".join(parts)


def _c_small_eps_sorting_best(t: PaperTable, g: Grid) -> tuple[bool, str]:
    e, gm = min(t.epsilons), t.gammas[0]
    bests = {d: _best(t, g, d, e, gm) for d in t.datasets}
    return all(_is_sorting(b) for b in bests.values()), ", ".join(
        f"{d} ε={e:g}: {b}" for d, b in bests.items())


def _c_sorting_near_identity(t: PaperTable, g: Grid) -> tuple[bool, str]:
    e, gm, ok, parts = max(t.epsilons), t.gammas[0], True, []
    for d in t.datasets:
        b = _best(t, g, d, e, gm, [a for a in t.algorithms if _is_sorting(a)])
        r = g[(b, d, e, gm)] / g[("Identity", d, e, gm)]
        ok &= r <= 1.25
        parts.append(f"{d}: {b} {r:.2f}× Identity")
    return ok, "; ".join(parts)


def _c_finalizer_by_eps(t: PaperTable, g: Grid) -> tuple[bool, str]:
    gm, ok, parts = t.gammas[-1], True, []
    e_hi, e_lo = max(t.epsilons), min(t.epsilons)
    for d in t.datasets:
        hi = g[("sDWF", d, e_hi, gm)] / g[("sDAHP", d, e_hi, gm)]
        lo = g[("sDWF", d, e_lo, gm)] / g[("sDAHP", d, e_lo, gm)]
        ok &= hi < 1 < lo
        parts.append(f"{d}: sDWF/sDAHP {hi:.2f} at ε={e_hi:g}, {lo:.2f} at ε={e_lo:g}")
    return ok, "; ".join(parts)


def _c_dawa_best_everywhere(t: PaperTable, g: Grid) -> tuple[bool, str]:
    cols = [c for c in t.columns() if c[0] in t.datasets]
    wins = [c for c in cols if "DAWA" in _near(_column(g, t, c), 0.0)]
    return len(wins) == len(cols), f"DAWA best in {len(wins)} of {len(cols)} columns"


def _c_sorting_worse_than_dawa(t: PaperTable, g: Grid) -> tuple[bool, str]:
    bad = [(a, c) for c in t.columns() for a in t.algorithms
           if _is_sorting(a) and g[(a, *c)] <= g[("DAWA", *c)]]
    return not bad, (f"{len(bad)} sorting cells at or below DAWA" if bad
                     else "every sorting cell above DAWA")


def _c_smaller_eps_smaller_gamma(t: PaperTable, g: Grid) -> tuple[bool, str]:
    d, e_hi, e_lo = t.datasets[0], max(t.epsilons), min(t.epsilons)
    algs = [a for a in t.algorithms if _is_sorting(a)]
    pairs = {a: (_best_gamma(t, g, a, d, e_hi)[0], _best_gamma(t, g, a, d, e_lo)[0])
             for a in algs}
    ok = all(lo <= hi for hi, lo in pairs.values()) and any(lo < hi for hi, lo in pairs.values())
    return ok, ", ".join(f"{a} {hi:g}→{lo:g}" for a, (hi, lo) in pairs.items())


def _c_waf_gap_grows(t: PaperTable, g: Grid) -> tuple[bool, str]:
    d, gm, e_hi, e_lo = t.datasets[0], 0.9, max(t.epsilons), min(t.epsilons)
    hi = g[("sDWF", d, e_hi, gm)] / g[("sDAHP", d, e_hi, gm)]
    lo = g[("sDWF", d, e_lo, gm)] / g[("sDAHP", d, e_lo, gm)]
    return hi < 1 and lo > hi, f"sDWF/sDAHP at γ=0.9: {hi:.2f} (ε={e_hi:g}), {lo:.2f} (ε={e_lo:g})"


def _c_dawa_best_sorted(t: PaperTable, g: Grid) -> tuple[bool, str]:
    d, gm = t.datasets[-1], t.gammas[0]
    bests = {e: _best(t, g, d, e, gm) for e in t.epsilons}
    return all(b == "DAWA" for b in bests.values()), ", ".join(
        f"ε={e:g}: {b}" for e, b in bests.items())


def _c_random_sorting_best_ends(t: PaperTable, g: Grid) -> tuple[bool, str]:
    d, gm = t.datasets[0], t.gammas[0]
    bests = {e: _best(t, g, d, e, gm) for e in (max(t.epsilons), min(t.epsilons))}
    return all(_is_sorting(b) for b in bests.values()), ", ".join(
        f"ε={e:g}: {b}" for e, b in bests.items())


def _c_finalizer_by_eps_first(t: PaperTable, g: Grid) -> tuple[bool, str]:
    return _c_finalizer_by_eps(
        PaperTable(t.key, t.title, t.workload, t.datasets[:1], t.epsilons, t.gammas,
                   t.error_scale, t.rows), g)


CLAIMS: tuple[Claim, ...] = (
    Claim("III", "the DP partitioner beats the greedy one (sDAHP < sGAHP, best γ_in per ε)",
          _c_dp_beats_greedy),
    Claim("III", "at ε = 1 only sorting algorithms (not greedy) beat Identity",
          _c_only_sorting_beats_identity),
    Claim("III", "best γ_in is 0.9 for sDAHP/sDWF/sDPC/sDAWA and 0.7 for sGAHP",
          _c_gamma_09_vs_07),
    Claim("IV", "on the random shapes (Amazon, Bid-IP) a sorting algorithm is best",
          _c_random_shapes_sorting_wins),
    Claim("IV", "on the sorted shape (Bid-Freq) DAWA is best at ε = 0.1, sorting at ε = 1",
          _c_sorted_shape_dawa_small_eps),
    Claim("IV", "AHP's and WAF's finalizers differ little on large domains (≤ 15 %)",
          _c_ahp_wf_close),
    Claim("V", "sorting improves the greedy and DPCube partitioners (sGAHP < GAHP, "
          "sDPC < DPC)", _c_sorting_helps_partitioners),
    Claim("V", "sorting + DP partitioner beats Identity on small ranges",
          _c_sorted_dp_beats_identity),
    Claim("VI", "sorting helps small ranges: a sorting algorithm is best at ε = 0.1",
          _c_small_eps_sorting_best),
    Claim("VI", "at ε = 1 the best sorting algorithm stays within 1.25× Identity",
          _c_sorting_near_identity),
    Claim("VI", "WAF's finalizer wins at large ε, AHP's at small ε", _c_finalizer_by_eps),
    Claim("VII", "DAWA is best in every column on big ranges", _c_dawa_best_everywhere),
    Claim("VII", "sorting does not help big ranges: every sorting algorithm is worse than "
          "DAWA", _c_sorting_worse_than_dawa),
    Claim("VIII", "smaller ε → smaller best γ_in for the sorting algorithms",
          _c_smaller_eps_smaller_gamma),
    Claim("VIII", "WAF beats AHP's finalizer at ε = 1 and the gap shrinks at smaller ε",
          _c_waf_gap_grows),
    Claim("IX", "on the sorted shape (NetTrace) DAWA is best at every ε", _c_dawa_best_sorted),
    Claim("IX", "on the random shape (Wage-Per-Hour) a sorting algorithm is best at ε = 1 "
          "and ε = 0.1", _c_random_sorting_best_ends),
    Claim("IX", "WAF wins at ε = 1, AHP's finalizer at ε = 0.1 (Wage-Per-Hour)",
          _c_finalizer_by_eps_first),
)
