"""A click on a herowatch button (Acknowledge, Silence 1 h / 4 h, Capture stacks) on one of its alert
messages, from either door: the HTTP endpoint or Socket Mode. Acts through ``monitor.delivery.oncall``
in the caller's transaction, named after the Slack user who clicked. "Capture stacks" is the
``/herowatch stacks RUN`` command's own path (``commands.ask_stacks``), for the group's run, answered
in the message's thread once the nodes answered."""

from __future__ import annotations

import logging

from sqlalchemy.orm import Session

from alerts.notifiers.slack.interactions import Interaction
from monitor.delivery import oncall
from monitor.delivery.actor import Actor
from monitor.storage import groups_repo
from monitor.storage.models import AlertGroup, Run
from monitor.web.slack.commands import CommandPorts, ask_stacks
from monitor.web.slack.replies import Refused, Reply

log = logging.getLogger(__name__)


def act(s: Session, click: Interaction, now: float, ports: CommandPorts | None = None) -> Reply:
    """Acknowledge, silence or capture the stacks of the alert group the button belongs to. A click on
    anything but the message herowatch posted for that group (its channel and ts as herowatch recorded
    them) is refused (403): a button's value alone names a group, and anyone can craft one."""
    root = f"{click.channel_id}:{click.message_ts}"
    group = groups_repo.by_root(s, click.group_key, root)
    if group is None:
        log.warning(
            "refused a Slack click on %s: not herowatch's message for group %s", root, click.group_key
        )
        raise Refused(403, "this button is not on herowatch's message for that alert group")
    actor = Actor.slack_user(click.actor)
    if click.action == "ack":
        outcome = oncall.ack_group(s, group, click.alert_ids, actor, now)
    elif click.action == "stacks":
        return _stacks(s, group, root, actor, now, ports)
    else:
        try:
            outcome = oncall.silence_group(s, group, click.duration or 3600.0, actor, now)
        except oncall.ActionError as exc:
            outcome = oncall.Outcome(f"Not silenced: {exc.message}", 0)
    log.info("slack %s by %s on %s: %s", click.action, click.actor, click.group_key, outcome.text)
    return Reply(outcome.text)


def _stacks(
    s: Session, group: AlertGroup, root: str, actor: Actor, now: float, ports: CommandPorts | None
) -> Reply:
    run = s.get(Run, str((group.labels or {}).get("run") or ""))
    if run is None:
        return Reply("No capture: this alert group is not one run's (its route does not group by run).")
    if ports is None:
        return Reply("No capture: this herowatch runs no engine: no wrapper polls it.")
    try:
        reply = ask_stacks(ports, s, run, actor, now, thread=(group.receiver, root))
    except oncall.ActionError as exc:
        reply = Reply(f"No capture: {exc.message}")
    log.info("slack stacks by %s on %s: %s", actor.name, run.id, reply.text[:200])
    return reply
