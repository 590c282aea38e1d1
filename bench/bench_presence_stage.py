"""Records/s of the presence stage alone (``PartitionState.process``, no Kafka, no Redis).

``python -m bench presence_stage [--quick]``: progress on the ingest hot path without a
broker. The records are ``bench pipeline``'s (dbh, overcapacity scenario, seed 11; one
simulated day with ``--quick``, three without), split over 4 partitions by key as Kafka
would, fed in batches of 5,000 per partition (``batch_max`` 20,000 over 4 partitions),
TTL tracking on (the default mechanisms include ``ttl``), a fresh state and a fresh
pseudonymizer per repeat (so every HMAC is paid).

Figures (medians over repeats, this process):

* ``stage_records_per_s`` — ``process`` only;
* ``stage_with_checkpoint_records_per_s`` — ``process`` plus the checkpoint
  serialisation (``to_bytes``) the runtime does after every batch;
* ``stage_base_records_per_s`` / ``stage_speedup_vs_base`` — the same for
  ``streams/pipeline/presence.py`` at ``BASE`` (the commit before the batched hot path),
  loaded from git into this process and alternated with the current one.
"""

from __future__ import annotations

import gc
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SECRET = b"bench-secret-0123456789abcdef"
#: The last commit with the record-by-record presence loop.
BASE = "871e3fb"
PARTITIONS = 4
BATCH = 5000


def records(days: float) -> list[tuple[int, list[tuple[int, bytes]]]]:
    """``bench pipeline``'s records as ``(partition, [(offset, value), ...])``."""
    from simulator import simulate

    sim = simulate("dbh", days=days, seed=11, scenarios=["overcapacity"])
    parts: list[list[tuple[int, bytes]]] = [[] for _ in range(PARTITIONS)]
    for key, value, _ in sim.records():
        p = parts[zlib.crc32(key or b"") % PARTITIONS]
        p.append((len(p), value))
    return list(enumerate(parts))


def _base_module(base: str) -> ModuleType | None:
    try:
        src = subprocess.run(["git", "show", f"{base}:streams/pipeline/presence.py"],
                             cwd=ROOT, check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    path = Path(tempfile.mkdtemp()) / "presence_base.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("presence_base", path)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["presence_base"] = mod
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def _config(mod: Any) -> Any:
    from occupancy.buildings import load_site

    site = load_site("dbh")
    return mod.StageConfig(ap_location=dict(site.ap_location),
                           location_index=dict(site.location_index), tick_s=300.0,
                           validity_s=600.0, lateness_s=60.0, max_future_s=3600.0,
                           ttl_s=1800.0, secret=SECRET, track_ttl=True)


def stage_seconds(mod: Any, parts: list, *, checkpoint: bool = False) -> float:
    """Wall time of one pass of ``mod.PartitionState.process`` over ``parts``."""
    from streams.pipeline.identity import pseudonymizer, ttl_step

    cfg = _config(mod)
    pseudo = pseudonymizer(SECRET)
    states = {p: mod.PartitionState(p) for p, _ in parts}
    longest = max(len(recs) for _, recs in parts)
    gc.collect()  # every pass starts from the same heap (the last pass's states are garbage)
    t0 = time.perf_counter()
    for start in range(0, longest, BATCH):  # round robin, as a fetch of all partitions
        for p, recs in parts:
            batch = recs[start:start + BATCH]
            if batch:
                states[p].process(batch, cfg, pseudo, ttl_step)
                if checkpoint:
                    states[p].to_bytes()
    return time.perf_counter() - t0


def run(quick: bool = False, base: str = BASE) -> dict[str, Any]:
    """The figures of the module docstring."""
    from streams.pipeline import presence as new

    parts = records(1.0 if quick else 3.0)
    n = sum(len(r) for _, r in parts)
    repeats = 3 if quick else 5
    old = _base_module(base)
    t_new, t_ckpt, t_old = [], [], []
    for _ in range(repeats):  # alternated, so load on the machine hits both alike
        t_new.append(stage_seconds(new, parts))
        t_ckpt.append(stage_seconds(new, parts, checkpoint=True))
        if old is not None:
            t_old.append(stage_seconds(old, parts))
    out: dict[str, Any] = {
        "stage_records": n, "stage_repeats": repeats,
        "stage_records_per_s": round(n / statistics.median(t_new)),
        "stage_with_checkpoint_records_per_s": round(n / statistics.median(t_ckpt)),
    }
    if t_old:
        out["stage_base"] = base
        out["stage_base_records_per_s"] = round(n / statistics.median(t_old))
        out["stage_speedup_vs_base"] = round(statistics.median(t_old)
                                             / statistics.median(t_new), 2)
    return out


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
