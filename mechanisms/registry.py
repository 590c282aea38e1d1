"""The stream release mechanisms, by name: each states its own meaning once.

A :class:`StreamMechanism` says what it is (``name``, ``description``), what it protects
(``unit`` of privacy, ``guarantee``), what one release costs as a value the accountant
understands (:meth:`~StreamMechanism.cost`, a :class:`Cost` holding a
:class:`~mechanisms.accounting.Budget`), the public noise scale of each released value
for error bars (:meth:`~StreamMechanism.noise_scale`), and how it runs as a state
machine (``initialize`` / ``update``, state as bytes a checkpoint can keep — docs/STYLE.md
habit 3). :data:`REGISTRY` maps names to their classes; :func:`build` makes a configured
instance from :class:`ReleaseParams`.

Every other layer — settings validation, the release stage, the read model's error
bars, the dashboards, the research tools and the ledger — reads names and meanings
from here and never branches on a mechanism's name itself (a hygiene test checks).
In the spirit of OpenDP's ``Measurement`` (a function with its privacy map) and
PipelineDP's ``request_budget``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import numpy as np

from mechanisms import device_day, gaussian, hierarchical, pegasus, pegasus_filter, pegasus_post
from mechanisms.accounting import DEVICE_DAY_UNIT, UNIT_OF_PRIVACY, Budget
from mechanisms.errors import InvalidParameterError, check_positive
from mechanisms.laplace import laplace_release
from mechanisms.pseudonym import TTL_GUARANTEE

#: Inputs a mechanism may read per tick.
COUNTS = "counts"          # the true occupancy counts (sensitive)
TTL_COUNTS = "ttl_counts"  # counts of TTL-salt pseudonyms (the TTL chain)


@dataclass(frozen=True)
class Cost:
    """What one release (one tick, all locations) costs, for the accountant and ledger.

    Attributes:
        budget: (ε, δ) charged per release under the mechanism's unit of privacy.
        composition: how the release composes over its parts (``"parallel"``: one value
            per disjoint location; ``"sequential"``: ``parts`` add up).
        parts: ε of the parts (e.g. per tree level), recorded in the ledger.
        n_values: number of values released.
        sampler: the sampler of the values that leave the system.
        guarantee: the guarantee shipped, in words.
        note: free text for the ledger.
        day_rho: for device-day mechanisms, the ρ (zCDP) of the whole day's releases,
            charged once per day to a :class:`~mechanisms.accounting.DayBudget` at the
            day's first tick (0: an event-level mechanism charged per release).
        day_share: the :class:`~mechanisms.accounting.DayBudget` share it is charged to.
        sensitivity: L2 sensitivity per device-day under the contribution bound (ledger).
    """

    budget: Budget
    composition: str = "parallel"
    parts: tuple[float, ...] = ()
    n_values: int | None = None
    sampler: str = "discrete-laplace (exact)"
    guarantee: str = "pure ε-DP"
    note: str = ""
    day_rho: float = 0.0
    day_share: str = ""
    sensitivity: float = 1.0

    @property
    def epsilon(self) -> float:
        """ε of the release."""
        return self.budget.epsilon


@dataclass(frozen=True)
class ReleaseParams:
    """Public configuration a mechanism is built from.

    Attributes:
        epsilon: ε per release (per tick) for DP mechanisms.
        smoother: PeGaSus smoother (``average``, ``median``, ``js``).
        paths: the site's hierarchy (building, floor, location) per location, for
            hierarchical mechanisms.
        ttl_s: salt lifetime of the TTL chain.
        epsilon_day: ε per device-day of every default release together (device-day
            mechanisms; their share of it is fixed by :class:`~mechanisms.device_day.
            DeviceDayConfig`).
        delta: δ per device-day.
        ticks_per_day: ticks in a day (86 400 / tick length).
        capacities: the site's public capacities per location (vector order), or ()
            (unknown); ``pegasus-filter`` sizes each room's level range from them.
    """

    epsilon: float = 1.0
    smoother: str = "average"
    paths: tuple[tuple[str, ...], ...] = ()
    ttl_s: float = 1800.0
    epsilon_day: float = 4.0
    delta: float = 1e-6
    ticks_per_day: int = 288
    capacities: tuple[int, ...] = ()

    def device_day_config(self) -> device_day.DeviceDayConfig:
        """The device-day design for these parameters (budget shares, σ per level)."""
        tpd = int(self.ticks_per_day)
        return device_day.DeviceDayConfig(
            epsilon_day=self.epsilon_day, delta=self.delta, ticks_per_day=tpd,
            max_ticks_per_device=tpd, hour_ticks=max(tpd // 24, 1),
            quarter_ticks=max(tpd // 96, 1))


@dataclass(frozen=True)
class Step:
    """One release: the values per location, extra named nodes, the new state."""

    values: np.ndarray
    state: bytes | None
    extra: Mapping[str, float] = field(default_factory=dict)


class StreamMechanism(Protocol):
    """A stream release mechanism as the rest of the product sees it."""

    name: ClassVar[str]
    description: ClassVar[str]
    reads: ClassVar[str]
    unit: ClassVar[str]
    noise_note: ClassVar[str]

    def cost(self, n_locations: int) -> Cost:
        """What one release over ``n_locations`` costs (data independent)."""

    def noise_scale(self) -> float | None:
        """Public Laplace scale of each released value's noise, or None (no noise model)."""

    def meta(self) -> dict[str, Any]:
        """Public parameters for the read model (``occ:{mech}:meta``)."""

    def update(self, state: bytes | None, counts: np.ndarray, *,
               rng: np.random.Generator | None = None, tick: int | None = None) -> Step:
        """Release one tick (``state`` None: the first tick)."""

    def prepare(self) -> None:
        """Build ahead what the first ``update`` would build (no draw, no state change)."""


class _Base:
    name: ClassVar[str]
    description: ClassVar[str]
    reads: ClassVar[str] = COUNTS
    unit: ClassVar[str] = UNIT_OF_PRIVACY
    noise_note: ClassVar[str] = "Laplace noise"

    def __init__(self, params: ReleaseParams) -> None:
        self.params = params

    def meta(self) -> dict[str, Any]:
        scale = self.noise_scale()
        cost = self.cost(1)
        m: dict[str, Any] = {"mechanism": self.name, "unit": self.unit,
                             "epsilon": cost.epsilon, "guarantee": cost.guarantee,
                             "noise_note": self.noise_note}
        if scale is not None:
            m.update(noise="discrete Laplace", noise_scale=scale)
        return m

    def prepare(self) -> None:
        """Nothing to build ahead (overridden where the first update is slow)."""


class LaplaceStream(_Base):
    """Discrete Laplace per (tick, location): Δ = 1, scale 1/ε (parallel over locations)."""

    name = "laplace"
    description = "discrete Laplace per (tick, location)"

    def cost(self, n_locations: int) -> Cost:
        return Cost(Budget(self.params.epsilon), n_values=n_locations)

    def noise_scale(self) -> float | None:
        return 1.0 / self.params.epsilon

    def update(self, state: bytes | None, counts: np.ndarray, *,
               rng: np.random.Generator | None = None, tick: int | None = None) -> Step:
        return Step(np.asarray(laplace_release(counts, self.params.epsilon, rng=rng),
                               dtype=float), None)


class PegasusStream(_Base):
    """PeGaSus (Chen et al. CCS 2017) flat over locations: ε_p + ε_g per tick, parallel."""

    name = "pegasus"
    description = "PeGaSus, flat over locations"
    noise_note = "perturber noise only (smoothing not bounded)"

    @property
    def config(self) -> pegasus.PegasusConfig:
        return pegasus.PegasusConfig(self.params.epsilon, smoother=self.params.smoother)

    def cost(self, n_locations: int) -> Cost:
        c = self.config
        return Cost(Budget(c.spent_epsilon), n_values=n_locations,
                    note=f"perturber {c.epsilon_p:g} + grouper {c.epsilon_g:g}")

    def noise_scale(self) -> float | None:
        return 1.0 / self.config.epsilon_p

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "smoother": self.params.smoother,
                "perturb_share": self.config.perturb_share}

    def update(self, state: bytes | None, counts: np.ndarray, *,
               rng: np.random.Generator | None = None, tick: int | None = None) -> Step:
        cfg = self.config
        st = (pegasus.PegasusState.from_bytes(state) if state
              else pegasus.initialize(len(counts), cfg))
        st, vals = pegasus.update(st, counts, cfg, rng=rng)
        return Step(np.asarray(vals, dtype=float), st.to_bytes())


class PegasusPostStream(_Base):
    """PeGaSus with the Grouper as post-processing (:mod:`mechanisms.pegasus_post`).

    All of ε goes to the Perturber (exactly the Laplace release, parallel over
    locations); grouping and smoothing read only the noisy counts, so they cost nothing.
    """

    name = "pegasus-post"
    description = "PeGaSus with the Grouper as post-processing of a full-ε Perturber"
    noise_note = "perturber noise only (smoothing not bounded)"

    @property
    def config(self) -> pegasus_post.PegasusPostConfig:
        return pegasus_post.PegasusPostConfig(self.params.epsilon)

    def cost(self, n_locations: int) -> Cost:
        return Cost(Budget(self.config.spent_epsilon), n_values=n_locations,
                    note="perturber only; grouping and smoothing are post-processing")

    def noise_scale(self) -> float | None:
        return self.config.scale

    def update(self, state: bytes | None, counts: np.ndarray, *,
               rng: np.random.Generator | None = None, tick: int | None = None) -> Step:
        cfg = self.config
        st = (pegasus_post.PegasusPostState.from_bytes(state) if state
              else pegasus_post.initialize(len(counts), cfg))
        st, vals = pegasus_post.update(st, counts, cfg, rng=rng)
        return Step(np.asarray(vals, dtype=float), st.to_bytes())


class PegasusFilterStream(_Base):
    """PeGaSus with a Bayes filter as Grouper and Smoother (:mod:`mechanisms.pegasus_filter`).

    All of ε goes to the Perturber (exactly the Laplace release, parallel over
    locations); the forward filter and the smoother read only the noisy counts and the
    public model, so they cost nothing. Each room's level range covers 3 × its public
    capacity when ``params.capacities`` is given (:func:`mechanisms.pegasus_filter.
    max_counts_for`), else 0..511.
    """

    name = "pegasus-filter"
    description = "PeGaSus with a Bayes-filter Grouper/Smoother on a full-ε Perturber"
    noise_note = "perturber noise only (filtering not bounded)"

    def __init__(self, params: ReleaseParams) -> None:
        super().__init__(params)
        self.config = pegasus_filter.PegasusFilterConfig(params.epsilon)  # model cached once

    def cost(self, n_locations: int) -> Cost:
        return Cost(Budget(self.config.spent_epsilon), n_values=n_locations,
                    note="perturber only; filtering and smoothing are post-processing")

    def noise_scale(self) -> float | None:
        return self.config.scale

    def update(self, state: bytes | None, counts: np.ndarray, *,
               rng: np.random.Generator | None = None, tick: int | None = None) -> Step:
        vals, st = _filter_rooms(self.config, self.params.capacities, state, counts, rng)
        return Step(vals, st)


def _filter_rooms(config: pegasus_filter.PegasusFilterConfig, capacities: tuple[int, ...],
                  state: bytes | None, counts: np.ndarray,
                  rng: np.random.Generator | None) -> tuple[np.ndarray, bytes]:
    """One PeGaSus-filter tick; each room's level range covers 3 × its public capacity.

    Without capacities every room has the default range 0..``config.max_count``.

    Raises:
        InvalidParameterError: capacities given for another number of rooms.
    """
    n = len(counts)
    if capacities and len(capacities) != n:
        raise InvalidParameterError(
            f"capacities must have one entry per location ({n}), not {len(capacities)}")
    ks = (pegasus_filter.max_counts_for(capacities, config) if capacities
          else np.full(n, config.max_count))
    banks = pegasus_filter.banks_from_bytes(state) if state else None
    banks, vals = pegasus_filter.update_banks(banks, counts, config, ks, rng=rng)
    return np.asarray(vals, dtype=float), pegasus_filter.banks_to_bytes(banks)


class HierarchicalFilterStream(_Base):
    """Building → floor → room release from PeGaSus-filter rooms (issue 16, item 2).

    All of ε goes to the rooms' Perturbers (a device is in one room per tick: parallel
    over rooms, ε per event); each room is filtered as in ``pegasus-filter`` and every
    floor and building is the sum of its rooms' releases — consistent and non-negative
    by construction, post-processing only (:func:`mechanisms.hierarchical.subtree_sums`).
    Why not a budget split with least squares: measured in docs/pegasus.md, the sums of
    filtered rooms beat every split that was tried at each level.
    """

    name = "hpegasus-filter"
    description = "PeGaSus-filter rooms, floors and buildings as their sums"
    noise_note = "perturber noise only (filtering not bounded)"

    def __init__(self, params: ReleaseParams) -> None:
        super().__init__(params)
        if not params.paths:
            raise InvalidParameterError(
                "hpegasus-filter needs the site's hierarchy (paths), not ()")
        self.tree = hierarchical.tree_from_paths(params.paths)
        self.config = pegasus_filter.PegasusFilterConfig(params.epsilon)

    def cost(self, n_locations: int) -> Cost:
        return Cost(Budget(self.config.spent_epsilon), n_values=self.tree.n_nodes,
                    note="rooms' perturbers only (parallel); filtering and the floors' and "
                         "buildings' sums are post-processing")

    def noise_scale(self) -> float | None:
        return self.config.scale

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "levels": self.tree.height}

    def update(self, state: bytes | None, counts: np.ndarray, *,
               rng: np.random.Generator | None = None, tick: int | None = None) -> Step:
        tree = self.tree
        vals, st = _filter_rooms(self.config, self.params.capacities, state, counts, rng)
        v = hierarchical.subtree_sums(tree, vals)
        n = len(counts)  # leaves are nodes 0..n-1 (tree_from_paths), aggregates follow
        extra = {str(tree.names[i]): float(v[i]) for i in range(n, tree.n_nodes)}
        return Step(v[:n], st, extra)


class HierarchicalPegasusStream(_Base):
    """PeGaSus over the building → floor → location tree (PeGaSus Algorithm 4).

    Every tree level runs PeGaSus at ε/h and a device is in one node of *each* level, so
    the h levels compose sequentially (the ledger's parts); nodes within a level are
    disjoint (parallel).
    """

    name = "hpegasus"
    description = "PeGaSus, hierarchical building → floor → location"
    noise_note = "perturber noise only (smoothing not bounded)"

    def __init__(self, params: ReleaseParams) -> None:
        super().__init__(params)
        if not params.paths:
            raise InvalidParameterError("hpegasus needs the site's hierarchy (paths), not ()")
        self.tree = hierarchical.tree_from_paths(params.paths)

    @property
    def config(self) -> hierarchical.HierarchicalConfig:
        return hierarchical.HierarchicalConfig(self.params.epsilon, smoother=self.params.smoother)

    def cost(self, n_locations: int) -> Cost:
        cfg, h = self.config, self.tree.height
        level = cfg.level_config(h).epsilon
        parts = ((cfg.prune_epsilon,) if cfg.prune_epsilon else ()) + (level,) * h
        return Cost(Budget(self.params.epsilon), composition="sequential", parts=parts,
                    n_values=self.tree.n_nodes,
                    note=f"{h} tree levels composed sequentially at {level:g} each; "
                         "nodes within a level in parallel")

    def noise_scale(self) -> float | None:
        cfg = self.config
        return 1.0 / cfg.level_config(self.tree.height).epsilon_p

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "smoother": self.params.smoother,
                "perturb_share": self.config.perturb_share, "levels": self.tree.height}

    def update(self, state: bytes | None, counts: np.ndarray, *,
               rng: np.random.Generator | None = None, tick: int | None = None) -> Step:
        cfg, tree = self.config, self.tree
        st = (hierarchical.HierarchicalState.from_bytes(state) if state
              else hierarchical.initialize(tree, cfg))
        st, vals = hierarchical.update(st, counts, tree, cfg, rng=rng)
        v = np.asarray(vals, dtype=float)
        n = len(counts)  # leaves are nodes 0..n-1 (tree_from_paths), aggregates follow
        extra = {str(tree.names[i]): float(v[i]) for i in range(n, tree.n_nodes)}
        return Step(v[:n], st.to_bytes(), extra)


class DeviceDayStream(_Base):
    """Device-day heatmap (:mod:`mechanisms.device_day`; design and figures docs/device-day.md).

    Unit: one device's whole day. Every tick, every node of the building → floor →
    room tree gets exact discrete Gaussian noise (σ per level from the heatmap's share of
    the day's ρ), then weighted least squares and non-negativity (free). Its cost is
    the whole day's ρ (``Cost.day_rho``, share ``heatmap``), which the release stage
    charges to its :class:`~mechanisms.accounting.DayBudget` once, at the day's first
    tick, before any noise (a device may reach its B ticks early in the day).
    """

    name = "device-day"
    description = "device-day heatmap: discrete Gaussian per level + least squares"
    unit = DEVICE_DAY_UNIT
    noise_note = "discrete Gaussian noise (σ per level), made consistent"
    day_share = "heatmap"

    def __init__(self, params: ReleaseParams) -> None:
        super().__init__(params)
        if not params.paths:
            raise InvalidParameterError("device-day needs the site's hierarchy (paths), not ()")
        self.tree = hierarchical.tree_from_paths(params.paths)
        self.config = params.device_day_config()
        self.sigmas = self.config.sigmas(self.tree.height)

    def cost(self, n_locations: int) -> Cost:
        cfg, h = self.config, self.tree.height
        rho = cfg.spent_rho(h)
        from mechanisms.accounting import zcdp_to_epsilon

        return Cost(Budget(zcdp_to_epsilon(rho, cfg.delta), cfg.delta),
                    composition="zCDP per device-day", parts=(rho,),
                    n_values=self.tree.n_nodes, sampler="discrete-gaussian (exact)",
                    guarantee=f"ρ={rho:.4g}-zCDP per device-day",
                    note=(f"whole day charged at its first tick: B={cfg.max_ticks_per_device} "
                          f"ticks per device, σ per level "
                          f"{np.round(self.sigmas, 2).tolist()} (building, floor, room)"),
                    day_rho=rho, day_share=self.day_share,
                    sensitivity=float(np.sqrt(cfg.max_ticks_per_device)))

    def prepare(self) -> None:
        """The exact sampler's tables for the σ per level (0.2 s the first time, no draw).

        Without it, the first tick a worker releases builds them on its event loop
        (:func:`mechanisms.gaussian.prepare`; the tick latency in bench/bench_pipeline.py).
        """
        for s in self.sigmas:
            gaussian.prepare(float(s))

    def noise_scale(self) -> float | None:
        # rooms: σ of a 15-minute mean of the leaves' noise, before least squares
        return float(self.sigmas[-1] / np.sqrt(self.config.quarter_ticks))

    def meta(self) -> dict[str, Any]:
        cfg = self.config
        return {**super().meta(), "noise": "discrete Gaussian",
                "noise_scale": self.noise_scale(),
                "noise_sigma_levels": [float(x) for x in self.sigmas],
                "values": "mean of the last complete 15-minute window, consistent, ≥ 0",
                "levels": self.tree.height, "epsilon_day": cfg.epsilon_day,
                "delta": cfg.delta, "heatmap_share": cfg.heatmap_share,
                "max_ticks_per_device": cfg.max_ticks_per_device}

    def update(self, state: bytes | None, counts: np.ndarray, *,
               rng: np.random.Generator | None = None, tick: int | None = None) -> Step:
        """Release one tick; the published values are the last complete 15-minute mean.

        The live view is the consistent, non-negative mean of the last complete
        15-minute window (updated every 15 minutes, σ/√3 per value: the design's live
        view, docs/device-day.md); the 5-minute values are noisier (σ per tick) and are
        not published. Before the first window of a worker's life completes, the tick's
        own consistent values are published. State: the device-day state, then the
        last window's values (float64 per node).
        """
        if tick is None:
            raise InvalidParameterError("device-day needs the tick index, not None")
        tree, cfg = self.tree, self.config
        n_nodes = tree.n_nodes
        last = None
        if state:
            core = device_day.state_size(n_nodes)
            if len(state) == core + 8 * n_nodes:
                last = np.frombuffer(state[core:], "<f8").astype(float)
            st = device_day.DeviceDayState.from_bytes(state[:core])
        else:
            st = device_day.initialize(tree.plan, cfg)
        # the release stage charged the day's ρ before this call (budget=None)
        st, rel = device_day.update(st, tree.aggregate(np.asarray(counts, dtype=np.int64)),
                                    tree.plan, cfg, tick=int(tick), budget=None, rng=rng)
        if rel.quarter is not None:
            last = np.asarray(rel.quarter, dtype=float)
        v = last if last is not None else np.asarray(rel.live, dtype=float)
        n = len(counts)
        extra = {str(tree.names[i]): float(v[i]) for i in range(n, n_nodes)}
        blob = st.to_bytes() + (np.asarray(last, "<f8").tobytes() if last is not None else b"")
        return Step(v[:n], blob, extra)


class TtlCounts(_Base):
    """Counts of TTL-salt pseudonyms (thesis §4.2.2): no noise, **no formal guarantee**."""

    name = "ttl"
    description = "TTL-salt pseudonym counts (no formal guarantee)"
    reads = TTL_COUNTS
    unit = "none"
    noise_note = "no formal guarantee"

    def cost(self, n_locations: int) -> Cost:
        return Cost(Budget(0.0), n_values=n_locations, sampler="none",
                    guarantee=TTL_GUARANTEE, note=f"ttl_s={self.params.ttl_s:g}")

    def noise_scale(self) -> float | None:
        return None

    def meta(self) -> dict[str, Any]:
        return {"mechanism": self.name, "unit": self.unit,
                "guarantee": "none (no formal guarantee)", "ttl_s": self.params.ttl_s,
                "epsilon": 0, "noise_note": self.noise_note}

    def update(self, state: bytes | None, counts: np.ndarray, *,
               rng: np.random.Generator | None = None, tick: int | None = None) -> Step:
        return Step(np.asarray(counts, dtype=float), None)


#: name → mechanism class.
REGISTRY: dict[str, type[_Base]] = {
    cls.name: cls
    for cls in (DeviceDayStream, LaplaceStream, PegasusStream, HierarchicalPegasusStream,
                PegasusPostStream, TtlCounts, PegasusFilterStream, HierarchicalFilterStream)
}

#: Release mechanisms the pipeline knows (name → what it is).
MECHANISMS: dict[str, str] = {name: cls.description for name, cls in REGISTRY.items()}


def build(name: str, params: ReleaseParams) -> StreamMechanism:
    """A configured mechanism by name.

    Raises:
        InvalidParameterError: unknown name, or a DP mechanism without a positive ε.
    """
    cls = REGISTRY.get(name)
    if cls is None:
        raise InvalidParameterError(f"mechanism must be one of {sorted(REGISTRY)}, not {name!r}")
    if cls.reads == COUNTS and not is_device_day(name):
        check_positive(f"{name} epsilon", params.epsilon)
    return cls(params)  # type: ignore[return-value]


def is_device_day(name: str) -> bool:
    """Whether a mechanism's unit of privacy is the device-day (charged per day, not tick)."""
    cls = REGISTRY.get(name)
    return cls is not None and cls.unit == DEVICE_DAY_UNIT


#: The units of privacy a deployment can be configured with (``privacy_unit``); a third,
#: ``window:W`` (w-event privacy), is parsed by the settings.
UNIT_DEVICE_DAY = "device-day"
UNIT_EVENT = "event"

#: Per unit of privacy: the default release mechanisms (one heatmap under device-day).
#: Under ``event`` the PeGaSus and hierarchical releases are the variants that beat
#: Laplace at the same ε (docs/pegasus.md); the paper's ``pegasus`` and ``hpegasus`` stay
#: selectable (``mechanisms`` setting).
DEFAULT_MECHANISMS: dict[str, tuple[str, ...]] = {
    UNIT_DEVICE_DAY: ("device-day",),
    UNIT_EVENT: ("laplace", "pegasus-filter", "hpegasus-filter", "ttl"),
}


def has_guarantee(name: str) -> bool:
    """Whether a mechanism ships a formal DP guarantee (False for the TTL chain)."""
    cls = REGISTRY.get(name)
    return cls is not None and cls.reads == COUNTS


def lookup(name: str) -> type[_Base] | None:
    """The class of a mechanism name or of a variant of it (``ttl-900`` → the TTL chain)."""
    if name in REGISTRY:
        return REGISTRY[name]
    matches = [n for n in REGISTRY if name.startswith(n)]
    return REGISTRY[max(matches, key=len)] if matches else None


def without_guarantee(name: str) -> bool:
    """Whether a (variant) name is a release with no formal guarantee (the TTL chain)."""
    cls = lookup(name)
    return cls is not None and cls.reads != COUNTS


def reads_ttl_counts(names: Sequence[str]) -> bool:
    """Whether any of these mechanisms needs the TTL-salt counts (presence must track them)."""
    return any((cls := lookup(n)) is not None and cls.reads == TTL_COUNTS for n in names)


def display_order(name: str) -> tuple[int, str]:
    """Sort key: registry order first, unknown names after, by name."""
    names = list(REGISTRY)
    return (names.index(name) if name in names else len(names), name)


def noise_scale_from_meta(meta: Mapping[str, Any], default_levels: float = 3.0
                          ) -> tuple[float | None, str]:
    """Public per-value noise scale from a mechanism's published parameters.

    Current workers publish ``noise_scale`` and ``noise_note``; for parameters written
    by older versions (no ``noise_scale``) the mechanism class rebuilds the scale from
    the published ε, split and levels.

    Returns:
        (scale or None, note); None when no formal noise model applies.
    """
    explicit = _positive(meta, "noise_scale", "scale")
    note = str(meta.get("noise_note") or "")
    if explicit is not None:
        return explicit, note or "Laplace noise"
    name = str(meta.get("kind") or meta.get("mechanism") or "").lower()
    cls = lookup(name)
    if cls is not None and cls.reads != COUNTS or (
            str(meta.get("guarantee", "")).lower().startswith("no")):
        return None, TtlCounts.noise_note
    sens = _positive(meta, "sensitivity") or 1.0
    eps = _positive(meta, "epsilon", "eps")
    if cls in (PegasusStream, HierarchicalPegasusStream, PegasusPostStream):
        levels = ((_positive(meta, "levels", "h") or default_levels)
                  if cls is HierarchicalPegasusStream else 1.0)
        eps_p = _positive(meta, "epsilon_p", "eps_p")
        share = _positive(meta, "perturb_share") or pegasus.PegasusConfig.perturb_share
        if eps_p is None and eps is not None:
            eps_p = eps * share / levels
        if eps_p is None:
            return None, "ε not published"
        return sens / eps_p, cls.noise_note
    if eps is None:
        return None, "ε not published"
    return sens / eps, "Laplace noise"


def _positive(meta: Mapping[str, Any], *keys: str) -> float | None:
    for key in keys:
        v = meta.get(key)
        if v is None or isinstance(v, bool):
            continue
        try:
            f = float(v)
        except (TypeError, ValueError):
            continue
        if math.isfinite(f) and f > 0:
            return f
    return None


Factory = Callable[[ReleaseParams], StreamMechanism]
__all__: Sequence[str] = [
    "COUNTS", "MECHANISMS", "REGISTRY", "TTL_COUNTS", "Cost", "Factory", "ReleaseParams",
    "DEFAULT_MECHANISMS", "Step", "StreamMechanism", "build", "display_order",
    "UNIT_DEVICE_DAY", "UNIT_EVENT", "has_guarantee", "is_device_day", "lookup",
    "noise_scale_from_meta", "reads_ttl_counts", "without_guarantee",
]
