"""What on-call can change: silences (create, expire) and acknowledgements. The JSON API and the
dashboard's forms call these same functions; each runs in the caller's transaction."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from sqlalchemy.orm import Session

from alerts.clock import isoformat
from alerts.silences import SilenceSpec
from monitor.storage import views
from monitor.storage.models import Alert, AlertTransition, Silence
from monitor.web.api.schemas import SilenceIn, SilenceOut

MAX_SILENCE = 90 * 86400.0


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


def create_silence(s: Session, body: SilenceIn, now: float) -> Silence:
    starts = parse_time(body.starts_at, "starts_at") or now
    if body.duration is not None:
        ends = starts + float(body.duration)
    else:
        ends = parse_time(body.ends_at, "ends_at") or 0.0
    if ends <= starts:
        raise ActionError(422, "the silence must end after it starts")
    if ends <= now:
        raise ActionError(
            422, f"the silence would already be over (ends {isoformat(ends)}, now {isoformat(now)})"
        )
    if ends - starts > MAX_SILENCE:
        raise ActionError(422, "a silence lasts at most 90 days; create a new one when it ends")
    try:
        SilenceSpec.parse(0, body.matchers, starts, ends)
    except ValueError as exc:
        raise ActionError(422, str(exc)) from None
    row = Silence(
        matchers={"matchers": list(body.matchers)},
        starts_at=starts,
        ends_at=ends,
        created_by=body.created_by.strip(),
        comment=body.comment.strip(),
        created_at=now,
    )
    s.add(row)
    s.flush()
    return row


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


def ack_alert(s: Session, alert_id: int, by: str, comment: str | None, now: float) -> Alert:
    """Marks a pending or firing alert as taken by someone; the ack goes into the run's timeline."""
    row = views.get_alert(s, alert_id)
    if row is None:
        raise ActionError(404, f"no alert with id {alert_id}")
    if row.state not in views.ACTIVE_STATES:
        raise ActionError(
            409, f"alert {alert_id} is {row.state}: only pending or firing alerts can be acknowledged"
        )
    row.acked_by, row.acked_at = by.strip(), now
    note = f"acknowledged by {by.strip()}" + (f": {comment.strip()}" if comment and comment.strip() else "")
    s.add(
        AlertTransition(
            alert_id=row.id,
            run_id=row.run_id,
            at=now,
            from_state=row.state,
            to_state=row.state,
            reason=note,
            value=None,
            step=row.step,
        )
    )
    return row


def silence_out(row: Silence, now: float, active: Sequence[Alert] = ()) -> SilenceOut:
    state = views.silence_state(row, now)
    spec = views.spec_of(row)
    muting = 0
    if spec is not None and state == "active":
        muting = sum(1 for a in active if spec.matches({k: str(v) for k, v in (a.labels or {}).items()}))
    return SilenceOut(
        id=row.id,
        matchers=views.matchers_of(row),
        starts_at=isoformat(row.starts_at) or "",
        ends_at=isoformat(row.ends_at) or "",
        state=state,
        created_by=row.created_by,
        comment=row.comment or "",
        created_at=isoformat(row.created_at) or "",
        muting=muting,
    )
