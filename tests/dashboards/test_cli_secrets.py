"""``occustream dashboard`` never puts credentials or generated tokens in its log.

The dashboard runs as a real process against the real test Redis, reached through a
URL carrying a user and password (Redis accepts any password for its ``nopass``
default user). Its stdout (the terminal) and stderr (the log) are read separately.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

pytestmark = pytest.mark.e2e

PASSWORD = "s3cret-pw-not-for-logs"
STARTUP_TIMEOUT_S = 60.0


def _with_credentials(url: str) -> str:
    parts = urlsplit(url)
    return parts._replace(netloc=f"default:{PASSWORD}@{parts.hostname}:{parts.port}").geturl()


def test_no_password_or_generated_token_in_the_log(redis_url: str, campus_file: Path,
                                                   tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OCCUSTREAM_ADMIN_TOKEN", "OCCUSTREAM_ANALYST_TOKEN", "REDIS_URL")}
    err_path = tmp_path / "stderr.log"
    with err_path.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "occustream.cli", "dashboard", "--building", str(campus_file),
             "--redis-url", _with_credentials(redis_url), "--port", "0"],
            stdout=subprocess.PIPE, stderr=err, env=env, text=True)
        out: list[str] = []
        try:
            deadline = time.monotonic() + STARTUP_TIMEOUT_S
            while time.monotonic() < deadline:
                line = proc.stdout.readline()  # type: ignore[union-attr]
                if not line:
                    break
                out.append(line)
                if "API docs" in line:
                    break
            time.sleep(0.5)  # let anything logged at startup reach stderr
        finally:
            proc.terminate()
            try:
                rest = proc.communicate(timeout=20)[0]
            except subprocess.TimeoutExpired:
                proc.kill()
                rest = proc.communicate()[0]
    stdout = "".join(out) + (rest or "")
    log_text = err_path.read_text()
    assert "API docs" in stdout, (stdout, log_text)
    tokens = re.findall(r"#token=([\w-]+)", stdout)
    assert len(set(tokens)) == 2, stdout  # the terminal still shows both generated tokens
    assert "generated" in stdout
    for secret in [PASSWORD, *tokens]:
        assert secret not in log_text, log_text
    assert PASSWORD not in stdout
    assert f"***@{urlsplit(redis_url).hostname}" in stdout  # the masked URL is shown
