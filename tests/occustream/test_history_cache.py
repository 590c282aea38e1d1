"""The demo's history cache: a second start loads what the first computed, nothing else."""

from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import Path

from occustream.history import cache_key, release_history_cached
from streams.settings import Settings

END = 1_768_262_100  # Mon 2026-01-12 23:55 UTC


def _docs(h: object) -> list[dict]:
    return [{**asdict(o), "expost": []} for o in h.outs]  # type: ignore[attr-defined]


def test_cached_history_equals_the_computed_one(tmp_path: Path) -> None:
    s = Settings(site="dbh", mechanisms=("laplace",), secret=b"history-cache-secret",
                 privacy_unit="event")
    first, hit1 = release_history_cached(s, start_ts=END, days=0.25, seed=2, cache_dir=tmp_path)
    again, hit2 = release_history_cached(s, start_ts=END, days=0.25, seed=2, cache_dir=tmp_path)
    assert (hit1, hit2) == (False, True)
    assert _docs(again) == _docs(first) and again.metas == first.metas
    assert again.settings.mechanisms == first.settings.mechanisms
    assert all(p.stat().st_mode & 0o077 == 0 for p in tmp_path.iterdir())  # owner only
    # another secret (other noise), seed or window: another key, computed again
    other = replace(s, secret=b"another-cache-secret")
    keys = {cache_key(x, start_ts=t, days=0.25, seed=sd)
            for x, t, sd in ((s, END, 2), (other, END, 2), (s, END, 3), (s, END - 300, 2))}
    assert len(keys) == 4
    # where the services run does not matter
    moved = replace(s, redis_url="redis://elsewhere:6379/0", kafka_bootstrap="x:9092")
    assert cache_key(moved, start_ts=END, days=0.25, seed=2) == cache_key(
        s, start_ts=END, days=0.25, seed=2)
