"""The overview's 5-second refresh in a real Chromium: it sends the ETag of the list it shows, gets 304
with no body while nothing changed (and keeps the page as it is), and the new list after a poll."""

from __future__ import annotations

from playwright.sync_api import expect

HERO_B = "li.run[data-run='sim:hero-b/hero-b']"


def is_refresh(response) -> bool:  # noqa: ANN001
    return "/fragments/overview" in response.url


def test_the_refresh_gets_304_until_a_poll_changes_the_list(live, page):
    live.tick(10 * 60)
    page.goto(live.url + "/")
    expect(page.locator("ol.runs > li.run")).to_have_count(3)
    expect(page.locator(f"{HERO_B} svg.spark path.band")).to_have_count(1)
    page.evaluate("document.getElementById('overview').dataset.kept = 'yes'")
    step = page.locator(f"{HERO_B} dd").first
    before = step.inner_text()

    with page.expect_response(is_refresh, timeout=15_000) as got:
        pass
    assert got.value.status == 304, "nothing changed: the refresh costs no body"
    expect(page.locator("#overview[data-kept=yes]")).to_have_count(1)  # and the page was left as it is
    expect(page.locator("ol.runs > li.run")).to_have_count(3)

    live.tick(5 * 60)  # five polls: hero-b made progress
    with page.expect_response(lambda r: is_refresh(r) and r.status == 200, timeout=15_000):
        pass
    expect(page.locator("#overview[data-kept=yes]")).to_have_count(0)
    expect(step).not_to_have_text(before)
    expect(page.locator(f"{HERO_B} svg.spark path.band")).to_have_count(1)  # drawn again after the swap
    assert page.errors == [] and page.dialogs == []
