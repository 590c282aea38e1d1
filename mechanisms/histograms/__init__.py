"""Differentially private histogram release (SORTaki, DAWA, DPCube, AHP, kd-tree).

Pure numpy: no I/O. Sources: Doudalis & Mehrotra, "SORTaki" (docs/MECHANISMS.md),
Xiao, Xiong & Yuan, "Differentially private data release through multidimensional
partitioning"; docs/MECHANISMS.md "SORTaki" and
"Multidimensional partitioning". Noise is drawn only in :mod:`._noise` and in functions
whose docstring starts with "NOISE DRAWING"; everything else is post-processing.

Entry points:
    :func:`release_histogram` — any SORTaki Table II configuration by name;
    :func:`~mechanisms.histograms.select.release_1d` — any 1-D algorithm by name (Table II,
    HB, Privelet, GreedyH, MWEM, HDMM) charged to an accountant;
    :func:`~mechanisms.histograms.select.auto_release` — the default 1-D release (the
    algorithm selected from public facts and a DP scale estimate);
    :func:`~mechanisms.histograms.kdtree.cell_based_release`,
    :func:`~mechanisms.histograms.kdtree.kd_tree_release` — multidimensional releases;
    :mod:`~mechanisms.histograms.evaluation` — DPBench-style workloads and error.
"""

from mechanisms.histograms.bins import Partition
from mechanisms.histograms.sortaki import (
    TABLE_II,
    BudgetShares,
    Config,
    HistogramRelease,
    parse_config,
    release_histogram,
    run_config,
)

__all__ = [
    "TABLE_II",
    "BudgetShares",
    "Config",
    "HistogramRelease",
    "Partition",
    "parse_config",
    "release_histogram",
    "run_config",
]
