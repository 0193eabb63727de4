"""``/api/audit``: the audit trail, newest first: who acknowledged, silenced, expired, signed in or was
refused, through which door, when, and on what."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Depends, HTTPException, Query
from pydantic import BaseModel, Field

from alerts.clock import isoformat
from monitor.storage import audit_repo, views
from monitor.storage.people_models import AuditEvent
from monitor.web.context import ApiContext, context
from monitor.web.gates import CredentialsFirst, require_signed_in
from monitor.web.schemas import ErrorOut, epoch_seconds, plain_text

router = APIRouter(tags=["audit"], route_class=CredentialsFirst)
Action = Literal[audit_repo.ACTIONS]  # type: ignore[valid-type]


class AuditOut(BaseModel):
    id: int
    at: str = Field(description="ISO 8601 UTC")
    actor: str = Field(description="the person, the Slack user, or `automation (...)` for the shared token")
    role: str | None = Field(description="viewer, responder, admin or automation (none: not known)")
    via: str = Field(description="how they proved who they are: token, proxy, oidc, personal, slack")
    door: Literal["dashboard", "api", "slack", "cli"]
    action: str
    target: str = Field(description="`alert 12`, `silence 3`, `session`, `token 4`, or the refused route")
    run: str | None = Field(description="the run the action touched, if one")
    outcome: Literal["done", "refused"]
    detail: str


def audit_out(row: AuditEvent) -> AuditOut:
    return AuditOut(
        id=row.id,
        at=isoformat(row.at) or "",
        actor=row.actor,
        role=row.role,
        via=row.via,
        door=row.door,  # type: ignore[arg-type]
        action=row.action,
        target=row.target,
        run=row.run_id,
        outcome=row.outcome,  # type: ignore[arg-type]
        detail=row.detail,
    )


def _time(value: str | None, what: str) -> float | None:
    try:
        return epoch_seconds(value)
    except ValueError as exc:
        raise HTTPException(422, f"{what}: {exc}") from None


@router.get(
    "/api/audit",
    response_model=list[AuditOut],
    summary="The audit trail, newest first",
    description="Every acknowledgement, silence created or expired, sign-in and sign-out, personal token "
    "issued or revoked, and refused attempt, with who (and their role), the door (dashboard, api, slack, "
    "cli), when and on what. Filters combine. Needs anyone signed in (any role), even when reads are "
    "open: it names people.",
    responses={401: {"model": ErrorOut}, 403: {"model": ErrorOut}, 422: {"model": ErrorOut}},
    dependencies=[Depends(require_signed_in)],
)
def list_audit(
    person: str | None = Query(None, max_length=200, description="exactly this actor, e.g. `amy`"),
    run: str | None = Query(None, max_length=512, description="a run's id or display name"),
    action: Action | None = None,
    outcome: Literal["done", "refused"] | None = None,
    since: str | None = Query(None, max_length=64, description="ISO 8601 or epoch seconds"),
    until: str | None = Query(None, max_length=64, description="ISO 8601 or epoch seconds (exclusive)"),
    limit: int = Query(200, ge=1, le=5000),
    ctx: ApiContext = Depends(context),
) -> list[AuditOut]:
    try:
        who = plain_text(person) if person is not None else None
        run_key = plain_text(run) if run is not None else None
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    start, end = _time(since, "since"), _time(until, "until")
    with ctx.sessions() as s:
        runs = [run_key, *(r.id for r in views.lookup_runs(s, run_key))] if run_key else []
        query = audit_repo.AuditQuery(
            person=who, run=runs, action=action, outcome=outcome, since=start, until=end, limit=limit
        )
        return [audit_out(r) for r in audit_repo.find(s, query)]
