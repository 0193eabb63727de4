"""The run charts in Chromium: labels never print over each other (markers too close for their own label
share one with a count: "loss_jump +1"; a reference line declared twice is labelled once), an axis never
reads "0.00k", and the time-range picker narrows every chart to the last hour, day, ... up to now."""

from __future__ import annotations

from playwright.sync_api import expect

OVERLAPS = """host => {
  const b = host.uplot.labelBoxes;
  const out = [];
  for (let i = 0; i < b.length; i++) for (let j = i + 1; j < b.length; j++)
    if (b[i][0] < b[j][2] && b[j][0] < b[i][2] && b[i][1] < b[j][3] && b[j][1] < b[i][3]) out.push([i, j]);
  return out;
}"""


def test_close_markers_share_one_label_and_no_label_overlaps(live, page, artifacts):
    live.tick(60 * 60)  # hero-b: loss_jump and grad_norm_spike fired together; a restart and its alert
    for width in (1400, 800):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(live.url + "/runs/hero-b")
        plots = page.locator(".plot")
        expect(plots.first.locator("canvas")).to_have_count(1)
        total = 0
        for i in range(plots.count()):
            host = plots.nth(i)
            assert host.evaluate(OVERLAPS) == [], f"labels overlap at {width}px in {host.get_attribute('id')}"
            groups = host.evaluate("h => h.uplot.markerGroups")
            total = max(total, sum(g["count"] for g in groups))
            shared = [g for g in groups if g["count"] > 1]
            assert all(g["text"].endswith(f" +{g['count'] - 1}") for g in shared), groups
            ticks = host.evaluate("h => [...h.querySelectorAll('.u-axis')].map(a => a.textContent).join(' ')")
            assert "0.00k" not in ticks and "0.0k" not in ticks, ticks
        assert total >= 4, "every marker is drawn and counted"
        assert any(
            g["count"] > 1
            for i in range(plots.count())
            for g in plots.nth(i).evaluate("h => h.uplot.markerGroups")
        ), "the two alerts that fired together share one label"
        page.screenshot(path=str(artifacts / f"run-hero-b-labels-{width}.png"), full_page=True)


def test_the_range_picker_narrows_the_charts_to_the_last_hour(live, page, artifacts):
    live.tick(3 * 60 * 60)
    now = live.clock.time()
    page.goto(live.url + "/runs/hero-b")
    first = page.locator(".plot").first
    expect(first.locator("canvas")).to_have_count(1)
    whole = first.evaluate("h => [h.uplot.scales.x.min, h.uplot.scales.x.max]")
    assert whole[0] < now - 2.5 * 3600
    page.locator(".range-picker a[data-range='1h']").click()
    expect(page.locator(".range-picker a[aria-current]")).to_have_text("1h")
    first = page.locator(".plot").first
    expect(first.locator("canvas")).to_have_count(1)
    lo, hi = first.evaluate("h => [h.uplot.scales.x.min, h.uplot.scales.x.max]")
    assert abs(hi - now) < 120 and abs((hi - lo) - 3600) < 120, (lo, hi, now)
    page.screenshot(path=str(artifacts / "run-hero-b-last-hour.png"), full_page=True)


TIME_TICKS = """host => {
  const u = host.uplot, ax = u.axes[0], ctx = u.ctx;
  ctx.save(); ctx.font = ax.font[0]; const boxes = [];
  (ax._splits || []).forEach((v, i) => {
    const text = String((ax._values || [])[i] ?? ""), w = ctx.measureText(text).width;
    const x = u.valToPos(v, "x", true) / devicePixelRatio;
    if (text) boxes.push([x - w / 2, x + w / 2, text]);
  });
  ctx.restore();
  return boxes;
}"""


def test_time_ticks_over_days_never_print_over_each_other(live, page, artifacts):
    live.tick(2.5 * 24 * 3600, every=3600.0)  # two and a half days: the labels carry the date
    for width in (1400, 800):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(live.url + "/runs/hero-b")
        plots = page.locator(".plot")
        expect(plots.first.locator("canvas")).to_have_count(1)
        for i in range(plots.count()):
            boxes = plots.nth(i).evaluate(TIME_TICKS)
            assert len(boxes) >= 2 and any("-" in b[2] for b in boxes), boxes  # dates on the axis
            gaps = [b[0] - a[1] for a, b in zip(boxes, boxes[1:], strict=False)]
            assert min(gaps) > 4, f"time ticks overlap at {width}px: {boxes}"
        page.screenshot(path=str(artifacts / f"run-hero-b-days-{width}.png"), full_page=True)
