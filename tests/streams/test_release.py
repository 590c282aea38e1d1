"""Release agents: what a tick releases and records (pure, no services)."""

from __future__ import annotations

from occupancy.buildings import load_site
from streams.pipeline.release import Releaser
from streams.settings import load_settings

SECRET_ENV = {"OCCUSTREAM_SECRET": "s" * 32, "OCCUSTREAM_PRIVACY_UNIT": "event"}  # event-level


def test_ttl_never_releases_the_true_counts() -> None:
    site = load_site("dbh")
    s = load_settings(env={**SECRET_ENV, "OCCUSTREAM_MECHANISMS": "laplace,ttl",
                           "OCCUSTREAM_MIDE": "false"})
    rel = Releaser(s.release_config(), site)
    counts = [7 + i % 5 for i in range(len(site.location_ids))]
    out, _ = rel.run(1_767_600_000.0, counts, [], {})
    assert [r.mechanism for r in out.releases] == ["laplace"]
    assert [r["mechanism"] for r in out.ledger] == ["laplace"]
    ttl = [c + 1 for c in counts]
    out, _ = rel.run(1_767_600_300.0, counts, ttl, {})
    by = {r.mechanism: r for r in out.releases}
    assert by["ttl"].values == [float(v) for v in ttl]
    assert sorted(r["mechanism"] for r in out.ledger) == ["laplace", "ttl"]
