"""Device identities for the observe stage: keyed HMAC and TTL-salt pseudonyms.

Thin adapters over :mod:`mechanisms.pseudonym` (the mechanisms library owns the
constructions). The MAC → HMAC pseudonym map is memoised in process memory (the
observe stage is the only place raw MACs exist; the cache is never persisted).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from mechanisms.pseudonym import TTL_GUARANTEE, TtlSaltState, hmac_pseudonym, ttl_pseudonym
from occupancy.schema import Observation

__all__ = ["TTL_GUARANTEE", "TTLIdentity", "pseudonymizer", "ttl_step", "salt_window",
           "state_from_json", "state_to_json", "salt_start"]

CACHE_SIZE = 1 << 18


def pseudonymizer(secret: bytes) -> Callable[[str], str]:
    """Keyed pseudonymizer MAC → pseudonym (HMAC-SHA256, never an unkeyed hash)."""

    @functools.lru_cache(maxsize=CACHE_SIZE)
    def pseudo(mac: str) -> str:
        return hmac_pseudonym(secret, mac)

    return pseudo


@functools.lru_cache(maxsize=CACHE_SIZE)
def _ttl_cached(secret: bytes, mac: str, state: TtlSaltState, ttl_s: float) -> str:
    # an observation inside the salt's lifetime keeps the state (ttl_pseudonym's
    # contract), so the pseudonym depends on (MAC, state) only: memoise it
    return ttl_pseudonym(secret, mac, state.salt_started_ts, state, ttl_s)[0]


def salt_window(state: TtlSaltState, ttl_s: float) -> tuple[float, float]:
    """``(lo, hi)``: an observation at ``lo ≤ ts < hi`` keeps the device's current salt.

    Then :func:`ttl_step` returns ``state`` itself and a pseudonym that depends on (MAC,
    ``state``) only, so a caller that remembers the pseudonym it got with ``state`` may
    reuse it inside the window without calling :func:`ttl_step` (the presence stage
    does).
    """
    return state.salt_started_ts, state.salt_started_ts + ttl_s


def ttl_step(secret: bytes, mac: str, ts: float, state: TtlSaltState | None,
             ttl_s: float) -> tuple[str, TtlSaltState]:
    """TTL-salt pseudonym of one observation and the device's new salt state.

    The salt of a device expires ``ttl_s`` seconds after it was first used; the next
    observation after that gets a fresh salt, so a long stay is counted under several
    pseudonyms (thesis §4.2.2). No formal privacy guarantee (:data:`TTL_GUARANTEE`).
    The sequence is a pure function of the device's observations in arrival order, so
    replays reproduce it.
    """
    if state is not None:
        lo, hi = salt_window(state, ttl_s)
        if lo <= ts < hi:
            return _ttl_cached(secret, mac, state, ttl_s), state
    return ttl_pseudonym(secret, mac, ts, state, ttl_s)


def state_to_json(state: TtlSaltState) -> list[float]:
    """Compact JSON form of a salt state for checkpoints."""
    return [state.salt_counter, state.salt_started_ts]


def state_from_json(v: Any) -> TtlSaltState:
    """Inverse of :func:`state_to_json`."""
    return TtlSaltState(int(v[0]), float(v[1]))


def salt_start(state: TtlSaltState) -> float:
    """Event time at which the device's current salt was first used."""
    return state.salt_started_ts


class TTLIdentity:
    """Stateful ``identity`` for :func:`occupancy.oracle.occupancy_oracle` (TTL counts)."""

    def __init__(self, secret: bytes, ttl_s: float) -> None:
        self.secret, self.ttl_s = secret, ttl_s
        self.state: dict[str, TtlSaltState] = {}

    def __call__(self, obs: Observation) -> str:
        """The TTL-salt pseudonym of one observation (in arrival order)."""
        pid, self.state[obs.device] = ttl_step(
            self.secret, obs.device, obs.ts, self.state.get(obs.device), self.ttl_s
        )
        return pid
