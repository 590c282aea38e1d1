"""The worker's health line (events, ticks, watermarks, lag, DLQ) and its Prometheus text.

No secrets and no counts of people: only throughput, positions and reasons.
"""

from __future__ import annotations

import time
from typing import Any


def lag_of(consumer: Any, offsets: dict[int, int]) -> dict[str, int]:
    """Records between each assigned partition's high watermark and the next to process."""
    lag: dict[str, int] = {}
    try:
        for tp in consumer.assignment():
            hw = consumer.highwater(tp)
            off = offsets.get(tp.partition) if "observations" in tp.topic else None
            if hw is not None and off is not None:
                lag[f"{tp.topic}:{tp.partition}"] = max(int(hw) - off, 0)
    except Exception:  # noqa: BLE001 - metrics never break the worker
        pass
    return lag


def health_line(*, worker: str, started: float, events_in: int, ticks_out: int,
                last_tick: float | None, watermarks: dict[int, float | None],
                lag: dict[str, int], dlq: dict[str, int],
                latency: list[float], status: dict[str, Any] | None = None,
                privacy: dict[str, Any] | None = None) -> dict[str, Any]:
    """The health document of one worker.

    ``status`` (:meth:`streams.runtime.resilience.Status.health`) adds ``degraded`` (None,
    or why: Redis unavailable, a reset broker log, a state store rebuilt), its reasons
    and the recovery counters. ``privacy``: unit, ε_day, δ, spent today and the day's
    projection (public figures of the release stage).
    """
    up = time.monotonic() - started
    h: dict[str, Any] = {
        "worker": worker,
        "uptime_s": round(up, 1),
        "events_in": events_in,
        "events_per_s": round(events_in / max(up, 1e-9)),
        "ticks_released": ticks_out,
        "last_tick": last_tick,
        "watermarks": watermarks,
        "lag": lag,
        "partitions": sorted(watermarks),
        "dlq": dlq,
        "degraded": None,
    }
    if status:
        h.update(status)
    if privacy:
        h["privacy"] = {k: privacy.get(k) for k in (
            "unit", "epsilon_day", "delta", "epsilon_tick", "epsilon_spent_today",
            "epsilon_projected_day", "within_cap") if k in privacy}
    if latency:
        lat = sorted(latency)
        h["tick_latency_p50_s"] = round(lat[len(lat) // 2], 3)
        h["tick_latency_p95_s"] = round(lat[min(int(len(lat) * 0.95), len(lat) - 1)], 3)
        h["tick_latency_n"] = len(lat)
    return h


def prometheus_text(h: dict[str, Any]) -> str:
    """The health line as Prometheus text (no secrets, no counts of people)."""
    lines = []

    def metric(name: str, value: Any, labels: str = "") -> None:
        if isinstance(value, int | float) and value is not None:
            lines.append(f"occustream_{name}{labels} {float(value)}")

    metric("events_in_total", h.get("events_in"))
    metric("ticks_released_total", h.get("ticks_released"))
    metric("last_tick_seconds", h.get("last_tick"))
    metric("tick_latency_p50_seconds", h.get("tick_latency_p50_s"))
    metric("tick_latency_p95_seconds", h.get("tick_latency_p95_s"))
    pv = h.get("privacy") or {}
    metric("privacy_epsilon_spent_today", pv.get("epsilon_spent_today"))
    metric("privacy_epsilon_projected_day", pv.get("epsilon_projected_day"))
    metric("privacy_epsilon_day", pv.get("epsilon_day"))
    for p, wm in (h.get("watermarks") or {}).items():
        metric("watermark_seconds", wm, f'{{partition="{p}"}}')
    for reason, n in (h.get("dlq") or {}).items():
        metric("dlq_records_total", n, f'{{reason="{reason}"}}')
    for tp, lag in (h.get("lag") or {}).items():
        metric("consumer_lag", lag, f'{{topic_partition="{tp}"}}')
    metric("degraded", 1 if h.get("degraded") else 0)
    for key in (h.get("degraded_reasons") or {}):
        metric("degraded_reason", 1, f'{{reason="{key.split(":")[0]}",key="{key}"}}')
    for name, n in (h.get("recoveries") or {}).items():
        metric(f"{name}_total", n)
    return "\n".join(lines) + "\n"
