"""Benchmarks: `make bench` (or `python -m bench [NAME ...]`).

Each ``bench/bench_*.py`` module defines ``run(quick: bool = False) -> dict`` and
returns its figures (medians over repeats, ratios against baselines measured in the
same process). Results are printed and written to ``bench/results/NAME.json``.
"""
