"""Personal API tokens: the CLI and scripts acting as a person. Issued from the dashboard (the token is
shown once), listed and revoked there; a person revokes their own, an admin anyone's. A token acts with
the role its person had when it was issued, for at most ``LIFETIME``. The table keeps only its SHA-256.
"""

from __future__ import annotations

import hashlib
import logging
import secrets

from sqlalchemy.exc import SQLAlchemyError

from monitor.delivery import oncall
from monitor.delivery.actor import Actor, Door, Need, Role, Via
from monitor.storage import api_tokens
from monitor.storage.people_models import ApiToken
from monitor.web.context import ApiContext

log = logging.getLogger(__name__)
PREFIX = "hwp_"
LIFETIME = 90 * 86400.0
MAX_LABEL = 100


def _key(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def actor_of(ctx: ApiContext, token: str, door: Door) -> Actor | None:
    if len(token) > 200:
        return None
    try:
        with ctx.sessions.begin() as s:
            row = api_tokens.current(s, _key(token), ctx.now())
            if row is None:
                return None
            return Actor(name=row.person, role=Role(row.role), door=door, via=Via.personal)
    except SQLAlchemyError as exc:
        log.warning("could not look up a personal API token: %s", type(exc).__name__)
        return None


def issue(ctx: ApiContext, actor: Actor, label: str) -> tuple[ApiToken, str]:
    """A new token for ``actor`` (a person, not the automation token), its row and its text (shown
    once)."""
    if actor.role == Role.automation:
        raise oncall.ActionError(
            403, "the automation token cannot issue personal tokens: sign in as a person"
        )
    label = " ".join(label.split())[:MAX_LABEL] or "CLI"
    token = PREFIX + secrets.token_urlsafe(32)
    now = ctx.now()
    with ctx.sessions.begin() as s:
        row = api_tokens.issue(
            s, _key(token), person=actor.name, role=actor.role.value, label=label, now=now, lifetime=LIFETIME
        )
        oncall.audit(s, actor, "token_issue", f"token {row.id}", now, detail=f"{label} ({row.role})")
        s.expunge(row)
    return row, token


def listed(ctx: ApiContext, actor: Actor) -> list[ApiToken]:
    """What the tokens page lists: one's own; an admin sees everyone's."""
    with ctx.sessions() as s:
        rows = api_tokens.of_person(s, None if actor.may(Need.admin) else actor.name)
        s.expunge_all()
        return rows


def revoke(ctx: ApiContext, actor: Actor, token_id: int) -> ApiToken:
    if actor.role == Role.automation:
        raise oncall.ActionError(
            403, "the automation token cannot revoke personal tokens: sign in as a person"
        )
    now = ctx.now()
    with ctx.sessions.begin() as s:
        row = s.get(ApiToken, token_id)
        if row is None or (row.person != actor.name and not actor.may(Need.admin)):
            raise oncall.ActionError(404, f"no token {token_id} of yours")
        if row.revoked_at is None:
            api_tokens.revoke(s, token_id, now)
            oncall.audit(
                s, actor, "token_revoke", f"token {row.id}", now, detail=f"{row.label} of {row.person}"
            )
        s.refresh(row)
        s.expunge(row)
        return row
