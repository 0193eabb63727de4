"""Dashboard sign-ins (``LoginSession`` rows): start, find, end. SQL only; the cookie, its MAC and what a
session may do are the web side's (``monitor.web.auth``).

Rows are keyed by the SHA-256 of the cookie's random value. A session is current while it is not revoked,
not expired and made under the current API token (``key_id``); ended ones are deleted a day after they
end, whenever someone signs in, so the table holds about the sessions of the last day.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from sqlalchemy import delete, or_, update
from sqlalchemy.orm import Session

from monitor.storage.models import LoginSession

KEEP_ENDED = 86400.0  # ended sessions stay this long (who was signed in when), then go


def start(
    s: Session,
    key: str,
    *,
    subject: str,
    method: str,
    key_id: str,
    now: float,
    lifetime: float,
    role: str = "automation",
) -> LoginSession:
    s.execute(
        delete(LoginSession).where(
            or_(LoginSession.expires_at < now - KEEP_ENDED, LoginSession.revoked_at < now - KEEP_ENDED)
        )
    )
    row = LoginSession(
        id=key,
        subject=subject,
        method=method,
        role=role,
        key_id=key_id,
        created_at=now,
        expires_at=now + lifetime,
    )
    s.add(row)
    return row


def current(s: Session, key: str, key_ids: Mapping[str, str], now: float) -> LoginSession | None:
    """The session with this key if it is current: not revoked, not expired, started under the key its
    sign-in method must have today (``key_ids``: method -> key id)."""
    row = s.get(LoginSession, key)
    if row is None or row.revoked_at is not None or row.key_id != key_ids.get(row.method):
        return None
    return row if row.created_at - 60.0 <= now < row.expires_at else None  # a minute of replicas' skew


def revoke(s: Session, key: str, now: float) -> bool:
    """End one session (logging out). True if it was current."""
    res = s.execute(
        update(LoginSession)
        .where(LoginSession.id == key, LoginSession.revoked_at.is_(None))
        .values(revoked_at=now)
        .execution_options(synchronize_session=False)
    )
    return res.rowcount == 1


def revoke_all_but(s: Session, key_ids: Collection[str], now: float) -> int:
    """End every current session not started under one of ``key_ids`` (none: every session). Returns
    how many."""
    q = update(LoginSession).where(LoginSession.revoked_at.is_(None), LoginSession.expires_at > now)
    if key_ids:
        q = q.where(LoginSession.key_id.not_in(list(key_ids)))
    return s.execute(q.values(revoked_at=now).execution_options(synchronize_session=False)).rowcount
