"""The pipeline's stage state machines (no Kafka) equal the oracle, under any batching,
partitioning and replay from an earlier offset."""

from __future__ import annotations

import json
import math
import zlib

import numpy as np
import pytest

from occupancy.buildings import load_site
from occupancy.oracle import occupancy_oracle
from streams.pipeline.identity import TTLIdentity, pseudonymizer, ttl_step
from streams.pipeline.occupancy import OccupancyState
from streams.pipeline.presence import PartitionState, StageConfig, redact

SECRET = b"test-secret-0123456789abcdef"
TTL_S = 1200.0


@pytest.fixture(scope="module")
def site():
    return load_site("dbh")


@pytest.fixture(scope="module")
def sim(site):
    from simulator import simulate

    return simulate(site, days=1.0, seed=3, scenarios=["overcapacity", "malformed"])


def _cfg(site):
    return StageConfig(ap_location=dict(site.ap_location),
                       location_index=dict(site.location_index), tick_s=300.0,
                       validity_s=600.0, lateness_s=60.0, max_future_s=3600.0,
                       ttl_s=TTL_S, secret=SECRET)


def _partitioned(sim, n):
    parts = [[] for _ in range(n)]
    for key, value, _ in sim.records():
        p = zlib.crc32(key or b"") % n
        parts[p].append((len(parts[p]), value))
    return parts


def _run(site, parts, batch, rng, *, replay_every=0):
    cfg = _cfg(site)
    pseudo = pseudonymizer(SECRET)
    states = [PartitionState(p) for p in range(len(parts))]
    partial_log = []
    pos = [0] * len(parts)
    dlq = []
    while any(pos[p] < len(parts[p]) for p in range(len(parts))):
        p = int(rng.integers(len(parts)))
        if pos[p] >= len(parts[p]):
            continue
        recs = parts[p][pos[p]:pos[p] + batch]
        res = states[p].process(recs, cfg, pseudo, ttl_step)
        dlq += res.dlq
        partial_log += [x.to_json(len(parts), site.id) for x in res.partials]
        pos[p] += len(recs)
        if replay_every and rng.random() < replay_every:
            # crash: restore from the checkpoint and rewind the input a little
            states[p] = PartitionState.from_bytes(states[p].to_bytes())
            pos[p] = max(0, pos[p] - int(rng.integers(1, 3 * batch)))
    occ = OccupancyState()
    final = []
    for i, raw in enumerate(partial_log):
        final += occ.process([(i, raw)], 300.0)
        if replay_every and i % 7 == 0:
            occ = OccupancyState.from_bytes(occ.to_bytes())
            final += occ.process([(j, partial_log[j]) for j in range(max(0, i - 3), i + 1)],
                                 300.0)
    return final, dlq


@pytest.mark.parametrize("n_parts,batch,replay", [(1, 5000, 0), (4, 997, 0), (3, 50, 0.2)])
def test_stages_equal_oracle(site, sim, n_parts, batch, replay):
    rng = np.random.default_rng(n_parts * 100 + batch)
    final, dlq = _run(site, _partitioned(sim, n_parts), batch, rng, replay_every=replay)
    ticks = [f.tick for f in final]
    assert len(ticks) > 250 and ticks == sorted(set(ticks))
    assert np.all(np.diff(ticks) == 300.0)
    oracle = occupancy_oracle(sim.events(), site.ap_location, site.location_ids, ticks=ticks)
    got = np.array([f.counts for f in final])
    assert np.array_equal(got, oracle.counts)
    assert got.sum() > 0
    ttl_oracle = occupancy_oracle(sim.events(), site.ap_location, site.location_ids,
                                  ticks=ticks, identity=TTLIdentity(SECRET, TTL_S))
    got_ttl = np.array([f.ttl for f in final])
    assert np.array_equal(got_ttl, ttl_oracle.counts)
    assert got_ttl.sum() > got.sum()  # long stays counted under several pseudonyms
    reasons = {json.loads(d)["reason"].split(":")[0] for d in dlq}
    assert {"bad_mac", "unknown_ap", "too_late"} <= reasons


def test_dlq_redacts_macs():
    raw = b'{"device": "AA:BB:CC:DD:EE:FF", "ap": "nope", "ts": 1}'
    assert "AA:BB" not in redact(raw) and "<redacted>" in redact(raw)
    assert "aa:bb" not in redact(b'not json aa:bb:cc:dd:ee:ff')
    assert "aabbccddeeff" not in redact(b'{"device": "aabbccddeeff"}')


def test_watermark_markers_finalise_idle_partitions(site, sim):
    """A quiet partition holds ticks back until a marker (from the log) moves its clock."""
    from streams.pipeline.presence import sign_marker

    parts = _partitioned(sim, 4)
    cfg = _cfg(site)
    pseudo = pseudonymizer(SECRET)
    states = [PartitionState(p) for p in range(4)]
    log = []
    for p in range(4):
        log += [x.to_json(4, site.id) for x in states[p].process(parts[p], cfg, pseudo).partials]
    occ = OccupancyState()
    final = occ.process(list(enumerate(log)), 300.0)
    g = max(st.max_ts for st in states)
    oracle_all = occupancy_oracle(sim.events(), site.ap_location, site.location_ids)
    blocked = occ.blocking()
    if len(final) == len(oracle_all.ticks):
        pytest.skip("no partition was idle at the end of this simulated day")
    assert blocked
    # what the occupancy stage does after idle_s, round after round: every partition a
    # tick waits for gets a marker (here: all those behind g)
    for p in [p for p in range(4) if states[p].max_ts < g]:
        res = states[p].process([(len(parts[p]), sign_marker(g, SECRET, p))], cfg, pseudo)
        assert not res.dlq and res.processed == 0
        log += [x.to_json(4, site.id) for x in res.partials]
    final += occ.process([(i, v) for i, v in enumerate(log)], 300.0)
    ticks = [f.tick for f in final]
    # every partition's clock is now at least g (quorum clocks, occupancy.clock): the
    # ticks run from the oracle's first one to the last one below g − lateness
    last = (math.ceil((g - cfg.lateness_s) / 300.0) - 1) * 300.0
    assert ticks == list(np.arange(oracle_all.ticks[0], last + 1, 300.0))
    oracle = occupancy_oracle(sim.events(), site.ap_location, site.location_ids, ticks=ticks)
    assert np.array_equal(np.array([f.counts for f in final]), oracle.counts)


@pytest.mark.parametrize("jitter_s,max_parts", [(3000.0, 1), (20.0, 4)])
def test_property_stream_equals_oracle(site, jitter_s, max_parts):
    """Hypothesis: the stages give the oracle's counts at every final tick, for any event
    sequence, batching and crash/replay points. With wild jitter (late and out-of-order
    records, bad MACs) on one partition; with jitter inside the allowed lateness (the
    simulator's contract) on up to four partitions, whose clocks are per partition."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    aps = [a.id for a in site.aps][:6]
    macs = [f"02:00:00:00:00:{i:02x}" for i in range(8)]
    t0 = 1767600000.0
    event = st.one_of(
        st.tuples(st.sampled_from(macs), st.sampled_from(aps), st.floats(-jitter_s, jitter_s)),
        st.tuples(st.just("zz"), st.sampled_from(aps), st.floats(0, 10)),  # bad MAC
    )

    @settings(max_examples=40, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.lists(event, min_size=30, max_size=150), st.integers(1, max_parts),
           st.integers(1, 40), st.integers(0, 2**32 - 1))
    def check(evs, n_parts, batch, seed):
        raws, parts = [], [[] for _ in range(n_parts)]
        for i, (mac, ap, dt) in enumerate(evs):  # arrival order = list order
            raw = json.dumps({"device": mac, "ap": ap, "ts": t0 + 30 * i + dt}).encode()
            raws.append(raw)
            p = zlib.crc32(mac.encode()) % n_parts
            parts[p].append((len(parts[p]), raw))
        final, _ = _run(site, parts, batch, np.random.default_rng(seed), replay_every=0.3)
        ticks = [f.tick for f in final]
        if ticks:
            oracle = occupancy_oracle(raws, site.ap_location, site.location_ids, ticks=ticks)
            assert np.array_equal(np.array([f.counts for f in final]), oracle.counts)

    check()


def test_ttl_state_holds_only_salts_that_have_not_ended(site, sim):
    # salts are keyed by their start time, so expired states are dropped at each
    # finalisation: memory follows the devices of the last ttl_s, not every device ever
    cfg = _cfg(site)
    state = PartitionState(0)
    records = [(i, value) for i, (_, value, _) in enumerate(sim.records())]
    seen: set[str] = set()
    sizes = []
    pseudo = pseudonymizer(SECRET)
    for start in range(0, len(records), 2000):
        chunk = records[start:start + 2000]
        state.process(chunk, cfg, pseudo, ttl_step)
        seen.update(state.ttl_state)
        wm = state.watermark(cfg.lateness_s)
        assert all(v.salt_started_ts + TTL_S > wm for v in state.ttl_state.values())
        sizes.append(len(state.ttl_state))
    assert max(sizes) < len(seen)  # something was dropped over the day
    assert sizes[-1] < 0.5 * len(seen)
