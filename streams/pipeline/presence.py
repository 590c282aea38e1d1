"""observe + presence for one partition of ``wifi.observations`` (docs/DESIGN.md "Flow").

``wifi.observations`` is keyed by device MAC, so all observations of a device are in
one partition, in arrival order. The pseudonym (HMAC or TTL-salt) is a function of the
MAC and of that device's own history, so a device's presence can be kept in the same
partition that receives it: observe and presence run fused per input partition, and no
repartition hop (``presence.events``) is needed. Raw MACs live only inside
:meth:`PartitionState.process` for the duration of one record; the state, the
checkpoints, the partials and the DLQ hold pseudonyms or redacted text only.

Semantics are exactly :mod:`occupancy.oracle`'s, applied to the partition's records in
offset order:

* validation with :func:`occupancy.schema.parse_observation` and one quorum clock per
  partition (:class:`occupancy.clock.PartitionClock`: a record far ahead is held until
  the clock — moved only by ``clock_quorum`` records or by a marker of the global
  clock — catches up, else dead-lettered ``far_future``; too-late relative to it);
* a device is present at tick ``t`` at the location of its latest admitted
  observation with ``ts ≤ t`` (ties: the later offset) iff ``t − ts < validity_s``;
* tick ``t`` is final for the partition when its watermark (max ts − lateness) is
  strictly above ``t``; the partition then emits its *partial* count vector for ``t``.
  The occupancy stage sums the partials of all partitions (:mod:`.occupancy`).

Exactly-once: the state records the last input offset it incorporates
(:attr:`PartitionState.offset`); records at or below it are skipped, so replaying the
log after a crash from any committed offset ≤ the checkpoint reproduces the same
state and the same partials (the whole function is deterministic in offset order).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import re
import time
import zlib
from bisect import insort
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import numpy as np

from mechanisms.pseudonym import ttl_expired
from occupancy.clock import ADMIT, DEFAULT_QUORUM, HOLD, TOO_LATE, PartitionClock
from occupancy.schema import (
    MAC_RE,
    MAX_TS,
    MIN_TS,
    PSEUDONYM_RE,
    Invalid,
    decode,
    parse_observation,
    quick_fields,
)
from streams.pipeline.identity import salt_window, state_from_json, state_to_json

REDACTED = "<redacted>"
#: emptied; 2¹⁶ ≈ the devices of a large campus in one partition's validity window.
MEMO_SIZE = 1 << 16
#: Watermark marker records on ``wifi.observations`` start with this (see :func:`sign_marker`).
WATERMARK_PREFIX = b'{"watermark":'
#: Longest marker record accepted (a signed marker is ~120 bytes).
MAX_MARKER_BYTES = 256
_MARKER_DOMAIN = b"occustream-watermark-marker-v1"


def _marker_tag(secret: bytes, ts: float, partition: int) -> str:
    msg = b"\x00".join((_MARKER_DOMAIN, str(int(partition)).encode(), repr(float(ts)).encode()))
    return hmac.new(secret, msg, hashlib.sha256).hexdigest()


def sign_marker(ts: float, secret: bytes, partition: int) -> bytes:
    """A watermark marker record for one partition: advances its event clock to ``ts``.

    The occupancy stage appends one to a partition that has been idle while the others
    moved on (e.g. at night), with ``ts`` an event time another partition has already
    seen, so the idle partition's clock never passes the global event clock. The marker
    is in the partition's log, so replays see it at the same place (deterministic).
    It is not an observation: it is neither counted nor dead-lettered.

    Only the product can move the clock: the record carries an HMAC-SHA256 tag under
    the pipeline's secret over (domain, partition, ``ts``), so a marker forged by
    another producer, or copied to another partition, is refused
    (:func:`verify_marker`) and dead-lettered as ``bad_marker``.
    """
    ts = float(ts)
    return json.dumps({"watermark": ts, "partition": int(partition),
                       "sig": _marker_tag(secret, ts, partition)},
                      separators=(",", ":")).encode()


def verify_marker(raw: Any, secret: bytes, partition: int) -> float | Invalid:
    """The event time of an authentic marker for ``partition``, else ``Invalid("bad_marker")``.

    Never raises: oversized, malformed, unsigned, wrongly signed, other-partition and
    out-of-range markers are all ``bad_marker``.
    """
    bad = Invalid("bad_marker")
    if not isinstance(raw, bytes | bytearray) or len(raw) > MAX_MARKER_BYTES:
        return bad
    obj = decode(raw)
    if isinstance(obj, Invalid) or set(obj) != {"watermark", "partition", "sig"}:
        return bad
    ts, p, sig = obj["watermark"], obj["partition"], obj["sig"]
    if (isinstance(ts, bool) or not isinstance(ts, float | int) or isinstance(p, bool)
            or not isinstance(p, int) or p != partition or not isinstance(sig, str)):
        return bad
    try:
        ts = float(ts)
    except OverflowError:
        return bad
    if not (math.isfinite(ts) and MIN_TS <= ts <= MAX_TS):
        return bad
    if not hmac.compare_digest(sig, _marker_tag(secret, ts, partition)):
        return bad
    return ts


#: Separators of MAC spellings: colon, dash, dot, space/whitespace, underscore.
_SEP = r"[:\-._\s]?"
_MAC_LIKE = re.compile(
    r"(?i)(?:[0-9a-f]{2}" + _SEP + r"){5}[0-9a-f]{2}"  # aa:bb:cc:dd:ee:ff and kin
    r"|[0-9a-f]{4}" + _SEP + r"[0-9a-f]{4}" + _SEP + r"[0-9a-f]{4}")  # Cisco aabb.ccdd.eeff
#: JSON ``\uXXXX`` escapes of ASCII characters (``\u003a`` = ``:``), undone before the
#: MAC search so an escaped separator or digit cannot hide a MAC.
_ASCII_ESCAPE = re.compile(r"\\+u00([0-7][0-9a-fA-F])")
MAX_RAW_CHARS = 2000


def redact(raw: Any) -> str:
    r"""The record as text with anything MAC-like removed (for the DLQ).

    A JSON object has its ``device`` field replaced whatever its content (a bad MAC
    may still identify a device); other text has MAC-shaped substrings replaced, in
    every spelling: separators ``:`` ``-`` ``.`` ``_`` or whitespace or none, any case,
    Cisco ``xxxx.xxxx.xxxx``, and with JSON ``\u00XX`` escapes undone first. The whole
    text is redacted before it is cut to :data:`MAX_RAW_CHARS` (no half MAC survives
    at the cut).
    """
    obj = decode(raw)
    if isinstance(obj, dict):
        if "device" in obj:
            obj = dict(obj)
            obj["device"] = REDACTED
        try:
            text = json.dumps(obj, sort_keys=True, default=str)
        except (TypeError, ValueError, RecursionError):
            text = REDACTED
    elif raw is None:
        text = ""
    elif isinstance(raw, bytes | bytearray | memoryview):
        text = bytes(raw).decode("utf-8", "replace")
    else:
        text = str(raw)
    text = _ASCII_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)
    return _MAC_LIKE.sub(REDACTED, text)[:MAX_RAW_CHARS]


@dataclass
class Partial:
    """Partial counts of one partition at one final tick."""

    tick: float
    partition: int
    first_tick: float
    counts: list[int]
    ttl: list[int]
    max_ts: float = 0.0

    def to_json(self, partitions: int, site: str) -> bytes:
        """Record value for ``occupancy.partial``."""
        return json.dumps(
            {"tick": self.tick, "partition": self.partition, "partitions": partitions,
             "first_tick": self.first_tick, "site": site, "max_ts": self.max_ts,
             "wall": time.time(),
             "counts": self.counts, "ttl": self.ttl},
            separators=(",", ":"),
        ).encode()


@dataclass
class BatchResult:
    """What one batch produced: DLQ records and partials of newly final ticks."""

    dlq: list[bytes] = field(default_factory=list)
    partials: list[Partial] = field(default_factory=list)
    processed: int = 0
    skipped: int = 0


@dataclass
class StageConfig:
    """The parameters the presence stage needs (from :class:`streams.settings.Settings`)."""

    ap_location: dict[str, str]
    location_index: dict[str, int]
    tick_s: float
    validity_s: float
    lateness_s: float
    max_future_s: float
    ttl_s: float
    secret: bytes
    track_ttl: bool = True
    max_marker_jump_s: float = 2 * 86400.0
    clock_quorum: int = DEFAULT_QUORUM


@dataclass
class PartitionState:
    """Presence state of one input partition (JSON-serialisable for checkpoints).

    Attributes:
        partition: the input partition.
        offset: last input offset incorporated (−1: none).
        max_ts: the partition's event clock (:attr:`occupancy.clock.PartitionClock.value`).
        min_ts: earliest admitted event time (fixes the first tick).
        next_k: index of the next tick to finalise (tick = k · tick_s).
        first_k: index of the first tick this partition reports.
        devices: pseudonym → observations ``[ts, offset, location index]`` sorted,
            pruned to the latest one at or before the last final tick plus later ones.
        ttl_devices: the same per TTL-salt pseudonym.
        ttl_state: HMAC pseudonym → TTL salt state.
        dlq_counts: DLQ reason → count.
        clock: the clock's state (:meth:`occupancy.clock.PartitionClock.to_json`; held
            records carry pseudonyms and redacted text only).
    """

    partition: int
    offset: int = -1
    max_ts: float | None = None
    min_ts: float | None = None
    next_k: int | None = None
    first_k: int | None = None
    devices: dict[str, list[list[float]]] = field(default_factory=dict)
    ttl_devices: dict[str, list[list[float]]] = field(default_factory=dict)
    ttl_state: dict[str, Any] = field(default_factory=dict)
    dlq_counts: dict[str, int] = field(default_factory=dict)
    clock: dict[str, Any] = field(default_factory=dict)
    # memos of pure functions, in process memory only (not in checkpoints, not compared):
    # device as sent → (MAC, pseudonym) for raw MACs and for edge pseudonyms; HMAC
    # pseudonym → (TTL state, TTL pseudonym, the event times for which that salt holds
    # (identity.salt_window), the salted identifier: the MAC, or the pseudonym for a
    # record pseudonymised at the edge); and what they were computed with
    _macs: dict[str, tuple[str, str]] = field(default_factory=dict, repr=False, compare=False)
    _edge: dict[str, tuple[str, str]] = field(default_factory=dict, repr=False, compare=False)
    _ttl_memo: dict[str, tuple[Any, str, float, float, str]] = field(
        default_factory=dict, repr=False, compare=False)
    _memo_of: Any = field(default=None, repr=False, compare=False)

    # ---- serialisation -------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """Compressed JSON snapshot."""
        d = {k: getattr(self, k) for k in (
            "partition", "offset", "max_ts", "min_ts", "next_k", "first_k",
            "devices", "ttl_devices", "dlq_counts", "clock")}
        d["ttl_state"] = {k: state_to_json(v) for k, v in self.ttl_state.items()}
        return zlib.compress(json.dumps(d, separators=(",", ":")).encode(), 1)

    @classmethod
    def from_bytes(cls, data: bytes) -> PartitionState:
        """Inverse of :meth:`to_bytes`."""
        d = json.loads(zlib.decompress(data))
        d["ttl_state"] = {k: state_from_json(v) for k, v in d.get("ttl_state", {}).items()}
        return cls(**d)

    # ---- processing ----------------------------------------------------------------
    def process(
        self,
        records: Iterable[tuple[int, bytes]],
        cfg: StageConfig,
        pseudonym: Callable[[str], str],
        ttl_step: Callable[[bytes, str, float, Any, float], tuple[str, Any]] | None = None,
    ) -> BatchResult:
        """Process ``(offset, value)`` records of this partition in offset order.

        Records at or below :attr:`offset` are skipped (already in the state). After
        the records, every tick the watermark has passed is finalised.
        """
        out = BatchResult()
        clock = self.make_clock(cfg)
        offer = clock.offer
        ap_location, loc_index = cfg.ap_location, cfg.location_index
        dlq_counts = self.dlq_counts
        track_ttl = cfg.track_ttl and ttl_step is not None
        secret, ttl_s = cfg.secret, cfg.ttl_s
        ap_li = {ap: loc_index.get(loc, -1) for ap, loc in ap_location.items()}
        memo_of = (pseudonym, ttl_step, secret, ttl_s)
        if self._memo_of != memo_of:
            self._memo_of = memo_of
            self._macs, self._edge, self._ttl_memo = {}, {}, {}
        macs, edge, ttl_memo = self._macs, self._edge, self._ttl_memo
        if len(ttl_memo) >= MEMO_SIZE:
            ttl_memo.clear()
        devices, ttl_devices, ttl_state = self.devices, self.ttl_devices, self.ttl_state
        admit = self._admit
        last = self.offset
        now = time.time()

        def dead(reason: str, text: str) -> None:
            kind = reason.split(":", 1)[0]
            dlq_counts[kind] = dlq_counts.get(kind, 0) + 1
            out.dlq.append(json.dumps({"raw": text, "reason": reason, "ts_received": now},
                                      separators=(",", ":")).encode())

        processed = 0
        for off, raw in records:
            if off <= last:
                out.skipped += 1
                continue
            last = off
            if isinstance(raw, bytes) and raw.startswith(WATERMARK_PREFIX):
                bad = self._marker(raw, cfg, clock)
                if bad is None:
                    continue
                processed += 1
                dead(bad.reason, redact(raw))
                continue
            processed += 1
            # hot path: a plainly well-formed record of a memoised device at a known AP
            # (one MAC check and one HMAC per device, not per record); anything else takes
            # the full parse, which names the DLQ reason — both give the same result
            q = quick_fields(raw)
            ident = li = None
            if q is not None:
                device, ap, ts, edge_pid = q
                ident = (edge if edge_pid else macs).get(device)
                if ident is None:
                    ident = self._identify(device, edge_pid, pseudonym)
                li = ap_li.get(ap)
            if ident is None or li is None:
                obs = parse_observation(raw, ap_location)
                if isinstance(obs, Invalid):
                    dead(obs.reason, redact(raw))
                    continue
                ts, device = obs.ts, obs.device
                li = loc_index.get(obs.location, -1)
                # an edge connector already applied the same keyed HMAC (streams.schema)
                pid = device if obs.pseudonymised else pseudonym(device)
            else:
                device, pid = ident
            # [offset, location index, pseudonym, TTL pseudonym, redacted raw if held]
            payload: list[Any] = [off, li, pid, None]
            decision, released, expired = offer(ts, payload)
            if decision == TOO_LATE:
                dead("too_late", redact(raw))
                continue
            if track_ttl:  # in arrival order, held or not (the salt needs the raw MAC)
                st = ttl_state.get(pid)
                m = ttl_memo.get(pid)
                if m is not None and m[0] is st and m[2] <= ts < m[3] and m[4] == device:
                    payload[3] = m[1]  # the salt holds: ttl_step would return (m[1], st)
                else:
                    payload[3], st = ttl_step(secret, device, ts, st, ttl_s)  # type: ignore[misc]
                    ttl_state[pid] = st
                    ttl_memo[pid] = (st, payload[3], *salt_window(st, ttl_s), device)
            if decision == ADMIT:  # self._admit(ts, payload), inlined
                if self.min_ts is None or ts < self.min_ts:
                    self.min_ts = ts
                entry = [ts, off, li]
                _add(devices, pid, entry)
                if payload[3] is not None:
                    _add(ttl_devices, payload[3], entry)
            elif decision == HOLD:
                payload.append(redact(raw))
            for t, _, held in released:
                admit(t, held)
            for _, _, held in expired:
                dead("far_future", held[4] if len(held) > 4 else REDACTED)
        out.processed = processed
        self.offset = last
        self.max_ts = clock.value
        self.clock = clock.to_json()
        out.partials = self._finalise(cfg, track_ttl)
        return out

    def make_clock(self, cfg: StageConfig) -> PartitionClock:
        """The partition's clock from its state (a checkpoint without one: floor = max_ts)."""
        if self.clock:
            return PartitionClock(cfg.lateness_s, cfg.max_future_s, cfg.clock_quorum,
                                  **self.clock)
        return PartitionClock(cfg.lateness_s, cfg.max_future_s, cfg.clock_quorum,
                              floor=self.max_ts)

    def _admit(self, ts: float, payload: list[Any]) -> None:
        """Add one admitted observation (``payload`` from :meth:`process`) to the state."""
        off, li, pid, tid = payload[:4]
        if self.min_ts is None or ts < self.min_ts:
            self.min_ts = ts
        entry = [ts, off, li]
        _add(self.devices, pid, entry)
        if tid is not None:  # no TTL pseudonym when TTL counts are off
            _add(self.ttl_devices, tid, entry)

    def _identify(self, device: str, edge_pid: bool,
                  pseudonym: Callable[[str], str]) -> tuple[str, str] | None:
        """(MAC, pseudonym) of a device as sent, memoised; None if its syntax is bad.

        The same checks and the same function as the full path: ``device.lower()``
        against :data:`~occupancy.schema.MAC_RE` (or :data:`~occupancy.schema.PSEUDONYM_RE`
        for a record pseudonymised at the edge, whose pseudonym is the device itself),
        then ``pseudonym(MAC)``. Bad devices are not memoised (rare, and each is
        dead-lettered by the full path). The memo lives in process memory only, like
        :func:`streams.pipeline.identity.pseudonymizer`'s cache (never in a
        checkpoint), and is emptied when it reaches :data:`MEMO_SIZE` devices.
        """
        mac = device.lower()
        memo = self._edge if edge_pid else self._macs
        if edge_pid:
            if PSEUDONYM_RE.fullmatch(mac) is None:
                return None
            ident = (mac, mac)
        else:
            if MAC_RE.fullmatch(mac) is None:
                return None
            ident = (mac, pseudonym(mac))
        if len(memo) >= MEMO_SIZE:
            memo.clear()
        memo[device] = ident
        return ident

    def _marker(self, raw: bytes, cfg: StageConfig, clock: PartitionClock) -> Invalid | None:
        """Apply a watermark marker to ``clock``; None if it was applied, else why not.

        A marker must be authentic for this partition (:func:`verify_marker`) and at most
        ``cfg.max_marker_jump_s`` ahead of the partition's clock (``marker_jump``), so
        one record can never make the stage finalise (and allocate) more than
        ``max_marker_jump_s / tick_s`` ticks (before the clock exists, the jump is
        measured from the largest event time seen). Held records it brings within
        ``max_future_s`` of the clock are admitted.
        """
        ts = verify_marker(raw, cfg.secret, self.partition)
        if isinstance(ts, Invalid):
            return ts
        c = clock.reference
        if c is not None and ts - c > cfg.max_marker_jump_s:
            return Invalid("marker_jump")
        for t, _, held in clock.raise_floor(ts):
            self._admit(t, held)
        return None

    def watermark(self, lateness_s: float) -> float | None:
        """Max event time − allowed lateness (None before the first event)."""
        return None if self.max_ts is None else self.max_ts - lateness_s

    def _finalise(self, cfg: StageConfig, track_ttl: bool) -> list[Partial]:
        wm = self.watermark(cfg.lateness_s)
        if wm is None:
            return []
        tick_s = cfg.tick_s
        if self.next_k is None:
            # before the first admitted event nothing is present; a partition that only
            # saw markers reports zeros from its first final tick on
            start = self.min_ts if self.min_ts is not None else wm
            self.first_k = self.next_k = math.ceil(start / tick_s)
        n_loc = len(cfg.location_index)
        n = max(math.ceil(wm / tick_s) - self.next_k, 0)  # ticks k·tick_s < wm
        out = []
        if n:
            t0 = self.next_k * tick_s
            counts = _count_range(self.devices, t0, n, tick_s, cfg.validity_s, n_loc)
            ttl = (_count_range(self.ttl_devices, t0, n, tick_s, cfg.validity_s, n_loc)
                   if track_ttl else None)
            for j in range(n):
                out.append(Partial(t0 + j * tick_s, self.partition, self.first_k * tick_s,
                                   counts[j].tolist(), ttl[j].tolist() if ttl is not None
                                   else [], float(self.max_ts or 0.0)))
            self.next_k += n
        if out:
            horizon = self.next_k * tick_s  # the next tick to finalise
            _prune(self.devices, horizon, cfg.validity_s)
            if track_ttl:
                _prune(self.ttl_devices, horizon, cfg.validity_s)
                # salts are keyed by their start time, so a state whose salt ended
                # before the watermark is never read again (mechanisms.pseudonym) —
                # as long as lateness_s is not raised on a restart: records between
                # the new and the old watermark would then start a fresh salt where a
                # dropped one was still running (TTL counts only; no guarantee at stake)
                ttl_s = cfg.ttl_s
                expired = [k for k, v in self.ttl_state.items() if ttl_expired(v, wm, ttl_s)]
                for k in expired:
                    del self.ttl_state[k]
        return out


def _add(table: dict[str, list[list[Any]]], key: str, entry: list[Any]) -> None:
    """Insert ``entry`` (``[ts, offset, location index]``) in ``table[key]``, kept sorted."""
    lst = table.get(key)
    if lst is None:
        table[key] = [entry]
    elif lst[-1][0] <= entry[0]:
        lst.append(entry)
    else:
        insort(lst, entry)


def _count_range(devices: dict[str, list[list[float]]], t0: float, n: int, tick_s: float,
                 validity_s: float, n_loc: int) -> np.ndarray:
    """Counts at ticks ``t0 + j·tick_s`` (j < n), shape (n, n_loc), in one vectorised pass.

    An observation keeps its device present from ``ts`` (inclusive) until
    ``ts + validity_s`` or the device's next observation (exclusive), as in
    :func:`occupancy.oracle.occupancy_oracle`; entries are sorted by (ts, offset), so of
    two observations with the same ts the later one wins. The interval of each entry
    covers the ticks ``ceil((ts − t0)/tick_s) ≤ j < ceil((end − t0)/tick_s)`` (IEEE
    double arithmetic, as the per-entry loop it replaces), added as +1/−1 at its ends.
    """
    lists = list(devices.values())
    flat = list(chain.from_iterable(lists))
    if not flat:
        return np.zeros((n, n_loc), dtype=np.int64)
    m = len(flat)
    a = np.fromiter(chain.from_iterable(flat), dtype=np.float64, count=3 * m).reshape(m, 3)
    ts = a[:, 0]
    li = a[:, 2].astype(np.intp)
    nxt = np.empty_like(ts)
    nxt[:-1] = ts[1:]
    nxt[np.cumsum([len(lst) for lst in lists]) - 1] = np.inf  # a device's last entry
    end = np.minimum(ts + validity_s, nxt)
    lo = np.clip(np.ceil((ts - t0) / tick_s), 0, n).astype(np.intp)
    hi = np.clip(np.ceil((end - t0) / tick_s), 0, n).astype(np.intp)
    keep = (li >= 0) & (lo < hi)
    li = li[keep]
    size = (n + 1) * n_loc
    diff = (np.bincount(lo[keep] * n_loc + li, minlength=size)
            - np.bincount(hi[keep] * n_loc + li, minlength=size)).astype(np.int64)
    return np.cumsum(diff.reshape(n + 1, n_loc), axis=0)[:n]


def _prune(devices: dict[str, list[list[float]]], horizon: float, validity_s: float) -> None:
    """Drop what can no longer matter for ticks ≥ ``horizon``."""
    dead = []
    for pid, lst in devices.items():
        base = -1
        for i in range(len(lst) - 1, -1, -1):
            if lst[i][0] < horizon:
                base = i
                break
        if base > 0:
            del lst[:base]
        if len(lst) == 1 and horizon - lst[0][0] >= validity_s:
            dead.append(pid)
    for pid in dead:
        del devices[pid]
