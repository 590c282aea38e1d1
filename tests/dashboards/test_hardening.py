"""Dashboard hardening (issue 14 G) with real sockets on loopback and a real Redis."""

from __future__ import annotations

import io
import json
import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from dash_support import TOKENS, Served, call, get_json

from dashboards import hardening
from dashboards.app import banner

pytestmark = pytest.mark.e2e

#: Slowloris test: this many connections, each trickling a header byte, must all be closed
#: by the server within the header timeout plus SLACK_S (bounded in count and in time).
SLOW_CONNECTIONS = 40
HEADER_TIMEOUT_S = 1.0
SLACK_S = 4.0


def _raw(port: int, data: bytes, timeout_s: float = 5.0) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as s:
        s.sendall(data)
        out = b""
        try:
            while chunk := s.recv(65536):
                out += chunk
        except (TimeoutError, ConnectionResetError):
            pass
        return out


def test_security_headers_and_no_version_banner_on_every_response(served: Served) -> None:
    url = served.url
    responses = [
        call(f"{url}/", token=None), call(f"{url}/docs", token=None),
        call(f"{url}/static/app.js", token=None), call(f"{url}/openapi.json", token=None),
        call(f"{url}/api/whoami", token=None), call(f"{url}/api/whoami"),
        call(f"{url}/nowhere", token=None), call(f"{url}/api/health", token=None),
        call(f"{url}/api/alerts?bogus=1"),
    ]
    assert sorted({r[0] for r in responses}) == [200, 400, 401, 404]
    for status, headers, _ in responses:
        csp = headers.get("Content-Security-Policy", "")
        assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp, status
        assert "unsafe-inline" not in csp.split("script-src", 1)[1].split(";", 1)[0]
        assert headers.get("X-Frame-Options") == "DENY"
        assert headers.get("X-Content-Type-Options") == "nosniff"
        assert headers.get("Referrer-Policy") == "no-referrer"
        assert headers.get("Server") == hardening.SERVER_NAME
    # the SSE stream too (read its head over a raw socket)
    head = _raw(served.port, b"GET /api/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                + TOKENS.admin.encode() + b"\r\n\r\n", timeout_s=1.0).split(b"\r\n\r\n")[0]
    assert b"200" in head.split(b"\r\n")[0]
    assert b"X-Frame-Options: DENY" in head and b"Content-Security-Policy:" in head
    assert b"aiohttp" not in head.lower()
    # and a request the HTTP parser rejects carries no version
    bad = _raw(served.port, b"GET /\x01 HTTP/1.1\r\nHost: x\r\n\r\n")
    assert bad.split(b" ")[1] == b"400" and b"aiohttp" not in bad.lower()


@pytest.fixture
def log_capture() -> Any:
    """Everything logged anywhere (DEBUG and up, tracebacks included) as text."""
    buf = io.StringIO()
    handler = logging.StreamHandler(buf)
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    old = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield buf
    finally:
        root.removeHandler(handler)
        root.setLevel(old)


def test_no_token_in_any_log_line_of_malformed_requests(served: Served,
                                                        log_capture: io.StringIO) -> None:
    unknown = "zz-not-a-configured-token-42"
    lines = [
        f"GET /api/whoami?access_token={TOKENS.admin}\x01 HTTP/1.1\r\nHost: x\r\n\r\n",
        f"GET /api/whoami?access_token={unknown} HTTP/1.1\r\nHost: x\r\nBroken\r\n\r\n",
        f"GET /api/whoami?access_token={TOKENS.analyst} HTTP/9.9\r\nHost: x\r\n\r\n",
        f"BREW /api/whoami?access_token={unknown} HTTP/1.1\r\n\r\n",
        f"GET /api/whoami HTTP/1.1\r\nAuthorization: Bearer {unknown}\r\nX: \x00\r\n\r\n",
        f"GET /api/whoami?access_token={TOKENS.admin} HTTP/1.1\r\nHost: x\r\n\r\n",  # valid
    ]
    for line in lines:
        _raw(served.port, line.encode("latin-1"))
    time.sleep(0.3)  # the server thread logs after answering
    text = log_capture.getvalue()
    assert "Error handling request" in text or "BadHttp" in text or "400" in text, text
    for secret in (TOKENS.admin, TOKENS.analyst, unknown):
        assert secret not in text, text


def test_banner_names_env_tokens_instead_of_printing_them() -> None:
    from dashboards.app import Tokens

    env = {"OCCUSTREAM_ADMIN_TOKEN": "admin-from-env-0123", "OCCUSTREAM_ANALYST_TOKEN": ""}
    tokens, generated = Tokens.from_env(env)
    text = banner("127.0.0.1", 8080, tokens, "redis://localhost:6379/0", env=env)
    assert generated and "admin-from-env-0123" not in text
    assert "$OCCUSTREAM_ADMIN_TOKEN" in text
    assert f"#token={tokens.analyst}" in text  # the generated one is shown (terminal only)


def test_dashboard_process_prints_no_env_token(redis_url: str, campus_file: Path) -> None:
    env = dict(os.environ, OCCUSTREAM_ADMIN_TOKEN="env-admin-token-0123456",
               OCCUSTREAM_ANALYST_TOKEN="env-analyst-token-0123456")
    proc = subprocess.Popen(
        [sys.executable, "-m", "occustream.cli", "dashboard", "--building", str(campus_file),
         "--redis-url", redis_url, "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    out = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stdout.readline()  # type: ignore[union-attr]
            if not line:
                break
            out.append(line)
            if "API docs" in line:
                break
    finally:
        proc.terminate()
        try:
            rest, err = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            rest, err = proc.communicate()
    text = "".join(out) + (rest or "") + (err or "")
    assert "API docs" in text, text
    assert "env-admin-token" not in text and "env-analyst-token" not in text
    assert "$OCCUSTREAM_ADMIN_TOKEN" in text and "$OCCUSTREAM_ANALYST_TOKEN" in text


def test_sse_clients_are_capped(campus: Any, redis_url: str, redis_client: Any) -> None:
    served = Served(campus, redis_url, max_sse_clients=3)
    socks: list[socket.socket] = []
    req = (b"GET /api/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
           + TOKENS.analyst.encode() + b"\r\n\r\n")
    try:
        for _ in range(3):
            s = socket.create_connection(("127.0.0.1", served.port), timeout=5)
            s.sendall(req)
            assert s.recv(4096).startswith(b"HTTP/1.1 200")
            socks.append(s)
        status, body = get_json(f"{served.url}/api/events", token=TOKENS.analyst)
        assert status == 503 and "too many live-update clients" in body["error"]
        socks.pop().close()  # one leaves: a new client gets in (once the server noticed)
        deadline = time.monotonic() + 10
        got = None
        while time.monotonic() < deadline:
            s = socket.create_connection(("127.0.0.1", served.port), timeout=5)
            s.sendall(req)
            got = s.recv(4096)
            if got.startswith(b"HTTP/1.1 200"):
                socks.append(s)
                break
            s.close()
            time.sleep(0.2)
        assert got is not None and got.startswith(b"HTTP/1.1 200"), got
    finally:
        for s in socks:
            s.close()
        served.close()


def test_slowloris_connections_are_closed(campus: Any, redis_url: str, redis_client: Any
                                          ) -> None:
    served = Served(campus, redis_url, header_timeout_s=HEADER_TIMEOUT_S)
    socks = []
    try:
        for _ in range(SLOW_CONNECTIONS):
            s = socket.create_connection(("127.0.0.1", served.port), timeout=5)
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # never finishes the head
            s.setblocking(False)
            socks.append(s)
        open_ = set(range(SLOW_CONNECTIONS))
        deadline = time.monotonic() + HEADER_TIMEOUT_S + SLACK_S
        while open_ and time.monotonic() < deadline:
            for i in list(open_):
                try:
                    socks[i].send(b"X")  # trickle a byte, like slowloris
                    if socks[i].recv(1024) == b"":
                        open_.discard(i)
                except BlockingIOError:
                    pass
                except (ConnectionResetError, BrokenPipeError):
                    open_.discard(i)
            time.sleep(0.25)
        assert not open_, f"{len(open_)} of {SLOW_CONNECTIONS} slow connections still open"
        assert call(f"{served.url}/api/health", token=None)[0] == 200  # still serving
        # a live stream whose request was complete is not cut by the header timeout
        sse = socket.create_connection(("127.0.0.1", served.port), timeout=5)
        socks.append(sse)
        sse.sendall(b"GET /api/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                    + TOKENS.analyst.encode() + b"\r\n\r\n")
        assert sse.recv(4096).startswith(b"HTTP/1.1 200")
        time.sleep(HEADER_TIMEOUT_S * 2.5)
        from dashboards.synthetic import write_alert

        write_alert(redis_client, {"tick": 1_790_000_000, "location": "hall-101",
                                   "capacity": 80, "algorithm": "TSLM", "beta": 0.05})
        got = b""
        while b"event: alert" not in got:
            chunk = sse.recv(4096)
            assert chunk, "the live stream was closed"
            got += chunk
    finally:
        for s in socks:
            s.close()
        served.close()


def test_redis_outage_answers_503_with_a_clear_body(campus: Any,
                                                    tmp_path_factory: pytest.TempPathFactory
                                                    ) -> None:
    from infra.services import EmbeddedRedis

    server = EmbeddedRedis(log_dir=tmp_path_factory.mktemp("redis-outage")).start()
    served = Served(campus, server.url)
    try:
        assert get_json(f"{served.url}/api/health", token=None) == (200, {"ok": True})
        assert get_json(f"{served.url}/api/mechanisms")[0] == 200
        server.stop()
        status, body = get_json(f"{served.url}/api/health", token=None)
        assert status == 503 and body["ok"] is False and "Redis" in body["error"]
        for path in ("/api/mechanisms", "/api/alerts", "/api/ledger",
                     "/api/snapshot?mech=laplace", "/api/ticks?mech=laplace"):
            status, body = get_json(f"{served.url}{path}")
            assert status == 503, (path, body)
            assert "Redis" in body["error"] and body["status"] == 503
    finally:
        served.close()
        server.stop()


def test_secret_filter_masks_message_args_and_traceback() -> None:
    f = hardening.SecretFilter()
    f.add(["literal-secret-value"])
    try:
        raise ValueError("bad line b'GET /x?access_token=abc123&y=1 HTTP/1.1'")
    except ValueError:
        import sys as _sys

        rec = logging.LogRecord("aiohttp.server", logging.ERROR, __file__, 1,
                                "req %s auth %s", ("literal-secret-value",
                                                   "Bearer tok-xyz"), _sys.exc_info())
    assert f.filter(rec)
    out = logging.Formatter().format(rec)
    for s in ("literal-secret-value", "abc123", "tok-xyz"):
        assert s not in out, out
    assert "access_token=***" in out and json.dumps("x")


@pytest.mark.browser
def test_pages_run_under_the_csp_without_violations(served: Served, page: Any,
                                                    redis_client: Any, campus: Any) -> None:
    """The dashboard and the API docs work in Chromium with the CSP enforced: nothing is
    refused (a violation is logged to the console), the plan and the docs render."""
    from dashboards.synthetic import seed

    seed(redis_client, campus, days=1, last_day_ticks=4, mechs=("laplace",))
    refused: list[str] = []
    page.on("console", lambda m: refused.append(m.text)
            if "Content Security Policy" in m.text else None)
    page.goto(f"{served.url}/#token={TOKENS.admin}")
    page.wait_for_selector("body[data-ready='1']", timeout=15_000)
    page.wait_for_selector("#plan .loc[data-class]:not([data-class=''])", timeout=15_000)
    page.goto(f"{served.url}/docs")
    page.wait_for_selector("#ops .op", timeout=15_000)
    assert page.eval_on_selector("#ops .op .m", "e => getComputedStyle(e).color") == (
        "rgb(255, 255, 255)")  # docs.css applied
    assert not refused, refused
    assert not page.js_errors, page.js_errors


def test_webhook_urls_and_secret_are_masked_in_webhook_logs(log_capture: io.StringIO) -> None:
    url = "https://hooks.example.com/services/T0/B0/hook-credential-987"
    hardening.install_log_redaction(["webhook-signing-secret-123", url])
    logging.getLogger("dashboards.webhooks").warning(
        "delivery to %s failed (key %s)", url, "webhook-signing-secret-123")
    text = log_capture.getvalue()
    assert "hook-credential-987" not in text and "webhook-signing-secret-123" not in text
    assert "delivery to *** failed" in text
