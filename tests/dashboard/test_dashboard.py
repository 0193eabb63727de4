"""The on-call dashboard in a real Chromium: what on-call sees, live refresh, silencing, escaping, charts.

Screenshots land in test-artifacts/ (overview, run page, phone sizes) for a person to look at.
"""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.dashboard.support import XSS

BLUE_PIXELS = """(sel) => {
  const c = document.querySelector(sel);
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let n = 0;
  for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0 && d[i + 2] > d[i] + 40) n++;
  return n;
}"""


def log_in(page, live, name: str = "alice") -> None:  # noqa: ANN001
    page.locator("header .who a", has_text="Log in").click()
    page.fill("input[name=name]", name)
    page.fill("input[name=token]", live.token)
    page.locator("form.stack button[type=submit]").click()


def test_overview_shows_the_runs_and_a_new_stall_alert_without_a_reload(live, page, artifacts):
    live.tick(12 * 60)  # hero-a stopped stepping 1 minute ago: no alert yet
    page.goto(live.url + "/")
    expect(page.locator("ol.runs > li.run")).to_have_count(3)
    for name in ("hero-a", "hero-b", XSS):
        expect(page.locator(".run-name", has_text=name)).to_be_visible()
    expect(page.locator(".firing")).to_have_count(0)
    expect(page.locator("li.run[data-run='sim:hero-b/hero-b'] svg.spark path.band")).to_have_count(1)
    page.evaluate("window.__notReloaded = true")

    live.tick(18 * 60)  # 30 minutes in: the stall has lasted past the 15-minute limit
    alert = page.locator(".firing li.alert", has_text="progress_stalled")
    expect(alert).to_be_visible(timeout=20_000)  # htmx refreshes the list every 5 s
    expect(alert).to_contain_text("hero-a")
    assert page.evaluate("window.__notReloaded") is True, "the alert arrived without a page reload"
    first = page.locator("ol.runs > li.run").first
    expect(first).to_have_class(re.compile(r"\bhealth-critical\b"))
    expect(first.locator(".run-name")).to_have_text("hero-a")
    expect(first.locator(".problem")).to_contain_text("no new step for")
    expect(page.locator("li.run[data-run='sim:hero-b/hero-b'] .badge")).to_have_text("OK")
    expect(page.locator("li.run[data-run='sim:hero-b/hero-b'] dd").nth(3)).to_have_text(
        re.compile(r"^\d+\.\d%$")
    )
    page.screenshot(path=str(artifacts / "overview.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(artifacts / "overview-phone.png"), full_page=True)
    assert page.errors == [] and page.dialogs == []


def test_a_silence_made_in_the_ui_mutes_the_alert(live, page, artifacts):
    live.tick(30 * 60)
    page.goto(live.url + "/alerts")
    firing = page.locator("#group-firing li.alert", has_text="progress_stalled")
    expect(firing).to_be_visible()
    expect(firing.locator("a.silence-btn")).to_have_count(0)  # not logged in: no actions, a login link
    log_in(page, live)
    expect(page).to_have_url(live.url + "/alerts")
    expect(page.locator("header .who .name")).to_have_text("automation (alice)")
    firing.locator("a.silence-btn").click()
    expect(page.locator("textarea[name=matchers]")).to_have_value(
        'alertname="progress_stalled"\nrun="sim:hero-a/hero-a"'
    )
    page.fill("input[name=duration]", "2h")
    page.fill("input[name=comment]", "rank 17 hung; NCCL debug in progress")
    page.locator("button", has_text="Create silence").click()
    expect(page.locator(".ok-note")).to_contain_text("created")
    active = page.locator("li.silence.state-active")
    expect(active).to_contain_text('alertname="progress_stalled"')
    expect(active).to_contain_text("mutes 1 alert")
    expect(active).to_contain_text("by automation (alice)")

    page.goto(live.url + "/alerts")
    muted = page.locator("#group-silenced li.alert", has_text="progress_stalled")
    expect(muted.locator(".silenced")).to_contain_text("silenced")
    expect(page.locator("#group-firing li.alert")).to_have_count(0)
    (api_alert,) = live.api("/api/alerts", silenced="true")
    assert (
        api_alert["rule"] == "progress_stalled"
        and api_alert["run_title"] == "hero-a"
        and api_alert["silenced"]
    )
    page.goto(live.url + "/")
    expect(page.locator(".firing")).to_have_count(0)  # nothing loud left
    expect(page.locator("li.run[data-run='sim:hero-a/hero-a'] .problem")).to_contain_text("silenced")

    page.goto(live.url + "/alerts")
    page.locator("#group-silenced li.alert button.ack").click()
    expect(page.locator("#group-silenced li.alert .acked")).to_contain_text("acked by automation (alice)")
    assert live.api("/api/alerts", acknowledged="true")[0]["acked_by"] == "automation (alice)"
    page.screenshot(path=str(artifacts / "alerts.png"), full_page=True)

    page.goto(live.url + "/silences")
    page.locator("li.silence.state-active button.expire").click()
    expect(page.locator("li.silence.state-expired")).to_have_count(1)
    page.goto(live.url + "/alerts")
    expect(page.locator("#group-acknowledged li.alert", has_text="progress_stalled")).to_be_visible()
    assert live.api("/api/alerts", silenced="true") == []
    assert page.errors == [] and page.dialogs == []


def test_a_run_named_like_html_is_shown_as_text(live, page):
    live.tick(10 * 60)
    page.goto(live.url + "/")
    name = page.locator(".run-name", has_text=XSS)
    expect(name).to_have_text(XSS)
    assert page.locator("main img").count() == 0, "the name was not parsed as HTML"
    name.click()
    expect(page.locator("h1")).to_have_text(XSS)
    expect(page).to_have_title(f"{XSS} — herowatch")
    assert page.locator("main img").count() == 0
    live.http.post(
        live.url + "/api/silences",
        headers={"Authorization": f"Bearer {live.token}"},
        json={
            "matchers": [f'run="{XSS}"'],
            "duration": "1h",
            "created_by": XSS,
            "comment": "<script>alert(2)</script>",
        },
    ).raise_for_status()
    page.goto(live.url + "/silences")
    expect(page.locator("li.silence .comment")).to_have_text("<script>alert(2)</script>")
    # the display name, as typed, is stored as the run's id (what its alerts carry)
    expect(page.locator("li.silence code.matcher")).to_have_text(f'run="sim:odd-name/{XSS}"')
    assert page.dialogs == [], "no script ran"
    assert page.errors == []


def test_the_run_page_draws_charts_with_markers_goodput_and_timeline(live, page, artifacts):
    live.tick(37 * 60)  # hero-b: a loss spike 20 minutes in, a restart with rewind at 30; hero-a stalled
    page.goto(live.url + "/runs/hero-b")
    for chart in ("chart-loss", "chart-tps", "chart-mfu"):
        canvas = page.locator(f"#{chart} canvas")
        expect(canvas).to_have_count(1)
        assert page.evaluate(BLUE_PIXELS, f"#{chart} canvas") > 500, f"{chart}: the series is drawn"
    payload = page.evaluate("JSON.parse(document.getElementById('chart-data').textContent)")
    assert any(m["kind"] == "restart" for m in payload["markers"])
    (loss,) = next(c for c in payload["charts"] if c["id"] == "chart-loss")["series"]
    jumps = [
        hi / before for hi, before in zip(loss["max"][1:], loss["mean"][:-1], strict=True) if hi and before
    ]
    assert max(jumps) > 2.0, "the one-step spike (loss x2.5) is in the drawn band"
    expect(page.locator("dl.facts dt", has_text="Restarts").locator("xpath=..").locator("dd")).to_have_text(
        "1"
    )
    rows = page.locator("table.goodput-table tbody tr")
    expect(rows).to_have_count(11)  # productive and the ten kinds of badput
    expect(page.locator("table.goodput-table")).to_contain_text("Start-up and restore")
    expect(page.locator(".run-story")).to_contain_text("steps redone")
    expect(page.locator("ol.timeline li.ev-incident-restart")).to_have_count(1)
    page.screenshot(path=str(artifacts / "run-hero-b.png"), full_page=True)

    page.goto(live.url + "/runs/hero-a")  # stalled: the alert shows, with its marker on the charts
    expect(page.locator("#run-head .problem")).to_contain_text("no new step")
    expect(page.locator("#run-head li.alert", has_text="progress_stalled")).to_be_visible()
    expect(page.locator("ol.timeline li.ev-firing")).to_have_count(1)
    markers = page.evaluate("JSON.parse(document.getElementById('chart-data').textContent).markers")
    assert [m["label"] for m in markers if m["kind"] == "alert"] == ["progress_stalled"]
    assert page.evaluate(BLUE_PIXELS, "#chart-loss canvas") > 500
    page.screenshot(path=str(artifacts / "run-hero-a.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    expect(page.locator("#chart-loss canvas")).to_have_count(1)
    page.screenshot(path=str(artifacts / "run-hero-a-phone.png"), full_page=True)
    assert page.errors == [] and page.dialogs == []
    missing = page.goto(live.url + "/runs/no-such-run")
    assert missing.status == 404
    expect(page.locator("h1")).to_have_text("No such run")


def test_pages_are_complete_without_javascript(live, browser):
    live.tick(30 * 60)
    context = browser.new_context(java_script_enabled=False)
    try:
        p = context.new_page()
        p.goto(live.url + "/")
        expect(p.locator("ol.runs > li.run")).to_have_count(3)
        expect(p.locator(".firing li.alert", has_text="progress_stalled")).to_be_visible()
        p.goto(live.url + "/runs/hero-a")
        expect(p.locator("#run-head .problem")).to_contain_text("no new step")
        expect(p.locator("table.goodput-table")).to_be_visible()
        expect(p.locator("ol.timeline li").first).to_be_visible()
        p.goto(live.url + "/alerts")
        expect(p.locator("#group-firing li.alert")).to_have_count(1)
    finally:
        context.close()
