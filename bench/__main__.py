"""Run the benchmarks: ``python -m bench [--quick] [NAME ...]`` (``--quick`` → NAME_quick.json)."""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import sys
import time
from pathlib import Path

from bench import log_progress

HERE = Path(__file__).parent


def _discover() -> list[str]:
    return sorted(p.stem[len("bench_"):] for p in HERE.glob("bench_*.py"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="occustream bench", description=__doc__)
    parser.add_argument(
        "names", nargs="*", help=f"benchmarks to run (default all: {', '.join(_discover())})"
    )
    parser.add_argument("--quick", action="store_true", help="fewer repeats, smaller sizes")
    args = parser.parse_args(argv)
    log_progress()
    names = args.names or _discover()
    unknown = [n for n in names if n not in _discover()]
    if unknown:
        print(f"bench: unknown benchmark(s) {unknown}; available: {_discover()}", file=sys.stderr)
        return 2
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    failed = 0
    for name in names:
        print(f"== {name}", flush=True)
        t0 = time.perf_counter()
        try:
            mod = importlib.import_module(f"bench.bench_{name}")
            figures = mod.run(quick=args.quick)
        except Exception as exc:  # noqa: BLE001 - report and go on with the others
            print(f"   FAILED: {type(exc).__name__}: {exc}", flush=True)
            failed += 1
            continue
        figures = {"machine": platform.machine(), "cpus": __import__("os").cpu_count(),
                   "wall_s": round(time.perf_counter() - t0, 2), **figures}
        # a --quick run never overwrites the full run's figures (the committed results)
        target = out / (f"{name}_quick.json" if args.quick else f"{name}.json")
        target.write_text(json.dumps(figures, indent=2, default=str) + "\n")
        for k, v in figures.items():
            print(f"   {k}: {v}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
