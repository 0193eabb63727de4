"""The stack captures' tables (``monitor.stacks``), on ``models.Base`` so that migrations and
``tests/test_storage.py`` see them with the rest."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Float, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from monitor.storage.base import Base


class StackCapture(Base):
    """A run's latest stack capture request (``monitor.stacks``): who asked, why, which nodes' wrappers
    were connected then, and until when a hang's first page waits for their answers. A new capture
    replaces it (and its nodes' answers)."""

    __tablename__ = "stack_captures"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    capture_id: Mapped[str] = mapped_column(String(64))
    reason: Mapped[str] = mapped_column(String(300))
    requested_by: Mapped[str] = mapped_column(String(200))
    requested_at: Mapped[float] = mapped_column(Float)
    hold_until: Mapped[float] = mapped_column(Float)  # a hang's page waits for the answers until then
    expected: Mapped[list[Any]] = mapped_column(JSON, default=list)  # the nodes asked
    # Once every node asked answered or the hold ran out (``monitor.delivery.stacks_settle``); None: not yet.
    settled_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    # A Slack click asked: the receiver and "channel:ts" of the thread its answer goes to.
    reply_receiver: Mapped[str | None] = mapped_column(String(128), nullable=True)
    reply_ref: Mapped[str | None] = mapped_column(String(200), nullable=True)


class StackDump(Base):
    """One node's answer to its run's latest capture (``monitor.stacks.model.NodeStacks``, bounded at
    the door), replaced by the node's next answer."""

    __tablename__ = "stack_dumps"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    node: Mapped[str] = mapped_column(String(128), primary_key=True)
    capture_id: Mapped[str] = mapped_column(String(64))
    at: Mapped[float] = mapped_column(Float)  # when it arrived
    body: Mapped[dict[str, Any]] = mapped_column(JSON)
