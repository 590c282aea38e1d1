"""Benchmarks: `make bench` (or `python -m bench [NAME ...]`).

Each ``bench/bench_*.py`` module defines ``run(quick: bool = False) -> dict`` and
returns its figures (medians over repeats, ratios against baselines measured in the
same process). Results are printed and written to ``bench/results/NAME.json``.
"""

from __future__ import annotations

import logging


def log_progress() -> None:
    """Show the benchmarks' progress lines (INFO on the ``bench`` loggers) on stderr.

    For the command-line entry points only: library code logs, the CLI decides what shows.
    """
    logging.basicConfig(format="%(message)s")
    logging.getLogger("bench").setLevel(logging.INFO)
