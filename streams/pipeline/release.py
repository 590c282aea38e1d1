"""Release agents and MIDE alerts for one final tick (docs/DESIGN.md "release agents", "mide").

Every noisy draw comes from ``keyed_rng(secret, mechanism, tick, "all")`` (counter
based, :mod:`mechanisms.noise`): replaying a tick after a crash or a rebalance draws the
same noise, so a tick is never released twice with different values and never spends
its budget twice. Stateful mechanisms (PeGaSus) keep their state as bytes in the
occupancy stage's checkpoint, so the whole release sequence is a deterministic
function of the true counts and the secret.

The mechanisms themselves live in :mod:`mechanisms` (pure numpy); this module only
adapts them to the tick loop through :mod:`mechanisms.registry`.
"""

from __future__ import annotations

import functools
import json
import logging
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from mechanisms import device_day, gaussian, mide, registry
from mechanisms.accounting import (
    DEVICE_DAY_UNIT,
    UNIT_OF_PRIVACY,
    Accountant,
    Budget,
    DayBudget,
    LedgerRecord,
    PredicateLedger,
    zcdp_to_epsilon,
)
from mechanisms.errors import ConfigError
from mechanisms.histograms import cube
from mechanisms.mide.accounting import record_result
from mechanisms.noise import keyed_rng
from occupancy.buildings import Site
from streams.pipeline.cube import STATE as CUBE_STATE
from streams.pipeline.cube import DailyCube

#: DPPWLM's public value range per location, in multiples of its capacity (see
#: :meth:`Releaser._mide_params`).
MIDE_VALUE_RANGE_CAPACITIES = 3.0

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReleaseConfig:
    """What the release stage needs, and nothing else (no Kafka, ports or paths).

    Attributes:
        secret: key of the replay-safe noise (:func:`mechanisms.noise.keyed_rng`).
        tick_s: tick length.
        mechanisms: the configured release mechanisms with their public parameters.
        budget_epsilon_tick: the per-tick cap of the accountant (event-level).
        mide: whether fire-code alerts run; the MIDE fields below configure them.
        device_day: unit of privacy is the device-day: device-day mechanisms and the
            fire-code alerts are charged once per day to a :class:`DayBudget` of
            (``epsilon_day``, ``delta``); alerts are the Gaussian threshold test
            (:func:`mechanisms.device_day.threshold_alerts`, one reading per room per
            hour, β = ``mide_beta``) instead of event-level MIDE.
    """

    secret: bytes = field(repr=False)
    tick_s: float
    mechanisms: tuple[tuple[str, registry.ReleaseParams], ...]
    budget_epsilon_tick: float
    mide: bool = True
    mide_algorithm: str = "tslm"
    mide_beta: float = 0.05
    mide_alpha: float = 3.0
    mide_epsilon_max: float = 1.0
    mide_hourly: bool = True
    capacity_factor: float = 1.0
    device_day: bool = False
    epsilon_day: float = 4.0
    delta: float = 1e-6
    window_ticks: int = 0
    daily_cube: bool = True


@dataclass
class Release:
    """Released values of one mechanism at one tick (public)."""

    mechanism: str
    tick: float
    values: list[float]
    epsilon: float
    extra: dict[str, list[float]] = field(default_factory=dict)  # e.g. floor/building


@dataclass
class TickOutput:
    """Everything a final tick produces: releases, alerts, ledger records.

    ``expost`` holds MIDE's per-predicate ex-post ε (thesis Def. 5.3) as
    :class:`~mechanisms.accounting.PredicateEntry` dicts plus their ``window``: INTERNAL,
    written to the state store's ``ledger:expost`` only
    (:func:`streams.runtime.checkpoint.write_expost`),
    never to a topic, the read model or an alert — publishing it breaks ε_max-DP.
    """

    tick: float
    releases: list[Release]
    alerts: list[dict[str, Any]]
    ledger: list[dict[str, Any]]
    expost: list[dict[str, Any]] = field(default_factory=list, repr=False)
    privacy: dict[str, Any] = field(default_factory=dict)  # unit, ε_day, δ, spent, projection
    cube: dict[str, Any] | None = None  # the previous day's daily cube, at its release tick


class Releaser:
    """Runs the configured release mechanisms and MIDE for each final tick.

    The mechanisms come from :mod:`mechanisms.registry` (each states its cost, noise
    scale and state machine); every release is charged to an
    :class:`~mechanisms.accounting.Accountant` *before* its noise is drawn, and the
    ledger records are the accountant's. The accountant's root cap is
    ``budget_epsilon_tick`` per tick (event-level: ticks are disjoint data); each
    mechanism has a scope whose cap is its own configured ε, so no mechanism can spend
    another's share. A refusal is a :class:`~mechanisms.errors.BudgetExhaustedError`
    naming the requested and remaining budget, and nothing of that tick is released.
    """

    def __init__(self, config: ReleaseConfig, site: Site) -> None:
        if not isinstance(config, ReleaseConfig):  # a Settings: take its small config
            config = config.release_config()
        self.s = config
        self.site = site
        self.locations = list(site.location_ids)
        self.capacities = np.asarray(site.capacities, dtype=float)
        paths = tuple(tuple(p) for p in site.hierarchy())
        self._mechs: dict[str, registry.StreamMechanism] = {
            name: registry.build(name, replace(params, paths=paths,
                                               capacities=tuple(site.capacities)))
            for name, params in config.mechanisms
        }
        self._costs = {name: m.cost(len(self.locations)) for name, m in self._mechs.items()}
        self._per_hour = max(int(round(3600 / config.tick_s)), 1)
        self._tpd = max(int(round(86400 / config.tick_s)), 1)
        self._mide_cost = 0.0
        self.day_budget: DayBudget | None = None
        self._day_cfg: device_day.DeviceDayConfig | None = None
        self._day_alerts = config.device_day and config.mide
        self._mide = mide if config.mide and not config.device_day else None
        if config.device_day:
            self._day_cfg = registry.ReleaseParams(
                epsilon_day=config.epsilon_day, delta=config.delta,
                ticks_per_day=self._tpd).device_day_config()
            self.day_budget = self._day_cfg.budget()
        self.cube: DailyCube | None = None
        if config.device_day and config.daily_cube and self._day_cfg is not None:
            cfg = self._day_cfg
            self.cube = DailyCube(paths, self.locations, rho=cfg.histogram_share * cfg.rho_day,
                                  delta=config.delta, ticks_per_day=self._tpd,
                                  ticks_per_hour=self._per_hour,
                                  max_slots=cfg.max_ticks_per_device, tick_s=config.tick_s,
                                  secret=config.secret)
        if any(c.day_rho > 0 for c in self._costs.values()) and self.day_budget is None:
            raise ConfigError(f"{[n for n, c in self._costs.items() if c.day_rho > 0]} release "
                              "under the device-day unit; set privacy_unit device-day")
        if self._mide is not None:
            self._mide_cost = self._check_mide()
        self.scope = f"site:{site.id}"

    def _mide_params(self) -> dict:
        """Extra MIDE parameters: DPPWLM gets the public value range (0, 3 × capacity).

        Room capacities are public, so the range is too; DPPWLM uses it only to estimate
        how many predicates stay undecided (eq. 5.9 truncated to the range) when it picks
        the next ε — post-processing of noisy values: β-FNR and ε_max are unchanged.
        Without it, after ε₁ = 1e-5 the estimate has no information and DPPWLM ends with
        less min-entropy than PPWLM (issue 4 note; ``occustream mide-eval``, dppwlm-r).
        """
        if self.s.mide_algorithm != "dppwlm":
            return {}
        return {"value_range": (0.0, MIDE_VALUE_RANGE_CAPACITIES * self.capacities)}

    def _check_mide(self) -> float:
        """The worst-case ε of one MIDE query; refuse parameters that deny every query.

        Denial and the worst-case ε depend on (algorithm, β, α, ε_max) only, so one probe
        on zero counts (no data, nothing released) tells both; every tick's query is
        charged that ε before its noise is drawn.
        """
        s = self.s
        res = self._mide.decide(np.zeros(len(self.locations)), self.capacities * s.capacity_factor,
                                algorithm=s.mide_algorithm, beta=s.mide_beta, alpha=s.mide_alpha,
                                epsilon_max=s.mide_epsilon_max,
                                rng=keyed_rng(s.secret, "mide-probe"), **self._mide_params())
        if bool(np.any(res.denied)):
            raise ConfigError(
                f"mide: {s.mide_algorithm} with beta={s.mide_beta:g}, alpha={s.mide_alpha:g} "
                f"needs more than mide_epsilon_max={s.mide_epsilon_max:g}, so every alert "
                "query would be denied; raise mide_epsilon_max (and the budget) or mide_alpha")
        return float(res.epsilon_spent)

    def prepare(self) -> None:
        """Work that may be done ahead, off the tick loop (e.g. in a thread at start).

        In the order it is needed: the mechanisms' first update (the device-day
        sampler's tables), the hourly alerts' table, then the daily cube's (next day).
        Only deterministic tables are built; nothing is drawn or charged.
        """
        for m in self._mechs.values():
            m.prepare()
        if self._day_alerts and self._day_cfg is not None:
            gaussian.prepare(float(self._day_cfg.alert_sigma))
        if self.cube is not None:
            self.cube.prepare()

    @property
    def mechanisms(self) -> list[str]:
        """The mechanisms actually running."""
        return list(self._mechs)

    def meta(self, name: str) -> dict[str, Any]:
        """Public parameters of a mechanism (for ``occ:{mech}:meta``)."""
        return {**self._mechs[name].meta(), "tick_s": self.s.tick_s, "site": self.site.id}

    def accountant(self) -> Accountant:
        """A fresh per-tick accountant: root cap ``budget_epsilon_tick``, one scope each."""
        cap = self.s.budget_epsilon_tick
        return Accountant(Budget(cap), name=self.scope)

    # ---- per tick -------------------------------------------------------------------
    def run(self, tick: float, counts: list[int], ttl: list[int],
            states: dict[str, bytes | None]) -> tuple[TickOutput, dict[str, bytes | None]]:
        """Release every mechanism for one final tick; return output and new states.

        Each mechanism is charged to the tick's accountant before its noise is drawn.
        """
        c = np.asarray(counts, dtype=np.int64)
        inputs = {registry.COUNTS: c, registry.TTL_COUNTS: ttl}
        acct = self.accountant()
        releases, ledger, new_states = [], [], {}
        k = int(round(tick / self.s.tick_s))  # tick index; its day is k // ticks per day
        day_records = self._charge_day(k // self._tpd, states, new_states)
        ledger += day_records  # charged before any noise of the day is drawn
        cube_doc = None
        if self.cube is not None and self.day_budget is not None:
            # yesterday's cube once the clock passed midnight: charged before its noise
            new_states[CUBE_STATE], cube_doc, cube_rec = self.cube.step(
                k, c, states.get(CUBE_STATE), self.day_budget)
            if cube_rec is not None:
                ledger.append(cube_rec)
        for name, mech in self._mechs.items():
            data = inputs[mech.reads]
            if data is None or len(data) == 0:
                # never fall back to the true counts: they are not a release
                log.warning("tick %s: no %s for %s (a presence stage without ttl "
                            "tracking?); release skipped", tick, mech.reads, name)
                continue
            cost = self._costs[name]
            rec = None if cost.day_rho > 0 else self._charge(acct, name, tick, cost)
            step = mech.update(states.get(name), np.asarray(data, dtype=np.int64),
                               rng=keyed_rng(self.s.secret, name, tick, "all"), tick=k)
            new_states[name] = step.state
            releases.append(Release(name, tick, [float(v) for v in step.values], cost.epsilon,
                                    {k: [float(v)] for k, v in step.extra.items()}))
            if rec is not None:
                ledger.append(rec)
        alerts: list[dict[str, Any]] = []
        expost: list[dict[str, Any]] = []
        if self._day_alerts and (tick + self.s.tick_s) % 3600 == 0:  # the tick closing an hour
            alerts = self._day_alert(c, tick)
        if self._mide is not None:
            # one predicate-wise ledger per tick: the tick's and the hour's MIDE queries
            # at this tick compose on the same atoms (Thm 5.2); other ticks are disjoint
            preds = PredicateLedger(self.locations, scope=self.scope)
            alerts, rec = self._alerts(c, tick, "tick", preds, expost, acct)
            ledger.append(rec)
            if self.s.mide_hourly:
                hist = json.loads(states.get("mide-hour") or b"[]")[-(self._per_hour - 1):]
                hist.append([int(x) for x in counts])
                new_states["mide-hour"] = json.dumps(hist).encode()
                if (tick + self.s.tick_s) % 3600 == 0:  # the tick closes an hour
                    peak = np.max(np.asarray(hist, dtype=np.int64), axis=0)
                    more, rec = self._alerts(peak, tick, "hour", preds, expost, acct)
                    alerts += more
                    ledger.append(rec)
        return TickOutput(tick, releases, alerts, ledger, expost,
                          self.privacy_status(k // self._tpd), cube_doc), new_states

    # ---- device-day ------------------------------------------------------------------
    def _day_charges(self) -> list[tuple[str, str, float, float]]:
        """(release, share, ρ, L2 sensitivity) charged once per day to the day budget."""
        out = [(n, c.day_share, c.day_rho, c.sensitivity)
               for n, c in self._costs.items() if c.day_rho > 0]
        if self._day_alerts and self._day_cfg is not None:
            cfg = self._day_cfg
            out.append(("alerts", "alerts", cfg.alert_share * cfg.rho_day,
                        float(np.sqrt(self._tpd // self._per_hour))))
        return out

    def _day_releases(self) -> list[tuple[str, float]]:
        """(release, ρ) of everything a day costs: the charges above and the daily cube."""
        out = [(n, r) for n, _, r, _ in self._day_charges()]
        if self.cube is not None:
            out.append((cube.ledger_label(self.cube.config), self.cube.rho))
        return out

    def _charge_day(self, day: int, states: dict[str, bytes | None],
                    new_states: dict[str, bytes | None]) -> list[dict[str, Any]]:
        """Charge the day's device-day releases at its first tick, exactly once.

        The day budget's records of the day live in the occupancy checkpoint
        (``day-budget``) and are restored first, so a tick replayed after a crash (or the
        next tick after a restart) finds the day charged: same release id, nothing new.
        A release id is (day, share, release, start of the day): whichever tick of the
        day comes first charges it. Returns the ledger records charged now.
        """
        b = self.day_budget
        if b is None:
            return []
        saved = states.get("day-budget")
        if saved:
            b.restore(LedgerRecord.from_dict(r) for r in json.loads(saved))
        start = int(day * self._tpd * self.s.tick_s)  # the day's start, epoch s
        new: list[dict[str, Any]] = []
        for name, share, rho, sens in self._day_charges():
            n = len(b.records)
            rec = b.charge(day=day, share=share, mechanism=name, rho=rho, tick=start,
                           n_locations=len(self.locations), sensitivity=sens,
                           note=f"whole day charged at its first tick (day {day})")
            if len(b.records) > n:
                log.info("device-day: day %d charged: %s ρ=%.6g (%s)", day, name, rho,
                         "restored day" if saved else "no saved day")
                new.append(rec.to_dict())
        mine = [r.to_dict() for r in b.records if r.scope.endswith(
            tuple(f"/day:{day}/{share}" for _, share, _, _ in self._day_charges()))]
        new_states["day-budget"] = json.dumps(mine, sort_keys=True).encode()
        return new

    def _day_alert(self, c: np.ndarray, tick: float) -> list[dict[str, Any]]:
        """Fire-code alerts of the hour closing at ``tick`` under the day's alert share."""
        cfg, s = self._day_cfg, self.s
        charged = self.day_budget is not None and self.day_budget.spent_rho(
            int(round(tick / s.tick_s)) // self._tpd, "alerts") > 0
        if cfg is None or not charged:
            raise ConfigError("alerts: the day's alert share was not charged before the "
                              "draw (a bug)")
        res = device_day.threshold_alerts(c, self.capacities * s.capacity_factor,
                                          cfg.alert_sigma, s.mide_beta,
                                          rng=keyed_rng(s.secret, "alerts", tick, "all"))
        return [
            {"tick": tick, "location": self.locations[i],
             "capacity": int(self.site.capacities[i]),
             "algorithm": "gaussian-threshold", "beta": s.mide_beta, "window": "hour",
             "alpha": round(res.alpha, 1), "sigma": round(res.sigma, 2),
             "uncertainty": f"may be raised from {res.alpha:.0f} people below capacity",
             "unit": DEVICE_DAY_UNIT}
            for i in np.flatnonzero(res.positive & self._watched)
        ]

    @functools.cached_property
    def _watched(self) -> np.ndarray:
        """Rooms the hourly test watches (public T, σ, β: fixed for the Releaser's life)."""
        cfg = self._day_cfg
        if cfg is None:
            return np.zeros(len(self.locations), dtype=bool)
        return device_day.monitorable(self.capacities * self.s.capacity_factor,
                                      cfg.alert_sigma, self.s.mide_beta)

    @functools.cached_property
    def _alert_coverage(self) -> dict[str, Any]:
        """Public: the alert width α and the rooms too small to watch at this budget."""
        cfg = self._day_cfg
        if cfg is None or not self._day_alerts:
            return {}
        alpha = device_day.alert_alpha(cfg.alert_sigma, self.s.mide_beta)
        return {"alerts_alpha": round(alpha, 1),
                "alerts_unmonitored": [self.locations[i]
                                       for i in np.flatnonzero(~self._watched)]}

    def day_projection(self) -> float:
        """ε per device-day of every configured release (device-day unit), δ = ``delta``."""
        rho = sum(r for _, r in self._day_releases())
        return zcdp_to_epsilon(rho, self.s.delta) if rho > 0 else 0.0

    def privacy_status(self, day: int) -> dict[str, Any]:
        """Public figures for the surfaces: unit, cap, spent today, the day's projection."""
        s = self.s
        if self.day_budget is not None:
            spent = self.day_budget.spent(day).epsilon
            proj = max(self.day_projection(), spent)
            return {"unit": "device-day", "unit_text": DEVICE_DAY_UNIT,
                    "epsilon_day": s.epsilon_day, "delta": s.delta, "day": int(day),
                    "epsilon_spent_today": round(spent, 6),
                    "epsilon_projected_day": round(proj, 6),
                    "within_cap": proj <= s.epsilon_day * (1 + 1e-9),
                    "releases": [n for n, _ in self._day_releases()],
                    **self._alert_coverage}
        per_tick = sum(c.epsilon for c in self._costs.values())
        if self._mide is not None:
            per_tick += self._mide_cost
        w = s.window_ticks
        if w:  # w-event: any W consecutive ticks of every release together
            return {"unit": f"window:{w}", "unit_text": f"any {w} consecutive ticks (w-event)",
                    "epsilon_window": round(per_tick * w, 6), "epsilon_day": s.epsilon_day,
                    "epsilon_tick": round(per_tick, 6), "delta": 0.0, "day": int(day),
                    "epsilon_projected_day": round(per_tick * self._tpd, 6),
                    "within_cap": per_tick * w <= s.epsilon_day * (1 + 1e-9),
                    "releases": list(self._mechs) + (["mide"] if self._mide else [])}
        return {"unit": "event", "unit_text": UNIT_OF_PRIVACY,
                "epsilon_tick": round(per_tick, 6), "delta": 0.0, "day": int(day),
                "epsilon_projected_day": round(per_tick * self._tpd, 6),
                "within_cap": False,
                "releases": list(self._mechs) + (["mide"] if self._mide else [])}

    def _charge(self, acct: Accountant, name: str, tick: float, cost: registry.Cost
                ) -> dict[str, Any]:
        """Charge one release to its mechanism's scope; the ledger record as a dict.

        A release without a formal guarantee (the TTL chain) spends nothing: its record
        says so and is not charged.
        """
        kw = {"n_locations": cost.n_values, "sampler": cost.sampler,
              "guarantee": cost.guarantee, "note": cost.note}
        if cost.epsilon == 0 and cost.budget.delta == 0:
            return LedgerRecord(name, int(tick), 0.0, f"{acct.path}/mechanism:{name}",
                                composition=cost.composition, **kw).to_dict()
        scope = acct.scope(f"mechanism:{name}",
                           weight=min(cost.epsilon / acct.cap.epsilon, 1.0))
        return scope.spend(cost.epsilon, mechanism=name, tick=int(tick),
                           delta=cost.budget.delta, parts=cost.parts,
                           composition=cost.composition, **kw).to_dict()

    @property
    def state_names(self) -> list[str]:
        """Names of the per-tick states the occupancy checkpoint must keep."""
        return (self.mechanisms + (["mide-hour"] if self._mide and self.s.mide_hourly else [])
                + (["day-budget"] if self.day_budget is not None else [])
                + ([CUBE_STATE] if self.cube is not None else []))

    def _alerts(self, c: np.ndarray, tick: float, window: str, preds: PredicateLedger,
                expost: list[dict[str, Any]], acct: Accountant
                ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """MIDE over the locations: counts of one tick, or peaks of the hour ending at it.

        The hourly peak has sensitivity 1 (one device at one tick moves each tick's count
        by at most 1, hence the maximum by at most 1), so the same β-FNR analysis holds.
        The answer's per-predicate ex-post ε is recorded in ``preds``
        (:func:`mechanisms.mide.accounting.record_result`) and appended to ``expost``
        (internal only); the alerts never carry it.
        """
        s = self.s
        label = "mide" if window == "tick" else "mide-hour"
        # charged before any noise is drawn: the data-independent worst case
        rec = self._charge(acct, label, tick, registry.Cost(
            Budget(self._mide_cost), n_values=len(self.locations),
            sampler="laplace (analysis-consistent)",
            note=f"{s.mide_algorithm}, beta={s.mide_beta:g}, worst-case (ex-ante) epsilon; "
                 "ex-post kept internal"))
        thresholds = self.capacities * s.capacity_factor
        rng = keyed_rng(s.secret, label, tick, "all")
        res = self._mide.decide(c, thresholds, algorithm=s.mide_algorithm, beta=s.mide_beta,
                                alpha=s.mide_alpha, epsilon_max=s.mide_epsilon_max, rng=rng,
                                **self._mide_params())
        if float(res.epsilon_spent) > self._mide_cost + 1e-12:
            raise ConfigError(f"{label}: MIDE spent {res.epsilon_spent:g} > the "
                              f"{self._mide_cost:g} charged before the query (a bug)")
        if bool(np.any(getattr(res, "denied", False))):
            return [], rec
        entry = record_result(preds, res, tick=int(tick), label=f"{label}:{s.mide_algorithm}")
        if entry is not None:
            expost.append({**asdict(entry), "window": window})
        positive = np.flatnonzero(np.asarray(res.positive, dtype=bool))
        alerts = [
            {"tick": tick, "location": self.locations[i],
             "capacity": int(self.site.capacities[i]),
             "algorithm": s.mide_algorithm, "beta": s.mide_beta, "window": window}
            for i in positive
        ]
        return alerts, rec


def release_record(rel: Release, location: str, value: float) -> bytes:
    """Record value for ``occupancy.released``, with its deterministic ``id``.

    The id is ``mechanism|location|tick``: a replay sends the same id; consumers drop repeats.
    """
    t = int(rel.tick) if float(rel.tick).is_integer() else float(rel.tick)
    return json.dumps({"id": f"{rel.mechanism}|{location}|{t}", "tick": rel.tick,
                       "location": location, "mechanism": rel.mechanism,
                       "value": value, "epsilon": rel.epsilon}, separators=(",", ":")).encode()
