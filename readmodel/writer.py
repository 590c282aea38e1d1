"""The cache writer: fills the Redis read model (occupancy/redis_layout.py) per final tick.

Redis is the read model; Kafka is the log of record. Writes are idempotent so a replay
after a crash changes nothing: per (mechanism, tick) the values are the same (replay-safe
noise), hash/sorted-set writes of equal members are no-ops, and the non-idempotent parts
(ledger entries, ε spent, baseline accumulation, alert stream entries) run in one
MULTI/EXEC transaction together with adding the tick to ``occ:{mech}:done``, and are
skipped when the tick is already there. ``occ:{mech}:done`` is a sorted set (score =
tick) trimmed to the series retention like ``occ:{mech}:ticks``: a replay reaches back
only to the last checkpoint, far less than the retention, so older flags are not needed.

Only released values, public parameters, alerts without ex-post ε and the internal
ledger are written. True counts go to ``eval:true:*`` only in evaluation mode.

MIDE's per-predicate ex-post ε is not written here: it goes to the pipeline's internal
state store only (:func:`streams.runtime.checkpoint.write_expost`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

from mechanisms.accounting import DEVICE_DAY_UNIT
from occupancy import incidents as inc
from occupancy import redis_layout as rl
from streams.pipeline.release import TickOutput

log = logging.getLogger(__name__)

ALERTS_MAXLEN = 10000
INCIDENT_EVENTS_MAXLEN = 10000
TRIM_EVERY_TICKS = 12
LEDGER_MAXLEN = 1_000_000
GAME_TRACES_MAXLEN = 100_000


def _tick_json(tick: float) -> int | float:
    return int(tick) if float(tick).is_integer() else float(tick)


def _day(tick: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(tick))


def _day_index(tick: float) -> int:
    """UTC day of a tick as days since the epoch (the day :func:`rl.slot_of` is within)."""
    return int(tick // 86400)


def queue_meta(pipe: Any, mech: str, meta: Mapping[str, Any]) -> None:
    """Queue a mechanism's public parameters (``occ:{mech}:meta``, values JSON-encoded).

    The ``queue_*`` functions are the one place that knows how the read model is
    written; they work on a sync or an async ``redis`` pipeline alike (queuing is
    synchronous in both), so the pipeline, the histogram release and the synthetic
    data all write the same keys the same way.
    """
    pipe.hset(rl.meta(mech), mapping={k: json.dumps(v) for k, v in meta.items()})


def queue_values(pipe: Any, mech: str, tick: float, values: Mapping[str, float], *,
                 retention_s: float | None = None) -> None:
    """Queue one tick's released values: latest, series (trimmed), the tick index."""
    tj = _tick_json(tick)
    latest: dict[str, str] = {}
    for loc, v in values.items():
        doc = json.dumps({"tick": tj, "value": v})
        latest[loc] = doc
        key = rl.series(mech, loc)
        pipe.zadd(key, {doc: tick})
        if retention_s is not None:
            pipe.zremrangebyscore(key, "-inf", f"({tick - retention_s}")
    if latest:
        pipe.hset(rl.latest(mech), mapping=latest)
    pipe.zadd(rl.ticks(mech), {str(tj): tick})
    if retention_s is not None:
        pipe.zremrangebyscore(rl.ticks(mech), "-inf", f"({tick - retention_s}")


def queue_history(pipe: Any, mech: str, ticks: Sequence[float], locations: Sequence[str],
                  values: Sequence[Sequence[float]]) -> None:
    """Queue many ticks of released values at once (one ZADD per location).

    The same documents as :func:`queue_values` tick by tick, for bulk loads (the
    synthetic read model): ``values[i][j]`` is location ``j`` at ``ticks[i]``; the last
    tick becomes ``latest``.
    """
    if not len(ticks):
        return
    tjs = [_tick_json(t) for t in ticks]
    for j, loc in enumerate(locations):
        pipe.zadd(rl.series(mech, loc), {
            json.dumps({"tick": tj, "value": row[j]}): float(t)
            for t, tj, row in zip(ticks, tjs, values, strict=True)})
    pipe.zadd(rl.ticks(mech), {str(tj): float(t) for t, tj in zip(ticks, tjs, strict=True)})
    last = values[-1]
    pipe.hset(rl.latest(mech), mapping={
        loc: json.dumps({"tick": tjs[-1], "value": last[j]}) for j, loc in enumerate(locations)})


def queue_ledger(pipe: Any, record: Mapping[str, Any], day: str) -> None:
    """Queue one ledger record (internal stream) and add its ε to the day's total."""
    pipe.xadd(rl.LEDGER_STREAM, {"data": json.dumps(dict(record))}, maxlen=LEDGER_MAXLEN,
              approximate=True)
    pipe.hincrbyfloat(rl.ledger_spent(day), record["mechanism"], float(record["epsilon"]))


def queue_alert(pipe: Any, alert: Mapping[str, Any]) -> None:
    """Queue an alert: the capped ``alerts`` stream and the pub/sub channel."""
    data = json.dumps(dict(alert))
    pipe.xadd(rl.ALERTS_STREAM, {"data": data}, maxlen=ALERTS_MAXLEN, approximate=True)
    pipe.publish(rl.ALERTS_CHANNEL, data)


def queue_game_result(pipe: Any, player: str, points: int, trace: Mapping[str, Any]) -> None:
    """Queue an IoT-DETECTIVE round played (dashboards/game.py).

    The player's points on the leaderboard, one more round played, the trace (capped).
    """
    pipe.zincrby(rl.GAME_LEADERBOARD, int(points), player)
    pipe.hincrby(rl.GAME_ROUNDS, player, 1)
    pipe.xadd(rl.GAME_TRACES, {"data": json.dumps(dict(trace))}, maxlen=GAME_TRACES_MAXLEN,
              approximate=True)


def queue_incident_step(pipe: Any, step: inc.Step) -> None:
    """Queue one tick of the incident state machine (occupancy/incidents.py).

    Writes the changed incident records (``incidents``, ``incidents:index``, the open
    set ``incidents:active``), appends each lifecycle event to ``incidents:events`` and
    publishes it on ``incidents``, and stores the machine's state. Call it once per tick
    and only under the tick's done-flag guard (as :meth:`CacheWriter.write_tick` does),
    so a replayed tick neither repeats an event nor moves the state twice.
    """
    for inc_id, rec in step.records.items():
        pipe.hset(rl.INCIDENTS, inc_id, json.dumps(rec))
        pipe.zadd(rl.INCIDENTS_INDEX, {inc_id: float(rec["opened"])})
        if rec.get("state") == inc.OPEN:
            pipe.zadd(rl.INCIDENTS_ACTIVE, {inc_id: float(rec["opened"])})
        else:
            pipe.zrem(rl.INCIDENTS_ACTIVE, inc_id)
    for ev in step.events:
        data = json.dumps(ev)
        pipe.xadd(rl.INCIDENTS_STREAM, {"data": data}, maxlen=INCIDENT_EVENTS_MAXLEN,
                  approximate=True)
        pipe.publish(rl.INCIDENTS_CHANNEL, data)
    pipe.set(rl.INCIDENTS_STATE, json.dumps(step.state))


def queue_update(pipe: Any, mech: str, tick: float) -> None:
    """Queue the ``occ:updates`` notification of a written tick."""
    pipe.publish(rl.UPDATES_CHANNEL, json.dumps({"mech": mech, "tick": _tick_json(tick)}))


def queue_baselines(pipe: Any, mech: str, fields: Mapping[str, str]) -> None:
    """Queue baseline documents (``occ:{mech}:baseline``)."""
    if fields:
        pipe.hset(rl.baseline(mech), mapping=dict(fields))


def queue_histogram(pipe: Any, day: str, algorithm: str, text: str) -> None:
    """Queue a released daily histogram document."""
    pipe.set(rl.histogram(day, algorithm), text)


def queue_dlq_counts(pipe: Any, app_id: str, partition: int, counts: Mapping[str, int]) -> None:
    """Queue the absolute DLQ counters of one partition (replay-safe)."""
    if counts:
        pipe.hset(rl.dlq_counts(app_id),
                  mapping={f"p{partition}:{k}": v for k, v in counts.items()})


def queue_demo_speed(pipe: Any, speed: float, role: str = "demo") -> None:
    """Queue the pace the demo's page asks for (``demo:speed``; 0 = paused)."""
    pipe.set(rl.DEMO_SPEED, json.dumps({"speed": float(speed), "ts": time.time(),
                                        "role": role}))


def queue_demo_clock(pipe: Any, sim_ts: float, speed: float) -> None:
    """Queue the demo producer's simulated "now" and pace (``demo:clock``)."""
    pipe.set(rl.DEMO_CLOCK, json.dumps({"sim_ts": float(sim_ts), "speed": float(speed),
                                        "wall_ts": time.time()}))


class CacheWriter:
    """Writes released ticks to Redis (``redis.asyncio`` client)."""

    def __init__(self, client: Any, locations: Sequence[str], *, tick_s: float,
                 retention_ticks: int, eval_mode: bool = False,
                 incident_quiet_s: float = inc.QUIET_S) -> None:
        self.r = client
        self.locations = list(locations)
        self.tick_s = tick_s
        self.retention_s = retention_ticks * tick_s
        self.eval_mode = eval_mode
        self.incident_quiet_s = incident_quiet_s
        self._done_checked: set[str] = set()

    async def write_meta(self, metas: Mapping[str, Mapping[str, Any]]) -> None:
        """Publish each mechanism's public parameters (``occ:{mech}:meta``)."""
        pipe = self.r.pipeline(transaction=False)
        for mech, meta in metas.items():
            queue_meta(pipe, mech, meta)
        await pipe.execute()

    async def write_tick(self, out: TickOutput, true_counts: Sequence[int] | None = None) -> None:
        """Write one final tick: releases, baselines, ledger, alerts (idempotent).

        The ``occ:{mech}:done`` flags and the baselines are read under WATCH, so two
        writers of the same tick (e.g. overlapping owners during a rebalance) cannot
        both see "not done" and charge the ledger twice: the second transaction aborts
        and retries, and then finds the tick done.
        """
        from redis.exceptions import WatchError

        # device-day releases have a ledger record at the day's first tick only
        ledger_mechs = sorted({r["mechanism"] for r in out.ledger} | {"mide"}
                              | {rel.mechanism for rel in out.releases})
        await self._migrate_done(ledger_mechs)
        watched = ([rl.release_done(m) for m in ledger_mechs]
                   + sorted({rl.baseline(rel.mechanism) for rel in out.releases})
                   + [rl.INCIDENTS_STATE])
        async with self.r.pipeline(transaction=True) as tx:
            while True:
                await tx.watch(*watched)
                try:
                    await self._write_tick(tx, out, ledger_mechs, true_counts)
                    return
                except WatchError:
                    log.info("tick %s: concurrent cache write; retrying", out.tick)

    async def _write_tick(self, tx: Any, out: TickOutput, ledger_mechs: Sequence[str],
                          true_counts: Sequence[int] | None) -> None:
        tick = out.tick
        tj = _tick_json(tick)
        slot = rl.slot_of(tick, self.tick_s)
        day = _day(tick)
        mechs = [rel.mechanism for rel in out.releases]
        # reads on another connection in one round trip: WATCH (on tx's connection) is
        # already set, so any change after it aborts the transaction
        pipe = self.r.pipeline(transaction=False)
        for m in ledger_mechs:
            pipe.zscore(rl.release_done(m), str(tj))
        # baselines need the current accumulators of the slot
        for rel in out.releases:
            pipe.hmget(rl.baseline(rel.mechanism),
                       [rl.baseline_field(loc, slot) for loc in self.locations])
        pipe.get(rl.INCIDENTS_STATE)
        got = await pipe.execute()
        done = {m: v is not None
                for m, v in zip(ledger_mechs, got[:len(ledger_mechs)], strict=True)}
        current = got[len(ledger_mechs):-1]
        incident_state = got[-1]

        tx.multi()
        trim = slot % TRIM_EVERY_TICKS == 0  # trimming every tick doubles the commands
        for rel, cur in zip(out.releases, current, strict=True):
            mech = rel.mechanism
            queue_values(tx, mech, tick, dict(zip(self.locations, rel.values, strict=False)),
                         retention_s=self.retention_s if trim else None)
            if not trim:
                tx.zremrangebyscore(rl.ticks(mech), "-inf", f"({tick - self.retention_s}")
            if not done[mech]:
                tx.zadd(rl.release_done(mech), {str(tj): tick})
                queue_baselines(tx, mech, _baseline_update(
                    self.locations, slot, _day_index(tick), rel.values, cur))
        released = {rel.mechanism for rel in out.releases}
        for rec in out.ledger:
            mech = rec["mechanism"]
            if done.get(mech, False):
                continue
            if mech not in released and mech != "mide":  # mide-hour, device-day alerts
                tx.zadd(rl.release_done(mech), {str(tj): tick})
            queue_ledger(tx, rec, _ledger_day(rec, day))
        if not done["mide"] and (out.alerts or any(r["mechanism"] == "mide"
                                                   for r in out.ledger)
                                 or _incidents_open(incident_state)):
            tx.zadd(rl.release_done("mide"), {str(tj): tick})
            for alert in out.alerts:
                queue_alert(tx, {**alert, "tick": tj})
            # every tick MIDE decided (positive or not) moves the incidents: the quiet
            # period is event time without a positive decision
            queue_incident_step(tx, self._incident_step(out, incident_state))
        if self.eval_mode and true_counts is not None:
            for loc, v in zip(self.locations, true_counts, strict=False):
                tx.zadd(rl.eval_true(loc), {json.dumps({"tick": tj, "value": int(v)}): tick})
        cube = getattr(out, "cube", None)
        if cube:  # the previous day's cube (identical on a replay: keyed noise)
            queue_histogram(tx, cube["day"], cube["kind"], json.dumps(cube, sort_keys=True))
        privacy = getattr(out, "privacy", None)
        if privacy:  # public figures only: unit, ε_day, δ, spent today, projection
            tx.set(rl.PRIVACY_STATUS, json.dumps(privacy, sort_keys=True))
        for m in ledger_mechs:
            tx.zremrangebyscore(rl.release_done(m), "-inf", f"({tick - self.retention_s}")
        for mech in mechs:
            queue_update(tx, mech, tick)
        await tx.execute()

    async def write_history(self, outs: Sequence[TickOutput], *, chunk: int = 288) -> None:
        """Write many final ticks (in tick order) in bulk: what :meth:`write_tick` leaves.

        For a read model no worker writes yet (``occustream demo``'s week of history,
        written before its workers start): the done flags are read once instead of under
        WATCH per tick, baselines and the incident machine are folded in memory with the
        same functions (:func:`_baseline_update`, :func:`occupancy.incidents.step`), and
        ``chunk`` ticks go in one MULTI/EXEC — the same keys, documents, ledger and
        alerts as tick by tick (``tests/readmodel/test_write_history.py`` compares them),
        about ten times fewer round trips. No evaluation-mode true counts.
        """
        if not outs:
            return
        outs = sorted(outs, key=lambda o: o.tick)
        rel_mechs = sorted({rel.mechanism for o in outs for rel in o.releases})
        ledger_mechs = sorted({r["mechanism"] for o in outs for r in o.ledger} | {"mide"}
                              | set(rel_mechs))
        await self._migrate_done(ledger_mechs)
        lo, hi = outs[0].tick, outs[-1].tick
        pipe = self.r.pipeline(transaction=False)
        for m in ledger_mechs:
            pipe.zrangebyscore(rl.release_done(m), lo, hi, withscores=True)
        slots = sorted({rl.slot_of(o.tick, self.tick_s) for o in outs})
        fields = [rl.baseline_field(loc, slot) for slot in slots for loc in self.locations]
        for m in rel_mechs:
            pipe.hmget(rl.baseline(m), fields)
        pipe.get(rl.INCIDENTS_STATE)
        got = await pipe.execute()
        done = {m: {float(sc) for _, sc in rows}
                for m, rows in zip(ledger_mechs, got[:len(ledger_mechs)], strict=True)}
        base = {m: dict(zip(fields, cur, strict=True))
                for m, cur in zip(rel_mechs, got[len(ledger_mechs):-1], strict=True)}
        incident_state = got[-1]
        for i in range(0, len(outs), chunk):
            part = outs[i:i + chunk]
            tx = self.r.pipeline(transaction=True)
            changed: dict[str, dict[str, str]] = {m: {} for m in rel_mechs}
            for m in rel_mechs:
                rows = [(o.tick, rel.values) for o in part for rel in o.releases
                        if rel.mechanism == m]
                queue_history(tx, m, [t for t, _ in rows], self.locations,
                              [list(v) for _, v in rows])
            for out in part:
                tick, tj = out.tick, _tick_json(out.tick)
                slot, day = rl.slot_of(tick, self.tick_s), _day(tick)
                released = {rel.mechanism for rel in out.releases}
                for rel in out.releases:
                    m = rel.mechanism
                    if tick in done[m]:
                        continue
                    tx.zadd(rl.release_done(m), {str(tj): tick})
                    keys = [rl.baseline_field(loc, slot) for loc in self.locations]
                    new = _baseline_update(self.locations, slot, _day_index(tick), rel.values,
                                           [base[m][k] for k in keys])
                    base[m].update(new)
                    changed[m].update(new)
                for rec in out.ledger:
                    m = rec["mechanism"]
                    if tick in done.get(m, ()):
                        continue
                    if m not in released and m != "mide":
                        tx.zadd(rl.release_done(m), {str(tj): tick})
                    queue_ledger(tx, rec, _ledger_day(rec, day))
                if tick not in done["mide"] and (out.alerts or any(
                        r["mechanism"] == "mide" for r in out.ledger)
                        or _incidents_open(incident_state)):
                    tx.zadd(rl.release_done("mide"), {str(tj): tick})
                    for alert in out.alerts:
                        queue_alert(tx, {**alert, "tick": tj})
                    step = self._incident_step(out, incident_state)
                    queue_incident_step(tx, step)
                    incident_state = json.dumps(step.state)
                cube = getattr(out, "cube", None)
                if cube:  # a finished day's cube, as write_tick writes it
                    queue_histogram(tx, cube["day"], cube["kind"],
                                    json.dumps(cube, sort_keys=True))
                if getattr(out, "privacy", None):
                    tx.set(rl.PRIVACY_STATUS, json.dumps(out.privacy, sort_keys=True))
            for m, fields_m in changed.items():
                if fields_m:
                    queue_baselines(tx, m, fields_m)
            last = part[-1].tick
            cut = f"({last - self.retention_s}"
            for m in rel_mechs:
                for loc in self.locations:
                    tx.zremrangebyscore(rl.series(m, loc), "-inf", cut)
                tx.zremrangebyscore(rl.ticks(m), "-inf", cut)
            for m in ledger_mechs:
                tx.zremrangebyscore(rl.release_done(m), "-inf", cut)
            for m in rel_mechs:
                queue_update(tx, m, last)
            await tx.execute()

    def _incident_step(self, out: TickOutput, raw_state: Any) -> inc.Step:
        """The incident state machine's step for this tick (peaks from the first release)."""
        try:
            state = json.loads(raw_state) if raw_state else None
        except ValueError:
            log.warning("%s: unreadable; incidents start afresh", rl.INCIDENTS_STATE)
            state = None
        rel = next((r for r in out.releases if r.values), None)
        values = dict(zip(self.locations, rel.values, strict=False)) if rel else None
        return inc.step(state, out.tick, out.alerts, values, quiet_s=self.incident_quiet_s,
                        mechanism=rel.mechanism if rel else None)

    async def _migrate_done(self, mechs: Sequence[str]) -> None:
        """Convert ``occ:{mech}:done`` sets of older versions to sorted sets (once each)."""
        for m in mechs:
            if m in self._done_checked:
                continue
            key = rl.release_done(m)
            if await self.r.type(key) in (b"set", "set"):
                members = await self.r.smembers(key)
                tmp = f"{key}:migrating"
                tx = self.r.pipeline(transaction=True)
                tx.delete(tmp)
                if members:
                    tx.zadd(tmp, {mb: float(mb) for mb in members})
                    tx.rename(tmp, key)
                else:
                    tx.delete(key)
                await tx.execute()
                log.info("%s: converted to a sorted set (%d ticks)", key, len(members))
            self._done_checked.add(m)

    async def write_dlq_counts(self, app_id: str, partition: int,
                               counts: Mapping[str, int]) -> None:
        """Absolute DLQ counters of one partition (replay-safe)."""
        if counts:
            pipe = self.r.pipeline(transaction=False)
            queue_dlq_counts(pipe, app_id, partition, counts)
            await pipe.execute()


def _ledger_day(rec: Mapping[str, Any], day: str) -> str:
    """The day a ledger record counts on (the tick's ``day`` unless device-day).

    A device-day record counts on its own day: the daily cube is released after midnight
    but spends the day before.
    """
    if rec.get("unit") == DEVICE_DAY_UNIT and rec.get("tick"):
        return _day(float(rec["tick"]))
    return day


def _incidents_open(raw_state: Any) -> bool:
    """Whether the stored incident state holds an open incident.

    Its quiet period must run on every tick, not only on ticks with a decision: the
    device-day alerts decide once an hour and write nothing on a quiet hour (no ledger
    record either, the day is charged at its first tick), so an incident opened by one
    reading in an empty room stayed open until some other room alerted (the demo showed
    Lab 5510 "open since 06:55, peak ≈ 0" through the whole morning).
    """
    try:
        state = json.loads(raw_state) if raw_state else None
    except ValueError:
        return False
    return bool(isinstance(state, dict) and state.get("open"))


def _baseline_update(locations: Sequence[str], slot: int, day: int, values: Sequence[float],
                     current: Sequence[bytes | str | None]) -> dict[str, str]:
    """New baseline documents per (location, slot) after the value released on ``day``.

    docs/DESIGN.md "Heatmap colour": μ, σ are that location's released occupancy at that
    time of day in *past* days, so today's value must not colour today's cell. Each
    document keeps the running sums ``n, s1, s2`` of completed days and the ``pending``
    value of the latest day (``day``, days since the epoch, UTC). A value is folded into
    the sums only when a value of a later day arrives for the same slot; ``mu``,
    ``sigma`` and ``n`` (what dashboards read) come from completed days only
    (``mu``/``sigma`` null until one day is complete). A slot occurs once per day, so a
    re-delivered value of the same day replaces the pending one: the update is
    idempotent on its own, besides the ``occ:{mech}:done`` guard of the caller.
    Post-processing of released values only (no budget); O(1) per update.
    """
    out = {}
    for loc, v, cur in zip(locations, values, current, strict=False):
        n, s1, s2 = 0, 0.0, 0.0
        pend_day: int | None = None
        pend = 0.0
        if cur:
            try:
                d = json.loads(cur)
                n, s1, s2 = int(d["n"]), float(d["s1"]), float(d["s2"])
                if d.get("day") is not None:
                    pend_day, pend = int(d["day"]), float(d["pending"])
            except (ValueError, KeyError, TypeError):
                n, s1, s2, pend_day = 0, 0.0, 0.0, None
        v = float(v)
        if pend_day is not None and pend_day > day:
            # a late value of an earlier day: it is already past, fold it directly
            n, s1, s2 = n + 1, s1 + v, s2 + v * v
        else:
            if pend_day is not None and pend_day < day:
                n, s1, s2 = n + 1, s1 + pend, s2 + pend * pend
            pend_day, pend = day, v
        mu = s1 / n if n else None
        sigma = max(s2 / n - mu * mu, 0.0) ** 0.5 if mu is not None else None
        out[rl.baseline_field(loc, slot)] = json.dumps(
            {"mu": mu, "sigma": sigma, "n": n, "s1": s1, "s2": s2,
             "day": pend_day, "pending": pend})
    return out


def quiet_period(value: float | None = None,
                         env: Mapping[str, str] | None = None) -> float:
    """The incidents' quiet period: ``value``, else ``$OCCUSTREAM_INCIDENT_QUIET_S``, else 900 s.

    Raises:
        InvalidParameterError: not a positive finite number of seconds.
    """
    import os

    from mechanisms.errors import InvalidParameterError

    raw: Any = value
    if raw is None:
        raw = (os.environ if env is None else env).get("OCCUSTREAM_INCIDENT_QUIET_S", "")
        raw = raw.strip() or inc.QUIET_S
    try:
        q = float(raw)
    except (TypeError, ValueError):
        q = float("nan")
    if not 0 < q < float("inf"):
        raise InvalidParameterError(
            f"OCCUSTREAM_INCIDENT_QUIET_S must be a positive number of seconds, not {raw!r}")
    return q


class PipelineSink:
    """The read-model side of one pipeline worker (:class:`streams.runtime.ports.ReadModelSink`).

    Owns the worker's Redis client of the read model (created lazily in the running
    event loop) and its :class:`CacheWriter`; the worker's composition root
    (:mod:`occustream.worker`) hands it to the runtime, which never imports this layer.
    """

    def __init__(self, redis_url: str, locations: Sequence[str], *, tick_s: float,
                 retention_ticks: int, eval_mode: bool = False,
                 incident_quiet_s: float | None = None) -> None:
        self.redis_url = redis_url
        self._args = (list(locations), tick_s, retention_ticks, eval_mode)
        self.incident_quiet_s = quiet_period(incident_quiet_s)
        self._client: Any = None
        self._writer: CacheWriter | None = None

    @classmethod
    def for_settings(cls, settings: Any, site: Any) -> PipelineSink:
        """A sink for a worker's settings (``redis_url``, ``tick_s``, retention, eval mode)."""
        return cls(settings.redis_url, site.location_ids, tick_s=settings.tick_s,
                   retention_ticks=settings.retention_ticks, eval_mode=settings.eval_mode,
                   incident_quiet_s=getattr(settings, "incident_quiet_s", None))

    async def writer(self) -> CacheWriter:
        """The cache writer (connects on first use)."""
        if self._writer is None:
            import redis.asyncio as aredis

            locations, tick_s, retention_ticks, eval_mode = self._args
            self._client = aredis.Redis.from_url(
                self.redis_url, socket_connect_timeout=30, socket_timeout=60,
                health_check_interval=30)
            self._writer = CacheWriter(self._client, locations, tick_s=tick_s,
                                       retention_ticks=retention_ticks, eval_mode=eval_mode,
                                       incident_quiet_s=self.incident_quiet_s)
        return self._writer

    async def write_meta(self, metas: Mapping[str, Mapping[str, Any]]) -> None:
        """See :meth:`CacheWriter.write_meta`."""
        await (await self.writer()).write_meta(metas)

    async def write_tick(self, out: TickOutput, true_counts: Sequence[int] | None = None) -> None:
        """See :meth:`CacheWriter.write_tick`."""
        await (await self.writer()).write_tick(out, true_counts)

    async def write_dlq_counts(self, app_id: str, partition: int,
                               counts: Mapping[str, int]) -> None:
        """See :meth:`CacheWriter.write_dlq_counts`."""
        await (await self.writer()).write_dlq_counts(app_id, partition, counts)

    async def write_health(self, app_id: str, worker: str, health: Mapping[str, Any]) -> None:
        """One worker's health line (``health:{app_id}``)."""
        w = await self.writer()
        await w.r.hset(rl.health(app_id), worker, json.dumps(health, default=str))

    async def aclose(self) -> None:
        """Close the Redis client."""
        if self._client is not None:
            await self._client.aclose()
            self._client, self._writer = None, None
