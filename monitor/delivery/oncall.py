"""What on-call can do about alerts, the one implementation used by the API, the dashboard, Slack's
buttons and ``/herowatch`` command, and the CLI: acknowledge, create a silence, expire a silence, and
capture a run's stacks.

Each action runs in the caller's transaction with an ``Actor`` (``monitor.delivery.actor``: the person,
their role, the door they came through), writes what it did and who did it into the incident timeline of
the alerts it touches (a Slack user as ``amy (Slack U0AMY)``, the shared token as ``automation``) and into
the audit trail, and queues the update their receivers must show (the Slack root says who took the
alert). Whether the actor may act at all is the door's check (``monitor.web.identity``); here it is
recorded. The limits are the same from
everywhere. A refused action raises ``ActionError`` with the HTTP status and a message for the person
who asked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.orm import Session

from alerts.clock import isoformat
from alerts.durations import format_duration
from alerts.model import AlertState
from alerts.silences import SilenceSpec
from alerts.text import bad_character
from monitor.delivery.actor import Actor
from monitor.storage import audit_repo, groups_repo, outbox_store, stacks_repo, views
from monitor.storage.models import Alert, AlertGroup, AlertTransition, Run, Silence
from monitor.storage.statuses import NotificationKind

MAX_SILENCE = 90 * 86400.0
MAX_TEXT = 2000  # comments
MAX_MATCHERS = 20


# ``(run id, reason) -> (capture id, nodes asked)``, or None when no wrapper of the run is connected
Asker = Callable[[str, str], "tuple[str, frozenset[str]] | None"]


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
def audit(s: Session, actor: Actor, action: str, target: str, now: float, **kw: str | None) -> None:
    """One line of the audit trail for what ``actor`` did (or was refused: ``outcome="refused"``)."""
    audit_repo.record(
        s,
        at=now,
        actor=actor.name,
        role=actor.role.value,
        via=actor.via.value,
        door=actor.door.value,
        action=action,
        target=target,
        outcome=kw.get("outcome") or "done",
        run_id=kw.get("run_id"),
        detail=kw.get("detail") or "",
    )


def acknowledge(
    s: Session, alerts: Iterable[Alert], actor: Actor, comment: str | None, now: float
) -> list[Alert]:
    """Mark firing (or pending) alerts as taken: no more reminders for them. Each gets a timeline entry
    and an audit line; each group episode that told of it is queued an update (the Slack root shows who
    took it)."""
    who, note = _who(actor.name), _note(comment)
    done = []
    for alert in alerts:
        if alert.state not in views.ACTIVE_STATES or alert.acked_at is not None:
            continue
        alert.acked_by, alert.acked_at = who, now
        _note_on_timeline(s, alert, f"acknowledged by {who}" + (f": {note}" if note else ""), now)
        audit(s, actor, "ack", f"alert {alert.id}", now, run_id=alert.run_id, detail=f"{alert.rule}: {note}")
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


def ack_run(s: Session, run_id: str, actor: Actor, comment: str | None, now: float) -> list[Alert]:
    """Acknowledge every firing alert of a run not yet taken; the ones acknowledged now."""
    firing = [a for a in views.active_alerts(s, run_id) if a.state == AlertState.FIRING]
    return acknowledge(s, firing, actor, comment, now)


def ack_alert(s: Session, alert_id: int, actor: Actor, comment: str | None, now: float) -> Alert:
    row = views.get_alert(s, alert_id)
    if row is None:
        raise ActionError(404, f"no alert with id {alert_id}")
    if row.state not in views.ACTIVE_STATES:
        raise ActionError(
            409, f"alert {alert_id} is {row.state}: only pending or firing alerts can be acknowledged"
        )
    if row.acked_at is None:
        acknowledge(s, [row], actor, comment, now)
    return row


# ---- silences ------------------------------------------------------------------------------------------
def create_silence(
    s: Session,
    matchers: Sequence[str],
    *,
    actor: Actor,
    comment: str = "",
    now: float,
    starts_at: float | None = None,
    ends_at: float | None = None,
    duration: float | None = None,
    replaces: Silence | None = None,
) -> Silence:
    """A new silence; with ``replaces``, an edit (as Alertmanager's): the old one ends now and the new one
    takes its place, one ``silence_edit`` line in the audit trail naming both."""
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
        created_by=_who(actor.name),
        comment=_note(comment),
        created_at=now,
    )
    s.add(row)
    s.flush()
    runs = _silence_on_timelines(s, row, now)
    detail = f"{' '.join(matchers)} until {isoformat(ends)}" + (f": {row.comment}" if row.comment else "")
    action, target = "silence_create", f"silence {row.id}"
    if replaces is not None:
        _end(replaces, now)
        action, target = "silence_edit", f"silence {replaces.id}"
        detail = f"replaced by silence {row.id}: {detail}"
        runs |= _runs_named(replaces)
    for run_id in sorted(runs) or [None]:
        audit(s, actor, action, target, now, run_id=run_id, detail=detail)
    return row


def edit_silence(s: Session, silence_id: int, matchers: Sequence[str], *, actor: Actor, **kw: Any) -> Silence:
    """Change a silence that has not ended (its matchers, times, comment): it is replaced by a new one,
    which is returned; the old one is listed as expired."""
    old = views.get_silence(s, silence_id)
    if old is None:
        raise ActionError(404, f"no silence with id {silence_id}")
    if old.ends_at <= kw["now"]:
        raise ActionError(409, f"silence {silence_id} has ended: create a new one")
    return create_silence(s, matchers, actor=actor, replaces=old, **kw)


def _end(row: Silence, now: float) -> None:
    if row.starts_at > now:
        row.starts_at = row.ends_at = now
    elif row.ends_at > now:
        row.ends_at = now


def _runs_named(row: Silence) -> set[str]:
    spec = SilenceSpec.parse(
        row.id, row.matchers["matchers"], row.starts_at, max(row.ends_at, row.starts_at + 1)
    )
    return {m.value for m in spec.matchers if m.name == "run" and m.op == "="}


def _silence_on_timelines(s: Session, row: Silence, now: float) -> set[str]:
    """Each alert a silence mutes from now on says so on its run's timeline: who, how long, why. The runs
    of those alerts (and the run a ``run=`` matcher names)."""
    spec = SilenceSpec.parse(row.id, row.matchers["matchers"], row.starts_at, row.ends_at)
    runs = {m.value for m in spec.matchers if m.name == "run" and m.op == "="}
    if not spec.active(now):
        return runs  # a silence for later: the alerts it will mute are not known yet
    text = f"silenced by {row.created_by} for {format_duration(row.ends_at - now)} (silence {row.id})"
    text += f": {row.comment}" if row.comment else ""
    for alert in views.active_alerts(s):
        if spec.matches({k: str(v) for k, v in (alert.labels or {}).items()}):
            _note_on_timeline(s, alert, text, now)
            runs.add(alert.run_id)
    return runs


def expire_silence(s: Session, silence_id: int, actor: Actor, now: float) -> Silence:
    """Ends a silence now (a pending one is ended before it starts). Expiring an expired one is a no-op."""
    row = views.get_silence(s, silence_id)
    if row is None:
        raise ActionError(404, f"no silence with id {silence_id}")
    if row.ends_at <= now:
        return row  # already over: nothing done, nothing to record
    _end(row, now)
    runs = _runs_named(row)
    detail = " ".join(row.matchers["matchers"]) + f" (created by {row.created_by})"
    for run_id in sorted(runs) or [None]:
        audit(s, actor, "silence_expire", f"silence {row.id}", now, run_id=run_id, detail=detail)
    return row


# ---- from a Slack button ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Outcome:
    text: str  # shown to the clicker (an ephemeral reply)
    changed: int


def ack_group(s: Session, group: AlertGroup, alert_ids: Iterable[str], actor: Actor, now: float) -> Outcome:
    wanted = {int(i) for i in alert_ids if str(i).isascii() and str(i).isdigit()}
    alerts = [
        a
        for a in groups_repo.alerts_of(s, group.id)
        if a.state == AlertState.FIRING and (not wanted or a.id in wanted)
    ]
    if not alerts:
        return Outcome("Nothing to acknowledge: the alerts have resolved.", 0)
    acknowledge(s, alerts, actor, "from Slack", now)
    return Outcome(
        f"Acknowledged by {actor.name}: no reminders until they resolve or fire again.", len(alerts)
    )


def silence_group(s: Session, group: AlertGroup, seconds: float, actor: Actor, now: float) -> Outcome:
    labels = {k: v for k, v in (group.labels or {}).items() if v}
    if not labels:
        return Outcome("This group has no labels to silence by; use `herowatch silence add`.", 0)
    matchers = [f'{k}="{v}"' for k, v in sorted(labels.items())]
    row = create_silence(s, matchers, actor=actor, comment="from Slack", now=now, duration=seconds)
    return Outcome(
        f"Silenced {' '.join(matchers)} for {format_duration(seconds)} by {actor.name} "
        f"(silence {row.id}; `herowatch silence expire {row.id}` ends it).",
        1,
    )


# ---- capture stacks ----------------------------------------------------------------------------------


def capture_stacks(
    s: Session, run_id: str, actor: Actor, ask: Asker, now: float, hold: float
) -> tuple[str, list[str]]:
    """Ask the run's connected wrappers for their stacks now (``monitor.stacks``); returns the capture's
    id and the nodes asked. 404 for an unknown run; 409 when no wrapper of it is connected."""
    if s.get(Run, run_id) is None:
        raise ActionError(404, f"no run {run_id!r}")
    asked = ask(run_id, f"asked by {actor.name}")
    if asked is None:
        audit(
            s,
            actor,
            "stacks_capture",
            f"run {run_id}",
            now,
            run_id=run_id,
            outcome="refused",
            detail="no wrapper connected",
        )
        raise ActionError(
            409,
            f"no `herowatch emit run` wrapper of {run_id} is connected: stacks are captured by the wrapper "
            "around the job on each node (docs/stacks.md)",
        )
    capture_id, nodes = asked
    stacks_repo.start(
        s,
        run_id,
        capture_id,
        reason=f"asked by {actor.name}",
        requested_by=actor.name,
        at=now,
        hold_until=now + hold,
        expected=nodes,
    )
    audit(s, actor, "stacks_capture", f"run {run_id}", now, run_id=run_id, detail=f"{len(nodes)} node(s)")
    return capture_id, sorted(nodes)
