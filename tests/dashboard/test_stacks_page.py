"""The run page's stacks in a real Chromium: a responder captures a run's stacks from the page (its CSRF
token, audited), the page waits for the wrappers' answers, then shows every group with its count,
ranks and nodes, the odd one first-named and open, every group's frames behind a details toggle, the
capture's age, and the node that never answered. The wrappers here speak the real door
(``/api/ingest/stacks/poll`` and ``/api/ingest/stacks`` with the watch's ingest token); real
``herowatch emit run`` wrappers with py-spy are tests/live/test_stacks_live.py's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import expect

from alerts.clock import ManualClock
from monitor.sources.push_spool import SpoolWriter, line
from tests.dashboard.conftest import Live, serving
from tests.dashboard.support import build
from tests.dashboard.test_dashboard import log_in

INGEST = "i" * 40
CONFIG = "watch:\n  - name: w\n    poll_interval: 60s\n    push: {token_env: HERO_INGEST_TOKEN}\n"
RUN = "push:w/job"
BARRIER = [
    {"name": "barrier", "file": "train/dist.py", "line": 40},
    {"name": "step", "file": "train/loop.py", "line": 88},
]
READ = [
    {"name": "read_chunk", "file": "train/io.py", "line": 20},
    {"name": "restore", "file": "train/ckpt.py", "line": 61},
]


@pytest.fixture
def live(tmp_path: Path, monkeypatch) -> Iterator[Live]:  # noqa: ANN001
    monkeypatch.setenv("HERO_INGEST_TOKEN", INGEST)
    clock = ManualClock(1_780_000_000.0)
    service = build(f"sqlite:///{tmp_path / 'hw.db'}", clock, CONFIG, ingest_dir=str(tmp_path / "spool"))
    spool = SpoolWriter(tmp_path / "spool")
    for step in range(1, 7):  # the job logs a few steps: herowatch knows the run
        spool.append("w", "job", [line(clock.time() + step, "job", step, {"train/loss": 3.0}, None)])
    with serving(service, clock) as live:
        live.tick(60)
        yield live


def audit_of(live: Live) -> list[dict]:
    r = live.http.get(
        live.url + "/api/audit",
        params={"action": "stacks_capture"},
        headers={"Authorization": f"Bearer {live.token}"},
    )
    r.raise_for_status()
    return r.json()


def poll(live: Live, node: str) -> str | None:
    """One wrapper's poll, not held open: the capture it is asked for, if any."""
    r = live.http.post(
        live.url + "/api/ingest/stacks/poll",
        json={"run": "job", "node": node, "wait": 0},
        headers={"Authorization": f"Bearer {INGEST}"},
    )
    assert r.status_code in (200, 204), r.text
    return r.json()["capture"] if r.status_code == 200 else None


def answer(live: Live, node: str, capture: str, ranks: dict[int, list]) -> None:
    body = {
        "run": "job",
        "capture": capture,
        "node": node,
        "t": live.clock.time(),
        "processes": [
            {"pid": 100 + r, "rank": r, "role": "rank", "threads": [{"name": "MainThread", "frames": f}]}
            for r, f in ranks.items()
        ],
    }
    r = httpx.post(live.url + "/api/ingest/stacks", json=body, headers={"Authorization": f"Bearer {INGEST}"})
    assert r.status_code == 202, r.text


def test_a_responder_captures_stacks_from_the_run_page_and_sees_every_group(live, page, artifacts):
    nodes = ["node-0", "node-1", "node-2"]
    for n in nodes:
        assert poll(live, n) is None  # connected, nothing asked yet
    page.goto(live.url + "/runs/" + RUN)
    section = page.locator("section#stacks")
    expect(section).to_contain_text("3 wrappers connected")
    expect(section).to_contain_text("No capture yet")
    expect(section.locator("button.capture-stacks")).to_have_count(0)  # not logged in: a login link
    expect(section.locator(".act-note a", has_text="Log in")).to_be_visible()

    log_in(page, live, "alice")
    page.goto(live.url + "/runs/" + RUN)
    section.locator("button.capture-stacks").click()
    expect(section.locator(".stacks-waiting")).to_contain_text("node-0, node-1, node-2")

    capture = poll(live, "node-0")
    assert capture is not None and poll(live, "node-1") == capture  # node-2's wrapper never polls again
    answer(live, "node-0", capture, {0: BARRIER, 1: BARRIER, 2: BARRIER, 3: BARRIER})
    answer(live, "node-1", capture, {4: BARRIER, 5: READ, 6: BARRIER, 7: BARRIER})
    live.clock.advance(12)
    page.reload()
    expect(section.locator(".stacks-waiting")).to_contain_text("node-2")  # still within the hold

    live.clock.advance(20)  # past the 30 s hold: the page says what it has, and who did not answer
    page.reload()
    expect(section.locator(".stacks-summary")).to_contain_text("7 of 8 ranks wait in `barrier`")
    expect(section.locator(".stacks-summary")).to_contain_text("rank 5 on node-1 is in `read_chunk`")
    expect(section.locator(".stacks-summary")).to_contain_text(
        "stacks not available: node-2: no answer within 32s"
    )
    expect(section.locator(".stacks-meta")).to_contain_text("captured 32s ago")
    expect(section.locator(".stacks-meta")).to_contain_text(
        "asked by automation (alice) · 2 of 3 nodes answered"
    )
    groups = section.locator("li.stack-group")
    expect(groups).to_have_count(2)
    expect(groups.nth(0)).to_contain_text("7 ranks")
    expect(groups.nth(0)).to_contain_text("ranks 0-4, 6-7 on node-0, node-1")
    odd = section.locator("li.stack-group.odd")
    expect(odd).to_contain_text("1 rank")
    expect(odd).to_contain_text("rank 5 on node-1")
    expect(odd.locator("code.stack-where")).to_have_text("read_chunk (train/io.py:20)")
    expect(odd.locator(".stack-frames li").nth(1)).to_be_visible()  # the odd group is open
    majority_frames = groups.nth(0).locator(".stack-frames li")
    expect(majority_frames.nth(0)).to_be_hidden()  # the majority's frames behind a toggle
    groups.nth(0).locator("summary").click()
    expect(majority_frames.nth(0)).to_have_text("barrier (train/dist.py:40)")
    page.screenshot(path=str(artifacts / "run-stacks.png"), full_page=True)

    audit = audit_of(live)
    assert [(a["actor"], a["door"], a["run"]) for a in audit] == [("automation (alice)", "dashboard", RUN)], (
        audit
    )
    assert page.errors == [] and page.dialogs == []


def test_a_capture_without_a_wrapper_is_refused_on_the_page_and_audited(live, page):
    assert poll(live, "node-0") is None
    page.goto(live.url + "/runs/" + RUN)
    log_in(page, live, "bob")
    page.goto(live.url + "/runs/" + RUN)
    page.locator("button.capture-stacks").wait_for()
    live.clock.advance(120)  # the wrapper stopped polling: it is no longer connected
    page.locator("button.capture-stacks").click()
    expect(page.locator("main")).to_contain_text("no `herowatch emit run` wrapper of push:w/job is connected")
    audit = audit_of(live)
    assert [(a["actor"], a["outcome"]) for a in audit] == [("automation (bob)", "refused")], audit


def test_the_capture_form_needs_the_session_csrf_token(live, page):
    assert poll(live, "node-0") is None
    page.goto(live.url + "/runs/" + RUN)
    log_in(page, live, "carol")
    page.goto(live.url + "/runs/" + RUN)
    page.locator("section#stacks input[name=csrf]").evaluate("e => e.value = 'forged'")
    page.locator("button.capture-stacks").click()
    expect(page.locator("main")).to_contain_text("This form is out of date")
    assert audit_of(live) == []
