"""Run pages that fit the run, in a real Chromium: an RL run logged by TRL's GRPOTrainer, an SFT run logged by
TRL's SFTTrainer and a Levanter pretraining run, read from the W&B stand-in by the real wandb client. Each
page draws the panels its kind's pack declares (units, the response-length cap, the KL budget, the
reward's own baseline), a pack written here adds a panel to every page with no other change, the overview
filters by kind, and the SFT and pretraining runs, both named qwen-7b-v3, are two rows and two pages.

Screenshots: test-artifacts/kinds-*.png.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from playwright.sync_api import expect

from alerts.clock import ManualClock
from tests.dashboard.conftest import Live, serving
from tests.dashboard.support import build
from tests.dashboard.test_dashboard import BLUE_PIXELS
from tests.kinds_support import CAP, STEP_SECONDS, grpo, levanter, log_steps, sft
from tests.standins.wandb_server import WandbStandin
from tests.wandb_support import ENTITY, KEY

STEPS = 240  # two hours of history at 30 s a step
RL, SFT, PRE = (f"wandb:{ENTITY}/rl/grpo1", f"wandb:{ENTITY}/sft/v3", f"wandb:{ENTITY}/pretrain/v3")

# A pack of the test's own: one panel for every kind (it declares no run_kind), nothing else.
LR_PACK = """
rules: []
panels:
  - id: lr
    title: Learning rate
    series: [{metric: optim/learning_rate, label: learning rate}]
"""


def config(url: str, pack: Path) -> str:
    wandb = f"entity: {ENTITY}, base_url: '{url}', timeout: 5s, retries: 0"
    return f"""
watch:
  - name: rl
    poll_interval: 60s
    references: {{kl_budget: 0.05}}
    wandb: {{{wandb}, project: rl}}
  - name: sft
    poll_interval: 60s
    wandb: {{{wandb}, project: sft}}
  - name: pretrain
    poll_interval: 60s
    wandb: {{{wandb}, project: pretrain}}
rules:
  packs: [hero, rl, sft]
  files: ['{pack}']
  files_outside: true  # the pack is in the test's own folder, not beside a config file
"""


@pytest.fixture(scope="module")
def kinds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """One server for the module: the tests only read (the overview test lets one more minute pass)."""
    tmp_path = tmp_path_factory.mktemp("kinds")
    with WandbStandin(KEY, entity=ENTITY) as server:
        t0 = server.clock
        server.add_run("rl", "grpo1", display_name="qwen-7b-grpo")
        server.add_run("sft", "v3", display_name="qwen-7b-v3")
        server.add_run("pretrain", "v3", display_name="qwen-7b-v3")  # same name, same W&B id: another run
        for project, run, rows in (("rl", "grpo1", grpo), ("sft", "v3", sft), ("pretrain", "v3", levanter)):
            log_steps(server, project, run, rows, 1, STEPS + 1, t0)
        clock = ManualClock(t0 + STEPS * STEP_SECONDS)
        server.clock = clock.time()
        pack = tmp_path / "lr_panel.yaml"
        pack.write_text(LR_PACK)
        db = f"sqlite:///{tmp_path / 'hw.db'}"
        service = build(db, clock, config(server.url, pack), WANDB_API_KEY=KEY)
        with serving(service, clock) as live:
            live.tick(120)
            yield live


def panels(page) -> list[str]:  # noqa: ANN001
    return page.locator("figure.chart").evaluate_all("els => els.map(e => e.dataset.panel)")


def chart(page, panel: str) -> dict:  # noqa: ANN001
    payload = page.evaluate("JSON.parse(document.getElementById('chart-data').textContent)")
    return next(c for c in payload["charts"] if c["panel"] == panel)


def drawn(page, panel: str) -> None:  # noqa: ANN001
    expect(page.locator(f"#chart-{panel} canvas")).to_have_count(1)
    assert page.evaluate(BLUE_PIXELS, f"#chart-{panel} canvas") > 300, f"{panel}: the series is drawn"


def test_an_rl_run_page_draws_the_rl_panels_with_units_and_the_cap(kinds, page, artifacts):
    page.goto(kinds.url + "/runs/" + quote(RL, safe=""))
    expect(page.locator("#run-head .kind")).to_have_text("RL")
    expect(page.locator("#run-head dt", has_text="Reward")).to_have_count(1)  # its headline, not a loss
    assert panels(page) == ["reward", "kl", "entropy", "length", "throughput", "lr"], (
        "the rl pack's panels in its order (TRL logs no step times or policy lag), then the test's pack"
    )
    for panel in panels(page):
        drawn(page, panel)
    captions = page.locator("figure.chart figcaption")
    expect(captions.nth(2)).to_contain_text("Policy entropy (nats/token)")
    expect(captions.nth(3)).to_contain_text("Response length (tokens)")
    expect(captions.nth(0)).to_contain_text("band: ± one standard deviation")

    length = chart(page, "length")
    assert {s["metric"] for s in length["series"]} == {
        "rl/response_length/mean",
        "rl/response_length/clip_ratio",
    }
    truncated = next(s for s in length["series"] if s["axis"] == "right")
    assert 0 < max(v for v in truncated["mean"] if v is not None) < 100, "the share truncated, in percent"
    assert [(ln["label"], ln["value"]) for ln in length["lines"]] == [("length cap", CAP)], (
        "the cap, from the longest response of batches that had cut ones"
    )
    axes = "id => document.getElementById(id).uplot.axes.map(a => a.label)"
    assert page.evaluate(axes, "chart-length")[1:] == ["Response length (tokens)", "% truncated"]
    top = page.evaluate("id => document.getElementById(id).uplot.scales.y.max", "chart-length")
    assert top >= CAP, "the y axis reaches the cap line"
    kl = chart(page, "kl")
    assert ("KL budget", 0.05) in [(ln["label"], ln["value"]) for ln in kl["lines"]], "watch references"
    reward = chart(page, "reward")
    baseline = next(ln["value"] for ln in reward["lines"] if ln["label"] == "baseline")
    latest = next(v for v in reversed(reward["series"][0]["mean"]) if v is not None)
    assert 0.3 < baseline < latest, "the reward's own (trailing) baseline, as rl_reward_collapse judges it"
    assert page.errors == []
    page.screenshot(path=str(artifacts / "kinds-rl-run.png"), full_page=True)


def test_an_sft_page_its_panels_and_the_pretraining_page_unchanged(kinds, page, artifacts):
    page.goto(kinds.url + "/runs/" + quote(SFT, safe=""))
    expect(page.locator("#run-head .kind")).to_have_text("SFT")
    expect(page.locator("#run-head .project")).to_have_text(f"{ENTITY}/sft")  # the name is shared
    assert panels(page) == ["loss", "grad-norm", "tps", "lr"]
    for panel in panels(page):
        drawn(page, panel)
    assert [s["label"] for s in chart(page, "loss")["series"]] == ["train", "eval"]
    tps = chart(page, "tps")["series"]
    assert [s["metric"] for s in tps] == ["tokens_seen"], "tokens/s from TRL's running token count"
    assert 2.0e3 < max(v for v in tps[0]["mean"] if v is not None) < 2.3e3, "65,536 tokens every 30 s"
    page.screenshot(path=str(artifacts / "kinds-sft-run.png"), full_page=True)

    page.goto(kinds.url + "/runs/" + quote(PRE, safe=""))
    expect(page.locator("#run-head .kind")).to_have_text("Pretraining")
    assert panels(page) == ["loss", "tps", "mfu", "lr"], "the hero page's charts, and the test pack's"
    for panel in ("loss", "tps", "mfu"):
        drawn(page, panel)
    assert page.evaluate("id => document.getElementById(id).uplot.axes[1].label", "chart-mfu") == "MFU (%)"
    assert page.errors == []


def test_the_overview_filters_by_kind_and_keeps_same_named_runs_apart(kinds, page, artifacts):
    page.goto(kinds.url + "/")
    rows = page.locator("li.run")
    expect(rows).to_have_count(3)
    twins = page.locator("li.run", has=page.locator(".run-name", has_text="qwen-7b-v3"))
    expect(twins).to_have_count(2)
    assert sorted(twins.locator(".project").all_inner_texts()) == [f"{ENTITY}/pretrain", f"{ENTITY}/sft"]
    expect(page.locator("li.run .badge")).to_have_text(["OK", "OK", "OK"])  # healthy runs page nobody
    expect(page.locator("nav.kinds a")).to_have_text(["All 3", "Pretraining 1", "RL 1", "SFT 1"])
    page.screenshot(path=str(artifacts / "kinds-overview.png"), full_page=True)

    page.locator("nav.kinds a", has_text="RL").click()
    expect(page).to_have_url(kinds.url + "/?kind=rl")
    expect(rows).to_have_count(1)
    rl = rows.first
    expect(rl).to_have_attribute("data-run", RL)
    expect(rl.locator("dt", has_text="Reward")).to_have_count(1)
    expect(rl.locator("svg.spark")).to_have_attribute("aria-label", "reward sparkline")
    expect(page.locator("nav.kinds a[aria-current=page]")).to_have_text("RL 1")
    page.screenshot(path=str(artifacts / "kinds-overview-rl.png"), full_page=True)
    kinds.tick(60)  # the live refresh keeps the filter
    expect(rows).to_have_count(1)

    assert [r["id"] for r in kinds.api("/api/runs", kind="rl")] == [RL]
    assert [r["id"] for r in kinds.api("/api/runs", kind="sft")] == [SFT]
    shared = page.goto(kinds.url + "/runs/qwen-7b-v3")  # the display name alone: a choice of two
    assert shared.status == 300
    expect(page.locator("ul.runs-named li")).to_have_count(2)
    page.locator("ul.runs-named a").nth(1).click()
    expect(page.locator("#run-head .project")).to_have_text(f"{ENTITY}/sft")
    assert page.errors == []
