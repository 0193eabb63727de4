"""A "Capture stacks" click, from either Slack door (``monitor.web.slack.clicks``), on the database: it
asks through the ``/herowatch stacks`` path for the group's run and marks the capture to be answered in
that message's thread; once the nodes answered, the settle pass owes exactly one thread reply, with
the groups, and never owes it twice. A group that is not one run's, and a run no wrapper polls, are
told why there is no capture. On SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine
from sqlalchemy.orm import Session, sessionmaker

from alerts.notifiers.slack.interactions import STACKS, parse_block_actions
from monitor.delivery.oncall import ActionError
from monitor.delivery.stacks_settle import settle
from monitor.storage import stacks_repo
from monitor.storage.models import AlertGroup, Run
from monitor.web.slack.clicks import act
from monitor.web.slack.commands import CommandPorts
from monitor.web.slack.replies import Refused
from tests.test_slack_interactions import click

NOW = 1_780_000_000.0
ROOT = "C0ALERTS:1780000000.000100"  # where click() is


def _ports(nodes: list[str] | None) -> CommandPorts:
    def capture(s: Session, run_id: str, actor) -> tuple[str, list[str]]:  # noqa: ANN001
        if nodes is None:
            raise ActionError(409, "no `herowatch emit run` wrapper of r1 is connected")
        stacks_repo.start(
            s,
            run_id,
            "c42",
            reason=f"asked by {actor.name}",
            requested_by=actor.name,
            at=NOW,
            hold_until=NOW + 30,
            expected=nodes,
        )
        return "c42", nodes

    return CommandPorts(lambda s: None, lambda s: None, "https://hw.example", capture)  # type: ignore[arg-type]


@pytest.fixture
def sessions(migrated_url: str):
    engine = create_engine(migrated_url)
    with Session(engine) as s:
        s.add(Run(id="r1", watch="w", source="push", first_seen_at=NOW))
        for key, labels in (("slack:one", {"run": "r1"}), ("slack:many", {"alertname": "progress_stalled"})):
            s.add(
                AlertGroup(
                    group_key=key,
                    open_key=key,
                    receiver="oncall",
                    labels=labels,
                    root_ref=ROOT,
                    created_at=NOW,
                )
            )
        s.commit()
    yield sessionmaker(engine)
    engine.dispose()


def _click(group_key: str):
    return parse_block_actions(click(STACKS, f'{{"group_key":"{group_key}","alert_ids":[]}}'))


def test_a_click_asks_for_the_groups_run_and_the_answer_is_owed_once_in_its_thread(sessions):
    with sessions.begin() as s:
        reply = act(s, _click("slack:one"), NOW, _ports(["node-0"]))
    assert reply.text.startswith("Asked 1 node of r1 for their stacks as alice (Slack U0ALICE) (node-0)")
    assert "in this thread once they answer" in reply.text
    with sessions.begin() as s:
        assert settle(s, NOW + 1) == []  # node-0 has not answered, the hold runs
        body = {
            "run": "r1",
            "capture": "c42",
            "node": "node-0",
            "t": NOW + 1,
            "processes": [
                {
                    "pid": 10 + r,
                    "rank": r,
                    "role": "rank",
                    "threads": [
                        {
                            "frames": [
                                {"name": "read_chunk" if r == 2 else "barrier", "file": "job.py", "line": 5}
                            ]
                        }
                    ],
                }
                for r in range(4)
            ],
        }
        stacks_repo.answer(s, "r1", "c42", "node-0", body, NOW + 2)
    with sessions.begin() as s:
        [owed] = settle(s, NOW + 3, "https://hw.example")
        assert (owed.receiver, owed.ref, owed.capture) == ("oncall", ROOT, "c42")
        assert owed.asked_by == "alice (Slack U0ALICE)"
        assert (
            "3 of 4 ranks wait in `barrier`" in owed.view.summary and "rank 2 on node-0" in owed.view.summary
        )
        assert [g.count for g in owed.view.groups] == [3, 1]
        assert owed.view.url == "https://hw.example/runs/r1#stacks"
    with sessions.begin() as s:
        assert settle(s, NOW + 4) == []  # settled: never owed twice


def test_clicks_that_cannot_capture_say_why(sessions):
    with sessions.begin() as s:
        assert act(s, _click("slack:many"), NOW, _ports(["node-0"])).text.startswith(
            "No capture: this alert group is not one run's"
        )
        assert act(s, _click("slack:one"), NOW, _ports(None)).text == (
            "No capture: no `herowatch emit run` wrapper of r1 is connected"
        )
        assert act(s, _click("slack:one"), NOW, None).text.startswith(
            "No capture: this herowatch runs no engine"
        )
        assert stacks_repo.latest(s, ["r1"]) == {}
    forged = click(STACKS, '{"group_key":"slack:one","alert_ids":[]}')
    forged["container"]["message_ts"] = "1.000001"
    with sessions.begin() as s, pytest.raises(Refused) as refused:
        act(s, parse_block_actions(forged), NOW, _ports(["node-0"]))
    assert refused.value.status == 403
