"""The weekly report names the call a hang was stuck in: the simulated hero week (``report_week``)
whose 4.5 h hang paged ``progress_stalled``; its stacks were captured as the alert started (rank 417 on
node-17 in ``read_chunk``, every other rank in ``sync_global_devices``). Once the capture settles
(``monitor.delivery.stacks_settle``), the hang's incident row, its costliest card and picture and the
report's summary say "hung in read_chunk (tensorstore_io.py:120) on node-17 (rank 417)", in Markdown
and in HTML. A capture that names no odd rank leaves the report as it was."""

from __future__ import annotations

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from monitor.delivery.stacks_settle import settle
from monitor.reports import html, markdown
from monitor.reports.build import GpuSettings, build_report
from monitor.reports.period import week_of, zone
from monitor.reports.pictures import collect
from monitor.storage import stacks_repo
from monitor.storage.models import Alert
from tests import report_week as rw
from tests.conftest import built_once, own_copy

CALL = "hung in read_chunk (tensorstore_io.py:120) on node-17 (rank 417)"


def _rank(rank: int, frames: list[tuple[str, str, int]]) -> dict:
    return {
        "pid": 1000 + rank,
        "rank": rank,
        "role": "rank",
        "threads": [
            {"name": "MainThread", "frames": [{"name": n, "file": f, "line": ln} for n, f, ln in frames]}
        ],
    }


WAIT = [("sync_global_devices", "restore.py", 88), ("restore", "train.py", 40), ("<module>", "train.py", 9)]
READ = [("read_chunk", "tensorstore_io.py", 120), ("restore", "train.py", 41), ("<module>", "train.py", 9)]


def _capture(s: Session, at: float, odd: bool) -> None:
    """Three nodes' answers to one capture of the hero run, asked at ``at``."""
    nodes = {"node-16": range(408, 416), "node-17": range(416, 424), "node-18": range(424, 432)}
    stacks_repo.start(
        s,
        rw.RUN,
        f"c{int(at)}",
        reason="progress_stalled started",
        requested_by="herowatch",
        at=at,
        hold_until=at + 30,
        expected=nodes,
    )
    for node, ranks in nodes.items():
        procs = [_rank(r, READ if odd and r == 417 else WAIT) for r in ranks]
        body = {"run": "hero-1", "capture": f"c{int(at)}", "node": node, "t": at + 1, "processes": procs}
        stacks_repo.answer(s, rw.RUN, f"c{int(at)}", node, body, at + 2)


def _report(engine):
    with Session(engine) as s:
        r = build_report(
            s,
            week_of(rw.WEEK0 + 1, zone("UTC")),
            now=rw.WEEK0 + 9 * rw.DAY,
            gpus=GpuSettings({"hero": rw.GPUS}, {}),
        )
        return r, html.body(r, collect(s, r))


def _build(s: Session) -> tuple[rw.Truth, float]:
    """The simulated week; returns its truth and when the hang's page became active."""
    truth = rw.build(s)
    hang = s.scalar(select(Alert).where(Alert.rule == "progress_stalled"))
    hang.kind = "stall"  # as the stall rule writes it (the week's helper writes every alert as "rule")
    s.commit()
    return truth, hang.active_at


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def built_week(request, tmp_path_factory, migrated_templates):
    """Built once per database kind; each test changes its own copy."""
    with built_once(migrated_templates, request.param, tmp_path_factory.mktemp("week"), _build) as built:
        yield built


@pytest.fixture
def week(built_week, tmp_path):
    url, (truth, started) = built_week
    with own_copy(url, tmp_path) as engine:
        yield engine, truth, started


def test_a_hang_whose_stacks_were_captured_names_the_call_in_the_report(week):
    engine, truth, started = week
    with Session(engine) as s:
        _capture(s, started + 1, odd=True)
        s.commit()
        assert settle(s, started + 5) == []  # settled (all three nodes answered); no Slack click to answer
        s.commit()
    r, page = _report(engine)
    hang = r.costliest[0]
    assert hang.kind == "stall" and hang.culprit == CALL, hang
    [row] = [x for x in r.paged if "progress_stalled" in x.rules]
    assert row.culprit == CALL
    assert [p.culprit for p in r.pages if p.rule == "progress_stalled"] == [CALL]
    assert all(p.culprit is None for p in r.pages if p.rule != "progress_stalled")
    md = markdown.render(r)
    assert md.count(CALL) >= 3, md  # the summary's costliest, the costliest list, the incident's row
    assert f"pages: progress_stalled; {CALL}" in md, md
    assert CALL in markdown.summary_lines(r)[2], markdown.summary_lines(r)
    assert str(page).count(CALL) >= 3, "the costliest card, its picture and the incident row"
    assert f'<span class="culprit">{CALL}</span>' in str(page)


def test_stacks_that_name_no_odd_rank_leave_the_report_as_it_was(week):
    engine, _, started = week
    with Session(engine) as s:
        _capture(s, started + 1, odd=False)  # every rank in the same barrier: nothing to name
        s.commit()
        settle(s, started + 5)
        s.commit()
    r, page = _report(engine)
    assert r.costliest[0].culprit is None and "hung in" not in markdown.render(r)
    assert "hung in" not in str(page)


def test_the_first_culprit_found_stays_and_a_capture_still_awaited_settles_nothing(week):
    engine, _, started = week
    with Session(engine) as s:
        _capture(s, started + 1, odd=True)
        s.commit()
        settle(s, started + 5)
        s.commit()
        # a later capture during the same hang finds the ranks elsewhere: the first finding is kept
        stacks_repo.start(
            s,
            rw.RUN,
            "later",
            reason="asked by amy",
            requested_by="amy",
            at=started + 600,
            hold_until=started + 630,
            expected=["node-17", "node-99"],
        )
        s.commit()
        settle(s, started + 610)  # node-99 has not answered and the hold runs: not settled yet
        s.commit()
        assert stacks_repo.latest(s, [rw.RUN])[rw.RUN].capture.settled_at is None
    r, _ = _report(engine)
    assert r.costliest[0].culprit == CALL
