"""``/api/runs/{run_id}/stacks``: where a run's processes are, from its wrappers' latest capture.

- ``GET``: the latest capture: who asked and why, the nodes asked and those that answered, the ranks
  grouped by where they are (the odd groups named: the ranks the majority waits for), every node's
  stacks.
- ``POST`` (a responder): capture now, from every connected wrapper of the run; audited.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request

from monitor.delivery.oncall import ActionError
from monitor.web import status
from monitor.web.context import ApiContext, context
from monitor.web.gates import CredentialsFirst, acting, require_read, require_respond
from monitor.web.schemas import ErrorOut
from monitor.web.stacks_view import capture_now, stacks_of

router = APIRouter(tags=["runs"], route_class=CredentialsFirst)


@router.get(
    "/api/runs/{run_id:path}/stacks",
    summary="The run's latest stack capture: ranks grouped by where they are, the odd ones named",
    responses={
        401: {"model": ErrorOut},
        403: {"model": ErrorOut},
        404: {"model": ErrorOut, "description": "no such run, or no capture of it yet"},
    },
    dependencies=[Depends(require_read)],
)
def get_stacks(run_id: str, ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    with ctx.sessions() as s:
        run = status.one_run(s, run_id)
        out = stacks_of(s, run.id, ctx.now())
        if out is None:
            raise HTTPException(404, f"no stack capture of {run.id} yet")
        return out


@router.post(
    "/api/runs/{run_id:path}/stacks",
    status_code=202,
    summary="Capture the run's stacks now, from every connected `herowatch emit run` wrapper",
    responses={
        401: {"model": ErrorOut},
        403: {"model": ErrorOut},
        404: {"model": ErrorOut, "description": "no such run"},
        409: {"model": ErrorOut, "description": "no wrapper of the run is connected"},
    },
    dependencies=[Depends(require_respond)],
)
def post_stacks(run_id: str, request: Request, ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    actor = acting(request)
    with ctx.sessions.begin() as s:  # a refusal is committed too: it is in the audit trail
        run = status.one_run(s, run_id)
        try:
            capture, nodes = capture_now(ctx, s, run.id, actor)
        except ActionError as exc:
            refused = exc
        else:
            refused = None
    if refused is not None:
        raise HTTPException(refused.status, refused.message)
    return {"run": run.id, "capture": capture, "nodes": nodes}
