"""A stack capture settles once every node asked has answered, or its hold ran out
(``stacks_repo.Latest.waiting``). Then, once per capture:

- its culprit (``monitor.stacks.culprit``: the odd ranks' call, hosts and ranks), when the stacks
  name one, is stored with the run's hang alerts active at the capture (``Alert.culprit``, the first
  one found kept): the weekly report's incident names the call;
- a capture a Slack click asked for (``reply_ref``) is answered in that alert's thread, as a quiet
  reply with the groups (``alerts.notifiers.slack.stack_blocks``), after the transaction that marked it
  settled: a reply lost to a Slack outage is logged, never posted twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import quote

from sqlalchemy import or_, select
from sqlalchemy.orm import Session, sessionmaker

from alerts.notifiers.slack.notifier import SlackNotifier
from alerts.notifiers.slack.stack_blocks import capture_reply
from alerts.views import StackView
from monitor.stacks.culprit import culprit_of
from monitor.stacks.model import NodeStacks
from monitor.stacks.page import ASKING_KINDS, report_of, view_of
from monitor.storage import stacks_repo
from monitor.storage.models import Alert
from monitor.storage.stack_models import StackCapture

log = logging.getLogger(__name__)
BATCH = 100  # captures settled per pass
SLACK = 5.0  # seconds: a capture asked this little before an alert's start is still of its hang


@dataclass(frozen=True)
class ThreadReply:
    receiver: str
    ref: str  # "channel:ts" of the alert's root message
    capture: str
    view: StackView
    asked_by: str


def settle(s: Session, now: float, external_url: str | None = None) -> list[ThreadReply]:
    """Settle the captures no longer waiting; the thread replies they owe."""
    rows = s.scalars(select(StackCapture).where(StackCapture.settled_at.is_(None)).limit(BATCH)).all()
    if not rows:
        return []
    latest = stacks_repo.latest(s, [c.run_id for c in rows])
    replies = []
    for c in rows:
        got = latest.get(c.run_id)
        if got is None or got.waiting(now):
            continue
        c.settled_at = now
        pushes = [NodeStacks.model_validate(d.body) for d in got.dumps]
        report = report_of(pushes, c.expected or (), c.requested_at, now)
        culprit = culprit_of(report)
        if culprit is not None:
            for a in _hang_alerts(s, c):
                if a.culprit is None:
                    a.culprit = culprit.to_dict()
        if c.reply_ref and c.reply_receiver:
            base = (external_url or "").rstrip("/")
            url = f"{base}/runs/{quote(c.run_id, safe='')}#stacks" if base else ""
            view = view_of(report, now, None, url)
            replies.append(ThreadReply(c.reply_receiver, c.reply_ref, c.capture_id, view, c.requested_by))
    return replies


def _hang_alerts(s: Session, c: StackCapture) -> list[Alert]:
    """The run's hang alerts active when the capture was asked (a capture on demand during the hang too)."""
    return list(
        s.scalars(
            select(Alert).where(
                Alert.run_id == c.run_id,
                Alert.kind.in_(sorted(ASKING_KINDS)),
                Alert.active_at <= c.requested_at + SLACK,
                or_(Alert.resolved_at.is_(None), Alert.resolved_at >= c.requested_at),
            )
        )
    )


@dataclass
class StackSettler:
    """The scheduled job (``herowatch serve``): settle, then post the replies owed."""

    sessions: sessionmaker[Session]
    now: Callable[[], float]
    notifiers: Mapping[str, object]
    external_url: str | None = None

    def run_once(self) -> int:
        with self.sessions.begin() as s:
            replies = settle(s, self.now(), self.external_url)
        for r in replies:
            notifier = self.notifiers.get(r.receiver)
            if not isinstance(notifier, SlackNotifier):
                log.warning("stacks %s: receiver %r is not a Slack channel; no reply", r.capture, r.receiver)
                continue
            done = notifier.reply_quietly(r.ref, capture_reply(r.view, r.asked_by), f"stacks:{r.capture}")
            if not done.ok:
                log.warning(
                    "stacks %s: could not answer in Slack thread %s: %s", r.capture, r.ref, done.error
                )
        return len(replies)
