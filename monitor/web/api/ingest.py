"""``POST /api/ingest``: a job pushes its own samples and events (``herowatch emit``, ``monitor.cli.emit``).

The door of a ``push:`` watch. It takes a per-watch ingest token (the environment variable the watch's
``push.token_env`` names; never the API token), checks the body once (the trace format's fields,
bounded sizes, times near now), checks the watch's limits and charges its budget
(``monitor.web.api.ingest_budget``: metric names per sample and their length, samples and spool bytes
per second, bytes not yet read by the poller; 413 saying what fits for what could never pass, 429 with
Retry-After for what can pass later), and appends the lines to the spool before it answers
202: what was accepted is on disk, and the push source reads it on its next poll.

Events are what only the job knows: ``started`` (state running), ``exit`` with the exit code and its
cause (``exit``, ``oom-killed``, ``signal 9``): 0 is finished, anything else a failure with the
``exit_code`` metric, so ``run_crashed`` pages at once and says why; ``alert`` (a custom alert, as W&B's
``wandb.alert``: ``title`` of at most 64 characters, ``text``, ``level`` info/warn/error, ``wait``
seconds within which a repeat of the title is dropped) and ``resolve`` (the job says the alert of that
title is over), which the ``job_alert`` rules of the hero pack turn into alerts.
"""

from __future__ import annotations

import hmac
import math
import os
import signal
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Request, Response
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator, model_validator

from alerts.text import check_plain
from monitor.run_ids import MAX_ID, qualify
from monitor.samples import (
    ALERT_METRIC,
    MAX_ALERT_TEXT,
    MAX_ALERT_TITLE,
    MAX_ALERT_WAIT,
    MAX_STEP,
    JobAlert,
    RunState,
    as_number,
)
from monitor.settings import MIN_TOKEN_CHARS
from monitor.sources.push_config import PushTarget
from monitor.sources.push_spool import SpoolWriter, TooManyRuns, line
from monitor.web.api.ingest_budget import Budgets, check_sizes
from monitor.web.schemas import ErrorOut

MAX_SAMPLES = 5000  # per request; the body limit (HEROWATCH_MAX_BODY_API) bounds it too
MAX_EVENTS = 100
FUTURE = 300.0  # a time this far ahead of herowatch's clock is refused (a wrong clock, not a sample)
PAST = 7 * 86400.0

Name = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f]+$")]
Value = float | int | bool | str | None


class PushedSample(BaseModel):
    model_config = ConfigDict(extra="forbid")
    t: float | None = Field(default=None, description="epoch seconds; default: when it arrived")
    step: int | None = Field(
        default=None, ge=0, le=MAX_STEP, description="at most 2^63-1 (what storage holds)"
    )
    metrics: dict[Name, Value] = Field(default_factory=dict, max_length=2000)
    state: Literal["running", "finished", "crashed", "failed", "killed", "preempted", "pending"] | None = None

    @field_validator("metrics")
    @classmethod
    def _numbers(cls, v: dict[str, Value]) -> dict[str, Value]:
        for name, value in v.items():
            if value is not None and as_number(value) is None:
                raise ValueError(f"metric {name!r}: expected a number, null, 'NaN' or 'Infinity'")
        return v


Title = Annotated[
    str,
    StringConstraints(
        strip_whitespace=True, min_length=1, max_length=MAX_ALERT_TITLE, pattern=r"^[^\x00-\x1f\x7f]+$"
    ),
]
_ALERT_FIELDS = ("title", "text", "level", "wait")


class PushedEvent(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["started", "exit", "alert", "resolve"]
    t: float | None = None
    exit_code: int | None = Field(default=None, ge=-255, le=255, description="exit: the process's code")
    cause: str | None = Field(
        default=None, max_length=64, description="exit: 'exit', 'oom-killed' or 'signal N'"
    )
    step: int | None = Field(default=None, ge=0, le=MAX_STEP)
    title: Title | None = Field(default=None, description="alert, resolve: what the alert is (its identity)")
    text: str | None = Field(default=None, max_length=MAX_ALERT_TEXT, description="alert: what to tell")
    level: Literal["info", "warn", "error"] | None = Field(
        default=None, description="alert: info (recorded, never notifies), warn, error (pages); default info"
    )
    wait: float | None = Field(
        default=None,
        ge=0,
        le=MAX_ALERT_WAIT,
        description="alert: seconds within which a repeat of this title is dropped (default 60)",
    )

    @field_validator("level", mode="before")
    @classmethod
    def _level(cls, v: object) -> object:
        return v.strip().lower() if isinstance(v, str) else v  # W&B spells them INFO, WARN, ERROR

    @model_validator(mode="after")
    def _fields_of_kind(self) -> PushedEvent:
        if self.kind in ("alert", "resolve") and self.title is None:
            raise ValueError(f"a {self.kind} event needs a title")
        allowed = {"alert": _ALERT_FIELDS, "resolve": ("title",)}.get(self.kind, ())
        extra = [f for f in _ALERT_FIELDS if getattr(self, f) is not None and f not in allowed]
        if extra:
            raise ValueError(f"{', '.join(extra)}: not fields of a {self.kind} event")
        return self

    def job_alert(self) -> JobAlert:
        """The alert (or resolve) this event carries."""
        if self.kind == "resolve":
            return JobAlert(self.title or "", resolved=True)
        wait = {} if self.wait is None else {"wait": self.wait}
        return JobAlert(self.title or "", self.text or "", self.level or "info", **wait)


class IngestBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    run: Name
    samples: list[PushedSample] = Field(default_factory=list, max_length=MAX_SAMPLES)
    events: list[PushedEvent] = Field(default_factory=list, max_length=MAX_EVENTS)

    @field_validator("run")
    @classmethod
    def _plain(cls, v: str) -> str:
        return check_plain(v)  # no U+202E, zero-width spaces, U+2028: a name must read as it is


class IngestOut(BaseModel):
    run: str
    accepted: int


def signal_number(cause: str) -> int | None:
    """``signal 9``, ``signal SIGKILL``, ``SIGKILL`` -> 9; None if ``cause`` names no signal."""
    word = cause.removeprefix("signal").strip().upper()
    if word.isdigit():
        return int(word)
    name = word if word.startswith("SIG") else f"SIG{word}"
    return signal.Signals[name].value if name in signal.Signals.__members__ else None


def exit_sample(event: PushedEvent) -> tuple[RunState, int | None]:
    """The state and ``exit_code`` an exit event means (the code a shell would report: 128+N for a
    signal N). Only 0 with cause ``exit`` is finished."""
    code, cause = event.exit_code, (event.cause or "exit").strip().lower()
    if cause == "oom-killed":
        return RunState.FAILED, code if code not in (None, 0) else 128 + signal.SIGKILL
    if cause != "exit":
        number = signal_number(cause)
        if number is not None:
            killed = number in (signal.SIGKILL, signal.SIGTERM)
            return (RunState.KILLED if killed else RunState.FAILED), 128 + number
        return RunState.FAILED, code
    if code is not None and code < 0:  # Python's returncode for "killed by signal -code"
        code = 128 - code
    return (RunState.FINISHED if code == 0 else RunState.FAILED), code


@dataclass
class IngestDoor:
    """The push watches this process takes pushes for: token -> watch, and each watch's bucket."""

    writer: SpoolWriter
    targets: dict[str, PushTarget]  # watch -> its settings
    tokens: dict[str, str] = field(default_factory=dict)  # watch -> its ingest token
    budgets: Budgets | None = None  # default: over the writer's spool

    def __post_init__(self) -> None:
        if self.budgets is None:
            self.budgets = Budgets(self.writer.root)

    @classmethod
    def from_watches(cls, watches: list, root, env: dict[str, str] | None = None) -> IngestDoor:
        env = dict(os.environ) if env is None else env
        door = cls(SpoolWriter(root), {})
        for w in watches:
            target = getattr(w, "push", None)
            if target is None:
                continue
            door.targets[w.name] = target
            token = env.get(target.token_env, "")
            if len(token) >= MIN_TOKEN_CHARS:
                door.tokens[w.name] = token
        return door

    def watch_of(self, request: Request) -> str:
        auth = request.headers.get("authorization", "")
        scheme, _, token = auth.partition(" ")
        if scheme.lower() != "bearer" or not token:
            raise HTTPException(401, "send 'Authorization: Bearer <the watch's ingest token>'")
        found = None
        for watch, expected in self.tokens.items():  # compare with every token: no early exit to time
            if hmac.compare_digest(token.encode(), expected.encode()):
                found = watch
        if found is None:
            if not self.tokens:
                raise HTTPException(403, "no push watch here has an ingest token set (push.token_env)")
            raise HTTPException(401, "not an ingest token of any push watch")
        return found


def _lines(body: IngestBody, now: float) -> list[bytes]:
    out = []
    for s in body.samples:
        metrics = {k: math.nan if v is None else as_number(v) for k, v in s.metrics.items()}
        out.append(line(s.t if s.t is not None else now, body.run, s.step, metrics, s.state))
    for e in body.events:
        t = e.t if e.t is not None else now
        if e.kind == "started":
            out.append(line(t, body.run, e.step, {}, RunState.RUNNING))
        elif e.kind in ("alert", "resolve"):
            alert = e.job_alert()
            out.append(line(t, body.run, e.step, {ALERT_METRIC: alert.metric()}, None, alert))
        else:
            state, code = exit_sample(e)
            out.append(line(t, body.run, e.step, {} if code is None else {"exit_code": float(code)}, state))
    return out


class IngestTokenFirst(APIRoute):
    """The ingest token is checked before FastAPI reads and validates the body (as
    ``monitor.web.auth.CredentialsFirst`` does for the API token): a request without it gets its 401
    whatever else is wrong with it. The watch it opens is handed on in ``request.state.watch``."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def token_first(request: Request) -> Response:
            door: IngestDoor | None = getattr(request.app.state, "ingest", None)
            if door is None or not door.targets:
                raise HTTPException(404, "no watch here takes pushes (add a push: source to a watch)")
            request.state.watch = door.watch_of(request)
            return await handler(request)

        return token_first


router = APIRouter(tags=["ingest"], route_class=IngestTokenFirst)


@router.post(
    "/api/ingest",
    status_code=202,
    response_model=IngestOut,
    summary="A job pushes its samples and events (a push watch's ingest token)",
    responses={
        401: {"model": ErrorOut, "description": "no ingest token, or not one of a push watch"},
        403: {"model": ErrorOut, "description": "no push watch here has an ingest token set"},
        404: {"model": ErrorOut, "description": "no watch here takes pushes"},
        409: {"model": ErrorOut, "description": "the watch has as many pushed runs as it takes"},
        413: {
            "model": ErrorOut,
            "description": "the body is larger than HEROWATCH_MAX_BODY_API, or it holds more samples and "
            "events than the watch's push.burst (header X-Herowatch-Max-Samples: send at most that many), "
            "a sample with more metric names than push.max_metrics (X-Herowatch-Max-Metrics), or more "
            "spool bytes than push.burst_bytes (X-Herowatch-Max-Bytes)",
        },
        422: {
            "model": ErrorOut,
            "description": "the body is not a valid push (field by field), or the run's name is too long "
            "for its id push:<watch>/<name>, or a metric name is longer than push.max_name",
        },
        429: {
            "model": ErrorOut,
            "description": "faster than the watch's push.rate or push.rate_bytes, or its poller has "
            "push.spool_bytes not read yet: wait Retry-After",
        },
    },
)
def ingest(body: IngestBody, request: Request) -> IngestOut | JSONResponse:
    """Append what a job pushed to its run's spool, on disk before the answer (202)."""
    door: IngestDoor = request.app.state.ingest
    watch: str = request.state.watch
    now = request.app.state.ctx.now()
    for item in [*body.samples, *body.events]:
        if item.t is not None and not (now - PAST <= item.t <= now + FUTURE):
            raise HTTPException(
                422, f"t={item.t}: over 5 minutes ahead of or 7 days behind herowatch's clock"
            )
    target = door.targets[watch]
    longest = MAX_ID - len(qualify("push", watch, ""))
    if len(body.run) > longest:
        raise HTTPException(
            422,
            f"run name is {len(body.run)} characters: watch {watch} takes run names of at most {longest} "
            f"(a run's id, push:{watch}/<name>, is at most {MAX_ID} characters)",
        )
    full = f"watch {watch} already has {target.max_runs} pushed runs (push.max_runs)"
    if not door.writer.known(watch, body.run) and door.writer.runs(watch) >= target.max_runs:
        raise HTTPException(409, full)
    n = len(body.samples) + len(body.events)
    lines = _lines(body, now)
    size = sum(map(len, lines))
    refused = check_sizes(watch, target, [list(s.metrics) for s in body.samples], n, size)
    refused = refused or door.budgets.charge(watch, target, n, size)  # type: ignore[union-attr]
    if refused is not None:
        return refused
    try:
        door.writer.append(watch, body.run, lines, max_runs=target.max_runs)
    except TooManyRuns:
        raise HTTPException(409, full) from None
    return IngestOut(run=body.run, accepted=n)
