"""Cisco Spaces Firehose-style event stream (https://developer.cisco.com/docs/cisco-spaces-firehose/).

Input: newline-delimited JSON ``EventRecord`` objects (one per line) from a file, stdin
(``-``) or the HTTP stream ``GET /api/partners/v1/firehose/events`` (header
``X-API-KEY``; resumed with ``fromTimestamp``, epoch ms), as described on the pages
"HTTP Streaming" and "Sample Events" of that documentation. Envelope:
``recordUid`` (unique, "use for deduplication"), ``recordTimestamp`` (epoch ms),
``eventType`` and a payload keyed by the camelCase event name.

Events used:

* ``DEVICE_LOCATION_UPDATE`` → an observation of ``deviceLocationUpdate.device.macAddress``
  at time ``lastSeen`` (else ``recordTimestamp``), placed at the AP given by
  ``apMacAddress`` / ``apMac`` if the payload has one, else at the Spaces location
  (``location.locationId``, matched against AP aliases of the building file — a zone can
  be an "AP" of a room, see docs/CONNECT.md);
* ``DEVICE_ASSOCIATION`` → the same from ``deviceAssociation``; a payload whose
  association state / type says ``DISASSOCIATED`` is counted (``ignored{reason=
  "disassociation"}``) and produces nothing: the pipeline ends a presence by time
  (``validity_s``), not by events;
* ``KEEP_ALIVE`` and every other event type: counted as ignored.

The field names inside ``DEVICE_ASSOCIATION`` beyond the common ``device.macAddress``
and ``location`` objects are not shown in the public sample excerpt we could read; the
connector accepts the spellings listed above and dead-letters an event with no usable AP
(``unknown_ap`` / ``missing_field:ap``), so a mismatch is visible in ``/metrics``.

Resume: a small JSON state file (``--state-file``) holds the last event's ``recordUid``
and ``recordTimestamp``, the uids of the events within ``overlap_s`` of it and digests
of recent unparseable lines (which have no uid; not dead-lettered twice); it is
written atomically after each flush, i.e. only for events Kafka acknowledged. On
restart, an event is skipped as already ingested if its uid is in that set or its
timestamp is older than ``last − overlap_s``; the HTTP stream is requested
``fromTimestamp = last − overlap_s``. Within one run, uids are deduplicated the same
way. So events arriving up to ``overlap_s`` out of order are neither lost nor doubled.
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import json
import logging
import os
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from connectors.edge import Edge

log = logging.getLogger(__name__)

DEFAULT_OVERLAP_S = 60.0
PAYLOAD_KEY = {
    "DEVICE_LOCATION_UPDATE": "deviceLocationUpdate",
    "DEVICE_ASSOCIATION": "deviceAssociation",
}
_AP_FIELDS = ("apMacAddress", "apMac", "apMacAddr", "bssid")
#: Event types of the Firehose "Event Types" page, counted by name when ignored (any
#: other name is counted as ``other``: metric labels never come from the input).
KNOWN_TYPES = frozenset({
    "DEVICE_PRESENCE", "USER_PRESENCE", "PROFILE_UPDATE", "DEVICE_COUNT",
    "DEVICE_RSSI_UPDATE", "NETWORK_TELEMETRY", "NETWORK_STATUS_UPDATE", "WIFI_DEVICE_UPDATE",
    "IOT_TELEMETRY", "IOT_USER_ACTION", "BLE_RSSI_UPDATE", "ASSET_LOCATION_UPDATE",
    "CAMERA_COUNT", "RAW_CAMERA_COUNT", "LOCATION_CHANGE", "LOCATION_ANCHOR_UPDATE",
    "AP_TOPOLOGY_CHANGE", "WEBEX_TELEMETRY", "SPACE_OCCUPANCY", "SPACE_OCCUPANCY_CHANGE",
    "BUILDING_FEATURE", "APP_ACTIVATION", "KEEP_ALIVE", "DEVICE_ENTRY", "DEVICE_EXIT",
})


class ResumeState:
    """Last event id/time and the recent uids (module docstring), kept in a JSON file."""

    def __init__(self, path: str | os.PathLike[str] | None,
                 overlap_s: float = DEFAULT_OVERLAP_S) -> None:
        self.path = Path(path) if path else None
        self.overlap_ms = int(overlap_s * 1000)
        self.last_uid: str | None = None
        self.last_ts: int | None = None
        self.recent: collections.OrderedDict[str, int] = collections.OrderedDict()
        #: digests of recent unparseable lines (they have no uid): not dead-lettered twice
        self.bad: collections.OrderedDict[str, None] = collections.OrderedDict()
        if self.path and self.path.is_file():
            try:
                d = json.loads(self.path.read_text())
                self.last_uid, self.last_ts = d.get("last_uid"), d.get("last_ts")
                for uid, ts in d.get("recent", []):
                    self.recent[str(uid)] = int(ts)
                for digest in d.get("bad", []):
                    self.bad[str(digest)] = None
            except (ValueError, TypeError, OSError) as exc:
                log.warning("spaces: state file %s unreadable (%s); starting fresh",
                            self.path, type(exc).__name__)

    def seen(self, uid: str | None, ts: int | None) -> bool:
        """Whether an event was already ingested (by uid, or older than the overlap)."""
        if uid is not None and uid in self.recent:
            return True
        return ts is not None and self.last_ts is not None and ts < self.last_ts - self.overlap_ms

    def mark(self, uid: str | None, ts: int | None) -> None:
        """Record an event as ingested."""
        if ts is not None and (self.last_ts is None or ts >= self.last_ts):
            self.last_ts, self.last_uid = ts, uid
        if uid is not None:
            self.recent[uid] = ts if ts is not None else (self.last_ts or 0)
        horizon = (self.last_ts or 0) - self.overlap_ms
        while self.recent and (next(iter(self.recent.values())) < horizon
                               or len(self.recent) > 100_000):
            self.recent.popitem(last=False)

    def from_timestamp(self) -> int:
        """``fromTimestamp`` for the HTTP stream (0 = latest only, as the API defines)."""
        return 0 if self.last_ts is None else max(self.last_ts - self.overlap_ms, 1)

    def save(self) -> None:
        """Write the state atomically (tmp file + rename)."""
        if self.path is None:
            return
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        while len(self.bad) > 10_000:
            self.bad.popitem(last=False)
        tmp.write_text(json.dumps({"last_uid": self.last_uid, "last_ts": self.last_ts,
                                   "recent": list(self.recent.items()),
                                   "bad": list(self.bad)}))
        os.replace(tmp, self.path)


def _ap_of(payload: dict[str, Any]) -> Any:
    for f in _AP_FIELDS:
        if payload.get(f):
            return payload[f]
    ap = payload.get("ap") or payload.get("accessPoint")
    if isinstance(ap, dict):
        return ap.get("macAddress") or ap.get("name")
    loc = payload.get("location")
    if isinstance(loc, dict):
        return loc.get("locationId")
    return None


def _disassociated(payload: dict[str, Any]) -> bool:
    for f in ("associationState", "assocState", "state", "status", "type", "eventSubType"):
        v = payload.get(f)
        if isinstance(v, str) and "DISASSOC" in v.upper():
            return True
    return payload.get("associated") is False


class SpacesConnector:
    """Turns Firehose lines into observations through an :class:`Edge`."""

    def __init__(self, edge: Edge, state: ResumeState, *, flush_every: int = 500) -> None:
        self.edge, self.state, self.flush_every = edge, state, flush_every
        self._since_flush: list[tuple[str | None, int | None]] = []

    def line(self, line: bytes | str) -> None:
        """Process one NDJSON line (empty lines are keep-alives)."""
        edge = self.edge
        if isinstance(line, bytes):
            line = line.decode("utf-8", "replace")
        line = line.strip()
        if not line:
            return
        edge.metrics.received += 1
        try:
            ev = json.loads(line)
        except ValueError:
            ev = None
        if not isinstance(ev, dict):
            digest = hashlib.sha256(line.encode()).hexdigest()[:32]
            if digest in self.state.bad:
                edge.metrics.duplicates += 1
                return
            self.state.bad[digest] = None
            edge.reject(line, "not_an_object" if ev is not None else "malformed_json")
            return
        uid = ev.get("recordUid") if isinstance(ev.get("recordUid"), str) else None
        rts = ev.get("recordTimestamp")
        rts = int(rts) if isinstance(rts, int | float) and not isinstance(rts, bool) else None
        if self.state.seen(uid, rts):
            edge.metrics.duplicates += 1
            return
        self._since_flush.append((uid, rts))
        etype = ev.get("eventType")
        key = PAYLOAD_KEY.get(etype) if isinstance(etype, str) else None
        if key is None:
            if not isinstance(etype, str):
                edge.reject(ev, "missing_field:eventType")
            else:
                edge.ignore(etype.lower() if etype in KNOWN_TYPES else "other")
            return
        payload = ev.get(key)
        if not isinstance(payload, dict):
            edge.reject(ev, f"missing_field:{key}")
            return
        if etype == "DEVICE_ASSOCIATION" and _disassociated(payload):
            edge.ignore("disassociation")
            return
        device = payload.get("device")
        mac = device.get("macAddress") if isinstance(device, dict) else None
        t = payload.get("lastSeen", rts)
        ts = float(t) / 1000.0 if isinstance(t, int | float) and not isinstance(t, bool) else t
        edge.observe(mac, _ap_of(payload), ts, raw=ev)

    async def commit(self) -> None:
        """Flush to Kafka, then record the flushed events in the resume state."""
        await self.edge.flush()
        for uid, ts in self._since_flush:
            self.state.mark(uid, ts)
        self._since_flush.clear()
        self.state.save()

    async def run(self, lines: AsyncIterator[bytes]) -> None:
        """Consume a line iterator to its end, committing every ``flush_every`` lines."""
        n = 0
        last = time.monotonic()
        async for line in lines:
            self.line(line)
            n += 1
            if n % self.flush_every == 0 or time.monotonic() - last > 0.5:
                await self.commit()
                last = time.monotonic()
        await self.commit()


async def file_lines(path: str) -> AsyncIterator[bytes]:
    """Lines of a file, or of stdin for ``-`` (read in a thread, not blocking the loop)."""
    loop = asyncio.get_running_loop()
    hint = 1 << 20  # a file: read in 1 MiB chunks
    if path == "-":
        stream: Any = sys.stdin.buffer
        close = False
        hint = 1  # a live pipe: hand over every line as soon as it arrives
    else:
        stream = open(path, "rb")  # noqa: SIM115 - closed below
        close = True
    try:
        while True:
            chunk = await loop.run_in_executor(None, stream.readlines, hint)
            if not chunk:
                return
            for line in chunk:
                yield line
    finally:
        if close:
            stream.close()


async def http_lines(url: str, api_key: str | None, state: ResumeState, *,
                     reconnect_s: float = 5.0, once: bool = False) -> AsyncIterator[bytes]:
    """Lines of the Firehose HTTP stream, reconnecting (resumed) when it ends or fails."""
    import aiohttp

    headers = {"X-API-KEY": api_key} if api_key else {}
    timeout = aiohttp.ClientTimeout(total=None, sock_read=120)
    while True:
        params = {}
        fts = state.from_timestamp()
        if fts:
            params["fromTimestamp"] = str(fts)
        try:
            async with aiohttp.ClientSession(timeout=timeout) as session, \
                    session.get(url, headers=headers, params=params) as resp:
                if resp.status != 200:
                    log.warning("spaces: stream answered HTTP %d", resp.status)
                else:
                    buf = b""
                    async for chunk in resp.content.iter_any():
                        buf += chunk
                        *lines, buf = buf.split(b"\n")
                        for line in lines:
                            yield line
                    if buf:
                        yield buf
        except (TimeoutError, aiohttp.ClientError) as exc:
            log.warning("spaces: stream failed (%s); reconnecting", type(exc).__name__)
        if once:
            return
        await asyncio.sleep(reconnect_s)
