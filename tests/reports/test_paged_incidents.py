"""The report's Pages table folds the pages of one incident into one row (count, first, last, each page
behind a details/summary), and "likely noise" counts pages that resolved within 10 minutes without an
acknowledgement and pages people marked as noise (an ack or a silence comment). SQLite and PostgreSQL."""

from __future__ import annotations

import re

import pytest
from sqlalchemy.orm import Session

from monitor.delivery import oncall
from monitor.delivery.actor import Actor, Door, Role, Via
from monitor.reports import markdown
from monitor.reports.build import GpuSettings, build_report
from monitor.reports.make import render
from monitor.reports.period import week_of, zone
from monitor.storage.models import Alert
from tests import report_week as rw
from tests.conftest import built_once, own_copy

M, H = 60.0, 3600.0
AMY = Actor(name="amy", role=Role.responder, door=Door.dashboard, via=Via.oidc)


def _alert(s: Session, rule: str, fired: float, severity: str = "warning") -> Alert:
    a = Alert(
        fingerprint=f"x-{rule}-{fired}",
        rule=rule,
        kind="rule",
        run_id=rw.RUN,
        severity=severity,
        labels={"alertname": rule, "run": rw.RUN},
        annotations={},
        state="firing",
        active_at=fired - M,
        fired_at=fired,
        updated_at=fired,
    )
    s.add(a)
    s.flush()
    return a


def _resolve(a: Alert, at: float) -> None:
    a.state, a.resolved_at, a.updated_at = "resolved", at, at


def _build(s: Session) -> rw.Truth:
    """The simulated week, and the pages of this file's incidents."""
    truth = rw.build(s)
    hang = truth.hang_start
    # The hang pages again (a repeat of the stall rule and the telemetry view of it): one incident.
    _resolve(_alert(s, "progress_stalled", hang + 2 * H, "critical"), hang + 4.5 * H)
    _resolve(_alert(s, "telemetry_gone", hang + 5 * M), hang + 4.5 * H + 2 * M)
    # between OOM kills (an hour after one, half an hour long), so no goodput incident joins them
    calm = [o + H for o in truth.ooms if o > rw.WEEK0 + 4 * rw.DAY][:3]
    # Marked as noise by the acknowledgement's comment, though it lasted 2 h.
    probe = _alert(s, "nfs_probe", calm[0])
    oncall.ack_alert(s, probe.id, AMY, "noise: the NFS probe flaps when the filer rebalances", calm[0] + M)
    _resolve(probe, calm[0] + 30 * M)
    # Marked as noise by the silence that muted it.
    temp = _alert(s, "gpu_temp", calm[1])
    oncall.create_silence(
        s,
        ["alertname=gpu_temp"],
        actor=AMY,
        comment="false alarm: sensor recalibration",
        now=calm[1] + M,
        duration=4 * H,
    )
    _resolve(temp, calm[1] + 30 * M)
    # Acknowledged with a comment that is not a noise mark, and long: real.
    disk = _alert(s, "disk_full", calm[2])
    oncall.ack_alert(s, disk.id, AMY, "real: freed 2 TB, not noise", calm[2] + M)
    _resolve(disk, calm[2] + 30 * M)
    s.commit()
    return truth


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def built_week(request, tmp_path_factory, migrated_templates):
    """Built once per database kind; each test reads its own copy."""
    with built_once(migrated_templates, request.param, tmp_path_factory.mktemp("week"), _build) as built:
        yield built


@pytest.fixture
def week(built_week, tmp_path):
    url, truth = built_week
    with own_copy(url, tmp_path) as engine:
        yield engine, truth


def report(engine):
    with Session(engine) as s:
        p = week_of(rw.WEEK0 + 1, zone("UTC"))
        return build_report(s, p, now=rw.WEEK0 + 9 * rw.DAY, gpus=GpuSettings({"hero": rw.GPUS}, {}))


def test_the_pages_of_one_incident_are_one_row_with_count_first_and_last(week):
    engine, truth = week
    r = report(engine)
    (hang,) = [x for x in r.paged if "progress_stalled" in x.rules]
    assert hang.count == 3 and hang.rules == ["progress_stalled", "telemetry_gone"] and hang.kind == "stall"
    assert hang.start == pytest.approx(truth.hang_start, abs=1)
    assert hang.first_fired == pytest.approx(truth.hang_start + 5 * M, abs=1)
    assert hang.last_fired == pytest.approx(truth.hang_start + 2 * H, abs=1)
    assert hang.detect_seconds == pytest.approx(5 * M, abs=1) and hang.acked_by == "amy"
    # the hang's cost once, not once per page
    assert hang.badput_gpu_hours == pytest.approx(4.5 * rw.GPUS, abs=rw.GPUS / 60)
    assert len(r.paged) < len(r.pages)
    assert sum(x.count for x in r.paged) == len(r.pages), "every page is in exactly one row"
    assert sorted(i for x in r.paged for i in x.pages) == sorted(p.alert_id for p in r.pages)
    flaps = [x for x in r.paged if "loss_spike" in x.rules]
    assert len(flaps) == 6, "flaps 40 min apart that never overlapped are separate incidents"
    assert all(x.count == 1 for x in r.paged if x.rules in (["nfs_probe"], ["gpu_temp"], ["disk_full"]))


def test_likely_noise_is_quick_and_unacked_or_marked_by_a_person(week):
    engine, _ = week
    r = report(engine)
    q = {x.rule: x for x in r.quality}
    assert q["loss_spike"].noise_share == 1.0, "3 min, never acked"
    assert q["nfs_probe"].noise_share == 1.0, "acked with 'noise: ...', and 30 min long"
    assert q["gpu_temp"].noise_share == 1.0, "muted by a silence 'false alarm: ...'"
    assert q["disk_full"].noise == 0 and q["progress_stalled"].noise == 0 and q["oom_kills"].noise == 0
    marked = {p.rule for p in r.pages if p.marked_noise}
    assert marked == {"nfs_probe", "gpu_temp"}
    (probe,) = [x for x in r.paged if x.rules == ["nfs_probe"]]
    assert probe.noise
    md = markdown.render(r)
    assert "nfs_probe — likely noise" in md and "disk_full — likely noise" not in md
    assert "**Likely noise**: every page of it resolved within 10 minutes of firing" in md


def test_the_html_pages_table_has_a_row_per_incident_each_expandable(week):
    engine, _ = week
    r = report(engine)
    with Session(engine) as s:
        body = render(s, r, "html")
    table = body[body.index('<table class="paged">') :]
    assert table.count('<tbody class="incident">') == len(r.paged)
    assert table.count("<details>") == len(r.paged)
    assert re.search(r"<summary>3 pages: Tue 24 Nov 1\d:\d\d – Tue 24 Nov 1\d:\d\d</summary>", table)
    inner_rows = re.findall(r"<table class=\"inner\">.*?</table>", table, re.S)
    assert sum(t.count("<tr>") - 1 for t in inner_rows) == len(r.pages)
