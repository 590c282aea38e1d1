"""The release stage runs ``pegasus-post``: keyed replay-safe noise, state as bytes, ledger."""

from __future__ import annotations

from occupancy.buildings import load_site
from streams.pipeline.release import Releaser
from streams.settings import load_settings

ENV = {"OCCUSTREAM_SECRET": "s" * 32, "OCCUSTREAM_PRIVACY_UNIT": "event",
       "OCCUSTREAM_MECHANISMS": "pegasus-post",
       "OCCUSTREAM_MIDE": "false", "OCCUSTREAM_PEGASUS_POST_EPSILON": "0.5"}


def test_pegasus_post_tick_is_replayed_exactly_and_charged() -> None:
    site = load_site("dbh")
    counts = [i % 7 for i in range(len(site.location_ids))]
    outs = []
    for _ in range(2):  # a replay after a crash: same secret, tick, counts and state
        rel = Releaser(load_settings(env=ENV), site)
        states: dict = {}
        vals = []
        for k in range(3):
            out, states = rel.run(1_767_600_000.0 + 300 * k, counts, [], states)
            vals.append(out.releases[0].values)
            assert out.releases[0].mechanism == "pegasus-post"
            assert [r["mechanism"] for r in out.ledger] == ["pegasus-post"]
            assert out.ledger[0]["epsilon"] == 0.5
        outs.append((vals, states["pegasus-post"]))
    assert outs[0] == outs[1]
    assert all(v >= 0 and v == int(v) for v in outs[0][0][-1])
