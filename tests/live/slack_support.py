"""``herowatch serve`` as a process with Slack over Socket Mode: simulated runs (the ``sim`` source, on
the real clock) whose losses turn NaN a few seconds in, each paging one thread in the Slack stand-in's
channel with the Acknowledge / Silence buttons; ``SLACK_APP_TOKEN`` set, so herowatch opens its
websocket to the stand-in's Socket Mode. Nothing listens for Slack: clicks and ``/herowatch`` arrive
over that websocket only."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import select

from monitor.storage.db import make_engine, make_sessionmaker
from monitor.storage.models import AlertGroup
from tests.live.support import API_TOKEN, Herowatch, wait_for
from tests.standins.slack import APP_TOKEN, DEFAULT_TOKEN, SlackStandin
from tests.standins.slack.records import StoredMessage
from tests.standins.slack.socket_mode import Envelope

CHANNEL = "C0ONCALL"
DASHBOARD = "https://herowatch.example.org"  # server.external_url: where the answers' links lead


def config(slack: SlackStandin, failing: list[str], healthy: list[str] = ()) -> str:
    """Watches polled every second; each of ``failing`` logs NaN losses from 3 s in (``loss_nonfinite``
    pages at once), each of ``healthy`` trains on."""
    watches = ""
    for i, name in enumerate([*failing, *healthy]):
        incidents = "[{kind: nan, at: 3s, duration: 1h}]" if name in failing else "[]"
        watches += (
            f"  - name: {name}\n    poll_interval: 1s\n    target_step: 100000\n"
            f"    sim: {{seed: {i}, step_time: 0.5s, checkpoint_every: 100000, eval_every: 100000, "
            f"incidents: {incidents}}}\n"
        )
    return (
        f"server: {{external_url: '{DASHBOARD}'}}\n"
        f"watch:\n{watches}"
        f"receivers:\n  - {{name: oncall, kind: slack, channel: {CHANNEL}, base_url: '{slack.api_url}', "
        "timeout: 5s, plots: false}\n"
        "route: {receiver: oncall, group_by: [run], group_wait: 0s, group_interval: 1s}\n"
    )


@dataclass
class SlackStack:
    tmp: Path
    slack: SlackStandin
    db_url: str
    procs: list[Herowatch] = field(default_factory=list)

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "HEROWATCH_DATABASE_URL": self.db_url,
            "HEROWATCH_API_TOKEN": API_TOKEN,
            "SLACK_BOT_TOKEN": DEFAULT_TOKEN,
            "SLACK_APP_TOKEN": APP_TOKEN,
            "HEROWATCH_SLACK_API_URL": self.slack.api_url,
        }

    def serve(self, cfg: Path, replicas: int = 1) -> list[Herowatch]:
        """``replicas`` processes of ``herowatch serve``, started together."""
        started = []
        for _ in range(replicas):
            started.append(Herowatch(cfg, self.env(), self.tmp / f"herowatch-{len(self.procs)}.log"))
            self.procs.append(started[-1])
        for hw in started:
            wait_for(hw.ready, 60, "herowatch serve to answer")
        return started

    def root_of(self, run: str) -> StoredMessage:
        """herowatch's alert message about ``run``, once it is in the channel and herowatch has recorded
        it as the group's message (a person cannot click faster than that; a test can)."""

        def found() -> StoredMessage | None:
            return next((m for m in self.slack.roots(CHANNEL) if f"on run {run}" in m.text), None)

        msg = wait_for(found, 60, f"the alert message about {run} in Slack: {self.slack.pages(CHANNEL)}")
        db = make_engine(self.db_url)
        try:
            with make_sessionmaker(db)() as s:
                wait_for(
                    lambda: s.scalar(
                        select(AlertGroup.id).where(AlertGroup.root_ref == f"{CHANNEL}:{msg.ts}")
                    ),
                    30,
                    "herowatch to record its message",
                )
        finally:
            db.dispose()
        return msg

    def answer(self, env: Envelope, timeout: float = 30) -> dict[str, Any]:
        """The acknowledgement's payload: a slash command's answer."""
        ack = self.slack.socket.wait_acked(env, timeout)
        assert ack.payload is not None, f"{env.envelope_id} acknowledged without an answer"
        return ack.payload

    def responses(self, env: Envelope, timeout: float = 30) -> list[dict[str, Any]]:
        """What herowatch posted to the request's response_url (a click's answer)."""
        self.slack.socket.wait_acked(env, timeout)
        return wait_for(
            lambda: self.slack.responses_to(env.payload), timeout, "the answer at the response_url"
        )


@contextmanager
def slack_stack(tmp: Path, db_url: str) -> Iterator[SlackStack]:
    with SlackStandin(channels=[CHANNEL]) as slack:
        stack = SlackStack(tmp, slack, db_url)
        try:
            yield stack
        finally:
            for hw in stack.procs:
                if hw.proc.poll() is None:
                    hw.stop()


def timeline(hw: Herowatch, run_id: str) -> list[str]:
    """The reasons on the run's incident timeline, newest first."""
    from urllib.parse import quote

    return [t["reason"] for t in hw.api(f"/api/runs/{quote(run_id, safe='')}")["timeline"]]
