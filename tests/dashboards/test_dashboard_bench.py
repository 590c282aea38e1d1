"""The dashboard benchmark runs against the dashboard as the CLI starts it (``make bench``).

The SSE cap (``hardening.MAX_SSE_CLIENTS``) once made the fan-out benchmark wait 60 s for
subscribers the server had refused with 503, and ``make bench`` failed with an empty
``TimeoutError``; this runs the benchmark's quick mode end to end (real Redis, the
dashboard in its own process, 100 SSE subscribers).
"""

from __future__ import annotations

import pytest

from bench import bench_dashboard

pytestmark = pytest.mark.e2e


def test_the_dashboard_benchmark_runs_and_every_subscriber_gets_every_tick() -> None:
    out = bench_dashboard.run(quick=True)
    assert out["sse_client_cap"] > out["sse_subscribers"]
    # a latency per subscriber per repeat: nobody was refused or missed a tick
    assert out["sse_latency_p50_ms"] > 0 and out["sse_latency_max_ms"] >= out["sse_latency_p95_ms"]
    assert out["api_history_points"] == 30 * 288


def test_the_benchmark_says_when_the_server_refuses_subscribers(monkeypatch) -> None:
    """Past the cap the benchmark names the 503, not a bare timeout (the dashboard started
    with a cap of 50 against the quick run's 100 subscribers)."""
    real = bench_dashboard._start_dashboard
    monkeypatch.setattr(bench_dashboard, "_start_dashboard",
                        lambda url, port, cap: real(url, port, 50))
    with pytest.raises(RuntimeError, match=r"subscribers refused: 503 .*too many live-update"):
        bench_dashboard.run(quick=True)
