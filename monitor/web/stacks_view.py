"""A run's stacks as the API, the run page and Slack show them, and the on-demand capture all three
doors share (``monitor.delivery.oncall.capture_stacks``, through the serve process's broker)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from monitor.delivery.actor import Actor
from monitor.delivery.oncall import ActionError, capture_stacks
from monitor.stacks.model import NodeStacks
from monitor.stacks.page import report_of
from monitor.storage import stacks_repo
from monitor.web.context import ApiContext


def stacks_out(latest: stacks_repo.Latest, now: float) -> dict[str, Any]:
    """A capture: who asked and why, the nodes asked and those that answered, the ranks grouped by where
    they are (None while the answers are awaited), every node's stacks."""
    c = latest.capture
    pushes = [NodeStacks.model_validate(d.body) for d in latest.dumps]
    waiting = latest.waiting(now)
    report = None if waiting else report_of(pushes, c.expected or (), c.requested_at, now)
    return {
        "capture": c.capture_id,
        "reason": c.reason,
        "requested_by": c.requested_by,
        "requested_at": c.requested_at,
        "expected": list(c.expected or ()),
        "answered": sorted(p.node for p in pushes),
        "complete": latest.complete,
        "waiting": waiting,
        "report": None if report is None else report.to_dict(now=now),
        "nodes": [p.model_dump() for p in sorted(pushes, key=lambda p: p.node)],
    }


def stacks_of(s: Session, run_id: str, now: float) -> dict[str, Any] | None:
    latest = stacks_repo.latest(s, [run_id]).get(run_id)
    return None if latest is None else stacks_out(latest, now)


def connected(ctx: ApiContext, run_id: str) -> list[str]:
    """The nodes of the run whose wrappers poll this server now."""
    return sorted(ctx.stacks.nodes(run_id)) if ctx.stacks is not None else []


def capture_now(ctx: ApiContext, s: Session, run_id: str, actor: Actor) -> tuple[str, list[str]]:
    """Ask every connected wrapper of the run for its stacks now; audited. ActionError 404 for an unknown
    run, 409 when no wrapper of it is connected."""
    broker = ctx.stacks
    if broker is None:
        raise ActionError(409, "this herowatch runs no engine: no wrapper polls it")

    def ask(run: str, reason: str) -> tuple[str, frozenset[str]] | None:
        got = broker.ask(run, reason)
        return None if got is None else (got.id, got.nodes)

    return capture_stacks(s, run_id, actor, ask, ctx.now(), broker.hold)
