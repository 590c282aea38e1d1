"""Xiao, Xiong & Yuan (kdtree.txt §5) reproduced in shape.

Cell-based vs kd-tree vs hierarchical kd-tree on count queries with range predicates.

The paper's experiments (§5, Figs. 9–14) use CENSUS Age × Income (79 × 100 cells,
1 M tuples, ~127 per cell), 1000 random rectangle count queries, 100 releases, and report
the absolute and the relative count error. Here: the DPBench ADULT-2D file (census data)
at 1 M records, both at its native 256 × 256 and coarsened to 64 × 64 (4096 cells,
~244 per cell: the paper's density), plus BJ-CABS-E 64 × 64; 1000 random rectangles;
``releases`` releases (10 by default; 2 with ``quick``); relative error
``|est − true| / max(true, 0.1 %·N)`` (the usual sanity bound; the paper does not state
one). Figures reproduced:

* Figs. 9/10 — hierarchical kd-tree error vs its height (ε = 0.5);
* Figs. 11/12 — kd-tree error vs the count threshold ξ₀ (ξ₁ at its default; ε = 0.5),
  for the paper's Alg. 2 (no inference) and the project's default (leaf inference);
* Figs. 13/14 — error vs α (ε) for cell-based, kd-tree (paper: ξ₀ = 100/ε), kd-tree
  (project default: ξ₀ = 40/ε, inference), hierarchical kd-tree (best height of 9/10).

:func:`write_xiao_report` writes ``xiao.md`` and three PNGs and says, from the numbers,
where the shape agrees with the paper.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from mechanisms.histograms import evaluation as ev
from mechanisms.histograms.kdtree import (
    XI0_TIMES_EPSILON,
    XI0_TIMES_EPSILON_PAPER,
    cell_based_release,
    hierarchical_kd_release,
    kd_tree_release,
)
from research.histogram import DPBENCH_2D, REPO, dpbench_dir, load_array
from research.report import figure_png, new_figure

__all__ = ["xiao_cubes", "xiao_experiments", "write_xiao_report"]

SEED = 2012
SCALE = 1_000_000
N_QUERIES = 1000
EPS_SWEEP = 0.5
HEIGHTS = (4, 6, 8, 10, 12, 13, 14)
XI0S = (10.0, 20.0, 40.0, 100.0, 300.0, 1000.0, math.inf)
ALPHAS = (0.05, 0.1, 0.2, 0.5, 1.0)
SANITY = 1e-3


def _gen(*key: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(list(key))))


def xiao_cubes(data_dir: Path | None = None) -> dict[str, np.ndarray]:
    """The shapes: ADULT-2D 256² and 64², BJ-CABS-E 64² (generated when DPBench is absent)."""
    d = dpbench_dir(data_dir)
    if d is None:
        g = np.random.default_rng(SEED)
        base = g.gamma(0.2, 1.0, (64, 64)) * (g.random((64, 64)) < 0.2)
        return {"GEN-64": base + 1e-9}
    adult = load_array(d / DPBENCH_2D["ADULT-2D"])
    bj = load_array(d / DPBENCH_2D["BJ-CABS-E"])

    def coarse(x: np.ndarray) -> np.ndarray:
        return x.reshape(64, 4, 64, 4).sum(axis=(1, 3))

    return {"ADULT-2D 256²": adult, "ADULT-2D 64²": coarse(adult), "BJ-CABS-E 64²": coarse(bj)}


def _errors(x: np.ndarray, est: np.ndarray, boxes: np.ndarray) -> tuple[float, float]:
    true = ev.answer_boxes(x, boxes)
    err = np.abs(ev.answer_boxes(est, boxes) - true)
    return float(err.mean()), float((err / np.maximum(true, SANITY * x.sum())).mean())


def _run(fn, x: np.ndarray, boxes: np.ndarray, releases: int, key: tuple[int, ...]):  # noqa: ANN001, ANN202
    out = np.array([_errors(x, fn(x, _gen(*key, r)), boxes) for r in range(releases)])
    return out.mean(axis=0)  # (absolute, relative), averaged over releases as in §5


def xiao_experiments(
    cubes: dict[str, np.ndarray], *, releases: int = 10, seed: int = SEED
) -> dict[str, dict]:
    """All three experiments on every cube: ``{cube: {"height": …, "xi0": …, "alpha": …}}``."""
    res: dict[str, dict] = {}
    for c_i, (name, shape) in enumerate(cubes.items()):
        x = ev.resample(shape, SCALE, rng=_gen(seed, c_i, 1))
        boxes = ev.random_boxes(x.shape, N_QUERIES, rng=_gen(seed, c_i, 2))
        heights = [h for h in HEIGHTS if 2**h <= 4 * x.size]
        hier = {
            h: _run(
                lambda x, g, h=h: hierarchical_kd_release(x, EPS_SWEEP, height=h, rng=g).estimate,
                x,
                boxes,
                releases,
                (seed, c_i, 3, h),
            )
            for h in heights
        }
        best_h = min(hier, key=lambda h: hier[h][0])
        xi0 = {}
        for inference in (False, True):
            for k in XI0S:
                xi0[(inference, k)] = _run(
                    lambda x, g, k=k, inf=inference: (
                        kd_tree_release(
                            x, EPS_SWEEP, xi0=k / EPS_SWEEP, inference=inf, rng=g
                        ).estimate
                    ),
                    x,
                    boxes,
                    releases,
                    (seed, c_i, 4, int(inference), int(min(k, 1e6))),
                )
        algos = {
            "cell-based": lambda x, e, g: cell_based_release(x, e, rng=g),
            "kd-tree (paper)": lambda x, e, g: (
                kd_tree_release(
                    x, e, xi0=XI0_TIMES_EPSILON_PAPER / e, inference=False, rng=g
                ).estimate
            ),
            "kd-tree (project)": lambda x, e, g: kd_tree_release(x, e, rng=g).estimate,
            f"hierarchical (h={best_h})": lambda x, e, g, h=best_h: (
                hierarchical_kd_release(x, e, height=h, rng=g).estimate
            ),
        }
        alpha = {
            (a, e): _run(
                lambda x, g, f=f, e=e: f(x, e, g), x, boxes, releases, (seed, c_i, 5, a_i, e_i)
            )
            for a_i, (a, f) in enumerate(algos.items())
            for e_i, e in enumerate(ALPHAS)
        }
        reasons = loss_reasons(x, boxes, ALPHAS, releases=releases, key=(seed, c_i, 6))
        res[name] = {
            "height": hier,
            "best_height": best_h,
            "xi0": xi0,
            "alpha": alpha,
            "reasons": reasons,
        }
    return res


def _structure_estimate(x: np.ndarray, boxes: tuple) -> np.ndarray:
    """The kd-tree's estimate with noise-free partition counts: what its layout alone costs."""
    est = np.empty_like(x)
    for b in boxes:
        sl = tuple(slice(lo, hi) for lo, hi in b)
        est[sl] = x[sl].sum() / x[sl].size
    return est


def loss_reasons(
    x: np.ndarray, boxes: np.ndarray, epsilons: tuple[float, ...], *, releases: int, key: tuple
) -> dict[float, dict[str, float]]:
    """Why the kd-tree loses or wins against cell-based, measured per ε.

    For the project's kd-tree: the number of partitions, the share of partitions of one
    cell, the absolute error of the *layout alone* (true counts spread uniformly over the
    chosen partitions: the uniformity-assumption error, no step-5 noise), the full error,
    and the cell-based error. When the layout alone is already worse than cell-based, the
    kd-tree cannot win whatever its partition noise: its partitions are not uniform inside.
    """
    out: dict[float, dict[str, float]] = {}
    for e_i, eps in enumerate(epsilons):
        rows = []
        for r in range(releases):
            g = _gen(*key, e_i, r)
            kd = kd_tree_release(x, eps, rng=g)
            cells = cell_based_release(x, eps, rng=g)
            sizes = np.array([np.prod([hi - lo for lo, hi in b]) for b in kd.boxes])
            rows.append(
                (
                    len(kd.boxes),
                    float((sizes == 1).mean()),
                    _errors(x, _structure_estimate(x, kd.boxes), boxes)[0],
                    _errors(x, kd.estimate, boxes)[0],
                    _errors(x, cells, boxes)[0],
                )
            )
        m = np.mean(rows, axis=0)
        out[eps] = dict(
            zip(("partitions", "single_cell_share", "layout", "kd", "cells"), m, strict=True)
        )
    return out


def _reason_lines(res: dict[str, dict]) -> list[str]:
    lines = [
        "Project kd-tree vs cell-based, absolute count error averaged over the releases; "
        "*layout* = the kd-tree's partitions with their TRUE counts, uniform inside (its "
        "uniformity error alone, no partition noise).",
        "",
        "| data | α | partitions | one-cell share | layout | kd-tree | cell-based | reason |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in res.items():
        for eps, v in r["reasons"].items():
            if v["kd"] < v["cells"]:
                why = "kd-tree wins"
            elif v["layout"] >= v["cells"]:
                why = "loses: layout alone ≥ cell-based (partitions not uniform inside)"
            else:
                why = "loses: partition noise (layout alone < cell-based)"
            lines.append(
                f"| {name} | {eps:g} | {v['partitions']:.0f} | {v['single_cell_share']:.2f} | "
                f"{v['layout']:.3g} | {v['kd']:.3g} | {v['cells']:.3g} | {why} |"
            )
    return lines


def _findings(res: dict[str, dict]) -> list[str]:
    out = []
    for name, r in res.items():
        hier = r["height"]
        hs = sorted(hier)
        h_best = r["best_height"]
        u_shape = hs[0] < h_best < hs[-1]
        out.append(
            f"- **{name}**, Figs. 9/10: hierarchical error is least at height {h_best} "
            f"(paper: ≈ 13); {'U-shaped as in the paper' if u_shape else 'monotone here'}."
        )
        for inf in (False, True):
            v = {k: r["xi0"][(inf, k)][0] for k in XI0S}
            k_best = min(v, key=v.get)
            spread = max(v.values()) / min(v.values())
            out.append(
                f"  Figs. 11/12 ({'inference' if inf else 'paper Alg. 2'}): ξ₀·ε = {k_best:g} "
                f"is best; ξ₀ changes the absolute error {spread:.1f}× "
                f"({'agrees' if spread > 1.5 else 'disagrees'}: the paper finds ξ₀ matters)."
            )
        alpha = r["alpha"]
        algos = sorted({a for a, _ in alpha})
        for kd in ("kd-tree (paper)", "kd-tree (project)"):
            for m, lab in ((0, "absolute"), (1, "relative")):
                wins = sum(
                    all(
                        alpha[(kd, e)][m] < alpha[(a, e)][m]
                        for a in algos
                        if not a.startswith("kd")
                    )
                    for e in ALPHAS
                )
                out.append(
                    f"  Figs. 13/14 ({lab}): {kd} beats cell-based and hierarchical at "
                    f"{wins}/{len(ALPHAS)} values of α"
                    + (" (agrees)" if wins == len(ALPHAS) else "")
                )
        layout = [e for e, v in r["reasons"].items() if v["kd"] >= v["cells"] <= v["layout"]]
        noise = [e for e, v in r["reasons"].items() if v["layout"] < v["cells"] <= v["kd"]]
        if layout or noise:
            out.append(
                "  Where the project kd-tree loses to cell-based (absolute, measured below): "
                + "; ".join(
                    f"α ∈ {{{', '.join(f'{e:g}' for e in es)}}}: {why}"
                    for es, why in (
                        (layout, "its layout alone (true counts, uniform in its partitions) "
                         "is already worse than cell-based — the partitions are not uniform "
                         "inside"),
                        (noise, "the layout is good enough; the partition noise is not"),
                    )
                    if es
                )
                + "."
            )
        else:
            out.append("  The project kd-tree beats cell-based at every α (absolute).")
    return out


def _figures(res: dict[str, dict]) -> dict[str, bytes]:
    pngs = {}
    names = list(res)
    for key, title in (
        ("height", "hierarchical kd-tree vs height"),
        ("xi0", "kd-tree vs ξ₀·ε"),
        ("alpha", "error vs α"),
    ):
        fig, axes = new_figure(4.0 * len(names), 6.0, nrows=2, ncols=len(names), squeeze=False)
        for j, name in enumerate(names):
            r = res[name][key]
            for m, lab in ((0, "absolute count error"), (1, "relative count error")):
                ax = axes[m][j]
                if key == "height":
                    hs = sorted(r)
                    ax.plot(hs, [r[h][m] for h in hs], marker="o")
                    ax.set_xlabel("height")
                elif key == "xi0":
                    for inf, ls in ((False, "-"), (True, "--")):
                        ks = [k for k in XI0S if math.isfinite(k)]
                        ax.plot(
                            ks,
                            [r[(inf, k)][m] for k in ks],
                            marker="o",
                            ls=ls,
                            label="inference" if inf else "paper Alg. 2",
                        )
                    ax.set_xscale("log")
                    ax.set_xlabel("ξ₀·ε")
                    ax.legend(fontsize=7)
                else:
                    for a in sorted({a for a, _ in r}):
                        ax.plot(ALPHAS, [r[(a, e)][m] for e in ALPHAS], marker="o", label=a)
                    ax.set_xscale("log")
                    ax.set_xlabel("α (ε)")
                    ax.legend(fontsize=7)
                ax.set_yscale("log")
                ax.set_ylabel(lab)
                ax.set_title(f"{name}: {title}", fontsize=9)
        pngs[f"xiao_{key}.png"] = figure_png(fig)
    return pngs


def _table(res: dict[str, dict]) -> list[str]:
    lines = [
        "| data | algorithm | " + " | ".join(f"α={e:g}" for e in ALPHAS) + " |",
        "|---|---|" + "---|" * len(ALPHAS),
    ]
    for name, r in res.items():
        for a in sorted({a for a, _ in r["alpha"]}):
            cells = " | ".join(
                f"{r['alpha'][(a, e)][0]:.3g} / {r['alpha'][(a, e)][1]:.2g}" for e in ALPHAS
            )
            lines.append(f"| {name} | {a} | {cells} |")
    return lines


def write_xiao_report(
    out_dir: str | Path, *, quick: bool = False, data_dir: Path | None = None
) -> Path:
    """Run the experiments and write ``xiao.md`` and the PNGs to ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    res = xiao_experiments(xiao_cubes(data_dir), releases=2 if quick else 10)
    for fname, png in _figures(res).items():
        (out / fname).write_bytes(png)
    lines = [
        "# Xiao, Xiong & Yuan (kd-tree) reproduced in shape",
        "",
        f"{SCALE:,} records per data set, {N_QUERIES} random rectangles, "
        f"{2 if quick else 10} releases per point, seed {SEED}; ε = {EPS_SWEEP} for the "
        f"height and ξ₀ sweeps; kd-tree defaults: paper ξ₀·ε = {XI0_TIMES_EPSILON_PAPER:g}, "
        f"project ξ₀·ε = {XI0_TIMES_EPSILON:g} with leaf inference. Relative error with "
        f"sanity bound {SANITY:g}·N. Generated by `research.xiao_report`.",
        "",
        "## Where the shape agrees",
        "",
        *_findings(res),
        "",
        "## Where the kd-tree loses, and why (measured)",
        "",
        *_reason_lines(res),
        "",
        "## Error vs α (absolute / relative), Figs. 13/14",
        "",
        *_table(res),
        "",
        "![height](xiao_height.png)",
        "![xi0](xiao_xi0.png)",
        "![alpha](xiao_alpha.png)",
        "",
    ]
    path = out / "xiao.md"
    path.write_text("\n".join(lines))
    return path


def main(argv: list[str] | None = None) -> None:
    """``python -m research.xiao_report [--quick] [OUT_DIR]`` (default: the bench results)."""
    import argparse

    ap = argparse.ArgumentParser(description="Xiao et al. kd-tree reproduction report")
    default = REPO / "bench" / "results" / "histograms_2d_xiao"
    ap.add_argument("out", nargs="?", default=str(default))
    ap.add_argument("--quick", action="store_true", help="2 releases per point instead of 10")
    args = ap.parse_args(argv)
    write_xiao_report(args.out, quick=args.quick)


if __name__ == "__main__":
    main()
