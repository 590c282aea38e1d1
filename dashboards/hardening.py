"""HTTP hardening of the dashboard (issue 14 G), in one place.

What every response, connection and log line of :mod:`dashboards.app` must satisfy:

* **No secret in a log line.** aiohttp's server logger writes the raw request line of a
  malformed request (``GET /api/whoami?access_token=…``) with its exception; the
  :class:`SecretFilter` installed on every ``aiohttp.*`` logger (and the dashboard's own)
  replaces the known tokens, ``access_token=`` values and ``Bearer`` credentials by
  ``***`` in the message, its arguments and the formatted traceback.
* **Security headers on every response** (:func:`security_headers`, an
  ``on_response_prepare`` hook, so SSE, static files and errors get them too): a
  Content-Security-Policy without inline scripts and with ``frame-ancestors 'none'``,
  ``X-Frame-Options: DENY``, ``X-Content-Type-Options: nosniff``, ``Referrer-Policy:
  no-referrer``, and a ``Server`` header without a version.
* **Slow clients.** :func:`server_options` are the aiohttp server settings: a connection
  that has not sent a complete request head within ``header_timeout_s`` is closed
  (aiohttp arms its keep-alive timer when the connection opens and only a complete
  request disarms it, so the keep-alive timeout is the header read timeout), request
  lines and header fields are capped at 8 KiB and a request at 64 header fields; a
  client that disconnects cancels its handler (its SSE slot is freed at once). On shutdown
  the event streams are ended first (``Broker.close_subscribers``), so the server waits at
  most :data:`SHUTDOWN_TIMEOUT_S` for the remaining requests instead of aiohttp's 60 s.
* **Redis outage.** :data:`REDIS_DOWN` are the exceptions that mean the read model is
  unreachable; the app answers them with 503 and a JSON body saying so
  (:func:`redis_unavailable`).
"""

from __future__ import annotations

import asyncio
import logging
import re
import traceback
from collections.abc import Iterable
from typing import Any

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

#: Seconds a client may take to send a complete request head (slowloris protection).
HEADER_TIMEOUT_S = 10.0
#: Seconds the server waits, when it stops, for requests still being handled.
SHUTDOWN_TIMEOUT_S = 5.0
MAX_LINE_SIZE = 8190
MAX_FIELD_SIZE = 8190
MAX_HEADERS = 64
#: Live-update (SSE) clients served at once by default; more get 503.
MAX_SSE_CLIENTS = 200

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; "
       "style-src-attr 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; "
       "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
       "frame-ancestors 'none'")
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
}
#: The ``Server`` header: the product, no version (aiohttp's default names its version).
SERVER_NAME = "occustream"

#: redis-py's connection failures, and a refused socket.
REDIS_DOWN: tuple[type[BaseException], ...] = (
    RedisConnectionError, RedisTimeoutError, ConnectionRefusedError)

MASK = "***"
_PATTERNS = (
    re.compile(r"(?i)(access_token=)[^&\s'\"\\]+"),
    re.compile(r"(?i)(bearer\s+)[^\s'\",\\]+"),
    re.compile(r"(?i)(authorization:\s*)[^\r\n'\"\\]+"),
    re.compile(r"(?i)(#token=)[^&\s'\"\\]+"),
)


class SecretFilter(logging.Filter):
    """Masks tokens in log records (message, arguments, exception text); never drops one."""

    def __init__(self) -> None:
        super().__init__("occustream-secrets")
        self.secrets: set[str] = set()

    def add(self, secrets: Iterable[str]) -> None:
        """Also mask these literal values (the configured tokens)."""
        self.secrets.update(s for s in secrets if s and len(s) >= 4)

    def mask(self, text: str) -> str:
        """``text`` with every known secret and credential-shaped value masked."""
        for s in sorted(self.secrets, key=len, reverse=True):
            if s in text:
                text = text.replace(s, MASK)
        for p in _PATTERNS:
            text = p.sub(lambda m: m.group(1) + MASK, text)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite the record in place (the formatted message replaces msg and args)."""
        try:
            msg = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format string: keep the raw template
            msg = str(record.msg)
        record.msg, record.args = self.mask(msg), None
        if record.exc_info and record.exc_info[1] is not None:
            text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
            record.exc_text = self.mask(text)
        elif record.exc_text:
            record.exc_text = self.mask(record.exc_text)
        if record.stack_info:
            record.stack_info = self.mask(record.stack_info)
        return True


#: The one filter of the process (several apps in one process add their tokens to it).
FILTER = SecretFilter()
LOGGERS = ("aiohttp", "aiohttp.access", "aiohttp.server", "aiohttp.web", "aiohttp.internal",
           "aiohttp.client", "aiohttp.websocket", "dashboards", "dashboards.app",
           "dashboards.broker", "dashboards.webhooks", "readmodel.reader")


def install_log_redaction(secrets: Iterable[str]) -> SecretFilter:
    """Install :data:`FILTER` on the aiohttp and dashboard loggers and register ``secrets``.

    Also hides the server version (:func:`hide_server_version`).

    A filter on a logger sees only the records logged on that logger itself, so it is
    put on each logger that can carry a request line or a token.
    """
    FILTER.add(secrets)
    hide_server_version()
    for name in LOGGERS:
        lg = logging.getLogger(name)
        if FILTER not in lg.filters:
            lg.addFilter(FILTER)
    return FILTER


def hide_server_version() -> None:
    """Make aiohttp's default ``Server`` header :data:`SERVER_NAME` (process-wide).

    Responses of routed requests get it from :func:`security_headers`; the 400 that
    aiohttp's HTTP parser sends for a request it cannot parse never reaches the app's
    hooks and takes ``aiohttp.web_response.SERVER_SOFTWARE`` (``Python/3.x
    aiohttp/3.x.y``) as default, so that default is replaced here. Those parser errors
    carry no security headers (no request was routed; the body is plain text and the
    connection is closed).
    """
    from aiohttp import web_response

    web_response.SERVER_SOFTWARE = SERVER_NAME  # type: ignore[attr-defined]


async def security_headers(request: web.BaseRequest, response: web.StreamResponse) -> None:
    """``on_response_prepare`` hook: the security headers and a version-free ``Server``."""
    for k, v in SECURITY_HEADERS.items():
        response.headers.setdefault(k, v)
    response.headers["Server"] = SERVER_NAME


class PathOnlyAccessLogger(AbstractAccessLogger):
    """Access log without query strings (``?access_token=`` must never reach a log)."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        """One line: method, path (no query), status, duration."""
        self.logger.info("%s %s %s %.1f ms", request.method, request.path, response.status,
                         time * 1000)


def server_options(header_timeout_s: float = HEADER_TIMEOUT_S) -> dict[str, Any]:
    """Keyword arguments for ``web.run_app`` / ``web.AppRunner`` (see the module docstring)."""
    return {"keepalive_timeout": float(header_timeout_s), "max_line_size": MAX_LINE_SIZE,
            "max_field_size": MAX_FIELD_SIZE, "max_headers": MAX_HEADERS,
            "access_log_class": PathOnlyAccessLogger,
            # a client that goes away cancels its handler: a live stream frees its slot
            # under the SSE cap at once, not at its next keep-alive write
            "handler_cancellation": True, "shutdown_timeout": SHUTDOWN_TIMEOUT_S}


def redis_unavailable(health: bool = False) -> web.Response:
    """503 with a JSON body saying the read model is unreachable."""
    body: dict[str, Any] = {
        "error": "the read model (Redis) is unavailable; retry in a few seconds",
        "status": 503}
    if health:
        body = {"ok": False, "redis": "unavailable", **body}
    return web.json_response(body, status=503, headers={"Retry-After": "5"})


def cancel_requested() -> bool:
    """Whether the running task has been asked to cancel (Python ≥ 3.11 counts requests).

    redis-py's asyncio client can turn the CancelledError thrown into a read into a
    ConnectionError (seen when the cancellation lands while the loop is busy); a reader
    whose ``except Exception`` then retried would outlive its cancel and hold the
    dashboard's shutdown for ever (a browser test's 30 s teardown in CI). A retry loop
    asks this first and re-raises the cancellation instead.
    """
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
