"""Connectivity events from stays, like the SNMP traps of the thesis' building.

Thesis §4.2: an event occurs when a device associates with an AP, then periodically
while it stays connected; re-connections also happen stochastically while the device
is stationary, at rates that depend on the device. Here, per stay of a device:

* an association event at the stay's start (plus up to ``offset_max_s``, default 5 s);
* re-associations every ``interval_s · U(0.85, 1.15)`` (``interval_s`` is per device,
  150–460 s, always < the 600 s validity window, so a present device stays counted);
* stochastic reconnections, a Poisson process of rate 1 / 30 min;
* the AP: one of the location's APs per stay, another AP of the same location for
  15 % of the events (roaming inside large rooms); RSSI −85 … −38 dBm.

Events carry their *event time* ``ts`` (integer milliseconds here) and an *arrival
time* ``ts + delay`` with a delay of at most :data:`MAX_DELAY_S` (20 s) — the normal
out-of-order jitter, well within the pipeline's allowed lateness (60 s).

Malformed records (the dead-letter path) are built by :func:`malformed_record`, each
clearly beyond the margins of :func:`streams.schema.validate` for its intended reason.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mechanisms.errors import InvalidParameterError

MAX_DELAY_S = 20.0
MEAN_DELAY_S = 1.5
RECONNECT_RATE_PER_S = 1.0 / 1800.0
ROAM_P = 0.15

#: Intended DLQ reason of every malformed kind (see streams.schema.REASONS).
MALFORMED_KINDS = (
    "bad_mac",
    "missing_field:device",
    "missing_field:ap",
    "missing_field:ts",
    "unknown_ap",
    "bad_type:ts",
    "bad_timestamp",
    "far_future",
    "too_late",
)

#: OUIs of common phone/laptop vendors (for realistic-looking MACs).
OUIS = (0x3C22FB, 0xF0D5BF, 0xA4C3F0, 0x8C8590, 0xDC2B2A, 0x28CFE9, 0x60F81D, 0xB8E856)


def device_mac(n: int, oui: int) -> str:
    """A unique, random-looking globally administered MAC for device number ``n``.

    ``n ↦ n · 0x9E3779 + 0x5BD1E9 (mod 2^24)`` is a bijection (odd multiplier), so
    different device numbers never collide under one OUI.
    """
    low = (n * 0x9E3779 + 0x5BD1E9) & 0xFFFFFF
    return _fmt((oui << 24) | low)


def random_mac(rng: np.random.Generator) -> str:
    """A randomised (locally administered, unicast) MAC, as phones use for privacy."""
    v = int(rng.integers(0, 1 << 48, dtype=np.int64))
    first = ((v >> 40) & 0xFC) | 0x02
    return _fmt((first << 40) | (v & 0xFFFFFFFFFF))


def _fmt(v: int) -> str:
    h = f"{v:012x}"
    return ":".join(h[i : i + 2] for i in range(0, 12, 2))


def stay_events(
    rng: np.random.Generator,
    loc: np.ndarray,
    start_s: np.ndarray,
    end_s: np.ndarray,
    interval_s: float,
    ap_first: np.ndarray,
    ap_count: np.ndarray,
    *,
    offset_max_s: float = 5.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Events of one device over its stays (vectorised over stays and events).

    Args:
        rng: the device's generator.
        loc: location index per stay.
        start_s: stay starts (seconds since simulation start).
        end_s: stay ends (exclusive).
        interval_s: the device's re-association period.
        ap_first: per location, index of its first AP in the AP table (APs are grouped
            by location).
        ap_count: per location, its number of APs.
        offset_max_s: the association event comes ``U(0, offset_max_s)`` after arrival.

    Returns:
        ``(t_s, ap, rssi, stay, delay_s)``: event times (seconds, sorted per stay), AP
        index, RSSI (dBm), the stay each event belongs to, and its delivery delay.
    """
    n_stays = len(loc)
    if n_stays == 0:
        empty = np.zeros(0)
        return empty, empty.astype(np.int64), empty.astype(np.int64), empty.astype(np.int64), empty
    dur = end_s - start_s
    n_per = (np.floor(dur / (0.85 * interval_s)).astype(np.int64) + 1).clip(min=1)
    total = int(n_per.sum())
    stay = np.repeat(np.arange(n_stays), n_per)
    gaps = interval_s * rng.uniform(0.85, 1.15, size=total)
    first = np.zeros(n_stays, dtype=np.int64)
    first[1:] = np.cumsum(n_per)[:-1]
    gaps[first] = rng.uniform(0.0, offset_max_s, size=n_stays) if offset_max_s > 0 else 0.0
    csum = np.cumsum(gaps)
    base = csum[first] - gaps[first]
    t = start_s[stay] + (csum - base[stay])
    # stochastic reconnections
    n_extra = rng.poisson(dur * RECONNECT_RATE_PER_S)
    if n_extra.sum():
        ex_stay = np.repeat(np.arange(n_stays), n_extra)
        ex_t = start_s[ex_stay] + rng.random(len(ex_stay)) * dur[ex_stay]
        t = np.concatenate([t, ex_t])
        stay = np.concatenate([stay, ex_stay])
    keep = t < end_s[stay]
    t, stay = t[keep], stay[keep]
    order = np.lexsort((t, stay))
    t, stay = t[order], stay[order]
    n = len(t)
    cnt = ap_count[loc]
    stay_ap = ap_first[loc] + (rng.random(n_stays) * cnt).astype(np.int64)
    ap = stay_ap[stay]
    roam = rng.random(n) < ROAM_P
    if roam.any():
        c = cnt[stay[roam]]
        ap[roam] = ap_first[loc[stay[roam]]] + (rng.random(int(roam.sum())) * c).astype(np.int64)
    rssi = rng.integers(-85, -37, size=n)
    delay = np.minimum(rng.exponential(MEAN_DELAY_S, size=n), MAX_DELAY_S)
    return t, ap, rssi, stay, delay


def malformed_record(
    kind: str,
    rng: np.random.Generator,
    *,
    device: str,
    ap: str,
    clock_s: float,
    lateness_s: float,
    max_future_s: float,
) -> dict[str, Any]:
    """One malformed record of ``kind`` (one of :data:`MALFORMED_KINDS`).

    Args:
        kind: the intended DLQ reason.
        rng: generator for the variations.
        device: a real device MAC to start from.
        ap: a real AP id to start from.
        clock_s: the event clock (max event time) when the record arrives.
        lateness_s: the pipeline's allowed lateness; ``too_late`` records are
            3–10 × that behind the clock.
        max_future_s: the allowed lead; ``far_future`` records are 3–10 × that ahead.
    """
    ts = round(clock_s, 3)
    rssi = int(rng.integers(-85, -37))
    rec: dict[str, Any] = {"device": device, "ap": ap, "ts": ts, "rssi": rssi}
    if kind == "bad_mac":
        variants = ("zz:zz:zz:zz:zz:zz", device.replace(":", ""), device[:-3], "not-a-mac")
        rec["device"] = variants[int(rng.integers(len(variants)))]
    elif kind.startswith("missing_field:"):
        del rec[kind.split(":", 1)[1]]
    elif kind == "unknown_ap":
        rec["ap"] = f"ap-unknown-{int(rng.integers(1000)):03d}"
    elif kind == "bad_type:ts":
        rec["ts"] = ["yesterday", "", "12:00", "NaN"][int(rng.integers(4))]
    elif kind == "bad_timestamp":
        rec["ts"] = [0, 12345.0, 5.0e9, -1.0][int(rng.integers(4))]
    elif kind == "far_future":
        rec["ts"] = round(clock_s + max_future_s * float(rng.uniform(3.0, 10.0)), 3)
    elif kind == "too_late":
        rec["ts"] = round(clock_s - lateness_s * float(rng.uniform(3.0, 10.0)), 3)
    else:
        raise InvalidParameterError(f"kind must be one of {MALFORMED_KINDS}, not {kind!r}")
    return rec
