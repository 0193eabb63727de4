"""The coverage panel and the overview's mark in real Chromium: a run whose loss comes under an unknown
name reads "Watching blind" with the rules, inputs and fix; screenshots in test-artifacts/screens."""

from __future__ import annotations

from tests.test_coverage_engine import Trainers


def test_a_blind_run_is_marked_and_its_coverage_panel_says_why(live, page, artifacts):
    live.service.engine.sources["sim"] = Trainers(
        {"hero-7b": ("objective", "gnorm"), "hero-ok": ("train/loss", "grad/norm/total")}, watch="hero-a"
    )
    live.tick(8 * 60)
    page.goto(live.url + "/")
    mark = page.locator('[data-run="hero-7b"] .blind-mark')
    from monitor.rules.loader import load_pack

    on_loss = [r for r in load_pack("hero") if r.metric == "train/loss"]
    assert mark.inner_text().startswith(f"watching blind: {len(on_loss)} rules"), "every rule on the loss"
    # the grad norm is optional: not logged under a known name is shown quietly, not as blindness
    quiet = page.locator('[data-run="hero-7b"] .unlogged-mark')
    assert quiet.inner_text().startswith("not logged: ") and "grad/norm/total" in quiet.get_attribute("title")
    assert page.locator('[data-run="hero-ok"] .blind-mark').count() == 0
    page.screenshot(path=str(artifacts / "screens" / "coverage-overview.png"), full_page=True)
    mark.click()
    panel = page.locator("#run-story")
    panel.locator("#coverage").scroll_into_view_if_needed()
    text = panel.inner_text()
    assert "Watching blind." in text and "no value of train/loss" in text
    row = panel.locator("table.coverage-table tr.cov-blind", has_text="loss_spike")
    assert "train/loss" in row.inner_text() and "never" in row.inner_text()
    assert "The run logs: gnorm, objective, tps." in text
    panel.screenshot(path=str(artifacts / "screens" / "coverage-run-page.png"))
    assert page.errors == []
