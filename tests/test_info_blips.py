"""An info blip (a one-step loss or grad-norm spike) keeps the text it fired with: it tells of one
moment, and re-rendering it would describe the next blip ("step 130 -> 137 -> 143 -> 156"); a stall's
text, a condition that goes on, is re-rendered and stays true."""

from __future__ import annotations

from tests.dashboard.support import DASHBOARD_CONFIG, build, client
from tests.helpers import tick


def test_a_blips_text_stays_while_a_stalls_text_keeps_up(db_url, clock):
    service = build(db_url, clock, DASHBOARD_CONFIG)
    api = client(service)
    tick(service, clock, 21 * 60, every=60)  # hero-b's loss spike at 20m: loss_jump fired
    texts: dict[str, list[str]] = {}
    for _ in range(4):
        for a in api.get("/api/alerts", params={"state": "firing"}).json():
            texts.setdefault(a["rule"], []).append(a["summary"])
        tick(service, clock, 60, every=15)
    assert len(set(texts["loss_jump"])) == 1, texts["loss_jump"]
    assert len(set(texts["grad_norm_spike"])) == 1, texts["grad_norm_spike"]
    tick(service, clock, 3 * 60, every=60)  # 28m: hero-a's stall has fired
    stall = []
    for _ in range(3):
        stall += [
            a["summary"]
            for a in api.get("/api/alerts", params={"state": "firing"}).json()
            if a["rule"] == "progress_stalled"
        ]
        tick(service, clock, 60, every=15)
    assert len(set(stall)) == len(stall), f"the stall's text says how long, now: {stall}"


def test_a_second_blip_while_the_first_is_kept_does_not_rewrite_its_text():
    """Straight through the evaluator: two one-step loss spikes a minute apart; what the refresh would
    re-render for the open loss_jump (``Evaluator.current``) is nothing: it keeps step 100's text."""
    from alerts.model import AlertState
    from monitor.engine.evaluator import Evaluator
    from monitor.rules.loader import load_pack
    from monitor.samples import Sample

    hero = load_pack("hero")
    ev = Evaluator(lambda run: hero)
    t0 = 1_780_000_000.0
    for i in range(200):
        loss = 3.0 - i * 1e-4 + (0.01 if i % 2 else -0.01)
        if i in (100, 106):
            loss = 6.0
        ev.observe(Sample(t0 + 10 * i, "r", i, {"train/loss": loss}, state="running"))
        ev.evaluate("r", t0 + 10 * i)
        if i == 100:
            assert any(k.rule.name == "loss_jump" and s.state == AlertState.FIRING for k, s in ev.alerts("r"))
        if 100 <= i <= 110:
            rendered = [
                text["summary"]
                for alert, _, text in ev.current("r", t0 + 10 * i)
                if "loss" in text["summary"]
            ]
            assert rendered == [], f"step {i}: {rendered}"
