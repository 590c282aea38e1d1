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
clearly beyond the margins of :func:`occupancy.schema.validate` for its intended reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mechanisms.errors import InvalidParameterError

MAX_DELAY_S = 20.0
MEAN_DELAY_S = 1.5
RECONNECT_RATE_PER_S = 1.0 / 1800.0
ROAM_P = 0.15

#: Intended DLQ reason of every malformed kind (see occupancy.schema.REASONS).
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


def random_mac(u: float) -> str:
    """A randomised (locally administered, unicast) MAC from a uniform ``u`` in [0, 1).

    Phones use such addresses for privacy; they change from one connection to the next.
    """
    v = int(u * (1 << 48))
    first = ((v >> 40) & 0xFC) | 0x02
    return _fmt((first << 40) | (v & 0xFFFFFFFFFF))


def _fmt(v: int) -> str:
    h = f"{v:012x}"
    return ":".join(h[i : i + 2] for i in range(0, 12, 2))


#: Uniforms drawn per device, per stay and per (regular) event (:class:`BlockDrawer`).
U_PER_DEVICE, U_PER_STAY, U_PER_EVENT = 1, 3, 7


def events_per_stay(start_s: list[float], end_s: list[float], interval_s: float) -> list[int]:
    """Upper bound on the regular events of each stay (gaps are ≥ 0.85 · interval)."""
    step = 0.85 * interval_s
    return [int((e - s) / step) + 1 for s, e in zip(start_s, end_s, strict=True)]


class BlockDrawer:
    """Draws each device's uniforms from the device's own PCG64 stream.

    One bit generator is re-seeded per device (setting a PCG64 state is ~100× cheaper
    than building a generator from a seed sequence).
    """

    def __init__(self) -> None:
        self._bg = np.random.PCG64(0)
        self._gen = np.random.Generator(self._bg)

    def draw(self, stream: tuple[int, int], n_stays: int, n_events: int) -> np.ndarray:
        """All the uniforms one device needs, in one call.

        Args:
            stream: the device's PCG64 ``(state, increment)``.
            n_stays: its number of stays.
            n_events: its regular-event bound (sum of :func:`events_per_stay`).
        """
        self._bg.state = {"bit_generator": "PCG64",
                          "state": {"state": stream[0], "inc": stream[1]},
                          "has_uint32": 0, "uinteger": 0}
        return self._gen.random(U_PER_DEVICE + U_PER_STAY * n_stays + U_PER_EVENT * n_events)


@dataclass(frozen=True)
class StayTable:
    """Stays of many devices, concatenated (device ``k``'s stays are contiguous).

    Attributes:
        device: device number per stay.
        loc: location index per stay.
        start_s: stay start (s); ``end_s``: stay end (exclusive).
        n_events: regular-event bound per stay (:func:`events_per_stay`).
        interval_s: the device's re-association period, per stay.
        offset_max_s: the device's association delay bound, per stay.
        u_offset: offset of each device's block in ``u``.
        u: the concatenated per-device uniform blocks (:class:`BlockDrawer`).
    """

    device: np.ndarray
    loc: np.ndarray
    start_s: np.ndarray
    end_s: np.ndarray
    n_events: np.ndarray
    interval_s: np.ndarray
    offset_max_s: np.ndarray
    u_offset: np.ndarray
    u: np.ndarray


def stay_events(
    st: StayTable, ap_first: np.ndarray, ap_count: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Events of all stays at once (vectorised over devices, stays and events).

    Per stay: an association event ``U(0, offset_max_s)`` after its start, then
    re-associations every ``interval_s · U(0.85, 1.15)``; after each, with probability
    ``interval_s / 1800 s``, a stochastic reconnection at a uniform time before the next
    (≈ a Poisson process of rate 1 / 30 min). The AP: one of the location's APs per
    stay, another one for :data:`ROAM_P` of the events. Events at or after the stay's
    end are dropped.

    Returns:
        ``(t_s, ap, rssi, stay, delay_s, u_stay)``: event times, AP index, RSSI (dBm),
        the stay of each event, its delivery delay, and per stay its third uniform
        (used for randomised MACs).
    """
    n_st = len(st.loc)
    dev = st.device
    # local stay number within its device, and the device's first stay
    first_stay = np.flatnonzero(np.r_[True, dev[1:] != dev[:-1]])
    dev_first_stay = np.repeat(first_stay, np.diff(np.r_[first_stay, n_st]))
    local_stay = np.arange(n_st) - dev_first_stay
    base = st.u_offset[dev] + U_PER_DEVICE
    u_st = st.u[(base + U_PER_STAY * local_stay)[:, None] + np.arange(U_PER_STAY)]
    # events: regular ones, per stay
    n_per = st.n_events
    stay = np.repeat(np.arange(n_st), n_per)
    ev_first = np.r_[0, np.cumsum(n_per)[:-1]]
    # local event number within its device
    dev_stays_events = np.r_[0, np.cumsum(n_per)]
    dev_ev0 = dev_stays_events[dev_first_stay]  # first event index of the device, per stay
    local_ev = np.arange(len(stay)) - dev_ev0[stay]
    n_dev_stays = np.diff(np.r_[first_stay, n_st])
    n_stays_of_dev = np.repeat(n_dev_stays, n_dev_stays)
    ev_base = (base + U_PER_STAY * n_stays_of_dev)[stay] + U_PER_EVENT * local_ev
    u_ev = st.u[ev_base[:, None] + np.arange(U_PER_EVENT)]
    iv = st.interval_s[stay]
    gaps = iv * (0.85 + 0.3 * u_ev[:, 0])
    gaps[ev_first] = st.offset_max_s * u_st[:, 0]
    csum = np.cumsum(gaps)
    t = st.start_s[stay] + csum - (csum[ev_first] - gaps[ev_first])[stay]
    ap_cnt = ap_count[st.loc]
    stay_ap = ap_first[st.loc] + (u_st[:, 1] * ap_cnt).astype(np.int64)
    ap = stay_ap[stay]
    roam = u_ev[:, 1] < ROAM_P
    ap[roam] = ap_first[st.loc[stay[roam]]] + (u_ev[roam, 2] * ap_cnt[stay[roam]]).astype(np.int64)
    rssi = -85 + (u_ev[:, 3] * 48).astype(np.int64)
    delay = np.minimum(-MEAN_DELAY_S * np.log1p(-u_ev[:, 4]), MAX_DELAY_S)
    extra = u_ev[:, 5] < iv * RECONNECT_RATE_PER_S
    if extra.any():
        t = np.concatenate([t, t[extra] + u_ev[extra, 6] * iv[extra]])
        stay = np.concatenate([stay, stay[extra]])
        ap = np.concatenate([ap, ap[extra]])
        rssi = np.concatenate([rssi, rssi[extra]])
        delay = np.concatenate([delay, delay[extra]])
    keep = t < st.end_s[stay]
    return t[keep], ap[keep], rssi[keep], stay[keep], delay[keep], u_st[:, 2]


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
