"""The parts below the composition root work with fakes of their ports, no ``Service`` built: the web
app over an ``ApiContext`` filled in by hand, ``/herowatch`` over ``CommandPorts``, Socket Mode over
``SlackPorts``, the report schedule over a ``ReportJob``-shaped job (issue #41)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import pytest
from apscheduler.events import EVENT_JOB_EXECUTED
from apscheduler.schedulers.background import BackgroundScheduler
from fastapi.testclient import TestClient
from slack_sdk.socket_mode.request import SocketModeRequest
from sqlalchemy.orm import Session, sessionmaker

from alerts.clock import ManualClock
from alerts.notifiers.slack.interactions import parse_command
from monitor.config.loader import parse_config
from monitor.delivery.send_stats import SendLatency
from monitor.reports import schedule
from monitor.settings import Settings
from monitor.storage import migrate
from monitor.storage.db import make_engine, make_sessionmaker
from monitor.web.app import create_app
from monitor.web.context import ApiContext
from monitor.web.slack import commands
from monitor.web.slack.commands import CommandPorts
from monitor.web.slack.replies import Reply
from monitor.web.slack.socket_mode import SlackPorts, SocketMode
from monitor.web.snapshot import Snapshot
from tests.test_api_health import samples

NOW = 1_780_000_000.0
CONFIG = "watch:\n  - {name: hero-a, sim: {seed: 1}}\n"


@pytest.fixture
def sessions(tmp_path: Path) -> sessionmaker[Session]:
    url = f"sqlite:///{tmp_path / 'hw.db'}"
    migrate.upgrade(url)
    return make_sessionmaker(make_engine(url))


class FakeScheduler:
    """The job scheduler the root starts (APScheduler's ``add_listener``), its job events played by hand."""

    def __init__(self) -> None:
        self.listeners: list = []

    def add_listener(self, callback, mask) -> None:  # noqa: ANN001
        self.listeners.append(callback)

    def ran(self, job: str) -> None:
        when = datetime.fromtimestamp(NOW, UTC)
        event = SimpleNamespace(code=EVENT_JOB_EXECUTED, job_id=job, scheduled_run_time=when, retval=None)
        for callback in self.listeners:
            callback(event)


def test_the_web_app_serves_what_its_port_holds_and_counts_the_polls_of_a_scheduler_started_later(sessions):
    latency = SendLatency({"oncall": "slack"})
    latency.observe("oncall", 0.2, "sent")
    started: dict[str, FakeScheduler] = {}
    ctx = ApiContext(
        sessions=sessions,
        clock=ManualClock(NOW),
        settings=Settings(database_url="sqlite://"),
        config=parse_config(CONFIG, "test.yaml"),
        send_latency=latency,
        gc_policy=SimpleNamespace(seconds=[0.5, 0.25, 3.0], pauses=[40, 4, 2]),
        scheduler=lambda: started.get("jobs"),  # made by on_start, after the app (as Service.start does)
    )
    app = create_app(ctx, on_start=lambda: started.update(jobs=FakeScheduler()))
    with TestClient(app, base_url="http://localhost") as api:
        assert len(started["jobs"].listeners) == 1, "the app listens to the scheduler once it is started"
        started["jobs"].ran("poll:hero-a")
        m = samples(api.get("/metrics").text)
        assert (
            m[("herowatch_poll_cycles_total", frozenset({"watch": "hero-a", "outcome": "ran"}.items()))] == 1
        )
        assert m[("herowatch_gc_pause_seconds_total", frozenset({"generation": "2"}.items()))] == 3.0
        sent = {"receiver": "oncall", "kind": "slack", "outcome": "sent"}
        assert m[("herowatch_notification_send_duration_seconds_count", frozenset(sent.items()))] == 1
        # the config the port holds names the watches a report may be asked for
        assert api.get("/api/report", params={"watch": "hero-b"}).status_code == 404
        assert api.get("/api/report", params={"watch": "hero-a"}).status_code == 200


def empty_snapshot(s: Session) -> Snapshot:
    return Snapshot(version=0, now=NOW, built_mono=0.0, runs=[], alerts=[], api_titles={})


def command(text: str, team: str = "T1", trigger: str = "tr-1") -> dict[str, str]:
    return {"command": "/herowatch", "text": text, "user_id": "U1", "team_id": team, "trigger_id": trigger}


def test_slash_commands_answer_through_their_ports_in_the_callers_transaction(sessions):
    seen: list[Session] = []

    def week(s: Session) -> Reply:
        seen.append(s)
        return Reply("the week in brief")

    ports = CommandPorts(empty_snapshot, week, "https://hw.example/")
    with sessions.begin() as s:
        assert commands.answer(ports, s, parse_command(command("report")), NOW).text == "the week in brief"
        assert seen == [s], "the report is read in the command's own transaction"
        status = commands.answer(ports, s, parse_command(command("status")), NOW)
    assert status.text.startswith("herowatch: no run is watched yet")
    assert "https://hw.example/" in str(status.blocks[-1]), "the dashboard link is the port's"


def test_socket_mode_acts_once_per_action_and_only_for_its_workspace_through_its_ports(sessions):
    asked: list[str] = []

    def week(s: Session) -> Reply:
        asked.append("report")
        return Reply("the week in brief")

    clock = ManualClock(NOW)
    ports = SlackPorts(sessions, clock.time, "T1", CommandPorts(empty_snapshot, week, None))
    door = SocketMode(app_token="xapp-test", api_url="http://127.0.0.1:9/api/", ports=ports, worker="t:1")
    first = door.handle(SocketModeRequest("slash_commands", "env-1", command("report")))
    assert (first.reply.text, first.duplicate) == ("the week in brief", False)
    # the same action delivered again (another envelope, another replica's connection): not acted on
    again = door.handle(SocketModeRequest("slash_commands", "env-2", command("report")))
    assert (again.reply.text, again.duplicate) == ("the week in brief", True)
    assert asked == ["report"]
    other = door.handle(SocketModeRequest("slash_commands", "env-3", command("report", "T2", "tr-2")))
    assert "not the one herowatch serves" in other.reply.text
    assert asked == ["report"], "another workspace's command is refused, not acted on"


@pytest.mark.parametrize(("speed", "every"), [(1.0, schedule.CHECK_EVERY), (30.0, schedule.CHECK_EVERY / 30)])
def test_the_report_schedule_checks_its_job_on_the_services_clock(speed, every):
    runs: list[int] = []
    job = SimpleNamespace(cfg=SimpleNamespace(reports=["weekly"]), run_once=lambda: runs.append(1) or 1)
    jobs = BackgroundScheduler()
    schedule.install(jobs, job, speed)
    [installed] = jobs.get_jobs()
    assert installed.id == "reports" and installed.trigger.interval.total_seconds() == every
    installed.func()
    assert runs == [1]
    idle = BackgroundScheduler()
    schedule.install(idle, SimpleNamespace(cfg=SimpleNamespace(reports=[]), run_once=lambda: 0), speed)
    assert idle.get_jobs() == [], "no schedules: no job"
