"""Pages show the past as past (Chromium): a resolved alert says what is true now and what it fired with
as "was"; an info alert sits apart from "Firing now" and never counts among the firing; a run's card
leads with the worst alert nobody has yet, not an acknowledged one."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from monitor.storage.models import Run
from monitor.web import status
from monitor.web.schemas import AlertOut


def test_an_open_info_alert_is_not_in_firing_now_nor_counted_as_firing(live, page, artifacts):
    live.tick(37 * 60)  # hero-b restarted at 30m: run_restarted (info) fires; hero-a's stall is critical
    firing = live.api("/api/alerts", state="firing")
    assert {a["rule"]: a["severity"] for a in firing}["run_restarted"] == "info"
    page.goto(live.url + "/")
    box = page.locator("div.firing")
    expect(box.locator("h2.box-firing")).to_contain_text("Firing now")
    expect(box.locator("li", has_text="progress_stalled")).to_have_count(1)
    expect(box.locator("li", has_text="run_restarted")).to_have_count(0)
    info = page.locator("div.info-alerts")
    expect(info.locator("h2")).to_contain_text("Info, never paged")
    expect(info.locator("li", has_text="run_restarted")).to_have_count(1)
    loud = [a for a in firing if a["severity"] != "info"]
    expect(page.locator(".alert-counts .count-firing")).to_have_text(f"{len(loud)} firing")
    expect(page.locator(".alert-counts .count-info")).to_have_text("1 info")
    page.screenshot(path=str(artifacts / "overview-info-apart.png"), full_page=True)


def test_a_resolved_alert_says_now_and_was(live, page, artifacts):
    live.tick(60 * 60)  # the stall ended at 40m: progress_stalled resolved
    page.goto(live.url + "/alerts")
    row = page.locator("#group-resolved li", has_text="progress_stalled")
    expect(row.locator(".summary-text.now")).to_contain_text("now: last step")
    expect(row.locator(".summary-text.now")).to_contain_text("within the limit")
    expect(row.locator(".summary-was")).to_contain_text("was: hero-a: no new step for")
    assert "no new step" not in row.locator(".summary-text").inner_text()
    page.screenshot(path=str(artifacts / "alerts-resolved-now-was.png"), full_page=True)


def _alert(i: int, severity: str, summary: str, acked: str | None = None) -> AlertOut:
    return AlertOut(
        id=i,
        fingerprint=f"f{i}",
        rule=f"rule{i}",
        kind="threshold",
        run="r",
        metric=None,
        severity=severity,
        state="firing",
        labels={},
        summary=summary,
        description=None,
        runbook_url=None,
        value=None,
        threshold=None,
        step=None,
        active_at="2026-01-01T00:00:00Z",
        fired_at=f"2026-01-01T00:0{i}:00Z",
        resolved_at=None,
        silenced=False,
        silenced_by=None,
        acknowledged=acked is not None,
        acked_by=acked,
        acked_at="2026-01-01T00:09:00Z" if acked else None,
    )


def test_a_card_leads_with_the_worst_unacknowledged_alert():
    run = Run(id="r", state="running", last_step=10)
    acked_warning = _alert(1, "warning", "reward collapsed", acked="bob")
    critical = _alert(2, "critical", "loss is NaN")
    verdict = status.assess(run, [acked_warning, critical], None, 1_767_225_900.0, 60)
    assert verdict.health == "critical" and verdict.problem.startswith("loss is NaN")
    assert "(+1 more, 1 handled)" in verdict.problem
    only_acked = status.assess(run, [acked_warning], None, 1_767_225_900.0, 60)
    assert only_acked.problem.startswith("reward collapsed") and "acknowledged by bob" in only_acked.problem
    lower = _alert(3, "warning", "throughput down 8%")
    verdict = status.assess(
        run, [_alert(1, "critical", "stalled", acked="bob"), lower], None, 1_767_225_900.0, 60
    )
    assert verdict.problem.startswith("throughput down 8%"), "an acknowledged critical does not hide the rest"


def test_a_stalled_runs_header_marks_its_throughput_stale_with_its_age(live, page, artifacts):
    live.tick(37 * 60)  # hero-a stalled at 10m: its last tokens/s and MFU are 27 minutes old
    run = live.api("/api/runs/hero-a")
    assert run["stale"]["throughput/tokens_per_second"] > 25 * 60, run["stale"]
    page.goto(live.url + "/runs/hero-a")
    for cls in ("tokens", "mfu"):
        cell = page.locator(f"#run-head dd.{cls}")
        expect(cell).to_have_class(re.compile(r"\bstale\b"))
        expect(cell.locator(".stale-age")).to_have_text(re.compile(r"^2[67]m(\d+s)? old$"))
    page.screenshot(path=str(artifacts / "run-stalled-stale-values.png"), full_page=True)
    page.goto(live.url + "/runs/hero-b")  # running: its values are of now, unmarked
    expect(page.locator("#run-head dd.tokens")).not_to_have_class(re.compile(r"\bstale\b"))
    expect(page.locator("#run-head .stale-age")).to_have_count(0)


def test_the_coverage_table_gives_one_age_per_input(live, page):
    """A covered row said "Last value seen 32s ago" and "covered · last value 0s ago" (an age frozen at
    the last poll): the age is given once, as of now."""
    live.tick(12 * 60)
    page.goto(live.url + "/runs/hero-b")
    live.clock.advance(45)  # time passes between the last poll and reading the page
    page.reload()
    rows = page.locator("table.coverage-table tr.cov-covered")
    expect(rows.first).to_be_visible()
    for text in rows.all_inner_texts():
        assert "last value" not in text, text
    loss_row = page.locator("table.coverage-table tr", has_text="loss_spike")
    expect(loss_row.locator("td").nth(2)).to_have_text(re.compile(r"^(4[5-9]s|5\ds|1m) ago$"))


def test_a_run_logging_herowatchs_own_names_is_not_called_levanter(live, page):
    live.tick(5 * 60)
    page.goto(live.url + "/runs/hero-a")
    names = page.locator("#run-head dd.metrics-profile")
    expect(names).to_have_text("as logged (herowatch's own names: nothing renamed)")
    assert live.api("/api/runs/hero-a")["metrics_profile"]["renames"] is False


def test_a_stalled_runs_card_marks_its_headline_stale(live, page):
    live.tick(37 * 60)
    page.goto(live.url + "/")
    card = page.locator("li.run[data-run='sim:hero-a/hero-a'] dd.headline")
    expect(card).to_have_class(re.compile(r"\bstale\b"))
    expect(card.locator(".stale-age")).to_have_text(re.compile(r"^2[67]m(\d+s)? old$"))
    expect(page.locator("li.run[data-run='sim:hero-b/hero-b'] dd.headline .stale-age")).to_have_count(0)


def test_every_alert_in_firing_now_links_its_runbook(live, page):
    live.tick(37 * 60)  # hero-a's stall is critical and firing
    page.goto(live.url + "/")
    items = page.locator("div.firing li.alert")
    assert items.count() >= 1
    for i in range(items.count()):
        expect(items.nth(i).locator("a.runbook-link")).to_have_text("runbook")
    stall = page.locator("div.firing li", has_text="progress_stalled").locator("a.runbook-link")
    assert stall.get_attribute("href").startswith("/runbooks#"), stall.get_attribute("href")
    stall.click()
    expect(page.locator("article.runbooks")).to_be_visible()
