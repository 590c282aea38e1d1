"""One settings object for the pipeline: defaults ← config file ← environment ← CLI.

:class:`Settings` is built once at start (:func:`load_settings`) and validated there;
any problem raises :class:`~mechanisms.errors.ConfigError` with a one-line message that
names the setting and its source. Nothing is read at import time.

Sources, later ones win:

1. the defaults below;
2. a config file (``--config x.toml`` / ``x.json`` or ``OCCUSTREAM_CONFIG``): a flat
   table whose keys are the field names (``tick_s = 300``);
3. environment variables ``OCCUSTREAM_<FIELD>`` (upper case), plus the service
   selectors ``KAFKA_BOOTSTRAP`` and ``REDIS_URL``;
4. command-line options (``--tick-s 300``; see :func:`add_arguments`).

Two Redis stores: ``redis_url`` is the analysts' read model (released values, alerts,
public parameters); ``state_redis_url`` (env ``OCCUSTREAM_STATE_REDIS_URL``, flag
``--state-redis-url``) is the internal store of sensitive pipeline state — stage
checkpoints (true partial counts, hourly count history, PeGaSus state, pseudonym
location trails) and the ex-post ε ledger. Unset, it is the read model's server with the
next database number (``redis://h:6379/0`` → ``redis://h:6379/1``), see
:meth:`Settings.state_store_url`; it may never equal ``redis_url``.

The secret for pseudonyms and replay-safe noise comes from ``OCCUSTREAM_SECRET`` or the
file named by ``OCCUSTREAM_SECRET_FILE`` (``--secret-file``); only demo mode may fall
back to a built-in development secret, and says so loudly. The secret never appears in
:meth:`Settings.public` or in log lines.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from infra.secrets import load_secret
from infra.urls import next_db_url, safe_url
from mechanisms.errors import ConfigError, OccustreamError
from mechanisms.registry import (
    DEFAULT_MECHANISMS,
    MECHANISMS,
    UNIT_DEVICE_DAY,
    UNIT_EVENT,
    ReleaseParams,
    has_guarantee,
    is_device_day,
)
from streams.pipeline.release import ReleaseConfig

log = logging.getLogger(__name__)

MIDE_ALGORITHMS = ("tslm", "ppwlm", "dppwlm", "naive")

#: Units of privacy a worker can run under (``window:W`` takes W ticks, e.g. ``window:12``).
PRIVACY_UNITS = ("device-day", "event", "window:W")


def epsilon_field(mech: str) -> str:
    """The settings field of a mechanism's ε per tick (pegasus-post: pegasus_post_epsilon)."""
    return f"{mech.replace('-', '_')}_epsilon"


@dataclass(frozen=True)
class Settings:
    """Validated pipeline configuration (see the module docstring for the sources)."""

    site: str = "dbh"
    kafka_bootstrap: str = ""
    redis_url: str = ""
    state_redis_url: str = ""
    app_id: str = "occustream"
    topic_prefix: str = ""
    partitions: int = 4
    tick_s: float = 300.0
    validity_s: float = 600.0
    lateness_s: float = 60.0
    max_future_s: float = 3600.0
    max_marker_jump_s: float = 2 * 86400.0
    clock_quorum: int = 12
    privacy_unit: str = "device-day"
    epsilon_day: float = 4.0
    delta: float = 1e-6
    mechanisms: tuple[str, ...] = DEFAULT_MECHANISMS["device-day"]
    laplace_epsilon: float = 1.0
    pegasus_epsilon: float = 1.0
    pegasus_smoother: str = "average"
    hpegasus_epsilon: float = 1.0
    pegasus_post_epsilon: float = 1.0
    pegasus_filter_epsilon: float = 1.0
    hpegasus_filter_epsilon: float = 1.0
    ttl_s: float = 1800.0
    mide: bool = True
    daily_cube: bool = True
    mide_algorithm: str = "tslm"
    mide_beta: float = 0.05
    mide_alpha: float = 3.0
    mide_epsilon_max: float = 1.0
    mide_hourly: bool = True
    capacity_factor: float = 1.0
    incident_quiet_s: float = 900.0
    budget_epsilon_tick: float = 5.0
    budget_epsilon_day: float = 0.0
    eval_mode: bool = False
    retention_ticks: int = 2016
    idle_s: float = 10.0
    ingest: str = "direct"
    batch_max: int = 20000
    batch_within_s: float = 0.2
    session_timeout_s: float = 6.0
    heartbeat_s: float = 1.0
    web_port: int = 0
    data_dir: str = ""
    metrics_interval_s: float = 10.0
    secret_file: str = ""
    demo: bool = False
    secret: bytes = field(default=b"", repr=False, compare=False)

    # ---- derived -------------------------------------------------------------------
    def topic(self, name: str) -> str:
        """Full topic name with the configured prefix."""
        return f"{self.topic_prefix}{name}"

    @property
    def ticks_per_day(self) -> float:
        """Ticks in one day (for the per-day budget)."""
        return 86400.0 / self.tick_s

    @property
    def device_day(self) -> bool:
        """Whether the unit of privacy is the device-day (the default)."""
        return self.privacy_unit == UNIT_DEVICE_DAY

    @property
    def window_ticks(self) -> int | None:
        """W of a ``window:W`` unit (w-event privacy), else None."""
        if self.privacy_unit.startswith("window:"):
            return int(self.privacy_unit.split(":", 1)[1])
        return None

    def release_params(self, mech: str,
                       paths: tuple[tuple[str, ...], ...] = ()) -> ReleaseParams:
        """The public parameters of a release mechanism (``{mech}_epsilon`` and the rest)."""
        return ReleaseParams(epsilon=float(getattr(self, epsilon_field(mech), 0.0)),
                             smoother=self.pegasus_smoother, paths=paths, ttl_s=self.ttl_s,
                             epsilon_day=self.epsilon_day, delta=self.delta,
                             ticks_per_day=round(self.ticks_per_day))

    def release_config(self) -> ReleaseConfig:
        """The release stage's small config object."""
        return ReleaseConfig(
            secret=self.secret, tick_s=self.tick_s,
            mechanisms=tuple((m, self.release_params(m)) for m in self.mechanisms),
            budget_epsilon_tick=self.budget_epsilon_tick, mide=self.mide,
            mide_algorithm=self.mide_algorithm, mide_beta=self.mide_beta,
            mide_alpha=self.mide_alpha, mide_epsilon_max=self.mide_epsilon_max,
            mide_hourly=self.mide_hourly, capacity_factor=self.capacity_factor,
            device_day=self.device_day, epsilon_day=self.epsilon_day, delta=self.delta,
            window_ticks=self.window_ticks or 0, daily_cube=self.daily_cube)

    def epsilon_of(self, mech: str) -> float:
        """ε per tick of an event-level release mechanism.

        0 for the TTL chain (no formal guarantee) and for device-day mechanisms
        (charged per day instead, :meth:`day_plan`).
        """
        if not has_guarantee(mech) or is_device_day(mech):
            return 0.0
        return self.release_params(mech).epsilon

    def day_plan(self) -> dict[str, Any]:
        """The day's privacy plan under the device-day unit (public figures).

        Returns ``releases`` (name, share, ρ, ε alone), the projected ε of the day
        (zCDP releases composed, converted by dp-accounting, plus the event-level
        releases' ε over every tick of the day by basic composition), ε_day and δ.
        """
        from mechanisms.accounting import device_day_epsilon, zcdp_to_epsilon
        from mechanisms.registry import build
        from occupancy.buildings import load_site

        cfg = self.release_params("device-day").device_day_config()
        releases: list[dict[str, Any]] = []
        paths = tuple(tuple(p) for p in load_site(self.site).hierarchy())
        for m in self.mechanisms:
            if is_device_day(m):
                c = build(m, self.release_params(m, paths)).cost(1)
                releases.append({"release": m, "share": c.day_share, "rho": c.day_rho,
                                 "epsilon_alone": c.epsilon})
        if self.mide:
            rho = cfg.alert_share * cfg.rho_day
            releases.append({"release": "alerts (fire code, per room per hour)",
                             "share": "alerts", "rho": rho,
                             "epsilon_alone": zcdp_to_epsilon(rho, self.delta)})
        if self.daily_cube:  # released by the worker after each midnight: spent, not reserved
            rho = cfg.histogram_share * cfg.rho_day
            releases.append({"release": "daily cube (room × 5-min slot, yesterday)",
                             "share": "histogram", "rho": rho,
                             "epsilon_alone": zcdp_to_epsilon(rho, self.delta)})
        rho = sum(r["rho"] for r in releases)
        event_eps = sum(self.epsilon_of(m) for m in self.mechanisms)
        for m in self.mechanisms:
            if self.epsilon_of(m) > 0:
                releases.append({"release": m, "share": "event-level every tick", "rho": None,
                                 "epsilon_alone": device_day_epsilon(
                                     self.epsilon_of(m), round(self.ticks_per_day))})
        total = (zcdp_to_epsilon(rho, self.delta) if rho > 0 else 0.0) + (
            device_day_epsilon(event_eps, round(self.ticks_per_day)) if event_eps else 0.0)
        return {"unit": "device-day", "epsilon_day": self.epsilon_day, "delta": self.delta,
                "rho_day": cfg.rho_day, "rho": rho, "projected_epsilon": total,
                "releases": releases,
                "reserved": {} if self.daily_cube else {"histogram": cfg.histogram_share}}

    def epsilon_per_tick(self) -> float:
        """ε of the costliest tick, by all configured DP releases (sequential composition).

        That is the tick closing an hour when hourly MIDE is on: it runs both MIDE queries.
        """
        total = sum(self.epsilon_of(m) for m in self.mechanisms)
        if self.mide and not self.device_day:  # device-day alerts: charged per day
            total += self.mide_epsilon_max * (2 if self.mide_hourly else 1)
        return total

    def epsilon_per_day(self) -> float:
        """ε per device-day: every tick's releases, plus hourly MIDE once per hour."""
        from mechanisms.accounting import device_day_epsilon

        every_tick = sum(self.epsilon_of(m) for m in self.mechanisms)
        mide = self.mide and not self.device_day  # device-day alerts: in day_plan()
        if mide:
            every_tick += self.mide_epsilon_max
        total = device_day_epsilon(every_tick, round(self.ticks_per_day)) if every_tick else 0.0
        if mide and self.mide_hourly:
            total += self.mide_epsilon_max * 24  # one hourly peak query per hour
        return total

    def state_store_url(self) -> str:
        """URL of the internal state store (``state_redis_url`` or redis_url's db + 1)."""
        return self.state_redis_url or next_db_url(self.redis_url)

    def public(self) -> dict[str, Any]:
        """Settings safe to log or publish (no secret, no secret path, no URL credentials)."""
        d = asdict(self)
        d.pop("secret", None)
        d.pop("secret_file", None)
        for name in ("kafka_bootstrap", "redis_url", "state_redis_url"):
            d[name] = safe_url(d[name])
        d["mechanisms"] = list(self.mechanisms)
        return d


_FIELDS = {f.name: f for f in fields(Settings) if f.name != "secret"}

HELP = {
    "site": "building or campus (name in buildings/ or a JSON path)",
    "kafka_bootstrap": "Kafka bootstrap host:port (env KAFKA_BOOTSTRAP)",
    "redis_url": "Redis URL of the read model (env REDIS_URL)",
    "state_redis_url": "Redis URL of the internal state store: checkpoints, ex-post ledger "
                       "(default: redis_url's server, next database number)",
    "app_id": "consumer-group / checkpoint namespace; workers with one id share the work",
    "topic_prefix": "prefix of every topic name (tests, several deployments on one broker)",
    "partitions": "partitions of wifi.observations (created if missing)",
    "tick_s": "tick period in event-time seconds",
    "validity_s": "how long an observation keeps a device present",
    "lateness_s": "allowed lateness; watermark = max event time - lateness",
    "max_future_s": "events further ahead of the clock are held until it catches up, "
                    "else go to the DLQ (far_future)",
    "clock_quorum": "records (within max_future_s of each other) needed to move a "
                    "partition's event clock (docs/ARCHITECTURE.md 'Event time')",
    "max_marker_jump_s": "a watermark marker further ahead of its partition's clock goes to "
                         "the DLQ (marker_jump): bounds the ticks one marker can finalise",
    "privacy_unit": "unit of privacy: device-day (default: a device's whole day), event "
                    "(one device at one tick: thesis experiments) or window:W (any W "
                    "consecutive ticks)",
    "epsilon_day": "ε per unit (device-day: the whole day, every default release together; "
                   "window:W: any W consecutive ticks)",
    "delta": "δ per unit (device-day)",
    "mechanisms": "comma-separated release mechanisms: " + ",".join(MECHANISMS)
    + " (default: device-day under the device-day unit; laplace,pegasus-filter,"
    "hpegasus-filter,ttl otherwise; the paper's pegasus and hpegasus on request)",
    "laplace_epsilon": "ε per tick of the Laplace release",
    "pegasus_epsilon": "ε per tick of flat PeGaSus",
    "pegasus_smoother": "PeGaSus smoother: average, median or js",
    "hpegasus_epsilon": "ε per tick of hierarchical PeGaSus (split over the levels)",
    "pegasus_post_epsilon": "ε per tick of PeGaSus-post (all to the Perturber)",
    "pegasus_filter_epsilon": "ε per tick of PeGaSus-filter (Laplace + public-model Bayes "
                              "filter; docs/pegasus.md)",
    "hpegasus_filter_epsilon": "ε per tick of hierarchical PeGaSus-filter (rooms filtered, "
                               "floors and buildings their sums)",
    "ttl_s": "salt lifetime of TTL pseudonyms (no formal guarantee)",
    "mide": "raise MIDE fire-code alerts (true/false)",
    "daily_cube": "device-day: release each finished UTC day's (room × 5-minute slot) cube "
                  "from the histogram share (true/false; docs/device-day.md)",
    "mide_algorithm": "MIDE mechanism: " + ", ".join(MIDE_ALGORITHMS)
    + " (dppwlm estimates with the public range 0..3×capacity)",
    "mide_beta": "MIDE false-negative-rate bound β",
    "mide_alpha": "MIDE uncertainty width α (people)",
    "mide_epsilon_max": "MIDE denies a query needing more ε than this",
    "mide_hourly": "also alert on each hour's peak per location (ε_max more at the tick "
                   "closing each hour; tick_s must divide 3600)",
    "capacity_factor": "alert threshold = fire-code capacity × this",
    "incident_quiet_s": "an over-capacity incident resolves after this many seconds of event "
                        "time without a positive decision (occupancy/incidents.py)",
    "budget_epsilon_tick": "ε budget per tick (event-level); start is refused above it",
    "budget_epsilon_day": "ε budget per device-day (0 = no day cap)",
    "eval_mode": "ALSO write true counts to Redis eval:true:* (evaluation only!)",
    "retention_ticks": "ticks kept in the Redis series",
    "idle_s": "wall seconds before quiet partitions get a watermark marker",
    "ingest": "observe/presence consumer: direct (batched aiokafka) or faust (agent)",
    "batch_max": "max records per batch",
    "batch_within_s": "max wait for a batch (s)",
    "session_timeout_s": "consumer session timeout (Tansu joins wait half of it)",
    "heartbeat_s": "consumer heartbeat interval",
    "web_port": "Faust web port with /metrics (0 = disabled)",
    "data_dir": "Faust data directory (default: a temp dir per worker)",
    "metrics_interval_s": "seconds between health/lag log lines",
    "secret_file": "file with the secret for pseudonyms and noise (env OCCUSTREAM_SECRET_FILE)",
    "demo": "demo mode: allows the built-in development secret",
}


def _coerce(name: str, value: Any, source: str) -> Any:
    default = getattr(Settings, name, None)
    try:
        if name == "mechanisms":
            if isinstance(value, str):
                items = [v.strip() for v in value.split(",") if v.strip()]
            elif isinstance(value, list | tuple):
                items = [str(v).strip() for v in value]
            else:
                raise TypeError
            return tuple(items)
        if isinstance(default, bool):
            if isinstance(value, bool):
                return value
            s = str(value).strip().lower()
            if s in {"1", "true", "yes", "on"}:
                return True
            if s in {"0", "false", "no", "off", ""}:
                return False
            raise ValueError
        if isinstance(default, int):
            if isinstance(value, float) and not value.is_integer():
                raise ValueError
            return int(value)
        if isinstance(default, float):
            v = float(value)
            if not math.isfinite(v):
                raise ValueError
            return v
        return str(value)
    except (TypeError, ValueError):
        kind = "a comma-separated list" if name == "mechanisms" else type(default).__name__
        raise ConfigError(f"{name} ({source}) must be {kind}, not {value!r}") from None


def _read_config_file(path: str) -> dict[str, Any]:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise ConfigError(f"config file {path}: cannot read: {exc.strerror}") from None
    try:
        data = tomllib.loads(text) if p.suffix == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        kind = p.suffix[1:] or "JSON"
        raise ConfigError(f"config file {path}: not valid {kind}: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path}: must be a table of settings")
    unknown = sorted(set(data) - set(_FIELDS))
    if unknown:
        raise ConfigError(f"config file {path}: unknown setting(s) {unknown}")
    return data


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--config`` and one ``--<field>`` option per setting to ``parser``."""
    parser.add_argument("--config", help="TOML or JSON file of settings (env OCCUSTREAM_CONFIG)")
    group = parser.add_argument_group("pipeline settings (env OCCUSTREAM_<NAME>)")
    for name, f in _FIELDS.items():
        opt = "--" + name.replace("_", "-")
        default = f.default if f.default is not None else None
        shown = ",".join(default) if isinstance(default, tuple) else default
        group.add_argument(opt, dest=f"set_{name}", default=None, metavar=name.upper(),
                           help=f"{HELP.get(name, name)} (default {shown!r})")


def load_settings(
    args: argparse.Namespace | None = None,
    env: Mapping[str, str] | None = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    demo: bool = False,
) -> Settings:
    """Build and validate the settings from config file, environment and CLI.

    Args:
        args: parsed CLI arguments from a parser prepared by :func:`add_arguments`.
        env: environment (default ``os.environ``).
        overrides: programmatic values applied last (tests, the demo).
        demo: demo mode: a built-in development secret is allowed (with a warning).

    Raises:
        ConfigError: on any invalid value, with a one-line message.
    """
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    cfg_path = (getattr(args, "config", None) if args else None) or env.get("OCCUSTREAM_CONFIG")
    if cfg_path:
        for k, v in _read_config_file(cfg_path).items():
            values[k], sources[k] = v, f"config file {cfg_path}"
    for name in _FIELDS:
        key = f"OCCUSTREAM_{name.upper()}"
        if key in env:
            values[name], sources[name] = env[key], f"env {key}"
    if env.get("KAFKA_BOOTSTRAP") and "kafka_bootstrap" not in sources:
        values["kafka_bootstrap"], sources["kafka_bootstrap"] = env["KAFKA_BOOTSTRAP"], "env"
    if env.get("REDIS_URL") and "redis_url" not in sources:
        values["redis_url"], sources["redis_url"] = env["REDIS_URL"], "env"
    if args is not None:
        for name in _FIELDS:
            v = getattr(args, f"set_{name}", None)
            if v is not None:
                values[name], sources[name] = v, "--" + name.replace("_", "-")
    for k, v in (overrides or {}).items():
        if k not in _FIELDS:
            raise ConfigError(f"unknown setting {k!r}")
        values[k], sources[k] = v, "override"
    if demo:
        values["demo"], sources["demo"] = True, "demo"
    coerced = {k: _coerce(k, v, sources[k]) for k, v in values.items()}
    unit = str(coerced.get("privacy_unit", Settings.privacy_unit))
    if "mechanisms" not in coerced:  # the unit's default releases
        coerced["mechanisms"] = DEFAULT_MECHANISMS.get(
            UNIT_DEVICE_DAY if unit == UNIT_DEVICE_DAY else UNIT_EVENT)
        sources["mechanisms"] = f"default for privacy_unit {unit}"
    s = replace(Settings(), **coerced)
    validate(s, sources)  # every other value first: one line about the real mistake
    return replace(s, secret=_load_secret(s, env))


def _load_secret(s: Settings, env: Mapping[str, str]) -> bytes:
    return load_secret(s.secret_file, demo=s.demo, env=env)


def _positive(s: Settings, name: str, sources: Mapping[str, str]) -> None:
    v = getattr(s, name)
    if not v > 0:
        where = sources.get(name, "default")
        raise ConfigError(f"{name} ({where}) must be > 0, not {v!r}")


def validate(s: Settings, sources: Mapping[str, str] | None = None) -> None:
    """Check every setting; raise ConfigError naming the first bad one."""
    src = dict(sources or {})
    from occupancy.buildings import resolve_building_path

    try:
        resolve_building_path(s.site)
    except OccustreamError as exc:
        raise ConfigError(f"site ({src.get('site', 'default')}): {exc}") from None
    unit = s.privacy_unit
    if unit not in (UNIT_DEVICE_DAY, UNIT_EVENT) and not (
            unit.startswith("window:") and unit[7:].isdigit() and int(unit[7:]) >= 1):
        raise ConfigError(f"privacy_unit ({src.get('privacy_unit', 'default')}) must be one "
                          f"of {list(PRIVACY_UNITS)}, not {unit!r}")
    if not 0 < s.delta < 1e-3:
        raise ConfigError(f"delta ({src.get('delta', 'default')}) must be in (0, 1e-3), "
                          f"not {s.delta!r}")
    for name in ("epsilon_day", "tick_s", "validity_s", "max_future_s", "partitions", "ttl_s",
                 "mide_alpha", "mide_epsilon_max", "capacity_factor", "budget_epsilon_tick",
                 "retention_ticks", "batch_max", "batch_within_s", "session_timeout_s",
                 "heartbeat_s", "metrics_interval_s", "idle_s", "max_marker_jump_s",
                 "clock_quorum"):
        _positive(s, name, src)
    if s.lateness_s < 0:
        raise ConfigError(f"lateness_s must be >= 0, not {s.lateness_s!r}")
    if s.heartbeat_s >= s.session_timeout_s:
        raise ConfigError(
            f"heartbeat_s ({s.heartbeat_s:g}) must be below session_timeout_s "
            f"({s.session_timeout_s:g})"
        )
    unknown = [m for m in s.mechanisms if m not in MECHANISMS]
    if unknown:
        raise ConfigError(f"mechanisms: unknown {unknown}; choose from {sorted(MECHANISMS)}")
    if len(set(s.mechanisms)) != len(s.mechanisms):
        raise ConfigError(f"mechanisms: listed twice in {list(s.mechanisms)}")
    for m in s.mechanisms:
        if is_device_day(m):
            if not s.device_day:
                raise ConfigError(f"mechanisms: {m} releases under the device-day unit; set "
                                  f"privacy_unit device-day, not {s.privacy_unit!r}")
            if not (86400 / s.tick_s).is_integer() or (86400 / s.tick_s) % 24:
                raise ConfigError(f"tick_s ({s.tick_s:g}) must divide 3600 for the "
                                  "device-day heatmap (hourly means)")
        elif has_guarantee(m) and not s.epsilon_of(m) > 0:
            raise ConfigError(f"{epsilon_field(m)} must be > 0, not {s.epsilon_of(m)!r}")
    if s.device_day and s.daily_cube and (
            not (86400 / s.tick_s).is_integer() or (86400 / s.tick_s) % 24):
        raise ConfigError(f"tick_s ({s.tick_s:g}) must divide 3600 for the daily cube "
                          "(hourly profiles); change tick_s or set daily_cube false")
    if s.ingest not in ("direct", "faust"):
        raise ConfigError(f"ingest must be direct or faust, not {s.ingest!r}")
    if s.pegasus_smoother not in ("average", "median", "js"):
        raise ConfigError(
            f"pegasus_smoother must be average, median or js, not {s.pegasus_smoother!r}"
        )
    if s.mide_algorithm not in MIDE_ALGORITHMS:
        raise ConfigError(
            f"mide_algorithm must be one of {list(MIDE_ALGORITHMS)}, not {s.mide_algorithm!r}"
        )
    if not 0 < s.mide_beta < 0.5:
        raise ConfigError(f"mide_beta must be in (0, 0.5), not {s.mide_beta!r}")
    if not 0 < s.incident_quiet_s < float("inf"):
        raise ConfigError(
            f"incident_quiet_s must be a positive number of seconds, not {s.incident_quiet_s!r}")
    if s.budget_epsilon_day < 0:
        raise ConfigError(
            f"budget_epsilon_day must be >= 0 (0 = none), not {s.budget_epsilon_day!r}")
    if s.redis_url and s.state_store_url() == s.redis_url:
        raise ConfigError("state_redis_url must differ from redis_url: the read model "
                          "must not hold the pipeline's sensitive state")
    if s.mide and s.mide_hourly and not (3600 / s.tick_s).is_integer():
        raise ConfigError(
            f"tick_s ({s.tick_s:g}) must divide 3600 when mide_hourly is on (hourly alerts "
            "run at the tick closing each hour); change tick_s or set mide_hourly false")
    if not 0 <= s.web_port < 65536:
        raise ConfigError(f"web_port must be 0 (disabled) or a TCP port, not {s.web_port!r}")
    check_budget(s)


def check_budget(s: Settings) -> None:
    """Refuse a configuration whose spending exceeds the configured budget.

    Unit ``device-day`` (default): every configured release of the day together —
    device-day mechanisms at their zCDP day cost, fire-code alerts and the daily cube at
    their shares (spent, not reserved), event-level mechanisms at ε × ticks of the day —
    must fit ``epsilon_day`` at ``delta`` (:meth:`Settings.day_plan`); otherwise a one-line
    :class:`~mechanisms.errors.ConfigError` names the releases and the overshoot.
    Unit ``window:W``: W ticks of every release must fit ``epsilon_day``. Then, for
    every unit, the event-level checks below (they charge nothing for device-day
    mechanisms).

    Event-level, one device at one tick: Every DP mechanism (and
    MIDE, charged its worst case ε_max) releases every tick, so per tick the spending
    is the sum of their ε (sequential composition; locations are disjoint, so within a
    mechanism they compose in parallel). Hourly MIDE runs at the tick closing each hour
    only: the per-tick check charges it (that tick is the costliest), the per-device-day
    check charges it 24 times, not once per tick (:meth:`Settings.epsilon_per_day`).
    The per-tick check is a dry run of one tick on the mechanisms library's
    :class:`~mechanisms.accounting.Accountant`.

    Raises:
        BudgetExhaustedError: when the per-tick or per-day spending exceeds its budget.
    """
    from mechanisms.accounting import Accountant, Budget
    from mechanisms.errors import BudgetExhaustedError

    if s.device_day:
        plan = s.day_plan()
        if plan["projected_epsilon"] > s.epsilon_day * (1 + 1e-9):
            parts = " + ".join(f"{r['release']} ε {r['epsilon_alone']:.4g}"
                               for r in plan["releases"])
            raise ConfigError(
                f"device-day budget exceeded: {parts} → ε {plan['projected_epsilon']:.4g} per "
                f"device-day > epsilon_day {s.epsilon_day:g} at delta {s.delta:g} (overshoot "
                f"{plan['projected_epsilon'] - s.epsilon_day:.4g}); remove releases or set "
                "privacy_unit event for event-level experiments")
        acct_ok = [m for m in s.mechanisms if s.epsilon_of(m) > 0]
        if not acct_ok:
            return
    w = s.window_ticks
    if w is not None:
        per_window = s.epsilon_per_tick() * w
        if per_window > s.epsilon_day + 1e-9:
            raise ConfigError(
                f"window:{w} budget exceeded: {w} ticks × ε {s.epsilon_per_tick():g} per tick "
                f"({', '.join(s.mechanisms)}{', mide' if s.mide else ''}) = {per_window:g} > "
                f"epsilon_day {s.epsilon_day:g} (overshoot {per_window - s.epsilon_day:g})")
    acct = Accountant(Budget(s.budget_epsilon_tick), name=f"site:{s.site}")
    charges = [(m, s.epsilon_of(m)) for m in s.mechanisms if has_guarantee(m)]
    if s.mide and not s.device_day:
        charges.append((f"mide:{s.mide_algorithm}", s.mide_epsilon_max))
        if s.mide_hourly:  # the tick closing an hour also runs the hourly query
            charges.append((f"mide-hour:{s.mide_algorithm}", s.mide_epsilon_max))
    for mech, eps in charges:
        acct.spend(eps, mechanism=mech, tick=0)
    if s.budget_epsilon_day > 0:
        per_day = s.epsilon_per_day()
        if per_day > s.budget_epsilon_day + 1e-9:
            raise BudgetExhaustedError(per_day, s.budget_epsilon_day, "device-day (configured)")
