"""Read side of the Redis read model (docs/DESIGN.md "Redis read model"), for the web app.

Only what analysts may see leaves this module's public reads: released values, public
mechanism parameters, baselines (post-processing of released values) and alerts
reduced to ``{tick, location, capacity, algorithm, beta}``. True counts
(``eval:true:*``) are never read. The privacy ledger is read by :meth:`ReadModel.ledger`
only, which the app serves to the admin role alone.
"""

from __future__ import annotations

import json
import math
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

import numpy as np

from mechanisms.accounting import DEVICE_DAY_UNIT, zcdp_to_epsilon
from mechanisms.errors import InvalidParameterError
from mechanisms.registry import UNIT_DEVICE_DAY, display_order, without_guarantee
from occupancy import redis_layout as rl
from occupancy.buildings import Site
from occupancy.heatmap import colour_class
from readmodel.uncertainty import NO_GUARANTEE, interval, noise_scale, noise_sd

#: Alert fields that may be shown to anyone; everything else (e.g. an ex-post ε) is dropped.
PUBLIC_ALERT_FIELDS = ("tick", "location", "capacity", "algorithm", "beta")
#: public when present: the uncertainty width of device-day alerts (data independent)
OPTIONAL_ALERT_FIELDS = ("alpha", "uncertainty", "window")
#: Incident fields that may be shown to anyone (occupancy/incidents.py): decisions,
#: public parameters and the peak of *released* values; never an ex-post ε.
PUBLIC_INCIDENT_FIELDS = ("id", "location", "state", "opened", "last_seen", "resolved",
                          "capacity", "algorithm", "beta", "peak", "peak_tick",
                          "peak_mechanism", "decisions", "opened_by", "guarantee", "version",
                          "alpha", "uncertainty")
DEFAULT_TICK_S = 300.0
#: A baseline needs released values from at least this many days to colour a cell.
MIN_BASELINE_N = 2
#: Ledger ticks below this are tick indices k (t = k·tick_s), not epoch seconds.
_EPOCH_MIN = 1e8
_MECH_CACHE_S = 2.0


def _s(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _loads(v: Any) -> Any:
    try:
        return json.loads(_s(v))
    except (TypeError, ValueError):
        return _s(v)


def day_of(tick: float) -> str:
    """UTC day (YYYY-MM-DD) of an epoch-seconds tick."""
    return datetime.fromtimestamp(float(tick), UTC).strftime("%Y-%m-%d")


def public_alert(alert_id: str, raw: Any) -> dict[str, Any]:
    """An alert reduced to its public fields, plus its stream id."""
    doc = _loads(raw)
    doc = doc if isinstance(doc, dict) else {}
    out: dict[str, Any] = {k: doc.get(k) for k in PUBLIC_ALERT_FIELDS}
    out.update({k: doc[k] for k in OPTIONAL_ALERT_FIELDS if k in doc and "alpha" in doc})
    out["id"] = alert_id
    return out


def public_incident(raw: Any) -> dict[str, Any]:
    """An incident record reduced to its public fields."""
    doc = _loads(raw)
    doc = doc if isinstance(doc, dict) else {}
    return {k: doc.get(k) for k in PUBLIC_INCIDENT_FIELDS}


def public_incident_event(event_id: str, raw: Any) -> dict[str, Any]:
    """A lifecycle event of ``incidents:events``: ``{id, event, key, incident}`` (public)."""
    doc = _loads(raw)
    doc = doc if isinstance(doc, dict) else {}
    return {"id": event_id, "event": doc.get("event"), "key": doc.get("key"),
            "incident": public_incident(json.dumps(doc.get("incident") or {}))}


#: The public view of an entry of each stream that subscribers follow.
_PUBLIC_ENTRY: dict[str, Callable[[str, Any], dict[str, Any]]] = {
    rl.ALERTS_STREAM: public_alert, rl.INCIDENTS_STREAM: public_incident_event}


async def stream_end(client: Any, stream: str) -> str:
    """The id of the newest entry of ``stream`` (``"0-0"`` when it is empty).

    Reading after it (:func:`read_after`) gives the entries added from now on.
    """
    newest = await client.xrevrange(stream, count=1)
    return _s(newest[0][0]) if newest else "0-0"


async def recent_entries(client: Any, stream: str, n: int) -> list[tuple[str, dict[str, Any]]]:
    """The newest ``n`` entries of ``stream``, oldest first, as ``(id, public doc)``."""
    if n <= 0:
        return []
    rows = await client.xrevrange(stream, count=n)
    return [(_s(sid), _PUBLIC_ENTRY[stream](_s(sid), f.get(b"data", f.get("data"))))
            for sid, f in reversed(rows)]


async def read_after(client: Any, stream: str, after: str, *, block_ms: int = 1000,
                     count: int = 100) -> list[tuple[str, dict[str, Any]]]:
    """The entries of the alerts or incidents stream after id ``after``, oldest first.

    The one tail read of these streams (the SSE broker, ``occustream alerts --follow``
    and the webhook dispatchers use it): waits up to ``block_ms`` for a first entry,
    returns at most ``count``, each as ``(stream id, public doc)`` — only the public
    fields (:func:`public_alert`, :func:`public_incident_event`) leave this module.
    """
    public = _PUBLIC_ENTRY[stream]
    rows = await client.xread({stream: after}, block=block_ms, count=count)
    out = []
    for _, entries in rows or []:
        for sid, fields in entries:
            sid_s = _s(sid)
            out.append((sid_s, public(sid_s, fields.get(b"data", fields.get("data")))))
    return out


async def follow(client: Any, stream: str, after: str, *, block_ms: int = 1000,
                 count: int = 100) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """Every entry of ``stream`` after id ``after``, as :func:`read_after` reads them, forever.

    A caller that wants to resume after a failure keeps the last id it got.
    """
    while True:
        for sid, doc in await read_after(client, stream, after, block_ms=block_ms,
                                         count=count):
            after = sid
            yield sid, doc


def _max_hour_epsilon(released: dict[float, float]) -> float:
    """Worst ε over any hour ``[t, t + 3600)`` of a device present that whole hour.

    Args:
        released: ε of each release actually made (from the ledger), by tick epoch s.
            A mechanism released once per hour thus counts once, not ``3600 / tick_s``
            times.
    """
    ticks = sorted(released)
    best = acc = 0.0
    lo = 0
    for t in ticks:
        acc += released[t]
        while ticks[lo] <= t - 3600:
            acc -= released[ticks[lo]]
            lo += 1
        best = max(best, acc)
    return best


async def game_leaderboard(client: Any, limit: int = 10) -> list[dict[str, Any]]:
    """The IoT-DETECTIVE leaderboard: ``[{name, points, rounds}]``, best first."""
    top = await client.zrevrange(rl.GAME_LEADERBOARD, 0, max(int(limit), 1) - 1,
                                 withscores=True)
    names = [_s(n) for n, _ in top]
    rounds = await client.hmget(rl.GAME_ROUNDS, names) if names else []
    return [{"name": n, "points": int(p), "rounds": int(r or 0)}
            for n, (_, p), r in zip(names, top, rounds, strict=True)]


async def game_rounds_played(client: Any, player: str) -> int:
    """Rounds an IoT-DETECTIVE player has played."""
    return int(await client.hget(rl.GAME_ROUNDS, player) or 0)


async def game_points(client: Any, player: str) -> int:
    """An IoT-DETECTIVE player's points."""
    return int(await client.zscore(rl.GAME_LEADERBOARD, player) or 0)


async def game_traces(client: Any, count: int | None = None) -> list[dict[str, Any]]:
    """The traces of played rounds, oldest first (each with its stream ``id``)."""
    entries = await client.xrange(rl.GAME_TRACES, count=count)
    out = []
    for eid, fields in entries:
        doc = _loads(fields.get(b"data", fields.get("data", b"{}")))
        if isinstance(doc, dict):
            out.append({"id": _s(eid), **doc})
    return out


def read_demo_speed(client: Any) -> float | None:
    """The pace the demo's page asks for (``demo:speed``), or None (sync client)."""
    doc = _loads(client.get(rl.DEMO_SPEED))
    try:
        speed = float(doc["speed"])
    except (TypeError, KeyError, ValueError):
        return None
    return speed if speed >= 0 and np.isfinite(speed) else None


def read_latest_tick(client: Any, mech: str) -> float | None:
    """The latest tick written for ``mech`` (sync client), or None."""
    rows = client.zrevrange(rl.ticks(mech), 0, 0, withscores=True)
    return float(rows[0][1]) if rows else None


class ReadModel:
    """Async reads of the read model for one site (a ``redis.asyncio.Redis`` client)."""

    def __init__(self, client: Any, site: Site, mechanisms: list[str] | None = None) -> None:
        self.client = client
        self.site = site
        self.allowed = list(mechanisms) if mechanisms else None
        self._mechs: tuple[float, list[str]] = (0.0, [])
        self._tick_s: dict[str, float] = {}

    # -- mechanisms -----------------------------------------------------------------
    async def mechanisms(self) -> list[str]:
        """Mechanisms with data in Redis (``occ:{mech}:ticks``), filtered by the allow-list."""
        at, cached = self._mechs
        if cached and time.monotonic() - at < _MECH_CACHE_S:
            return cached
        if self.allowed is not None:
            found = [m for m in self.allowed if await self.client.exists(rl.ticks(m))]
        else:
            found = set()
            async for key in self.client.scan_iter(match=rl.ticks("*"), count=1000):
                name = _s(key)
                found.add(name[len("occ:"):-len(":ticks")])
            found = sorted(found, key=display_order)
        self._mechs = (time.monotonic(), list(found))
        return list(found)

    async def check_mech(self, mech: str | None) -> str:
        """Validate a mechanism name against what exists; raise InvalidParameterError."""
        mechs = await self.mechanisms()
        if not mech:
            if not mechs:
                raise InvalidParameterError("mech must be given; no mechanism has data yet")
            return mechs[0]
        if mech not in mechs:
            raise InvalidParameterError(f"mech must be one of {mechs}, not {mech!r}")
        return mech

    def check_location(self, location: str | None) -> str:
        """Validate a location id against the site."""
        if not location or location not in self.site.location_index:
            raise InvalidParameterError(
                f"location must be a location id of site {self.site.id!r}, not {location!r}"
            )
        return location

    async def meta(self, mech: str) -> dict[str, Any]:
        """Public parameters of a mechanism, with a ``guarantee`` line."""
        raw = await self.client.hgetall(rl.meta(mech))
        meta = {_s(k): _loads(v) for k, v in raw.items()}
        scale, note = noise_scale(mech, meta)
        meta.setdefault("guarantee", NO_GUARANTEE if scale is None and note == NO_GUARANTEE
                        else "ε-differential privacy, event-level (one device, one tick)")
        return meta

    async def tick_s(self, mech: str, meta: dict[str, Any] | None = None) -> float:
        """Tick length: the published ``tick_s``, else inferred from the ticks, else 300."""
        if mech in self._tick_s:
            return self._tick_s[mech]
        meta = meta if meta is not None else await self.meta(mech)
        try:
            t = float(meta.get("tick_s"))
        except (TypeError, ValueError):
            t = math.nan
        if not (t > 0):
            last = await self.client.zrevrange(rl.ticks(mech), 0, 1, withscores=True)
            t = abs(last[0][1] - last[1][1]) if len(last) == 2 else DEFAULT_TICK_S
            t = t or DEFAULT_TICK_S
        self._tick_s[mech] = t
        return t

    # -- ticks, snapshots, history ----------------------------------------------------
    async def ticks(self, mech: str, start: float | None = None,
                    end: float | None = None) -> list[float]:
        """Ticks fully written for ``mech`` in [start, end]."""
        lo = "-inf" if start is None else start
        hi = "+inf" if end is None else end
        rows = await self.client.zrangebyscore(rl.ticks(mech), lo, hi, withscores=True)
        return [float(s) for _, s in rows]

    async def latest_tick(self, mech: str) -> float | None:
        """The newest tick written for ``mech``."""
        rows = await self.client.zrevrange(rl.ticks(mech), 0, 0, withscores=True)
        return float(rows[0][1]) if rows else None

    async def snapshot(self, mech: str, tick: float | None = None) -> dict[str, Any]:
        """Released value, colour class and 90 % interval of every location at a tick.

        The colour compares the value with its slot's usual μ ± σ, where σ is never below
        the release's own noise (:func:`noise_sd`): a week of mostly-zero releases gives a
        baseline σ near 0, and a room holding 3 people would otherwise be drawn "far above
        usual" (class 10) by noise alone (seen in the demo). ``sigma`` is that σ.

        Args:
            mech: mechanism.
            tick: a tick, or None for the latest one.
        """
        meta = await self.meta(mech)
        tick_s = await self.tick_s(mech, meta)
        if tick is None:
            tick = await self.latest_tick(mech)
        ids = list(self.site.location_ids)
        if tick is None:
            return {"mech": mech, "tick": None, "tick_s": tick_s, "meta": meta, "values": {}}
        pipe = self.client.pipeline(transaction=False)
        for loc in ids:
            pipe.zrangebyscore(rl.series(mech, loc), tick, tick)
        rows = await pipe.execute()
        slot = rl.slot_of(tick, tick_s)
        fields = [rl.baseline_field(loc, slot) for loc in ids]
        base = await self.client.hmget(rl.baseline(mech), fields) if ids else []
        floor = noise_sd(mech, meta)
        values: dict[str, Any] = {}
        present, vals, mus, sigmas = [], [], [], []
        for loc, row, b in zip(ids, rows, base, strict=True):
            if not row:
                continue
            doc = _loads(row[-1])
            v = float(doc["value"]) if isinstance(doc, dict) else float(doc)
            bl = _loads(b) if b is not None else None
            ok = (isinstance(bl, dict) and bl.get("mu") is not None
                  and int(bl.get("n", MIN_BASELINE_N)) >= MIN_BASELINE_N)
            values[loc] = {
                "value": v,
                "interval": interval(mech, meta, v).as_dict(),
                "mu": float(bl["mu"]) if ok else None,
                "sigma": max(float(bl["sigma"]), floor) if ok else None,
                "class": None,
            }
            if ok:
                present.append(loc)
                vals.append(v)
                mus.append(float(bl["mu"]))
                sigmas.append(max(float(bl["sigma"]), floor))
        if present:
            classes = colour_class(np.array(vals), np.array(mus), np.array(sigmas))
            for loc, c in zip(present, classes.tolist(), strict=True):
                values[loc]["class"] = int(c)
        tick_j = int(tick) if float(tick).is_integer() else tick
        return {"mech": mech, "tick": tick_j, "tick_s": tick_s, "slot": slot, "meta": meta,
                "values": values}

    async def history(self, mech: str, location: str, start: float | None = None,
                      end: float | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """Released values of one location, oldest first, in [start, end]."""
        lo = "-inf" if start is None else start
        hi = "+inf" if end is None else end
        kw = {"start": 0, "num": limit} if limit else {}
        rows = await self.client.zrangebyscore(rl.series(mech, location), lo, hi, **kw)
        if not rows:
            return []
        try:  # one parse of the whole range (members are JSON objects by the layout)
            docs = json.loads(b"[" + b",".join(rows) + b"]")
        except ValueError:
            docs = [_loads(r) for r in rows]
        # only the public fields, whatever else a writer may have put in a member
        return [{"tick": d.get("tick"), "value": d.get("value")} for d in docs
                if isinstance(d, dict)]

    # -- alerts -------------------------------------------------------------------------
    async def alerts(self, limit: int = 100, after: str | None = None) -> list[dict[str, Any]]:
        """Newest alerts first (public fields, acknowledgement state)."""
        if after:
            try:
                rows = await self.client.xrange(rl.ALERTS_STREAM, min=f"({after}", count=limit)
            except Exception as exc:  # noqa: BLE001 - redis: "Invalid stream ID"
                raise InvalidParameterError(
                    f"after must be an alert id like 1700000000000-0, not {after!r}") from exc
            rows = list(reversed(rows))
        else:
            rows = await self.client.xrevrange(rl.ALERTS_STREAM, count=limit)
        out = [public_alert(_s(i), f.get(b"data", f.get("data"))) for i, f in rows]
        if out:
            acks = await self.client.hmget(rl.ALERTS_ACKS, [a["id"] for a in out])
            for a, ack in zip(out, acks, strict=True):
                a["acknowledged"] = _loads(ack) if ack is not None else None
        return out

    async def acknowledge(self, alert_id: str, role: str) -> dict[str, Any]:
        """Mark an alert acknowledged; raise InvalidParameterError for an unknown id."""
        try:
            rows = await self.client.xrange(rl.ALERTS_STREAM, min=alert_id, max=alert_id)
        except Exception as exc:  # noqa: BLE001 - redis says "Invalid stream ID"
            raise InvalidParameterError(
                f"alert id must be a stream id like 1700000000000-0, not {alert_id!r}"
            ) from exc
        if not rows:
            raise InvalidParameterError(f"alert id must name an existing alert, not {alert_id!r}")
        ack = {"ts": time.time(), "role": role}
        await self.client.hsetnx(rl.ALERTS_ACKS, alert_id, json.dumps(ack))
        return _loads(await self.client.hget(rl.ALERTS_ACKS, alert_id))

    # -- privacy status (public) ----------------------------------------------------------
    async def privacy_status(self) -> dict[str, Any]:
        """The worker's public privacy figures and the header text.

        ``protected`` is True only when the configured unit's bound for the day is
        within the configured cap (device-day: the projected ε of the day ≤ ε_day at δ);
        otherwise ``headline`` says what the guarantee is.
        """
        st = _loads(await self.client.get(rl.PRIVACY_STATUS))
        if not isinstance(st, dict):
            return {"unit": None, "protected": False,
                    "headline": "privacy status not yet published by a worker"}
        if st.get("unit") == UNIT_DEVICE_DAY:
            ok = bool(st.get("within_cap"))
            head = (f"privacy-protected: device-day ε ≤ {st.get('epsilon_day'):g}, "
                    f"δ = {st.get('delta'):g}" if ok else
                    f"device-day ε {st.get('epsilon_projected_day'):.3g} > cap "
                    f"{st.get('epsilon_day'):g} (δ = {st.get('delta'):g})")
        elif str(st.get("unit", "")).startswith("window:"):
            ok = bool(st.get("within_cap"))
            w = st["unit"].split(":", 1)[1]
            head = (f"privacy-protected: ε ≤ {st.get('epsilon_day'):g} over any {w} "
                    f"consecutive ticks (w-event); a device present all day: ε "
                    f"{st.get('epsilon_projected_day'):g}" if ok else
                    f"w-event ε {st.get('epsilon_window'):g} over {w} ticks > cap "
                    f"{st.get('epsilon_day'):g}")
        else:
            ok = False
            head = (f"event-level privacy only: ε {st.get('epsilon_tick'):g} per device per "
                    f"tick; a device present all day: ε {st.get('epsilon_projected_day'):g}")
        return {**st, "protected": ok, "headline": head}
    # -- the daily cube (device-day histogram share) -----------------------------------
    async def daily_cube(self, day: str, kind: str = "daily-cube") -> dict[str, Any] | None:
        """The released cube of ``day`` (YYYY-MM-DD), or None.

        Hourly profiles per room, floor and building with error bars, the (room × slot)
        cube and its public parameters (streams/pipeline/cube.py).
        """
        doc = _loads(await self.client.get(rl.histogram(day, kind)))
        return doc if isinstance(doc, dict) else None

    async def daily_cube_days(self, kind: str = "daily-cube") -> list[str]:
        """Days with a released cube, oldest first."""
        days = []
        async for key in self.client.scan_iter(match=rl.histogram("*", kind), count=1000):
            days.append(_s(key).split(":")[1])
        return sorted(days)

    # -- incidents ----------------------------------------------------------------------
    async def incidents(self, limit: int = 100) -> list[dict[str, Any]]:
        """Incidents, the open ones first (newest opened first), then the newest resolved.

        Each carries its acknowledgement (``{"ts", "role"}`` or None).
        """
        active = [_s(i) for i in await self.client.zrevrange(rl.INCIDENTS_ACTIVE, 0, limit - 1)]
        recent = [_s(i) for i in await self.client.zrevrange(rl.INCIDENTS_INDEX, 0,
                                                                limit + len(active) - 1)]
        ids = active + [i for i in recent if i not in set(active)]
        ids = ids[:limit]
        if not ids:
            return []
        raws = await self.client.hmget(rl.INCIDENTS, ids)
        acks = await self.client.hmget(rl.INCIDENTS_ACKS, ids)
        out = []
        for raw, ack in zip(raws, acks, strict=True):
            if raw is None:
                continue
            doc = public_incident(raw)
            doc["acknowledged"] = _loads(ack) if ack is not None else None
            out.append(doc)
        # the open set and the records are written in one transaction; sort on the record
        out.sort(key=lambda d: (d["state"] != "open", -float(d["opened"] or 0)))
        return out

    async def incident(self, incident_id: str) -> dict[str, Any]:
        """One incident; raise InvalidParameterError for an unknown id."""
        raw = await self.client.hget(rl.INCIDENTS, incident_id)
        if raw is None:
            raise InvalidParameterError(
                f"incident id must name an existing incident, not {incident_id!r}")
        doc = public_incident(raw)
        ack = await self.client.hget(rl.INCIDENTS_ACKS, incident_id)
        doc["acknowledged"] = _loads(ack) if ack is not None else None
        return doc

    async def acknowledge_incident(self, incident_id: str, role: str) -> dict[str, Any]:
        """Acknowledge an incident once (later calls return the first acknowledgement)."""
        await self.incident(incident_id)  # unknown id → InvalidParameterError
        ack = {"ts": time.time(), "role": role}
        await self.client.hsetnx(rl.INCIDENTS_ACKS, incident_id, json.dumps(ack))
        return _loads(await self.client.hget(rl.INCIDENTS_ACKS, incident_id))

    async def incident_events(self, after: str | None = None, limit: int = 1000
                              ) -> list[dict[str, Any]]:
        """Lifecycle events after stream id ``after`` (oldest first), or the newest ones."""
        if after:
            try:
                rows = await self.client.xrange(rl.INCIDENTS_STREAM, min=f"({after}",
                                                count=limit)
            except Exception as exc:  # noqa: BLE001 - redis: "Invalid stream ID"
                raise InvalidParameterError(
                    f"after must be an event id like 1700000000000-0, not {after!r}") from exc
        else:
            rows = list(reversed(await self.client.xrevrange(rl.INCIDENTS_STREAM,
                                                             count=limit)))
        return [public_incident_event(_s(i), f.get(b"data", f.get("data"))) for i, f in rows]

    # -- privacy ledger (admin only) -----------------------------------------------------
    async def demo_clock(self) -> dict[str, Any] | None:
        """The demo's clock: simulated now, pace, the pace asked for; None outside a demo."""
        clock, want = await self.client.mget(rl.DEMO_CLOCK, rl.DEMO_SPEED)
        doc = _loads(clock)
        if not isinstance(doc, dict):
            return None
        asked = _loads(want)
        return {"sim_ts": doc.get("sim_ts"), "speed": doc.get("speed"),
                "wall_ts": doc.get("wall_ts"),
                "requested": asked.get("speed") if isinstance(asked, dict) else None}

    async def ledger(self) -> dict[str, Any]:
        """ε spent per mechanism and day, and the per-device-day cumulative loss.

        Unit of privacy: event-level (one device, one tick). A device is counted in at
        most one location per tick, so within a tick the per-location releases compose
        in parallel (max over locations) and the releases of one tick at different
        levels add; across ticks they compose sequentially. A device present in ``k``
        ticks of a day therefore loses ``Σ`` of the per-tick ε over those ``k`` ticks;
        the worst case (present every released tick) is reported per day, and the worst
        ε over any hour present, both from the releases the ledger records (a mechanism
        released once per hour counts once per hour). All mechanisms release the same
        data, so they compose sequentially too: each day ends with a ``total`` row
        (``"total": True``) summing every mechanism's releases, TTL excluded (listed in
        ``excluded``; no formal guarantee). Records are
        :class:`mechanisms.accounting.LedgerRecord` dicts (``mechanism``, ``tick``,
        ``epsilon``, …); ``tick`` may be epoch seconds or a tick index ``k``.
        """
        spent: dict[str, dict[str, float]] = defaultdict(dict)
        async for key in self.client.scan_iter(match=rl.ledger_spent("*"), count=1000):
            day = _s(key).rsplit(":", 1)[-1]
            for m, v in (await self.client.hgetall(key)).items():
                spent[day][_s(m)] = float(_s(v))
        # per (mech, tick): per-location sums, then max over locations
        per_tick: dict[tuple[str, float], dict[str, float]] = defaultdict(
            lambda: defaultdict(float))
        idx_ticks: set[tuple[str, float]] = set()
        dd: dict[tuple[str, str], dict[str, Any]] = {}
        last = "-"
        while True:
            rows = await self.client.xrange(rl.LEDGER_STREAM, min=last, count=5000)
            rows = [r for r in rows if _s(r[0]) != last]
            if not rows:
                break
            for _, f in rows:
                rec = _loads(f.get(b"data", f.get("data")))
                if not isinstance(rec, dict):
                    continue
                mech = str(rec.get("mechanism") or rec.get("mech") or "?")
                if rec.get("unit") == DEVICE_DAY_UNIT:  # zCDP per day: composed below
                    dd[(day_of(float(rec.get("tick") or 0)), mech)] = rec
                    continue
                try:
                    tick = float(rec.get("tick"))
                    eps = float(rec.get("epsilon"))
                except (TypeError, ValueError):
                    continue
                per_tick[(mech, tick)][str(rec.get("location", ""))] += eps
                if tick < _EPOCH_MIN:  # a tick index k (DESIGN: t = k·tick_s)
                    idx_ticks.add((mech, tick))
            last = _s(rows[-1][0])
        # per (day, mech): {tick epoch s: ε of that release for one device}
        released: dict[str, dict[str, dict[float, float]]] = defaultdict(
            lambda: defaultdict(dict))
        mechs = await self.mechanisms()
        for (mech, tick), locs in per_tick.items():
            if (mech, tick) in idx_ticks:
                tick = tick * (await self.tick_s(mech) if mech in mechs else DEFAULT_TICK_S)
            released[day_of(tick)][mech][tick] = max(locs.values())
        rows_out = []
        for day in sorted(set(spent) | set(released)):
            day_mechs = sorted(set(spent.get(day, {})) | set(released.get(day, {})) |
                               {m for m in mechs if without_guarantee(m)})
            combined: dict[float, float] = defaultdict(float)
            for mech in day_mechs:
                rel = released.get(day, {}).get(mech)
                ttl = without_guarantee(mech)
                if rel and not ttl:
                    for t, e in rel.items():
                        combined[t] += e
                rows_out.append({
                    "day": day, "mechanism": mech, "total": False,
                    "epsilon_spent": None if ttl else spent.get(day, {}).get(mech),
                    "ticks_released": len(rel) if rel else None,
                    "device_day_worst_case_epsilon":
                        None if ttl or not rel else round(sum(rel.values()), 6),
                    "epsilon_per_hour_present":
                        None if ttl or not rel else round(_max_hour_epsilon(rel), 6),
                    "guarantee": NO_GUARANTEE if ttl else
                        "ε-DP event-level; sequential composition over ticks present",
                })
            spent_dp = [v for m, v in spent.get(day, {}).items() if not without_guarantee(m)]
            rows_out.append({
                "day": day, "mechanism": "total", "total": True,
                "epsilon_spent": round(sum(spent_dp), 6) if spent_dp else None,
                "ticks_released": len(combined) or None,
                "device_day_worst_case_epsilon":
                    round(sum(combined.values()), 6) if combined else None,
                "epsilon_per_hour_present":
                    round(_max_hour_epsilon(combined), 6) if combined else None,
                "excluded": [m for m in day_mechs if without_guarantee(m)],
                "guarantee": "ε-DP event-level; sequential composition across mechanisms "
                             "and ticks present (TTL excluded: no formal guarantee)",
            })
        return {"unit": "event-level (one device, one tick)", "rows": rows_out,
                "device_day": _device_day_rows(dd), "status": await self.privacy_status()}


def _device_day_rows(dd: dict[tuple[str, str], dict[str, Any]]) -> list[dict[str, Any]]:
    """Per day: each device-day release (ρ, ε alone) and the day's total (ρ added, converted).

    zCDP composes by adding ρ (Bun & Steinke 2016 Lemma 2.3); the day's ε at δ is the
    dp-accounting conversion (:func:`mechanisms.accounting.zcdp_to_epsilon`).
    """
    out: list[dict[str, Any]] = []
    for day in sorted({d for d, _ in dd}):
        recs = [(m, r) for (d, m), r in sorted(dd.items()) if d == day]
        rho = 0.0
        delta = 0.0
        for m, r in recs:
            parts = r.get("parts") or [0.0]
            rho += float(parts[0])
            delta = float(r.get("delta") or 0.0)
            out.append({"day": day, "release": m, "total": False, "rho": float(parts[0]),
                        "epsilon": round(float(r.get("epsilon", 0.0)), 6), "delta": delta,
                        "guarantee": r.get("guarantee", "")})
        out.append({"day": day, "release": "total", "total": True, "rho": rho,
                    "epsilon": round(zcdp_to_epsilon(rho, delta), 6) if rho and delta else None,
                    "delta": delta, "guarantee": "zCDP (ρ added), converted by dp-accounting"})
    return out
