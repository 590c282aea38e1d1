"""Release agents and MIDE alerts for one final tick (DESIGN.md "release agents", "mide").

Every noisy draw comes from ``keyed_rng(secret, mechanism, tick, "all")`` (counter
based, :mod:`mechanisms.noise`): replaying a tick after a crash or a rebalance draws the
same noise, so a tick is never released twice with different values and never spends
its budget twice. Stateful mechanisms (PeGaSus) keep their state as bytes in the
occupancy stage's checkpoint, so the whole release sequence is a deterministic
function of the true counts and the secret.

The mechanisms themselves live in :mod:`mechanisms` (pure numpy); this module only
adapts them to the tick loop. A mechanism whose library module is not installed is
reported once and skipped.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from mechanisms import hierarchical, mide, pegasus, pegasus_post
from mechanisms.accounting import UNIT_OF_PRIVACY as UNIT
from mechanisms.accounting import LedgerRecord, PredicateLedger
from mechanisms.laplace import laplace_release
from mechanisms.noise import keyed_rng
from mechanisms.pseudonym import TTL_GUARANTEE
from streams.buildings import Site
from streams.settings import Settings

#: DPPWLM's public value range per location, in multiples of its capacity (see
#: :meth:`Releaser._mide_params`).
MIDE_VALUE_RANGE_CAPACITIES = 3.0

log = logging.getLogger(__name__)


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
    written to the state store's ``ledger:expost`` only (:func:`streams.cache.write_expost`),
    never to a topic, the read model or an alert — publishing it breaks ε_max-DP.
    """

    tick: float
    releases: list[Release]
    alerts: list[dict[str, Any]]
    ledger: list[dict[str, Any]]
    expost: list[dict[str, Any]] = field(default_factory=list, repr=False)


class Releaser:
    """Runs the configured release mechanisms and MIDE for each final tick."""

    def __init__(self, settings: Settings, site: Site) -> None:
        self.s = settings
        self.site = site
        self.locations = list(site.location_ids)
        self.capacities = np.asarray(site.capacities, dtype=float)
        self._mechs: dict[str, Callable[[np.ndarray, float, bytes | None],
                                        tuple[Release, bytes | None]]] = {}
        for name in settings.mechanisms:
            # ttl: counts as is; "pegasus-post" → _pegasus_post
            self._mechs[name] = getattr(self, f"_{name.replace('-', '_')}", None)
        self._mide = mide if settings.mide else None
        self._tree: Any = None
        self._per_hour = max(int(round(3600 / settings.tick_s)), 1)
        if self._mide is not None:
            self._check_mide()
        self._pegasus_mod = pegasus
        self._hier_mod = hierarchical

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

    def _check_mide(self) -> None:
        """Refuse MIDE parameters that would deny every query (silently no alerts).

        Denial depends on (algorithm, β, α, ε_max) only, so one probe on zero counts
        (no data, nothing released) tells.
        """
        from mechanisms.errors import ConfigError

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

    @property
    def mechanisms(self) -> list[str]:
        """The mechanisms actually running."""
        return list(self._mechs)

    def meta(self, name: str) -> dict[str, Any]:
        """Public parameters of a mechanism (for ``occ:{mech}:meta``)."""
        s = self.s
        m: dict[str, Any] = {"mechanism": name, "tick_s": s.tick_s, "unit": UNIT,
                             "site": self.site.id}
        if name == "ttl":
            m.update(guarantee="none (no formal guarantee)", ttl_s=s.ttl_s, epsilon=0)
        else:
            m.update(epsilon=s.epsilon_of(name), noise="discrete Laplace")
        if name == "pegasus":
            cfg = self._pegasus_mod.PegasusConfig(s.pegasus_epsilon, smoother=s.pegasus_smoother)
            m.update(smoother=s.pegasus_smoother, perturb_share=cfg.perturb_share)
        elif name == "hpegasus":
            cfg = self._hier_mod.HierarchicalConfig(s.hpegasus_epsilon,
                                                    smoother=s.pegasus_smoother)
            # every level runs PeGaSus at ε/levels (hierarchical.py; PeGaSus Algorithm 4)
            m.update(smoother=s.pegasus_smoother, perturb_share=cfg.perturb_share,
                     levels=self.tree.height)
        return m

    @property
    def tree(self) -> Any:
        """The site's location tree (building → floor → location) for hierarchical PeGaSus."""
        if self._tree is None:
            self._tree = self._hier_mod.tree_from_paths(self.site.hierarchy())
        return self._tree

    # ---- per tick -------------------------------------------------------------------
    def run(self, tick: float, counts: list[int], ttl: list[int],
            states: dict[str, bytes | None]) -> tuple[TickOutput, dict[str, bytes | None]]:
        """Release every mechanism for one final tick; return output and new states."""
        c = np.asarray(counts, dtype=np.int64)
        releases, ledger, new_states = [], [], {}
        for name, fn in self._mechs.items():
            if name == "ttl":
                if not ttl:
                    # never fall back to the true counts: they are not a release
                    log.warning("tick %s: no TTL-salt counts (a presence stage without "
                                "ttl tracking?); ttl release skipped", tick)
                    continue
                rel, st = Release("ttl", tick, [float(v) for v in ttl], 0.0), None
            else:
                rel, st = fn(c, tick, states.get(name))
            new_states[name] = st
            releases.append(rel)
            ledger.append(self._ledger(name, tick, rel.epsilon))
        alerts: list[dict[str, Any]] = []
        expost: list[dict[str, Any]] = []
        if self._mide is not None:
            # one predicate-wise ledger per tick: the tick's and the hour's MIDE queries
            # at this tick compose on the same atoms (Thm 5.2); other ticks are disjoint
            preds = PredicateLedger(self.locations, scope=f"site:{self.site.id}")
            alerts, eps = self._alerts(c, tick, "tick", preds, expost)
            ledger.append(self._ledger("mide", tick, eps))
            if self.s.mide_hourly:
                hist = json.loads(states.get("mide-hour") or b"[]")[-(self._per_hour - 1):]
                hist.append([int(x) for x in counts])
                new_states["mide-hour"] = json.dumps(hist).encode()
                if (tick + self.s.tick_s) % 3600 == 0:  # the tick closes an hour
                    peak = np.max(np.asarray(hist, dtype=np.int64), axis=0)
                    more, eps = self._alerts(peak, tick, "hour", preds, expost)
                    alerts += more
                    ledger.append(self._ledger("mide-hour", tick, eps))
        return TickOutput(tick, releases, alerts, ledger, expost), new_states

    @property
    def state_names(self) -> list[str]:
        """Names of the per-tick states the occupancy checkpoint must keep."""
        return self.mechanisms + (["mide-hour"] if self._mide and self.s.mide_hourly else [])

    def _ledger(self, mech: str, tick: float, eps: float) -> dict[str, Any]:
        """The ledger record of one release (tick = its epoch seconds)."""
        n = len(self.locations)
        if mech == "ttl":
            rec = LedgerRecord(mech, int(tick), 0.0, f"site:{self.site.id}/mechanism:ttl",
                               n_locations=n, sampler="none", guarantee=TTL_GUARANTEE,
                               note=f"ttl_s={self.s.ttl_s:g}")
        elif mech.startswith("mide"):
            rec = LedgerRecord(mech, int(tick), eps, f"site:{self.site.id}/mechanism:{mech}",
                               n_locations=n, sampler="laplace (analysis-consistent)",
                               note=f"{self.s.mide_algorithm}, beta={self.s.mide_beta:g}, "
                                    "worst-case (ex-ante) epsilon; ex-post kept internal")
        elif mech == "hpegasus":
            # PeGaSus Algorithm 4 / hierarchical.py: every tree level runs PeGaSus at
            # ε_rest/h and a device is in one node of *each* level, so the h levels compose
            # sequentially (parts); the nodes within a level are disjoint (parallel)
            tree = self.tree
            cfg = self._hier_mod.HierarchicalConfig(eps, smoother=self.s.pegasus_smoother)
            level = cfg.level_config(tree.height).epsilon
            parts = ((cfg.prune_epsilon,) if cfg.prune_epsilon else ()) + (level,) * tree.height
            rec = LedgerRecord(mech, int(tick), eps, f"site:{self.site.id}/mechanism:{mech}",
                               composition="sequential", parts=parts,
                               n_locations=tree.n_nodes,
                               note=f"{tree.height} tree levels composed sequentially at "
                                    f"{level:g} each; nodes within a level in parallel")
        else:
            rec = LedgerRecord(mech, int(tick), eps, f"site:{self.site.id}/mechanism:{mech}",
                               composition="parallel", n_locations=n)
        return rec.to_dict()

    def _laplace(self, c: np.ndarray, tick: float, state: bytes | None
                 ) -> tuple[Release, bytes | None]:
        eps = self.s.laplace_epsilon
        rng = keyed_rng(self.s.secret, "laplace", tick, "all")
        vals = laplace_release(c, eps, rng=rng)
        return Release("laplace", tick, [float(v) for v in np.asarray(vals)], eps), None

    def _pegasus(self, c: np.ndarray, tick: float, state: bytes | None
                 ) -> tuple[Release, bytes | None]:
        mod, eps = self._pegasus_mod, self.s.pegasus_epsilon
        cfg = mod.PegasusConfig(eps, smoother=self.s.pegasus_smoother)
        st = mod.PegasusState.from_bytes(state) if state else mod.initialize(len(c), cfg)
        rng = keyed_rng(self.s.secret, "pegasus", tick, "all")
        st, vals = mod.update(st, c, cfg, rng=rng)
        return Release("pegasus", tick, [float(v) for v in np.asarray(vals)], eps), st.to_bytes()

    def _pegasus_post(self, c: np.ndarray, tick: float, state: bytes | None
                      ) -> tuple[Release, bytes | None]:
        eps = self.s.pegasus_post_epsilon
        cfg = pegasus_post.PegasusPostConfig(eps)
        st = (pegasus_post.PegasusPostState.from_bytes(state) if state
              else pegasus_post.initialize(len(c), cfg))
        rng = keyed_rng(self.s.secret, "pegasus-post", tick, "all")
        st, vals = pegasus_post.update(st, c, cfg, rng=rng)
        return (Release("pegasus-post", tick, [float(v) for v in np.asarray(vals)], eps),
                st.to_bytes())

    def _hpegasus(self, c: np.ndarray, tick: float, state: bytes | None
                  ) -> tuple[Release, bytes | None]:
        mod, eps, tree = self._hier_mod, self.s.hpegasus_epsilon, self.tree
        cfg = mod.HierarchicalConfig(eps, smoother=self.s.pegasus_smoother)
        st = mod.HierarchicalState.from_bytes(state) if state else mod.initialize(tree, cfg)
        rng = keyed_rng(self.s.secret, "hpegasus", tick, "all")
        st, vals = mod.update(st, c, tree, cfg, rng=rng)
        v = np.asarray(vals, dtype=float)
        n = len(c)  # leaves are nodes 0..n-1 (tree_from_paths), aggregates follow
        extra = {str(tree.names[i]): [float(v[i])] for i in range(n, tree.n_nodes)}
        return (Release("hpegasus", tick, [float(x) for x in v[:n]], eps, extra),
                st.to_bytes())

    def _alerts(self, c: np.ndarray, tick: float, window: str, preds: PredicateLedger,
                expost: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], float]:
        """MIDE over the locations: counts of one tick, or peaks of the hour ending at it.

        The hourly peak has sensitivity 1 (one device at one tick moves each tick's count
        by at most 1, hence the maximum by at most 1), so the same β-FNR analysis holds.
        The answer's per-predicate ex-post ε is recorded in ``preds``
        (:func:`mechanisms.mide.accounting.record_result`) and appended to ``expost``
        (internal only); the alerts never carry it.
        """
        s = self.s
        thresholds = self.capacities * s.capacity_factor
        rng = keyed_rng(s.secret, "mide" if window == "tick" else "mide-hour", tick, "all")
        res = self._mide.decide(c, thresholds, algorithm=s.mide_algorithm, beta=s.mide_beta,
                                alpha=s.mide_alpha, epsilon_max=s.mide_epsilon_max, rng=rng,
                                **self._mide_params())
        if bool(np.any(getattr(res, "denied", False))):
            return [], 0.0
        from mechanisms.mide.accounting import record_result

        label = "mide" if window == "tick" else "mide-hour"
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
        return alerts, float(getattr(res, "epsilon_spent", s.mide_epsilon_max))


def release_record(rel: Release, location: str, value: float) -> bytes:
    """Record value for ``occupancy.released``."""
    return json.dumps({"tick": rel.tick, "location": location, "mechanism": rel.mechanism,
                       "value": value, "epsilon": rel.epsilon}, separators=(",", ":")).encode()
