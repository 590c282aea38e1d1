"""The Redis read model's key names (docs/DESIGN.md "Redis read model") — one place for all.

Writers (the pipeline's cache agent) and readers (dashboards, subscribers, tools)
build every key through these functions, so the layout cannot drift apart.

Layout (``mech`` is a mechanism name such as ``laplace``, ``pegasus``, ``hpegasus``, ``ttl``):

* ``occ:{mech}:latest`` — hash, location → JSON ``{"tick": t, "value": v}``
* ``occ:{mech}:series:{location}`` — sorted set, score = tick, member = JSON
  ``{"tick": t, "value": v}`` (capped to the retention)
* ``occ:{mech}:ticks`` — sorted set of the ticks fully written (score = member = tick)
* ``occ:{mech}:meta`` — hash of *public* parameters (epsilon, unit, smoother, …) from
  which dashboards derive uncertainty intervals
* ``baseline:{mech}`` — hash, ``{location}|{slot}`` → JSON ``{"mu", "sigma", "n"}``:
  per time-of-day slot of weekdays / of weekends (:func:`slot_of`), from released history
  only (post-processing, no budget)
* ``alerts`` — stream (capped), field ``data`` = the alert JSON; the same JSON is
  published on the pub/sub channel ``alerts``
* ``occ:updates`` — pub/sub channel, JSON ``{"mech", "tick"}`` once a tick is written
* ``ledger:releases`` — stream (internal), field ``data`` = a ledger record JSON
* ``ledger:spent:{day}`` — hash (internal), ``{mech}`` → ε spent that day
* ``ledger:expost`` — stream in the *state store* (``state_redis_url``), never the read
  model: MIDE's per-predicate ex-post ε, field ``data`` = a PredicateEntry JSON
* ``hist:{day}:{algorithm}`` — string, JSON of a day's DP histogram release
  (``occustream histogram release``; noisy values and public parameters only); the
  worker's device-day release of each finished day is ``hist:{day}:daily-cube``
  (streams/pipeline/cube.py)
* ``eval:true:…`` — true counts, only in explicit evaluation mode (never by default)
* ``alerts:acks`` — hash, alert stream id → JSON ``{"ts", "role"}`` (acknowledgements)
* ``webhook:{name}:cursor`` — string, last ``alerts`` stream id handled for a webhook
* ``webhook:{name}:dlq`` — list of JSON dead letters (alert, idempotency key, error)
* ``incidents`` — hash, incident id → JSON record (occupancy/incidents.py: location,
  state open/resolved, opened, last_seen, resolved, peak, decisions, β, guarantee)
* ``incidents:index`` — sorted set of incident ids, score = opening tick (newest last)
* ``incidents:active`` — sorted set of the open incidents' ids, score = opening tick
* ``incidents:events`` — stream (capped), field ``data`` = a lifecycle event JSON
  ``{"event": open|update|resolve, "key", "incident"}``; the same JSON is published on
  the pub/sub channel ``incidents``
* ``incidents:acks`` — hash, incident id → JSON ``{"ts", "role"}`` (one per incident)
* ``game:leaderboard`` — sorted set, IoT-DETECTIVE player name → points (docs/game.md)
* ``game:rounds`` — hash, player name → rounds played (the rounds bonus)
* ``game:traces`` — stream (capped), field ``data`` = a played round's trace JSON
  (mechanism, ε, per task estimate / truth / error / accuracy / points; no raw MAC)
* ``incidents:state`` — string (internal), the incident state machine's JSON state
* ``webhook:{name}:incidents:cursor`` / ``webhook:{name}:incidents:dlq`` — the same as
  the two above for a subscriber of the incident lifecycle
* ``demo:speed`` — string, JSON ``{"speed", "ts", "role"}``: the pace the demo's page
  asks for (simulated s per wall s, 0 = paused); read by ``occustream demo``'s producer
* ``demo:clock`` — string, JSON ``{"sim_ts", "speed", "wall_ts"}``: the demo producer's
  simulated "now" and pace, about once a second (the page's clock)
"""

from __future__ import annotations

ALERTS_STREAM = "alerts"
ALERTS_CHANNEL = "alerts"
UPDATES_CHANNEL = "occ:updates"
LEDGER_STREAM = "ledger:releases"
EXPOST_STREAM = "ledger:expost"
EVAL_PREFIX = "eval:true"
ALERTS_ACKS = "alerts:acks"
#: the worker's public privacy status: unit, ε_day, δ, spent today, the day's projection
PRIVACY_STATUS = "privacy:status"
INCIDENTS = "incidents"
INCIDENTS_INDEX = "incidents:index"
INCIDENTS_ACTIVE = "incidents:active"
INCIDENTS_STREAM = "incidents:events"
INCIDENTS_CHANNEL = "incidents"
INCIDENTS_ACKS = "incidents:acks"
INCIDENTS_STATE = "incidents:state"
GAME_LEADERBOARD = "game:leaderboard"
GAME_ROUNDS = "game:rounds"
GAME_TRACES = "game:traces"
DEMO_SPEED = "demo:speed"
DEMO_CLOCK = "demo:clock"


def latest(mech: str) -> str:
    """Hash of the latest released value per location."""
    return f"occ:{mech}:latest"


def series(mech: str, location: str) -> str:
    """Sorted set of a location's released values by tick."""
    return f"occ:{mech}:series:{location}"


def ticks(mech: str) -> str:
    """Sorted set of the ticks fully written for a mechanism."""
    return f"occ:{mech}:ticks"


def meta(mech: str) -> str:
    """Hash of a mechanism's public parameters."""
    return f"occ:{mech}:meta"


def baseline(mech: str) -> str:
    """Hash of heatmap baselines per (location, time-of-day slot)."""
    return f"baseline:{mech}"


def baseline_field(location: str, slot: int) -> str:
    """Field of :func:`baseline` for one (location, slot)."""
    return f"{location}|{slot}"


def ledger_spent(day: str) -> str:
    """Hash of ε spent per mechanism on ``day`` (YYYY-MM-DD, UTC)."""
    return f"ledger:spent:{day}"


def histogram(day: str, algorithm: str) -> str:
    """A day's DP histogram release (JSON) for one algorithm."""
    return f"hist:{day}:{algorithm}"


def eval_true(location: str) -> str:
    """Sorted set of true counts (evaluation mode only)."""
    return f"{EVAL_PREFIX}:series:{location}"


def webhook_cursor(name: str, source: str = ALERTS_STREAM) -> str:
    """Last stream id (of ``alerts`` or ``incidents:events``) a webhook has handled."""
    return f"webhook:{name}:cursor" if source == ALERTS_STREAM else \
        f"webhook:{name}:incidents:cursor"


def webhook_dlq(name: str, source: str = ALERTS_STREAM) -> str:
    """List of alerts (or incident events) a webhook subscriber gave up on."""
    return f"webhook:{name}:dlq" if source == ALERTS_STREAM else f"webhook:{name}:incidents:dlq"


def state_key(app_id: str, stage: str, partition: int) -> str:
    """Pipeline stage checkpoint (state store only): state + input offset, bytes."""
    return f"state:{app_id}:{stage}:{partition}"


def dlq_counts(app_id: str) -> str:
    """Hash (internal) ``p{partition}:{reason}`` → DLQ count (absolute, replay-safe)."""
    return f"dlq:{app_id}:counts"


def health(app_id: str) -> str:
    """Hash (internal) worker id → JSON health/lag line."""
    return f"health:{app_id}"


def release_done(mech: str) -> str:
    """Sorted set (internal; score = tick, retention-trimmed) of ticks applied (idempotence)."""
    return f"occ:{mech}:done"


def slot_of(tick: float, tick_s: float) -> int:
    """Baseline slot of a tick: its time-of-day slot, on a weekday or a weekend day.

    Weekdays (Mon–Fri, UTC) use 0 .. 86400/tick_s − 1, Saturdays and Sundays the same
    slots shifted by one day's worth, so the "usual day" a Tuesday 10:00 is coloured
    against is the weekdays' 10:00, not an average with empty weekends (which put every
    ordinary weekday about 0.6 σ above its usual value in the demo).
    """
    per_day = int(round(86400 / tick_s))
    weekend = (int(tick // 86400) + 3) % 7 >= 5  # 1970-01-01 was a Thursday (3)
    return int((tick % 86400) // tick_s) + (per_day if weekend else 0)


def n_slots(tick_s: float) -> int:
    """Number of baseline slots (:func:`slot_of`): a weekday's and a weekend day's."""
    return 2 * int(round(86400 / tick_s))
