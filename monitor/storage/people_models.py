"""The tables about people: the audit trail and personal API tokens (on ``models.Base``, so migrations and
``tests/test_storage.py`` see them with the rest)."""

from __future__ import annotations

from sqlalchemy import Index, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from monitor.storage.base import Base
from monitor.storage.types import EpochTime


class AuditEvent(Base):
    """One line of the audit trail: who (``actor``, their ``role`` and how they proved it, ``via``), through
    which ``door`` (dashboard, api, slack, cli), did what (``action``: ack, silence_create, silence_expire,
    sign_in, sign_out, token_issue, token_revoke, refused) to what (``target``: ``alert 12``,
    ``silence 3``, a route), when, and whether it was done or refused (``outcome``, with ``detail``)."""

    __tablename__ = "audit_events"
    __table_args__ = (
        Index("ix_audit_events_at", "at"),
        Index("ix_audit_events_actor", "actor"),
        Index("ix_audit_events_run_id", "run_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[float] = mapped_column(EpochTime)
    actor: Mapped[str] = mapped_column(String(200))
    role: Mapped[str | None] = mapped_column(String(16))
    via: Mapped[str] = mapped_column(String(16))
    door: Mapped[str] = mapped_column(String(16))
    action: Mapped[str] = mapped_column(String(32))
    target: Mapped[str] = mapped_column(String(300))
    run_id: Mapped[str | None] = mapped_column(String(200))
    outcome: Mapped[str] = mapped_column(String(16))  # done, refused
    detail: Mapped[str] = mapped_column(String(500), server_default="")


class ApiToken(Base):
    """A personal API token (for the CLI and scripts that act as a person), issued from the dashboard and
    revocable there. ``key`` is the SHA-256 of the token (the token itself is shown once, when issued);
    ``person`` and ``role`` are who it acts as (the role of its holder when it was issued, never more)."""

    __tablename__ = "api_tokens"
    __table_args__ = (UniqueConstraint("key"), Index("ix_api_tokens_person", "person"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    key: Mapped[str] = mapped_column(String(64))
    person: Mapped[str] = mapped_column(String(200))
    role: Mapped[str] = mapped_column(String(16))
    label: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[float] = mapped_column(EpochTime)
    expires_at: Mapped[float] = mapped_column(EpochTime)
    last_used_at: Mapped[float | None] = mapped_column(EpochTime)
    revoked_at: Mapped[float | None] = mapped_column(EpochTime)
