"""Throughput of ``occupancy.schema.validate`` now vs at a base commit (issue 14 A cost).

Usage: ``python -m bench validate [--quick]`` or ``python bench/bench_validate.py
[BASE_COMMIT]`` (default 5c02db1, before the hostile-input hardening). Same process,
same records (a quarter day of dbh with the malformed scenario, seed 3), old and new
alternated, medians of 5 repeats (3 with ``--quick``).
"""

from __future__ import annotations

import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def run(quick: bool = False, base: str = "5c02db1") -> dict[str, object]:
    """Records/s of ``validate`` at ``base`` and now, and the time ratio."""
    from occupancy import schema as new
    from simulator import simulate

    # the module was streams/schema.py until the layering of issue 13 (61d4f9a)
    for where in ("occupancy/schema.py", "streams/schema.py"):
        got = subprocess.run(["git", "show", f"{base}:{where}"], cwd=ROOT,
                             capture_output=True, text=True)
        if got.returncode == 0:
            break
    else:
        raise RuntimeError(f"no schema module at {base}: {got.stderr.strip()}")
    src = got.stdout
    path = Path(tempfile.mkdtemp()) / "schema_old.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("schema_old", path)
    old = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["schema_old"] = old
    spec.loader.exec_module(old)  # type: ignore[union-attr]
    sim = simulate("dbh", days=0.25, seed=3, start="2026-01-06T08:00", scenarios=["malformed"])
    recs = [v for _, v, _ in sim.records()]
    aps = dict(sim.site.ap_location)

    def run(mod: object) -> float:
        clock = mod.EventClock(60.0, 3600.0)  # type: ignore[attr-defined]
        t = time.perf_counter()
        for r in recs:
            mod.validate(r, aps, clock)  # type: ignore[attr-defined]
        return time.perf_counter() - t

    res: dict[str, list[float]] = {"old": [], "new": []}
    for _ in range(3 if quick else 5):
        res["old"].append(run(old))
        res["new"].append(run(new))
    mo, mn = statistics.median(res["old"]), statistics.median(res["new"])
    return {"records": len(recs), "base": base, "base_per_s": round(len(recs) / mo),
            "now_per_s": round(len(recs) / mn), "time_ratio_now_over_base": round(mn / mo, 3)}


if __name__ == "__main__":
    print(run(base=sys.argv[1] if len(sys.argv) > 1 else "5c02db1"))
