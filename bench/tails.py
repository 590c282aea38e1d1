"""Which benchmark cells are *significantly* worse than a bound (issue 17's 1.2×).

A data-dependent release's error varies by a factor of 3–4 between trials, so the ratio
of two medians over a cell's trials is itself noisy: at 25 trials a cell whose true
ratio is 1.0 can read 1.2, and one at 1.3 can read 1.1. :func:`tail_significance`
says, per cell over the bound, whether the bound is exceeded beyond that noise — a
paired bootstrap over the trials, used by ``bench histograms_1d`` and by the 2-D tail
check of ``bench histograms_2d``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

#: bootstrap resamples of a cell's trials, and the one-sided level of the tail test
BOOT_RESAMPLES = 2000
TAIL_ALPHA = 0.05


def tail_significance(
    errors: dict[tuple, list[float]], peers: tuple[str, ...], default: str, bound: float = 1.2
) -> dict:
    """Which cells over ``bound`` are *significantly* over it: a paired bootstrap per cell.

    A cell's ratio is median(default) / min over the peers of median(peer) over its
    trials; the trials are resampled with replacement — the same trial indices for every
    algorithm, since trial t shares data and noise seeds across them (common random
    numbers) — :data:`BOOT_RESAMPLES` times, seed fixed. A cell is significantly over
    ``bound`` when the one-sided (1 − :data:`TAIL_ALPHA`) lower confidence bound of its
    ratio (the α-quantile of the resampled ratios, percentile method) is above ``bound``:
    a cell whose true ratio is at most ``bound`` is flagged with probability about α.
    ``errors``: every trial's error per (cell…, algorithm) key, the algorithm last.
    Returns the count, and every cell over ``bound`` with its ratio and both 90 % bounds.
    """
    rng = np.random.default_rng(2017)
    cells = sorted({k[:-1] for k in errors if k[-1] == default})
    flagged = {}
    for c in cells:
        own = np.asarray(errors[(*c, default)])
        peer = np.array([errors[(*c, p)] for p in peers])
        ratio = float(np.median(own) / np.median(peer, axis=1).min())
        if ratio <= bound:
            continue
        idx = rng.integers(0, len(own), (BOOT_RESAMPLES, len(own)))
        boot = np.median(own[idx], axis=1) / np.median(peer[:, idx], axis=2).min(axis=0)
        lo, hi = np.quantile(boot, [TAIL_ALPHA, 1 - TAIL_ALPHA])
        flagged[" ".join(map(str, c))] = {
            "ratio": round(ratio, 3), "lower_95": round(float(lo), 3),
            "upper_95": round(float(hi), 3), "significant": bool(lo > bound),
        }
    return {
        "bound": bound,
        "alpha": TAIL_ALPHA,
        "resamples": BOOT_RESAMPLES,
        "cells_over": len(flagged),
        "cells_significantly_over": sum(v["significant"] for v in flagged.values()),
        "cells": flagged,
    }


def plot_tails(sig: dict, path: Path, title: str) -> None:
    """Every cell over the bound: its ratio and 90 % bootstrap interval, the significant
    ones in red, the bound dotted — which tail cells are losses and which are noise."""
    from research.report import figure_png, new_figure

    cells = sorted(sig["cells"].items(), key=lambda kv: kv[1]["ratio"])
    fig, ax = new_figure(7.5, 1.5 + 0.32 * max(len(cells), 1))
    for i, (_, v) in enumerate(cells):
        colour = "tab:red" if v["significant"] else "tab:grey"
        ax.plot([v["lower_95"], v["upper_95"]], [i, i], color=colour, lw=2)
        ax.plot([v["ratio"]], [i], "o", color=colour, ms=5)
    ax.axvline(sig["bound"], ls=":", color="black", lw=1)
    ax.axvline(1.0, color="grey", lw=0.6)
    ax.set_yticks(range(len(cells)), [name for name, _ in cells], fontsize=7)
    ax.set_xlabel("default / best published: median over trials, "
                  "bar = 90 % paired bootstrap interval", fontsize=8)
    ax.set_title(
        f"{title}\n{sig['cells_significantly_over']} of {sig['cells_over']} cells over "
        f"{sig['bound']:g}× are significantly over (red: lower bound > {sig['bound']:g})",
        fontsize=9,
    )
    path.write_bytes(figure_png(fig))
