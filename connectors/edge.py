"""The edge every connector shares: validate, pseudonymise, produce, dead-letter, report.

A connector parses its vendor feed into ``(MAC, AP identifier, event time, RSSI)``
tuples and hands them to :meth:`Edge.observe`. The edge

1. normalises the MAC (``aa:bb:..``, ``AA-BB-..``, Cisco ``aabb.ccdd.eeff``, bare hex)
   and resolves the AP identifier (id, MAC, or alias from the building file) to the
   building's AP id (:class:`ApResolver`);
2. validates the record with :func:`occupancy.schema.parse_observation`, the same
   function the observe stage applies (the event clock — far-future / too-late — stays
   with the pipeline, which owns the partitions);
3. replaces the MAC by its keyed HMAC pseudonym
   (:func:`mechanisms.pseudonym.hmac_pseudonym`, the same secret and construction as
   the pipeline's observe stage, so both paths give a device the same pseudonym) and
   writes ``{"device": pseudonym, "ap", "ts", "rssi"?, "pseudonymised": true}`` to
   ``wifi.observations`` keyed by the pseudonym (one device, one partition);
4. drops a repeat of an observation already produced (same pseudonym, AP and event
   time, received within ``dedupe_window_s`` of wall time): replayed posts and
   retransmissions produce one record. A repeat after the window is produced again,
   which is harmless — a second identical observation does not change the oracle's
   presence of the device;
5. sends what fails to ``wifi.observations.dlq`` as ``{"raw", "reason",
   "ts_received", "source"}`` with every MAC-shaped substring of ``raw`` (and personal
   fields, e-mail and IPv4 addresses) replaced by ``<redacted>`` (:func:`redact`).

A raw MAC therefore never leaves the receiver: not to Kafka, not to the DLQ, not to logs
(log lines carry reasons and counts only). Counts and lag are in :class:`Metrics`,
served as JSON on ``/health`` and as Prometheus text on ``/metrics``.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import json
import logging
import os
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from infra.secrets import load_secret
from mechanisms.errors import ConfigError, ServiceError
from mechanisms.pseudonym import hmac_pseudonym
from occupancy.buildings import Site, load_site, resolve_building_path
from occupancy.schema import Invalid, parse_observation

log = logging.getLogger(__name__)

TOPIC = "wifi.observations"
DLQ_TOPIC = "wifi.observations.dlq"
REDACTED = "<redacted>"
MAX_RAW_CHARS = 2000

_MAC_PATTERNS = (
    r"(?:[0-9a-f]{2}[:\-]){5}[0-9a-f]{2}",  # aa:bb:cc:dd:ee:ff, AA-BB-..
    r"[0-9a-f]{4}\.[0-9a-f]{4}\.[0-9a-f]{4}",  # Cisco aabb.ccdd.eeff
    r"(?<![0-9a-z])[0-9a-f]{12}(?![0-9a-z])",  # bare aabbccddeeff
)
_MAC_ANYWHERE = re.compile("|".join(_MAC_PATTERNS), re.IGNORECASE)
#: Other identifying text of free-form input: e-mail addresses and IPv4 addresses.
_PERSONAL_TEXT = re.compile(r"[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+"
                            r"|(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}(?![\d.])")
_MAC_EXACT = re.compile("^(?:" + "|".join(_MAC_PATTERNS) + ")$", re.IGNORECASE)


def parse_mac(text: Any) -> str | None:
    """``aa:bb:cc:dd:ee:ff`` for any common MAC spelling, None if ``text`` is not a MAC."""
    if not isinstance(text, str):
        return None
    t = text.strip()
    if not _MAC_EXACT.match(t):
        return None
    h = re.sub(r"[^0-9a-fA-F]", "", t).lower()
    return ":".join(h[i:i + 2] for i in range(0, 12, 2))


#: Personal fields vendors put next to the MAC (Meraki userId, Spaces profile, RADIUS
#: User-Name): replaced whole in DLQ payloads that are still structured.
PERSONAL_FIELDS = frozenset({
    "userid", "rawuserid", "username", "user_name", "email", "mobile", "firstname",
    "lastname", "postalcode", "ipv4", "ipv6", "ip", "openroaminguserid", "secret",
})


def _scrub(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: (REDACTED if str(k).lower() in PERSONAL_FIELDS else _scrub(v))
                for k, v in obj.items()}
    if isinstance(obj, list):
        return [_scrub(v) for v in obj]
    return obj


def redact(raw: bytes | str | Any, limit: int = MAX_RAW_CHARS) -> str:
    """``raw`` as text: every MAC-shaped substring and personal field ``<redacted>``.

    Structured input (dict/list) has its :data:`PERSONAL_FIELDS` replaced whole; text
    has its MAC-shaped substrings (colon, dash, Cisco dotted, bare hex), e-mail
    addresses and IPv4 addresses replaced. Free-text user names cannot be recognised:
    send controllers' client events only (docs/CONNECT.md).
    """
    if isinstance(raw, dict | list):
        raw = _scrub(raw)
    if isinstance(raw, bytes):
        text = raw.decode("utf-8", "replace")
    elif isinstance(raw, str):
        text = raw
    else:
        try:
            text = json.dumps(raw, sort_keys=True, default=str)
        except (TypeError, ValueError):
            text = str(raw)
    return _PERSONAL_TEXT.sub(REDACTED, _MAC_ANYWHERE.sub(REDACTED, text))[:limit]


def edge_secret(secret_file: str | None = None, *, demo: bool = False,
                env: Mapping[str, str] | None = None) -> bytes:
    """The pseudonym secret: the pipeline's own rule (:func:`infra.secrets.load_secret`)."""
    return load_secret(secret_file, demo=demo, env=env,
                       hint="(the same secret as the pipeline's)")


def read_secret_value(name: str, file: str | None, env_var: str,
                      env: Mapping[str, str] | None = None) -> str:
    """A vendor shared secret from ``file`` or the environment variable ``env_var``."""
    env = os.environ if env is None else env
    if file:
        try:
            return Path(file).read_text().strip()
        except OSError as exc:
            raise ConfigError(f"{name} file {file}: cannot read: {exc.strerror}") from None
    value = env.get(env_var, "")
    if not value:
        raise ConfigError(f"no {name}: set {env_var} or pass the --{name.replace(' ', '-')}"
                          "-file option")
    return value


class ApResolver:
    """AP identifier as a vendor sends it → the building's AP id.

    Accepted: the AP id itself; the AP's MAC (``"mac"`` field, or an id that is a MAC)
    in any spelling; any of the AP's ``"aliases"`` (names, Spaces location ids, …).
    ``occustream buildings import`` writes ``mac`` and ``aliases``; the building loader
    ignores the extra fields.
    """

    def __init__(self, site: Site, raw: Any = None) -> None:
        self.ap_location = dict(site.ap_location)
        self.index: dict[str, str] = {}
        for ap in site.aps:
            self._add(ap.id, ap.id)
        for entry in _raw_aps(raw):
            aid = entry.get("id")
            if not isinstance(aid, str) or aid not in self.ap_location:
                continue
            if isinstance(entry.get("mac"), str):
                self._add(entry["mac"], aid)
            for alias in entry.get("aliases") or []:
                if isinstance(alias, str):
                    self._add(alias, aid)

    def _add(self, key: str, aid: str) -> None:
        self.index.setdefault(key, aid)
        self.index.setdefault(key.strip().lower(), aid)
        mac = parse_mac(key)
        if mac:
            self.index.setdefault(mac, aid)

    def resolve(self, ident: Any) -> str | None:
        """The AP id for ``ident``, or None if the building does not know it."""
        if not isinstance(ident, str) or not ident:
            return None
        hit = self.index.get(ident) or self.index.get(ident.strip().lower())
        if hit is None:
            mac = parse_mac(ident)
            hit = self.index.get(mac) if mac else None
        return hit

    @classmethod
    def load(cls, name_or_path: str) -> tuple[Site, ApResolver]:
        """Load a building file and its resolver."""
        site = load_site(name_or_path)
        raw = json.loads(resolve_building_path(name_or_path).read_text())
        return site, cls(site, raw)


def _raw_aps(raw: Any) -> list[dict[str, Any]]:
    if not isinstance(raw, dict):
        return []
    buildings = raw.get("buildings") if "buildings" in raw else [raw]
    out = []
    for b in buildings or []:
        if isinstance(b, dict):
            out += [a for a in b.get("aps") or [] if isinstance(a, dict)]
    return out


_LABEL_SAFE = re.compile(r"[^A-Za-z0-9_.:\- ]")


class Metrics:
    """Counters of one connector (no counts of people, no identifiers)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.started = time.monotonic()
        self.received = 0  # input units: posts, lines, messages, packets
        self.produced = 0  # observations acknowledged by Kafka
        self.duplicates = 0
        self.dlq: collections.Counter[str] = collections.Counter()
        self.ignored: collections.Counter[str] = collections.Counter()
        self.rejected: collections.Counter[str] = collections.Counter()  # auth, size, …
        self.max_event_ts: float | None = None
        self.last_produced_wall: float | None = None

    def health(self, pending: int = 0) -> dict[str, Any]:
        """Health line: counts and lag (event-time lag = now − newest event time)."""
        now = time.time()
        return {
            "source": self.source,
            "uptime_s": round(time.monotonic() - self.started, 1),
            "received": self.received,
            "produced": self.produced,
            "duplicates": self.duplicates,
            "pending": pending,
            "dlq": dict(self.dlq),
            "ignored": dict(self.ignored),
            "rejected": dict(self.rejected),
            "max_event_ts": self.max_event_ts,
            "event_lag_s": None if self.max_event_ts is None
            else round(now - self.max_event_ts, 3),
            "last_produced_age_s": None if self.last_produced_wall is None
            else round(now - self.last_produced_wall, 3),
        }

    def prometheus(self, pending: int = 0) -> str:
        """The health line as Prometheus text exposition."""
        h = self.health(pending)
        src = f'source="{self.source}"'
        lines = []

        def metric(name: str, kind: str, value: Any, labels: str = "") -> None:
            if value is None:
                return
            lab = "{" + src + ("," + labels if labels else "") + "}"
            lines.append(f"# TYPE occustream_ingest_{name} {kind}")
            lines.append(f"occustream_ingest_{name}{lab} {float(value)}")

        metric("received_total", "counter", h["received"])
        metric("produced_total", "counter", h["produced"])
        metric("duplicates_total", "counter", h["duplicates"])
        metric("pending", "gauge", h["pending"])
        metric("uptime_seconds", "gauge", h["uptime_s"])
        metric("event_lag_seconds", "gauge", h["event_lag_s"])
        metric("max_event_timestamp_seconds", "gauge", h["max_event_ts"])
        for group, name in ((h["dlq"], "dlq_total"), (h["ignored"], "ignored_total"),
                            (h["rejected"], "rejected_total")):
            for reason, n in sorted(group.items()):
                metric(name, "counter", n, f'reason="{_LABEL_SAFE.sub("_", reason)}"')
        # one TYPE line per metric name
        seen: set[str] = set()
        out = []
        for line in lines:
            if line.startswith("# TYPE"):
                if line in seen:
                    continue
                seen.add(line)
            out.append(line)
        return "\n".join(out) + "\n"


class KafkaSink:
    """aiokafka producer for the observation and DLQ topics (acks=1, batched by linger)."""

    def __init__(self, bootstrap: str, topic: str = TOPIC, dlq_topic: str = DLQ_TOPIC) -> None:
        self.bootstrap, self.topic, self.dlq_topic = bootstrap, topic, dlq_topic
        self.producer: Any = None

    async def start(self) -> None:
        """Connect to the broker."""
        from aiokafka import AIOKafkaProducer
        from aiokafka.errors import KafkaError

        self.producer = AIOKafkaProducer(
            bootstrap_servers=self.bootstrap, acks=1, linger_ms=5, max_batch_size=1 << 20,
            enable_idempotence=False, request_timeout_ms=30_000,
        )
        try:
            await self.producer.start()
        except KafkaError as exc:
            await self.producer.stop()
            raise ServiceError(f"cannot reach Kafka at {self.bootstrap}: {exc}") from None

    async def send(self, topic: str, key: bytes | None, value: bytes) -> asyncio.Future[Any]:
        """Queue one record; the returned future resolves when the broker acknowledged it."""
        return await self.producer.send(topic, value=value, key=key)

    async def stop(self) -> None:
        """Flush and disconnect."""
        if self.producer is not None:
            await self.producer.stop()


class MemorySink:
    """In-memory sink with the :class:`KafkaSink` interface (unit tests, dry runs)."""

    def __init__(self, topic: str = TOPIC, dlq_topic: str = DLQ_TOPIC) -> None:
        self.topic, self.dlq_topic = topic, dlq_topic
        self.records: list[tuple[str, bytes | None, bytes]] = []

    async def start(self) -> None:
        """Nothing to connect."""

    async def send(self, topic: str, key: bytes | None, value: bytes) -> asyncio.Future[Any]:
        """Store the record; the future is already done."""
        self.records.append((topic, key, value))
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        fut.set_result(None)
        return fut

    async def stop(self) -> None:
        """Nothing to disconnect."""


class Edge:
    """Validation, pseudonyms, dedupe, DLQ and metrics for one connector (module docstring).

    Args:
        source: the connector's name (metrics label, DLQ ``source``).
        secret: the pipeline's pseudonym secret (:func:`edge_secret`).
        resolver: AP identifiers → AP ids of the building.
        sink: :class:`KafkaSink` (or :class:`MemorySink`).
        dedupe_window_s: a repeat of a produced observation received within this many
            seconds (wall clock) of the first is dropped (counted as a duplicate).
        dedupe_max: at most this many remembered observations (oldest forgotten first).
    """

    def __init__(self, source: str, secret: bytes, resolver: ApResolver, sink: Any, *,
                 dedupe_window_s: float = 600.0, dedupe_max: int = 1 << 18) -> None:
        self.source, self.resolver, self.sink = source, resolver, sink
        self.metrics = Metrics(source)
        self.pseudonym = functools.lru_cache(maxsize=1 << 18)(
            functools.partial(hmac_pseudonym, secret))
        hmac_pseudonym(secret, "00:00:00:00:00:00")  # fail now on a bad secret
        self.dedupe_window_s = float(dedupe_window_s)
        self.dedupe_max = int(dedupe_max)
        self._seen: dict[tuple[str, str, float], None] = {}
        self._seen_order: collections.deque[tuple[float, tuple[str, str, float]]] = (
            collections.deque())
        self._pending: list[tuple[str, bytes | None, bytes]] = []
        self._inflight: list[asyncio.Future[None]] = []
        self._inflight_n = 0

    # ---- input -----------------------------------------------------------------------
    def observe(self, mac: Any, ap: Any, ts: Any, rssi: Any = None, *, raw: Any = None) -> bool:
        """One observation; True if it will be produced, False if dropped or dead-lettered.

        ``raw`` is the vendor fragment it came from (redacted before it goes to the DLQ).
        """
        frag = raw if raw is not None else {"device": mac, "ap": ap, "ts": ts}
        norm = parse_mac(mac)
        if norm is None:
            self.reject(frag, "missing_field:device" if mac in (None, "") else "bad_mac")
            return False
        ap_id = self.resolver.resolve(ap)
        if ap_id is None:
            self.reject(frag, "missing_field:ap" if ap in (None, "") else "unknown_ap")
            return False
        rec: dict[str, Any] = {"device": norm, "ap": ap_id, "ts": ts}
        if rssi is not None:
            rec["rssi"] = rssi
        obs = parse_observation(rec, self.resolver.ap_location)
        if isinstance(obs, Invalid):
            self.reject(frag, obs.reason)
            return False
        pid = self.pseudonym(norm)
        key = (pid, ap_id, obs.ts)
        if key in self._seen:
            self.metrics.duplicates += 1
            return False
        self._remember(key)
        out: dict[str, Any] = {"device": pid, "ap": ap_id, "ts": obs.ts}
        if obs.rssi is not None:
            out["rssi"] = obs.rssi
        out["pseudonymised"] = True
        self._pending.append((self.sink.topic, pid.encode(),
                              json.dumps(out, separators=(",", ":")).encode()))
        if self.metrics.max_event_ts is None or obs.ts > self.metrics.max_event_ts:
            self.metrics.max_event_ts = obs.ts
        return True

    def _remember(self, key: tuple[str, str, float]) -> None:
        now = time.monotonic()
        self._seen[key] = None
        self._seen_order.append((now, key))
        horizon = now - self.dedupe_window_s
        order, seen = self._seen_order, self._seen
        while order and (order[0][0] < horizon or len(order) > self.dedupe_max):
            seen.pop(order.popleft()[1], None)

    def reject(self, raw: Any, reason: str) -> None:
        """Dead-letter ``raw`` (redacted) with ``reason``."""
        kind = reason.split(":", 1)[0]
        self.metrics.dlq[kind] += 1
        log.debug("%s: dead-lettered (%s)", self.source, reason)
        value = json.dumps({"raw": redact(raw), "reason": reason, "ts_received": time.time(),
                            "source": self.source}, separators=(",", ":")).encode()
        self._pending.append((self.sink.dlq_topic, None, value))

    def ignore(self, kind: str) -> None:
        """Count a valid input that carries no observation (e.g. a disassociation)."""
        self.metrics.ignored[kind] += 1

    def refuse(self, kind: str) -> None:
        """Count an input refused before parsing (bad secret, too large, …)."""
        self.metrics.rejected[kind] += 1

    # ---- output ----------------------------------------------------------------------
    @property
    def pending(self) -> int:
        """Records built but not yet acknowledged by the broker."""
        return len(self._pending) + self._inflight_n

    async def flush(self) -> None:
        """Send everything pending; return when it and every earlier batch are acknowledged.

        Batches are not serialised on their acknowledgements: a caller waits for the
        batch holding its records and the batches before it, while later callers send
        theirs (so request/response receivers pipeline instead of waiting in turn).
        """
        if self._pending:
            batch, self._pending = self._pending, []
            done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._inflight.append(done)  # registered before the first await
            self._inflight_n += len(batch)
            try:
                futs = [await self.sink.send(t, k, v) for t, k, v in batch]
                await asyncio.gather(*futs)
            except BaseException as exc:
                if not done.done():
                    done.set_exception(exc)
                raise
            finally:
                self._inflight_n -= len(batch)
                self._inflight.remove(done)
            n_obs = sum(t == self.sink.topic for t, _, _ in batch)
            if n_obs:
                self.metrics.produced += n_obs
                self.metrics.last_produced_wall = time.time()
            done.set_result(None)
        earlier = list(self._inflight)
        if earlier:
            await asyncio.gather(*earlier)

    async def flush_forever(self, interval_s: float = 0.05) -> None:
        """Flush every ``interval_s`` (for datagram receivers that do not flush per input)."""
        while True:
            await asyncio.sleep(interval_s)
            if self._pending:
                await self.flush()


# ---- health / metrics server ------------------------------------------------------------
def add_health_routes(app: Any, edge: Edge) -> None:
    """``GET /health`` (JSON) and ``GET /metrics`` (Prometheus text) on an aiohttp app."""
    from aiohttp import web

    async def health(_request: web.Request) -> web.Response:
        return web.json_response(edge.metrics.health(edge.pending))

    async def metrics(_request: web.Request) -> web.Response:
        return web.Response(text=edge.metrics.prometheus(edge.pending),
                            content_type="text/plain", charset="utf-8")

    app.router.add_get("/health", health)
    app.router.add_get("/metrics", metrics)


async def start_http(app: Any, host: str, port: int) -> tuple[Any, int]:
    """Serve an aiohttp app; returns (runner, bound port) — port 0 picks a free one."""
    from aiohttp import web

    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    sockets = site._server.sockets if site._server else []  # noqa: SLF001 - bound port
    return runner, (sockets[0].getsockname()[1] if sockets else port)


async def start_health_server(edge: Edge, host: str, port: int) -> tuple[Any, int]:
    """A small aiohttp server with only ``/health`` and ``/metrics``."""
    from aiohttp import web

    app = web.Application()
    add_health_routes(app, edge)
    return await start_http(app, host, port)
