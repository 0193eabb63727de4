"""A click on a herowatch button (Acknowledge, Silence 1 h / 4 h) on one of its alert messages, from
either door: the HTTP endpoint or Socket Mode. Acts through ``monitor.delivery.oncall`` in the caller's
transaction, named after the Slack user who clicked."""

from __future__ import annotations

import logging

from sqlalchemy.orm import Session

from alerts.notifiers.slack.interactions import Interaction
from monitor.delivery import oncall
from monitor.delivery.actor import Actor
from monitor.storage import groups_repo
from monitor.web.slack.replies import Refused, Reply

log = logging.getLogger(__name__)


def act(s: Session, click: Interaction, now: float) -> Reply:
    """Acknowledge or silence the alert group the button belongs to. A click on anything but the
    message herowatch posted for that group (its channel and ts as herowatch recorded them) is refused
    (403): a button's value alone names a group, and anyone can craft one."""
    group = groups_repo.by_root(s, click.group_key, f"{click.channel_id}:{click.message_ts}")
    if group is None:
        log.warning(
            "refused a Slack click on %s:%s: not herowatch's message for group %s",
            click.channel_id,
            click.message_ts,
            click.group_key,
        )
        raise Refused(403, "this button is not on herowatch's message for that alert group")
    if click.action == "ack":
        outcome = oncall.ack_group(s, group, click.alert_ids, Actor.slack_user(click.actor), now)
    else:
        try:
            outcome = oncall.silence_group(
                s, group, click.duration or 3600.0, Actor.slack_user(click.actor), now
            )
        except oncall.ActionError as exc:
            outcome = oncall.Outcome(f"Not silenced: {exc.message}", 0)
    log.info("slack %s by %s on %s: %s", click.action, click.actor, click.group_key, outcome.text)
    return Reply(outcome.text)
