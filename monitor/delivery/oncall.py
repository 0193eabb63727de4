"""What on-call can do about alerts, the one implementation used by the API, the dashboard, Slack's
buttons and ``/herowatch`` command, and the CLI: acknowledge, create a silence, expire a silence.

Each action runs in the caller's transaction, writes what it did and who did it into the incident
timeline of the alerts it touches (a Slack user as ``amy (Slack U0AMY)``), and queues the update their
receivers must show (the Slack root says who took the alert). The limits are the same from
everywhere. A refused action raises ``ActionError`` with the HTTP status and a message for the person
who asked.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy.orm import Session

from alerts.clock import isoformat
from alerts.durations import format_duration
from alerts.model import AlertState
from alerts.silences import SilenceSpec
from alerts.text import bad_character
from monitor.storage import groups_repo, outbox_store, views
from monitor.storage.models import Alert, AlertGroup, AlertTransition, Silence
from monitor.storage.statuses import NotificationKind

MAX_SILENCE = 90 * 86400.0
MAX_TEXT = 2000  # comments
MAX_MATCHERS = 20


class ActionError(Exception):
    """A refused change: HTTP status and a message for the person who asked."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def parse_time(value: str | float | None, what: str) -> float | None:
    """Epoch seconds from epoch seconds or an ISO 8601 time (UTC when no offset is given)."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float):
        return float(value)
    text = value.strip()
    try:
        return float(text)
    except ValueError:
        pass
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ActionError(
            422, f"{what}: {value!r} is not a time; use ISO 8601, e.g. 2026-01-31T08:00:00Z"
        ) from None
    return (dt if dt.tzinfo else dt.replace(tzinfo=UTC)).timestamp()


def _who(by: str) -> str:
    who = (by or "").strip()
    if not who:
        raise ActionError(422, "say who you are (by / created_by)")
    if len(who) > 200:
        raise ActionError(422, "a name is at most 200 characters")
    if (bad := bad_character(who)) is not None:
        raise ActionError(422, f"a name is plain text: it holds {bad}")
    return who


def _note(text: str | None) -> str:
    note = (text or "").strip()
    if len(note) > MAX_TEXT:
        raise ActionError(422, f"a comment is at most {MAX_TEXT} characters")
    if (bad := bad_character(note, multiline=True)) is not None:
        raise ActionError(422, f"a comment is plain text: it holds {bad}")
    return note


# ---- acknowledge ---------------------------------------------------------------------------------------
def acknowledge(s: Session, alerts: Iterable[Alert], by: str, comment: str | None, now: float) -> list[Alert]:
    """Mark firing (or pending) alerts as taken: no more reminders for them. Each gets a timeline entry;
    each group episode that told of it is queued an update (the Slack root shows who took it)."""
    who, note = _who(by), _note(comment)
    done = []
    for alert in alerts:
        if alert.state not in views.ACTIVE_STATES or alert.acked_at is not None:
            continue
        alert.acked_by, alert.acked_at = who, now
        _note_on_timeline(s, alert, f"acknowledged by {who}" + (f": {note}" if note else ""), now)
        for group in groups_repo.groups_with_alerts(s, [alert.id]):
            outbox_store.enqueue_once(
                s,
                f"ack:{alert.id}:{group.id}",
                now,
                receiver=group.receiver,
                kind=NotificationKind.ACK,
                alert_id=alert.id,
                group_id=group.id,
                payload={"status": AlertState.FIRING},
            )
        done.append(alert)
    return done


def _note_on_timeline(s: Session, alert: Alert, text: str, now: float) -> None:
    """An entry in the alert's run's incident timeline that changes no state: who did what."""
    s.add(
        AlertTransition(
            alert_id=alert.id,
            run_id=alert.run_id,
            at=now,
            from_state=alert.state,
            to_state=alert.state,
            reason=text[:MAX_TEXT],
            value=None,
            step=alert.step,
        )
    )


def ack_run(s: Session, run_id: str, by: str, comment: str | None, now: float) -> list[Alert]:
    """Acknowledge every firing alert of a run not yet taken; the ones acknowledged now."""
    firing = [a for a in views.active_alerts(s, run_id) if a.state == AlertState.FIRING]
    return acknowledge(s, firing, by, comment, now)


def ack_alert(s: Session, alert_id: int, by: str, comment: str | None, now: float) -> Alert:
    row = views.get_alert(s, alert_id)
    if row is None:
        raise ActionError(404, f"no alert with id {alert_id}")
    if row.state not in views.ACTIVE_STATES:
        raise ActionError(
            409, f"alert {alert_id} is {row.state}: only pending or firing alerts can be acknowledged"
        )
    if row.acked_at is None:
        acknowledge(s, [row], by, comment, now)
    return row


# ---- silences ------------------------------------------------------------------------------------------
def create_silence(
    s: Session,
    matchers: Sequence[str],
    *,
    created_by: str,
    comment: str = "",
    now: float,
    starts_at: float | None = None,
    ends_at: float | None = None,
    duration: float | None = None,
) -> Silence:
    starts = starts_at if starts_at is not None else now
    ends = starts + duration if duration is not None else ends_at
    if ends is None:
        raise ActionError(422, "say how long the silence lasts (duration) or when it ends (ends_at)")
    if ends <= starts:
        raise ActionError(422, "the silence must end after it starts")
    if ends <= now:
        raise ActionError(
            422, f"the silence would already be over (ends {isoformat(ends)}, now {isoformat(now)})"
        )
    if ends - starts > MAX_SILENCE:
        raise ActionError(
            422, f"a silence lasts at most {MAX_SILENCE / 86400:.0f} days; create a new one when it ends"
        )
    if not matchers or len(matchers) > MAX_MATCHERS:
        raise ActionError(422, f"a silence needs 1 to {MAX_MATCHERS} matchers")
    try:
        SilenceSpec.parse(0, matchers, starts, ends)
    except ValueError as exc:
        raise ActionError(422, str(exc)) from None
    row = Silence(
        matchers={"matchers": list(matchers)},
        starts_at=starts,
        ends_at=ends,
        created_by=_who(created_by),
        comment=_note(comment),
        created_at=now,
    )
    s.add(row)
    s.flush()
    _silence_on_timelines(s, row, now)
    return row


def _silence_on_timelines(s: Session, row: Silence, now: float) -> None:
    """Each alert a silence mutes from now on says so on its run's timeline: who, how long, why."""
    spec = SilenceSpec.parse(row.id, row.matchers["matchers"], row.starts_at, row.ends_at)
    if not spec.active(now):
        return  # a silence for later: the alerts it will mute are not known yet
    text = f"silenced by {row.created_by} for {format_duration(row.ends_at - now)} (silence {row.id})"
    text += f": {row.comment}" if row.comment else ""
    for alert in views.active_alerts(s):
        if spec.matches({k: str(v) for k, v in (alert.labels or {}).items()}):
            _note_on_timeline(s, alert, text, now)


def expire_silence(s: Session, silence_id: int, now: float) -> Silence:
    """Ends a silence now (a pending one is ended before it starts). Expiring an expired one is a no-op."""
    row = views.get_silence(s, silence_id)
    if row is None:
        raise ActionError(404, f"no silence with id {silence_id}")
    if row.starts_at > now:
        row.starts_at = row.ends_at = now
    elif row.ends_at > now:
        row.ends_at = now
    return row


# ---- from a Slack button ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Outcome:
    text: str  # shown to the clicker (an ephemeral reply)
    changed: int


def ack_group(s: Session, group: AlertGroup, alert_ids: Iterable[str], by: str, now: float) -> Outcome:
    wanted = {int(i) for i in alert_ids if str(i).isascii() and str(i).isdigit()}
    alerts = [
        a
        for a in groups_repo.alerts_of(s, group.id)
        if a.state == AlertState.FIRING and (not wanted or a.id in wanted)
    ]
    if not alerts:
        return Outcome("Nothing to acknowledge: the alerts have resolved.", 0)
    acknowledge(s, alerts, by, "from Slack", now)
    return Outcome(f"Acknowledged by {by}: no reminders until they resolve or fire again.", len(alerts))


def silence_group(s: Session, group: AlertGroup, seconds: float, by: str, now: float) -> Outcome:
    labels = {k: v for k, v in (group.labels or {}).items() if v}
    if not labels:
        return Outcome("This group has no labels to silence by; use `herowatch silence add`.", 0)
    matchers = [f'{k}="{v}"' for k, v in sorted(labels.items())]
    row = create_silence(s, matchers, created_by=by, comment="from Slack", now=now, duration=seconds)
    return Outcome(
        f"Silenced {' '.join(matchers)} for {format_duration(seconds)} by {by} "
        f"(silence {row.id}; `herowatch silence expire {row.id}` ends it).",
        1,
    )
