"""``/api/runs/{run_id}/stacks``: where a run's processes are, from its wrappers' latest capture.

- ``GET``: the latest capture: who asked and why, the nodes asked and those that answered, the ranks
  grouped by where they are (the odd groups named: the ranks the majority waits for), every node's
  stacks.
- ``POST`` (a responder): capture now, from every connected wrapper of the run; audited.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request

from monitor.delivery.oncall import ActionError, capture_stacks
from monitor.stacks.model import NodeStacks
from monitor.stacks.page import report_of
from monitor.storage import stacks_repo
from monitor.web import status
from monitor.web.context import ApiContext, context
from monitor.web.gates import CredentialsFirst, acting, require_read, require_respond
from monitor.web.schemas import ErrorOut

router = APIRouter(tags=["runs"], route_class=CredentialsFirst)


def stacks_out(latest: stacks_repo.Latest, now: float) -> dict[str, Any]:
    """A capture as the API and the run page show it."""
    c = latest.capture
    pushes = [NodeStacks.model_validate(d.body) for d in latest.dumps]
    report = report_of(pushes, c.expected or (), c.requested_at, now) if not latest.waiting(now) else None
    return {
        "capture": c.capture_id,
        "reason": c.reason,
        "requested_by": c.requested_by,
        "requested_at": c.requested_at,
        "expected": list(c.expected or ()),
        "answered": sorted(p.node for p in pushes),
        "complete": latest.complete,
        "waiting": latest.waiting(now),
        "report": None if report is None else report.to_dict(now=now),
        "nodes": [p.model_dump() for p in sorted(pushes, key=lambda p: p.node)],
    }


@router.get(
    "/api/runs/{run_id:path}/stacks",
    summary="The run's latest stack capture: ranks grouped by where they are, the odd ones named",
    responses={404: {"model": ErrorOut, "description": "no such run, or no capture of it yet"}},
    dependencies=[Depends(require_read)],
)
def get_stacks(run_id: str, ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    with ctx.sessions() as s:
        run = status.one_run(s, run_id)
        latest = stacks_repo.latest(s, [run.id]).get(run.id)
        if latest is None:
            raise HTTPException(404, f"no stack capture of {run.id} yet")
        return stacks_out(latest, ctx.now())


@router.post(
    "/api/runs/{run_id:path}/stacks",
    status_code=202,
    summary="Capture the run's stacks now, from every connected `herowatch emit run` wrapper",
    responses={
        404: {"model": ErrorOut, "description": "no such run"},
        409: {"model": ErrorOut, "description": "no wrapper of the run is connected"},
    },
    dependencies=[Depends(require_respond)],
)
def post_stacks(run_id: str, request: Request, ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    broker = ctx.stacks
    if broker is None:
        raise HTTPException(409, "this herowatch runs no engine: no wrapper polls it")

    def ask(run: str, reason: str) -> tuple[str, frozenset[str]] | None:
        got = broker.ask(run, reason)
        return None if got is None else (got.id, got.nodes)

    actor = acting(request)
    with ctx.sessions.begin() as s:
        run = status.one_run(s, run_id)
        try:
            capture, nodes = capture_stacks(s, run.id, actor, ask, ctx.now())
        except ActionError as exc:
            raise HTTPException(exc.status, exc.message) from None
    return {"run": run.id, "capture": capture, "nodes": nodes}
