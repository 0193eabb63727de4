"""The pages say what is true, at 1400 and 800 px, logged in and out (Chromium): each wording, count and
layout defect found by trying herowatch as a new user and as on-call is asserted gone, and every page is
screenshotted into test-artifacts/screens/ for a person to look at."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.dashboard.test_dashboard import log_in

pytestmark = pytest.mark.slow  # a minute or more: handed to a worker early (tests/conftest.py)

PAGES = {"home": "/", "run": "/runs/hero-a", "alerts": "/alerts", "silences": "/silences"}
WIDTHS = (1400, 800)
NO_OVERFLOW = """() => [...document.querySelectorAll('dl.facts dd, .title-row, .alert-counts, footer')]
  .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent.trim())"""
PAGE_WIDTH = "() => document.scrollingElement.scrollWidth"


def fact(page, scope: str, name: str):  # noqa: ANN001, ANN201
    return page.locator(f"{scope} dl.facts dt", has_text=re.compile(f"^{name}$")).locator("xpath=../dd")


def scene(live) -> None:  # noqa: ANN001
    """37 minutes in: hero-a stalled 27 minutes ago and its alert is acknowledged by bob; hero-b restarted
    and is silenced."""
    live.tick(37 * 60)
    auth = {"Authorization": f"Bearer {live.token}"}
    (stall,) = [a for a in live.api("/api/alerts", state="firing") if a["rule"] == "progress_stalled"]
    live.http.post(
        f"{live.url}/api/alerts/{stall['id']}/ack", headers=auth, json={"by": "bob"}
    ).raise_for_status()
    live.http.post(
        f"{live.url}/api/silences",
        headers=auth,
        json={"matchers": ['run="hero-b"'], "duration": "2h", "created_by": "carol", "comment": "restarting"},
    ).raise_for_status()


def test_every_page_at_both_widths_logged_in_and_out_has_none_of_the_defects(live, page, artifacts):
    scene(live)
    shots = artifacts / "screens"
    shots.mkdir(exist_ok=True)
    for state in ("out", "in"):
        if state == "in":
            page.goto(live.url + "/alerts")
            log_in(page, live, "alice")
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 900})
            for name, path in PAGES.items():
                page.goto(live.url + path)
                if name == "run":
                    expect(page.locator("#chart-loss canvas")).to_have_count(1)
                assert page.evaluate(NO_OVERFLOW) == [], f"{name} at {width}px: text cut off"
                assert page.evaluate(PAGE_WIDTH) <= width, f"{name} at {width}px scrolls sideways"
                page.screenshot(path=str(shots / f"{name}-{width}-logged-{state}.png"), full_page=True)
    assert page.errors == [] and page.dialogs == []


def test_counts_agree_between_the_overview_and_the_alerts_page_after_an_ack(live, page):
    scene(live)
    page.goto(live.url + "/")
    counts = page.locator(".summary .alert-counts")
    expect(counts).to_contain_text("0 firing, 1 acknowledged, 0 pending, 0 info, 1 silenced")
    expect(page.locator(".firing h2")).to_have_text(["Acknowledged 1"])  # not "Firing now"
    expect(page.locator(".firing li.alert")).to_contain_text("acked by automation (bob)")
    page.goto(live.url + "/alerts")
    for key, n in (("firing", 0), ("acknowledged", 1), ("pending", 0), ("info", 0), ("silenced", 1)):
        expect(page.locator(f"#group-{key} h2 .n")).to_have_text(str(n))
        expect(page.locator(f"#group-{key} li.alert")).to_have_count(n)


def test_layout_defects_are_gone(live, page):
    scene(live)
    page.set_viewport_size({"width": 800, "height": 900})
    page.goto(live.url + "/")
    # was "29 / 250,..." cut by an ellipsis
    expect(fact(page, "li.run[data-run='sim:hero-a/hero-a']", "Step")).to_have_text("54 / 250k")
    page.goto(live.url + "/silences")  # logged out: the login note is one sentence, beside the title
    note = page.locator(".title-row .act-note")
    expect(note).to_have_text("Log in to create or expire silences")
    assert page.locator(".title-row > *").count() == 2
    box = note.bounding_box()
    assert box and box["x"] + box["width"] > 700, "the note sits at the right, not floating mid-page"
    page.goto(live.url + "/runs/hero-a")
    expect(fact(page, "#run-head", "Watch")).to_have_text("hero-a (sim)")
    log_in(page, live)
    page.goto(live.url + "/alerts")
    ack_button = page.locator("#group-silenced li.alert button.ack")
    silence_button = page.locator("#group-acknowledged li.alert a.silence-btn")
    expect(silence_button).to_have_text("Silence…")
    border = "e => getComputedStyle(e).borderLeftWidth"
    assert silence_button.evaluate(border) == ack_button.evaluate(border) == "1px", (
        "no bar on one button only"
    )


def test_timeline_and_goodput_words_match_the_run(live, page):
    scene(live)
    page.goto(live.url + "/runs/hero-a")
    ack = page.locator("ol.timeline li.ev-ack")
    expect(ack).to_contain_text("acknowledged by automation (bob)")
    expect(ack).not_to_contain_text("firing → firing")
    expect(fact(page, "#run-head", "Restarts")).to_have_text("0")
    table = page.locator("table.goodput-table")
    expect(table).not_to_contain_text("Restarting and restoring")
    expect(table).to_contain_text("Start-up and restore (process start to first step)")
    page.goto(live.url + "/runs/hero-b")
    expect(page.locator("#run-head .problem")).to_contain_text("1 restart in the last 1h")


def test_charts_run_against_time_with_the_stall_as_a_band_axis_titles_and_even_ticks(live, page):
    scene(live)
    page.goto(live.url + "/runs/hero-a")
    expect(page.locator(".axis-toggle a[aria-current]")).to_have_text("time")
    expect(page.locator("#chart-loss canvas")).to_have_count(1)
    titles = "id => document.getElementById(id).uplot.axes.map(a => [a.label, a.labelSize])"
    assert page.evaluate(titles, "chart-loss") == [["time (UTC)", 18], ["Loss", 18]]
    assert page.evaluate(titles, "chart-mfu")[1] == ["MFU (%)", 18], "the y axis title carries the unit"
    ticks = page.evaluate("id => document.getElementById(id).uplot.axes[1]._values", "chart-loss")
    decimals = {len(t.split(".")[1]) if "." in t else 0 for t in ticks if t}
    assert len(decimals) == 1, f"every y tick has the same decimals: {ticks}"
    times = page.evaluate("id => document.getElementById(id).uplot.axes[0]._values", "chart-loss")
    assert all(re.fullmatch(r"\d\d:\d\d", t) for t in times if t), times
    scale = page.evaluate(
        "id => {const s = document.getElementById(id).uplot.scales.x; return [s.min, s.max]}", "chart-loss"
    )
    payload = page.evaluate("JSON.parse(document.getElementById('chart-data').textContent)")
    (stall,) = [b for b in payload["bands"] if b["kind"] == "stall"]
    assert scale[1] >= payload["now"] - 1 and stall["to"] is None, (
        "the axis runs to now: the ongoing stall shows"
    )
    red = page.evaluate(REDDISH, "#chart-loss canvas")
    assert red > 2000, "the stall is a shaded band"
    legend = page.locator("#chart-loss .u-legend")
    expect(legend).to_contain_text("(latest)")
    assert "—" not in legend.inner_text(), "idle, the legend shows the newest values"
    note = page.locator(".legend-note")
    expect(note).to_contain_text("stalled")
    expect(note).not_to_contain_text("restart")  # hero-a never restarted
    page.goto(live.url + "/runs/hero-b")
    expect(page.locator(".legend-note")).to_contain_text("restart")
    page.goto(live.url + "/runs/hero-a?axis=step")
    expect(page.locator(".axis-toggle a[aria-current]")).to_have_text("step")
    expect(page.locator("#chart-loss canvas")).to_have_count(1)
    assert page.evaluate(titles, "chart-loss")[0] == ["step", 18]
    assert page.errors == []


REDDISH = """(sel) => {
  const c = document.querySelector(sel);
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let n = 0;
  for (let i = 0; i < d.length; i += 4)
    if (d[i + 3] > 15 && d[i + 3] < 60 && d[i] > 180 && d[i + 1] < 90) n++;  // translucent red
  return n;
}"""
LIGHT_BLUE = """(sel) => {
  const c = document.querySelector(sel);
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let n = 0;
  for (let i = 0; i < d.length; i += 4)
    if (d[i + 3] > 50 && d[i + 3] < 110 && d[i + 2] > 200 && d[i] < 90) n++;  // translucent blue
  return n;
}"""


def test_the_min_max_band_shows_once_buckets_hold_several_steps(live, page, artifacts):
    live.tick(3 * 3600, every=300)  # hero-b: ~900 steps, more than the 512 buckets: each holds 2 steps
    page.goto(live.url + "/runs/hero-b")
    caption = page.locator("figure.chart figcaption").first
    expect(caption).to_contain_text("band: min–max of the bucket's steps")
    expect(page.locator("#chart-loss canvas")).to_have_count(1)
    assert page.evaluate(LIGHT_BLUE, "#chart-tps canvas") > 2000, "the band is drawn, and visible"
    page.locator("#chart-tps").screenshot(path=str(artifacts / "screens" / "band-tps.png"))


def test_the_demo_clock_is_named_in_the_footer_and_the_silence_form(live, page):
    live.tick(60)
    live.clock.speed = 30.0  # as the demo's ScaledClock says of itself
    page.goto(live.url + "/")
    expect(page.locator("footer .sim-clock")).to_have_text(
        "(simulated time: the demo's clock runs 30x real time)"
    )
    page.goto(live.url + "/silences/new")
    expect(page.locator("form.stack label", has_text="For")).to_contain_text("simulated time")
    expect(page.locator("form.stack label", has_text="For")).to_contain_text("so 2h lasts 4m of real time")


def test_api_docs_and_runbooks_work_with_no_internet(live, page):
    live.tick(30 * 60)
    outside: list[str] = []

    def only_local(route) -> None:  # noqa: ANN001
        if route.request.url.startswith(live.url):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page.route("**/*", only_local)
    page.goto(live.url + "/docs")
    expect(page.locator(".swagger-ui .opblock-summary-path", has_text="/api/silences").first).to_be_visible()
    page.goto(live.url + "/redoc")
    expect(page.get_by_role("heading", name="Create a silence")).to_be_visible()
    page.goto(live.url + "/alerts")
    page.locator("#group-firing li.alert a", has_text="runbook").click()
    expect(page).to_have_url(live.url + "/runbooks#progress-stalled")
    expect(page.locator("h2#progress-stalled")).to_be_in_viewport()
    assert outside == [], f"nothing is fetched from outside: {outside}"
