"""Personal API tokens (``ApiToken`` rows): issue, find, list, revoke. SQL only; the token text and what
it may do are the web side's (``monitor.web.people_tokens``)."""

from __future__ import annotations

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from monitor.storage.people_models import ApiToken


def issue(
    s: Session, key: str, *, person: str, role: str, label: str, now: float, lifetime: float
) -> ApiToken:
    row = ApiToken(key=key, person=person, role=role, label=label, created_at=now, expires_at=now + lifetime)
    s.add(row)
    s.flush()
    return row


def current(s: Session, key: str, now: float) -> ApiToken | None:
    """The token with this key if it is current (not revoked, not expired); notes its use."""
    row = s.scalars(select(ApiToken).where(ApiToken.key == key)).first()
    if row is None or row.revoked_at is not None or now >= row.expires_at:
        return None
    if row.last_used_at is None or now - row.last_used_at > 60.0:  # one write a minute at most
        row.last_used_at = now
    return row


def of_person(s: Session, person: str | None) -> list[ApiToken]:
    """A person's tokens (None: everyone's), newest first."""
    q = select(ApiToken)
    if person is not None:
        q = q.where(ApiToken.person == person)
    return list(s.scalars(q.order_by(ApiToken.created_at.desc(), ApiToken.id.desc()).limit(500)))


def revoke(s: Session, token_id: int, now: float) -> ApiToken | None:
    row = s.get(ApiToken, token_id)
    if row is None:
        return None
    s.execute(
        update(ApiToken)
        .where(ApiToken.id == token_id, ApiToken.revoked_at.is_(None))
        .values(revoked_at=now)
        .execution_options(synchronize_session=False)
    )
    s.refresh(row)
    return row
