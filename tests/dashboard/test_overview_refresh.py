"""The overview's 5-second refresh in a real Chromium: it asks what changed since the version of the list
it shows, gets 304 with no body while nothing changed (and keeps the page as it is), and after one
run's state changed replaces that run's row in place: the other rows are the same elements as before,
the page was not reloaded, and what it shows is what a full reload shows."""

from __future__ import annotations

from playwright.sync_api import expect

from monitor.storage.models import Run

HERO_A = "li.run[data-run='sim:hero-a/hero-a']"
HERO_B = "li.run[data-run='sim:hero-b/hero-b']"

MARK = """() => {
  window.__notReloaded = true;
  document.getElementById('overview').__kept = true;
  document.querySelectorAll('ol.runs > li.run').forEach(li => { li.__kept = true; });
}"""
KEPT = """() => Object.fromEntries([...document.querySelectorAll('ol.runs > li.run')]
  .map(li => [li.dataset.run, li.__kept === true]))"""
SHOWN = """() => ({
  version: document.getElementById('overview').dataset.version,
  head: document.querySelector('#overview .overview-head').outerHTML,
  rows: [...document.querySelectorAll('ol.runs > li.run')].map(li => li.outerHTML),
})"""


def is_refresh(response) -> bool:  # noqa: ANN001
    return "/fragments/overview" in response.url


def test_the_refresh_gets_304_until_a_poll_changes_the_list(live, page):
    live.tick(10 * 60)
    page.goto(live.url + "/")
    expect(page.locator("ol.runs > li.run")).to_have_count(3)
    expect(page.locator(f"{HERO_B} svg.spark path.band")).to_have_count(1)
    page.evaluate(MARK)
    step = page.locator(f"{HERO_B} dd").first
    before = step.inner_text()

    with page.expect_response(is_refresh, timeout=15_000) as got:
        pass
    assert got.value.status == 304, "nothing changed: the refresh costs no body"
    assert "since=" in got.value.url
    assert page.evaluate("document.getElementById('overview').__kept") is True  # the page as it was
    expect(page.locator("ol.runs > li.run")).to_have_count(3)

    live.tick(5 * 60)  # five polls: every run made progress
    with page.expect_response(lambda r: is_refresh(r) and r.status == 200, timeout=15_000):
        pass
    expect(step).not_to_have_text(before)
    expect(page.locator(f"{HERO_B} svg.spark path.band")).to_have_count(1)  # drawn again after the swap
    assert page.evaluate("window.__notReloaded") is True
    assert page.errors == [] and page.dialogs == []


def test_one_run_changed_its_row_is_replaced_in_place_and_the_rest_stays(live, page, browser, artifacts):
    live.tick(30 * 60)  # hero-a's stall alert fires
    page.goto(live.url + "/")
    expect(page.locator("ol.runs > li.run")).to_have_count(3)
    expect(page.locator(HERO_A)).to_have_class("run health-critical")
    expect(page.locator(".firing li.alert", has_text="progress_stalled")).to_be_visible()
    expect(page.locator("svg.spark path.band")).to_have_count(3)
    page.evaluate(MARK)
    version = page.evaluate("document.getElementById('overview').dataset.version")

    made = live.http.post(  # on-call silences hero-a's alert elsewhere (the CLI, Slack, another tab)
        live.url + "/api/silences",
        json={
            "matchers": ["run=sim:hero-a/hero-a"],
            "duration": "2h",
            "created_by": "bob",
            "comment": "known",
        },
        headers={"Authorization": f"Bearer {live.token}"},
    )
    assert made.status_code == 201, made.text
    with page.expect_response(lambda r: is_refresh(r) and r.status == 200, timeout=15_000) as got:
        pass
    assert f"since={version}" in got.value.url
    assert got.value.headers["content-type"] == "application/json"
    delta = got.value.json()
    assert [r["id"] for r in delta["rows"]] == ["sim:hero-a/hero-a"], "only the run that changed"

    expect(page.locator(f"{HERO_A} .problem")).to_contain_text("silenced")
    expect(page.locator(".firing li.alert", has_text="progress_stalled")).to_have_count(0)  # the head too
    assert page.evaluate(KEPT) == {
        "sim:hero-a/hero-a": False,  # replaced
        "sim:hero-b/hero-b": True,  # the same elements as before the refresh
        "sim:odd-name/<img src=x onerror=alert(1)>": True,
    }
    assert page.evaluate("window.__notReloaded && document.getElementById('overview').__kept") is True
    expect(page.locator(f"{HERO_A} svg.spark path.band")).to_have_count(1)  # its sparkline drawn again
    page.screenshot(path=str(artifacts / "overview-one-row-changed.png"), full_page=True)

    assert page.evaluate(SHOWN) == full_reload(browser, live.url), "the same as a full reload"

    page.evaluate(MARK)  # hero-b crashes: critical and not silenced, its row moves to the top
    with live.service.sessions.begin() as s:
        s.get(Run, "sim:hero-b/hero-b").state = "crashed"
    expect(page.locator("ol.runs > li.run").first).to_have_attribute("data-run", "sim:hero-b/hero-b")
    assert page.evaluate(KEPT) == {
        "sim:hero-b/hero-b": False,
        "sim:hero-a/hero-a": True,  # moved down a place, the same element
        "sim:odd-name/<img src=x onerror=alert(1)>": True,
    }
    assert page.evaluate(SHOWN) == full_reload(browser, live.url)
    assert page.evaluate("window.__notReloaded") is True
    assert page.errors == [] and page.dialogs == []


def full_reload(browser, url: str) -> dict:  # noqa: ANN001
    """What the overview shows when loaded afresh, in another tab."""
    fresh = browser.new_context(viewport={"width": 1360, "height": 900}).new_page()
    try:
        fresh.goto(url + "/")
        expect(fresh.locator("svg.spark path.band")).to_have_count(3)
        return fresh.evaluate(SHOWN)
    finally:
        fresh.context.close()
