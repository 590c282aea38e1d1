"""The dashboard in a real headless Chromium over a real Redis read model."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from dash_support import TOKENS

from dashboards.synthetic import seed, write_decisions, write_tick
from occupancy import redis_layout as rl
from readmodel.reader import day_of

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

CB_PALETTE = ["#313695", "#4575b4", "#74add1", "#abd9e9", "#e0f3f8", "#fee090", "#fdae61",
              "#f46d43", "#d73027", "#a50026"]
VIRIDIS = ["#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89", "#35b779", "#6ece58",
           "#b5de2b", "#fde725"]
REPO = Path(__file__).resolve().parents[2]


def _open(page: Any, url: str, token: str = TOKENS.admin) -> None:
    page.goto(f"{url}/#token={token}")
    page.wait_for_selector("body[data-ready='1']", timeout=15_000)
    page.evaluate("window.__marker = 'no-reload'")


def _classes(page: Any) -> dict[str, str]:
    return page.eval_on_selector_all(
        "#plan .loc", "els => Object.fromEntries(els.map(e => [e.dataset.location, "
        "e.dataset.class + '|' + e.getAttribute('fill')]))")


@pytest.fixture
def seeded(served: Any, redis_client: Any, campus: Any) -> dict[str, Any]:
    w = seed(redis_client, campus, days=3, last_day_ticks=24)
    return {"url": served.url, "written": w, "site": campus}


def test_heatmap_renders_every_location_of_each_floor(seeded: dict[str, Any], page: Any) -> None:
    site = seeded["site"]
    _open(page, seeded["url"])
    for b in site.buildings:
        if len(site.buildings) > 1:
            page.click(f".tile[data-building='{b.id}']")
        for f in b.floors:
            page.click(f"#floors button[data-floor='{f.id}']")
            want = {loc.id for loc in b.locations if loc.floor == f.id}
            got = _classes(page)
            assert set(got) == want
            for cls_fill in got.values():
                cls, fill = cls_fill.split("|")
                assert 1 <= int(cls) <= 10 and fill == CB_PALETTE[int(cls) - 1]
    assert page.inner_text("#legend").count("10") >= 1
    # the palette is switchable (viridis: another colour-blind-safe scale)
    page.select_option("#palette", "viridis")
    for cls_fill in _classes(page).values():
        cls, fill = cls_fill.split("|")
        assert fill == VIRIDIS[int(cls) - 1]
    assert page.js_errors == []


def test_new_tick_changes_colours_without_reload(seeded: dict[str, Any], page: Any,
                                                 redis_client: Any) -> None:
    site, ticks = seeded["site"], seeded["written"]["ticks"]
    _open(page, seeded["url"])
    before = _classes(page)
    floor = {loc.id for loc in site.locations if loc.building == "hall"}  # "All floors"
    new_tick = int(ticks[-1]) + 300
    slot = rl.slot_of(new_tick, 300)
    for mech_value in (+1, -1):  # far above, then far below every baseline
        values = {}
        for loc in site.location_ids:
            b = json.loads(redis_client.hget(rl.baseline("laplace"), rl.baseline_field(loc, slot)))
            values[loc] = b["mu"] + mech_value * (10 * b["sigma"] + 50)
        write_tick(redis_client, "laplace", new_tick, values)
        want = "10" if mech_value > 0 else "1"
        page.wait_for_function(
            "want => [...document.querySelectorAll('#plan .loc')]"
            ".every(e => e.dataset.class === want)", arg=want, timeout=10_000)
        new_tick += 300
    after = _classes(page)
    assert set(after) == floor and after != before
    assert all(v == f"1|{CB_PALETTE[0]}" for v in after.values())
    assert page.evaluate("window.__marker") == "no-reload"
    assert page.inner_text("#when").startswith(
        day_of(new_tick - 300))


def _decision(loc: str, capacity: int, window: str = "tick", **extra: Any) -> dict[str, Any]:
    return {"location": loc, "capacity": capacity, "algorithm": "DPPWLM", "beta": 0.01,
            "window": window, **extra}


def test_incident_opens_updates_is_acknowledged_once_and_resolves(
        seeded: dict[str, Any], page: Any, redis_client: Any) -> None:
    """One crowd in hall-110 → one incident in the list, live, through its lifecycle."""
    _open(page, seeded["url"])
    assert page.inner_text("#incident-count") == "0"
    tick = int(seeded["written"]["ticks"][-1]) + 300
    # a crowd: four positive tick decisions (one with an ex-post ε that must not show)
    # (decisions first: the pipeline's writer notifies the tick after writing both)
    for k, value in enumerate((160.0, 171.0, 168.0)):
        write_decisions(redis_client, tick + 300 * k,
                        [_decision("hall-110", 150, ex_post_epsilon=0.4242)],
                        {"hall-110": value}, quiet_s=900)
        write_tick(redis_client, "laplace", tick + 300 * k, {"hall-110": value})
    inc_id = redis_client.zrange(rl.INCIDENTS_ACTIVE, 0, -1)[0].decode()
    item = page.wait_for_selector(f"#incidents li[data-incident-id='{inc_id}']",
                                  timeout=10_000)
    page.wait_for_function(  # the update (a new peak) and the silent last decision
        "id => { const i = window.__occustream.incidents.find(i => i.id === id) || {};"
        " return i.peak === 171 && (i.decisions || {}).tick === 3; }",
        arg=inc_id, timeout=10_000)
    item = page.wait_for_selector(f"#incidents li[data-incident-id='{inc_id}']")
    text = item.inner_text()
    assert "Public 110" in text and "OPEN" in text and "β = 0.01 per decision" in text
    assert "peak ≈ 171" in text and "3 tick + 0 hour decisions" in text
    assert "0.4242" not in page.content()
    assert page.locator("#incidents li").count() == 1  # one crowd, one incident
    assert page.inner_text("#incident-count") == "1"
    # the clock shows the shown tick's weekday and time
    last = tick + 600
    day = ("Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed")[(last // 86400) % 7]
    page.wait_for_function("want => document.querySelector('#clock').textContent === want",
                           arg=f"{day} {time.strftime('%H:%M', time.gmtime(last))}",
                           timeout=10_000)
    page.wait_for_function(
        "() => document.querySelector(\"[data-location='hall-110']\").classList"
        ".contains('alerting')", timeout=10_000)
    assert page.evaluate("window.__marker") == "no-reload"
    # acknowledged once: the button is then disabled and the first acknowledgement stays
    page.click(f"#incidents li[data-incident-id='{inc_id}'] button")
    page.wait_for_selector(f"#incidents li.acked[data-incident-id='{inc_id}']", timeout=15_000)
    assert page.is_disabled(f"#incidents li[data-incident-id='{inc_id}'] button")
    first_ack = json.loads(redis_client.hget(rl.INCIDENTS_ACKS, inc_id))
    assert redis_client.hlen(rl.INCIDENTS_ACKS) == 1
    # the hour decision of the same crowd joins it; quiet ticks then resolve it
    for k in range(3, 7):
        t = tick + 300 * k
        write_decisions(redis_client, t, [_decision("hall-110", 150, "hour")] if k == 3 else [],
                        {"hall-110": 40.0}, quiet_s=900)
        write_tick(redis_client, "laplace", t, {"hall-110": 40.0})
    page.wait_for_selector(f"#incidents li.resolved[data-incident-id='{inc_id}']",
                           timeout=10_000)
    text = page.inner_text(f"#incidents li[data-incident-id='{inc_id}']")
    assert "resolved" in text and "3 tick + 1 hour decisions" in text
    assert page.locator("#incidents li").count() == 1
    assert page.inner_text("#incident-count") == "0"
    assert json.loads(redis_client.hget(rl.INCIDENTS_ACKS, inc_id)) == first_ack
    kinds = [json.loads(f[b"data"])["event"] for _, f in redis_client.xrange(rl.INCIDENTS_STREAM)]
    assert kinds == ["open", "update", "resolve"]
    assert page.js_errors == []


def test_scrubber_replays_the_day(seeded: dict[str, Any], page: Any) -> None:
    site, w = seeded["site"], seeded["written"]
    _open(page, seeded["url"])
    day_ticks = [int(t) for t in w["ticks"][-24:]]
    assert page.evaluate("window.__occustream.ticks") == day_ticks
    floor_locs = [loc.id for loc in site.locations if loc.floor == "hall-f1"]

    def shown() -> list[float]:
        vals = page.evaluate("window.__occustream.snapshot.values")
        return [vals[loc]["value"] for loc in floor_locs]

    page.focus("#scrub")
    page.keyboard.press("Home")  # first tick of the day
    page.wait_for_function(f"() => window.__occustream.snapshot.tick === {day_ticks[0]}")
    idx = [site.location_index[loc] for loc in floor_locs]
    assert shown() == pytest.approx(w["values"]["laplace"][-24][idx])
    assert page.get_attribute("#live", "aria-pressed") == "false"
    page.keyboard.press("ArrowRight")
    page.wait_for_function(f"() => window.__occustream.snapshot.tick === {day_ticks[1]}")
    assert shown() == pytest.approx(w["values"]["laplace"][-23][idx])
    # play: walks forward tick by tick and returns to live at the end
    page.click("#play")
    page.wait_for_function(f"() => window.__occustream.snapshot.tick === {day_ticks[5]}",
                           timeout=10_000)
    page.click("#play")  # pause
    page.click("#live")
    page.wait_for_function(f"() => window.__occustream.snapshot.tick === {day_ticks[-1]}")
    assert page.get_attribute("#live", "aria-pressed") == "true"


def test_keyboard_tooltip_roles_and_layouts(seeded: dict[str, Any], browser: Any,
                                            artifacts_dir: Path, redis_client: Any) -> None:
    tick = int(seeded["written"]["ticks"][-1])
    write_decisions(redis_client, tick, [{"location": "hall-101", "capacity": 80,
                                          "algorithm": "TSLM", "beta": 0.05}])
    for name, (w, h), token in (("laptop", (1366, 768), TOKENS.analyst),
                                ("large", (1920, 1080), TOKENS.admin)):
        ctx = browser.new_context(viewport={"width": w, "height": h})
        page = ctx.new_page()
        _open(page, seeded["url"], token)
        # no horizontal scrolling at either size
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        # keyboard: Tab reaches a room; focus shows the tooltip with value and interval
        first = page.locator("#plan .loc").first
        first.focus()
        tip = page.inner_text("#tooltip")
        assert "Released" in tip and "90 % interval" in tip
        assert page.evaluate("document.activeElement.dataset.location") is not None
        page.keyboard.press("Enter")
        page.wait_for_selector("#details dl")
        if token == TOKENS.analyst:
            assert page.is_hidden("#privacy")
            assert page.is_disabled("#incidents li button")
        else:
            page.wait_for_selector("#ledger table tr[data-mech='ttl']")
            assert "no formal guarantee" in page.inner_text("#ledger")
            # the per-device-day total across mechanisms, TTL excluded
            total = page.inner_text("#ledger table tr.total[data-mech='total']")
            assert total.startswith(page.inner_text("#ledger table tbody tr >> nth=0 >> td"))
            assert "Total" in total and "excl. ttl" in total
            # TTL: no interval, "no formal guarantee" in the tooltip
            page.select_option("#mech", "ttl")
            page.wait_for_function("() => window.__occustream.snapshot.mech === 'ttl'")
            page.locator("#plan .loc").nth(1).focus()
            assert "no formal guarantee" in page.inner_text("#tooltip")
            page.select_option("#mech", "laplace")
            page.wait_for_function("() => window.__occustream.snapshot.mech === 'laplace'")
            page.locator("#plan [data-location='hall-110']").hover()
        page.screenshot(path=str(artifacts_dir / f"dashboard-{name}.png"))
        ctx.close()
    assert (artifacts_dir / "dashboard-large.png").stat().st_size > 10_000


def test_empty_state_then_first_data(served: Any, page: Any, redis_client: Any,
                                     campus: Any) -> None:
    _open(page, served.url)
    assert page.is_visible("#empty")
    assert "is the worker running" in page.inner_text("#empty")
    seed(redis_client, campus, days=1, last_day_ticks=3, mechs=("laplace",))
    redis_client.publish(rl.UPDATES_CHANNEL, json.dumps({"mech": "laplace", "tick": 0}))
    page.wait_for_selector("#empty", state="hidden", timeout=10_000)
    assert page.evaluate("window.__marker") == "no-reload"
    # a first day has no baseline: "auto" colours by the share of capacity, and says so
    page.click("#live")
    page.wait_for_function(
        "() => window.__occustream.snapshot && window.__occustream.snapshot.tick")
    page.wait_for_function("() => document.querySelector('#plan .loc').dataset.class !== ''")
    assert "share of fire-code capacity" in page.inner_text("#legend")
    vals = page.evaluate("window.__occustream.snapshot.values")
    for cls_fill in [page.get_attribute(f"[data-location='{loc.id}']", "data-class")
                     for loc in campus.locations if loc.floor == "hall-f1"][:3]:
        assert 1 <= int(cls_fill) <= 10
    loc = campus.location_by_id["hall-101"]
    want = min(10, max(1, int(max(0.0, vals["hall-101"]["value"]) / loc.capacity * 10) + 1))
    assert page.get_attribute("[data-location='hall-101']", "data-class") == str(want)


def test_screenshot_of_a_real_building(browser: Any, redis_url: str, redis_client: Any,
                                       artifacts_dir: Path) -> None:
    """A synthetic picture: Donald Bren Hall mid-afternoon with two open incidents.

    Saved to artifacts; ``OCCUSTREAM_UPDATE_SCREENSHOT=1`` also writes docs/screenshot-synthetic.png
    (docs/screenshot.png is taken from the real demo, see README).
    """
    from dash_support import Served

    from occupancy.buildings import load_site

    try:
        site = load_site("dbh")
    except Exception:  # noqa: BLE001 - building file not generated yet
        pytest.skip("buildings/dbh.json missing")
    start = 1_790_000_000 - 1_790_000_000 % 86400
    w = seed(redis_client, site, days=4, last_day_ticks=14 * 12 + 5, mechs=("laplace", "ttl"),
             start=start)
    tick = int(w["ticks"][-1])
    served = Served(site, redis_url)
    try:
        # incidents where the (made-up) released value is closest to capacity
        ratio = w["values"]["laplace"][-1] / np.asarray(site.capacities, dtype=float)
        hot = [site.locations[int(j)] for j in np.argsort(ratio)[-2:]]
        write_decisions(redis_client, tick, [
            {"location": loc.id, "capacity": loc.capacity, "algorithm": "TSLM",
             "beta": 0.05} for loc in hot],
            {loc.id: float(w["values"]["laplace"][-1][site.location_index[loc.id]])
             for loc in hot})
        ctx = browser.new_context(viewport={"width": 1600, "height": 1000})
        page = ctx.new_page()
        _open(page, served.url, TOKENS.admin)
        assert page.locator("#plan .loc").count() == len(site.locations)  # all floors
        page.wait_for_selector("#incidents li", timeout=10_000)
        page.wait_for_selector("#ledger table", timeout=10_000)
        some = site.locations[min(10, len(site.locations) - 1)].id
        page.click(f"[data-location='{some}']")
        page.wait_for_selector("#spark polyline", timeout=10_000)
        hover = [loc for loc in site.locations if loc.floor.endswith("3")] or site.locations
        page.locator(f"[data-location='{hover[0].id}']").hover()
        page.screenshot(path=str(artifacts_dir / "dashboard-dbh.png"))
        if os.environ.get("OCCUSTREAM_UPDATE_SCREENSHOT"):
            page.screenshot(path=str(REPO / "docs" / "screenshot-synthetic.png"))
        assert page.js_errors == [] if hasattr(page, "js_errors") else True
        ctx.close()
    finally:
        served.close()


def test_header_and_budget_view_show_the_unit_eps_day_and_delta(
        seeded: dict[str, Any], page: Any, redis_client: Any) -> None:
    """The worker's privacy status (as the release stage publishes it) in the browser."""
    from mechanisms.registry import ReleaseParams
    from streams.pipeline.release import ReleaseConfig, Releaser

    site = seeded["site"]
    rel = Releaser(ReleaseConfig(secret=b"s" * 32, tick_s=300.0, mechanisms=(),
                                 budget_epsilon_tick=5.0, device_day=True), site)
    status = rel.privacy_status(20_000)
    redis_client.set(rl.PRIVACY_STATUS, json.dumps(status))
    _open(page, seeded["url"])
    page.wait_for_function(
        "() => document.getElementById('privacy-head').dataset.protected !== undefined")
    head = page.inner_text("#privacy-head")
    assert "privacy-protected" in head and "device-day" in head and "ε ≤ 4" in head
    page.wait_for_selector("#budget dl[data-unit='device-day']")
    assert page.inner_text("#eps-day") == "4.00"
    assert page.inner_text("#delta") == "1e-6"
    assert float(page.inner_text("#eps-proj")) == pytest.approx(
        status["epsilon_projected_day"], abs=1e-3)
    assert float(page.inner_text("#eps-proj")) <= 4.0
    # an event-level worker: the header says what the guarantee is, never "protected"
    ev = Releaser(ReleaseConfig(secret=b"s" * 32, tick_s=300.0,
                                mechanisms=(("laplace", ReleaseParams()),),
                                budget_epsilon_tick=5.0, mide=False), site)
    redis_client.set(rl.PRIVACY_STATUS, json.dumps(ev.privacy_status(20_000)))
    _open(page, seeded["url"])
    page.wait_for_function(
        "() => document.getElementById('privacy-head').dataset.protected === '0'")
    head = page.inner_text("#privacy-head")
    assert "privacy-protected" not in head and "event-level" in head and "288" in head
    assert page.js_errors == []
