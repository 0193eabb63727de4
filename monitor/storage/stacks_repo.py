"""A run's latest stack capture (``StackCapture``) and its nodes' answers (``StackDump``). SQL only: what
the answers say is ``monitor.stacks.analysis``'s."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from monitor.storage.stack_models import StackCapture, StackDump

MAX_NODES = 4096  # answers kept per run: a token holder cannot grow the table without end


@dataclass(frozen=True)
class Latest:
    capture: StackCapture
    dumps: list[StackDump]  # the answers to this capture

    @property
    def complete(self) -> bool:
        return set(self.capture.expected or ()) <= {d.node for d in self.dumps}

    def waiting(self, now: float) -> bool:
        """A hang's page still waits for answers."""
        return not self.complete and now < self.capture.hold_until


def start(
    s: Session,
    run_id: str,
    capture_id: str,
    *,
    reason: str,
    requested_by: str,
    at: float,
    hold_until: float,
    expected: Iterable[str],
) -> StackCapture:
    """Record a new capture of the run (idempotent on ``capture_id``: a node's answer may come first)."""
    row = s.get(StackCapture, run_id)
    if row is None:
        row = StackCapture(run_id=run_id)
        s.add(row)
    if row.capture_id != capture_id:  # a new capture settles anew, and is nobody's reply yet
        row.settled_at = row.reply_receiver = row.reply_ref = None
    row.capture_id = capture_id
    row.reason, row.requested_by = reason[:300], requested_by[:200]
    row.requested_at, row.hold_until = at, hold_until
    row.expected = sorted(expected)
    return row


def reply_in(s: Session, run_id: str, capture_id: str, receiver: str, ref: str) -> None:
    """Answer the capture in a Slack thread (``ref``: "channel:ts" of ``receiver``) once it settles."""
    row = s.get(StackCapture, run_id)
    if row is not None and row.capture_id == capture_id:
        row.reply_receiver, row.reply_ref = receiver[:128], ref[:200]


def answer(s: Session, run_id: str, capture_id: str, node: str, body: dict[str, Any], at: float) -> bool:
    """Keep a node's answer; False if the run has answers from as many nodes as it takes."""
    row = s.get(StackDump, (run_id, node))
    if row is None:
        n = len(s.scalars(select(StackDump.node).where(StackDump.run_id == run_id).limit(MAX_NODES)).all())
        if n >= MAX_NODES:
            return False
        row = StackDump(run_id=run_id, node=node)
        s.add(row)
    row.capture_id, row.at, row.body = capture_id, at, body
    return True


def latest(s: Session, run_ids: Iterable[str]) -> dict[str, Latest]:
    """Each run's latest capture with the answers to it."""
    ids = list(set(run_ids))
    if not ids:
        return {}
    captures = {c.run_id: c for c in s.scalars(select(StackCapture).where(StackCapture.run_id.in_(ids)))}
    out = {run: Latest(c, []) for run, c in captures.items()}
    for d in s.scalars(select(StackDump).where(StackDump.run_id.in_(list(captures)))):
        if d.capture_id == captures[d.run_id].capture_id:
            out[d.run_id].dumps.append(d)
    return out


def forget(s: Session, run_id: str) -> None:
    s.execute(delete(StackDump).where(StackDump.run_id == run_id))
    s.execute(delete(StackCapture).where(StackCapture.run_id == run_id))
