"""The wrappers' door (``herowatch emit run``, ``monitor.stacks.agent``), with a push watch's ingest token:

- ``POST /api/ingest/stacks/poll``: a node's long poll. herowatch holds it up to ``wait`` seconds and
  answers 200 with a capture to make (``{"capture": id}``), or 204 with nothing to ask. While it polls,
  the node counts as connected: a hang alert of its run asks it for stacks.
- ``POST /api/ingest/stacks``: a node's answer (``monitor.stacks.model.NodeStacks``, every field
  bounded), 413 beyond ``MAX_PUSH`` bytes, 422 field by field, 409 for a capture herowatch did not ask
  the run for.
"""

from __future__ import annotations

import asyncio
import time

from fastapi import APIRouter, HTTPException, Request, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from starlette.concurrency import run_in_threadpool

from alerts.text import check_plain
from monitor.run_ids import qualify
from monitor.stacks.model import NodeName, NodeStacks
from monitor.storage import stacks_repo
from monitor.storage.models import Run
from monitor.web.api.ingest import IngestTokenFirst, Name
from monitor.web.context import ApiContext
from monitor.web.schemas import ErrorOut

MAX_PUSH = 512 << 10  # bytes of one node's answer
LOOK_EVERY = 0.25  # seconds between looks for an ask while a poll is held

router = APIRouter(tags=["ingest"], route_class=IngestTokenFirst)


class PollIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    run: Name
    node: NodeName
    wait: float = Field(default=25.0, ge=0, le=60, description="seconds to hold the poll open")

    @field_validator("run", "node")
    @classmethod
    def _plain(cls, v: str) -> str:
        return check_plain(v)


class PollOut(BaseModel):
    capture: str


class PushOut(BaseModel):
    run: str
    capture: str
    processes: int


NO_ENGINE = "this herowatch takes no stack captures (it runs no engine)"


def _broker(request: Request):  # noqa: ANN202
    ctx: ApiContext = request.app.state.ctx
    if ctx.stacks is None:
        raise HTTPException(404, NO_ENGINE)
    return ctx.stacks


@router.post(
    "/api/ingest/stacks/poll",
    response_model=PollOut,
    summary="A wrapper's long poll: a stack capture to make, or 204 after `wait` seconds",
    responses={
        204: {"description": "nothing to capture: poll again"},
        401: {"model": ErrorOut},
        404: {"model": ErrorOut, "description": NO_ENGINE},
    },
)
async def poll(body: PollIn, request: Request) -> PollOut | Response:
    broker = _broker(request)
    run_id = qualify("push", request.state.watch, body.run)
    end = time.monotonic() + body.wait
    while True:
        ask = broker.take(run_id, body.node)
        if ask is not None:
            return PollOut(capture=ask.id)
        if time.monotonic() >= end or await request.is_disconnected():
            return Response(status_code=204)
        await asyncio.sleep(LOOK_EVERY)


@router.post(
    "/api/ingest/stacks",
    status_code=202,
    response_model=PushOut,
    summary="A node's stacks, in answer to a capture herowatch asked for",
    responses={
        404: {"model": ErrorOut, "description": NO_ENGINE},
        409: {"model": ErrorOut, "description": "herowatch did not ask this run for this capture"},
        413: {"model": ErrorOut, "description": f"the body is over {MAX_PUSH} bytes"},
        422: {"model": ErrorOut, "description": "not a node's stacks (field by field)"},
    },
)
async def push(request: Request) -> PushOut:
    broker = _broker(request)
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_PUSH:
        raise HTTPException(413, f"a node's stacks are at most {MAX_PUSH} bytes: cut frames or processes")
    raw = bytearray()
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_PUSH:
            raise HTTPException(413, f"a node's stacks are at most {MAX_PUSH} bytes: cut frames or processes")
    try:
        stacks = NodeStacks.model_validate_json(bytes(raw))
    except ValidationError as exc:
        where = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in exc.errors()[:5]
        )
        raise HTTPException(422, f"not a node's stacks: {where}"[:1000]) from None
    run_id = qualify("push", request.state.watch, stacks.run)
    ctx: ApiContext = request.app.state.ctx
    ask = broker.current(run_id)

    def keep() -> None:
        now = ctx.now()
        with ctx.sessions.begin() as s:
            latest = stacks_repo.latest(s, [run_id]).get(run_id)
            if latest is None or latest.capture.capture_id != stacks.capture:
                if ask is None or ask.id != stacks.capture:
                    raise HTTPException(409, f"herowatch did not ask {run_id} for capture {stacks.capture}")
                if s.get(Run, run_id) is None:
                    raise HTTPException(409, f"no run {run_id}: herowatch has not seen it yet")
                stacks_repo.start(  # the answer came before the ask's own record: record it now
                    s,
                    run_id,
                    ask.id,
                    reason=ask.reason,
                    requested_by="herowatch",
                    at=ask.at,
                    hold_until=ask.at + broker.hold,
                    expected=ask.nodes,
                )
            if not stacks_repo.answer(s, run_id, stacks.capture, stacks.node, stacks.model_dump(), now):
                raise HTTPException(409, f"{run_id} has answers from as many nodes as it takes")

    await run_in_threadpool(keep)
    return PushOut(run=run_id, capture=stacks.capture, processes=len(stacks.processes))
