"""The fleet raster on the run page, in a real Chromium: 704 rows drawn, the odd row found by reading the
drawn pixels, its name under the pointer, legible in light and dark (screenshots in test-artifacts/)."""

from __future__ import annotations

import math
import re

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.slow  # a minute or more: handed to a worker early (tests/conftest.py)

# Per drawn row, the mean colour of the raster's right-most fifth (the end of the run); the row farthest
# from the median of its 16 neighbours is the odd one, its distance compared with the runner-up's (rank
# 0's GPU, a little lower all along, is the runner-up: visible too, as it should be).
ODD_ROW = """() => {
  const c = document.querySelector('#fleet canvas.fleet-raster');
  const dpr = c.width / parseFloat(c.style.width);
  const rows = +c.dataset.rows, rowPx = +c.dataset.rowPx, top = +c.dataset.top;
  const left = +c.dataset.left, w = +c.dataset.plotWidth;
  const x0 = Math.round((left + w * 0.8) * dpr), x1 = Math.round((left + w) * dpr) - 1;
  const ctx = c.getContext('2d');
  const means = [];
  for (let i = 0; i < rows; i++) {
    const y = Math.floor((top + (i + 0.5) * rowPx) * dpr);
    const d = ctx.getImageData(x0, y, x1 - x0, 1).data;
    const m = [0, 0, 0];
    for (let k = 0; k < d.length; k += 4) { m[0] += d[k]; m[1] += d[k + 1]; m[2] += d[k + 2]; }
    means.push(m.map(v => v / (d.length / 4)));
  }
  const med = a => a.slice().sort((p, q) => p - q)[a.length >> 1];
  const far = means.map((m, i) => {
    const nb = means.slice(Math.max(0, i - 8), i).concat(means.slice(i + 1, i + 9));
    return [0, 1, 2].reduce((s, ch) => s + Math.abs(m[ch] - med(nb.map(v => v[ch]))), 0);
  });
  const order = far.map((d, i) => [d, i]).sort((a, b) => b[0] - a[0]);
  return {row: order[0][1], far: order[0][0], next: order[1][0]};
}"""


def odd_row(page, world, run: str, metric: str) -> str:  # noqa: ANN001
    found = page.evaluate(ODD_ROW)
    members = world.api.get(f"/api/runs/{run}/fleet", params={"metric": metric}).json()["members"]
    assert found["far"] > 150 and found["far"] > 1.4 * found["next"], found  # RGB distance, of 765
    return members[found["row"]]["name"]


def hover_row(page, name: str, world, run: str, metric: str) -> None:  # noqa: ANN001
    """Point at the middle of ``name``'s row, near the end of the run."""
    members = world.api.get(f"/api/runs/{run}/fleet", params={"metric": metric}).json()["members"]
    row = next(i for i, m in enumerate(members) if m["name"] == name)
    canvas = page.locator("#fleet canvas.fleet-raster")
    d = {k: float(canvas.get_attribute(f"data-{k}")) for k in ("top", "left", "row-px", "plot-width")}
    # rows may be 1 px high and the canvas may sit at a fractional offset: aim at a whole pixel inside
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    start = box["y"] + d["top"] + row * d["row-px"]
    page.mouse.move(box["x"] + d["left"] + d["plot-width"] * 0.95, math.ceil(start + 0.01))


def test_the_raster_shows_every_gpu_and_the_throttled_one_stands_out(served, page, artifacts):
    page.goto(served.url + "/runs/run-b")
    canvas = page.locator("#fleet canvas.fleet-raster")
    expect(canvas).to_have_attribute("data-rows", "704")
    expect(page.locator("#fleet .fleet-status")).to_contain_text("704 GPUs on 88 hosts")
    expect(page.locator("#fleet .fleet-unit")).to_contain_text("SM active (0–1)")
    assert odd_row(page, served, "run-b", "sm_active") == "b-node-42 GPU 3"
    hover_row(page, "b-node-42 GPU 3", served, "run-b", "sm_active")
    tip = page.locator("#fleet .fleet-tip")
    expect(tip).to_be_visible()
    expect(tip).to_contain_text("b-node-42 GPU 3")
    expect(tip).to_contain_text("SM active 0.8")
    expect(page.locator("li.alert .hint").first).to_contain_text("b-node-42 GPU 3")
    canvas.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "fleet-raster-light.png"), full_page=True)

    page.emulate_media(color_scheme="dark")
    page.reload()
    expect(canvas).to_have_attribute("data-rows", "704")
    assert odd_row(page, served, "run-b", "sm_active") == "b-node-42 GPU 3"
    page.screenshot(path=str(artifacts / "fleet-raster-dark.png"), full_page=True)
    assert page.errors == [] and page.dialogs == []


def test_switching_to_a_host_metric_shows_the_host_still_reading(served, page, artifacts):
    page.goto(served.url + "/runs/run-a")
    canvas = page.locator("#fleet canvas.fleet-raster")
    expect(canvas).to_have_attribute("data-rows", "704")
    page.locator("#fleet button.fleet-metric", has_text="network rx").click()
    expect(canvas).to_have_attribute("data-metric", "net_rx")
    expect(canvas).to_have_attribute("data-rows", "88")
    expect(page.locator("#fleet button.fleet-metric", has_text="network rx")).to_have_attribute(
        "aria-pressed", "true"
    )
    assert odd_row(page, served, "run-a", "net_rx") == "a-node-17"
    hover_row(page, "a-node-17", served, "run-a", "net_rx")
    expect(page.locator("#fleet .fleet-tip")).to_contain_text("a-node-17")
    expect(page.locator("#fleet .fleet-tip")).to_contain_text("GB/s")
    page.screenshot(path=str(artifacts / "fleet-raster-network.png"), full_page=True)
    assert page.errors == [] and page.dialogs == []


def test_the_alerts_page_says_who_stands_out_or_that_nobody_does(served, page, artifacts):
    page.goto(served.url + "/alerts")
    stalled = page.locator("#group-firing li.alert", has_text="progress_stalled")
    a = stalled.filter(has=page.locator("a.run-link", has_text="run-a"))  # (a): the host still reading
    expect(a.locator(".hints-title")).to_contain_text("Stands out from the fleet")
    rx = re.compile(r"^a-node-17: network rx 1\.\d+ GB/s, fleet median")
    expect(a.locator("li.hint")).to_have_text([rx])
    c = stalled.filter(has=page.locator("a.run-link", has_text="run-c"))
    expect(c.locator(".hint-none")).to_contain_text("Nothing stands out: 704 GPUs on 88 hosts")
    b = page.locator("#group-firing li.alert", has_text="gpu_straggler")
    expect(b.locator("li.hint").first).to_contain_text("b-node-42 GPU 3")
    page.screenshot(path=str(artifacts / "fleet-alerts.png"), full_page=True)
    assert page.errors == [] and page.dialogs == []
