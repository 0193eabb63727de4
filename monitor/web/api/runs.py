"""``/api/runs``: every run's health at a glance, and one run's whole story."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response

from monitor.web import status
from monitor.web.conditional import answer, current, encoded, json_bytes, memo
from monitor.web.context import ApiContext, context
from monitor.web.coverage import CoverageOut, coverage_out
from monitor.web.gates import CredentialsFirst, require_read
from monitor.web.run_detail import MAX_POINTS, run_detail
from monitor.web.schemas import ErrorOut, RunDetail, RunOut

router = APIRouter(tags=["runs"], dependencies=[Depends(require_read)], route_class=CredentialsFirst)


@router.get(
    "/api/runs",
    response_model=list[RunOut],
    summary="Every watched run with its health",
    description="Per run: its kind (pretraining, sft, rl, other) and headline figure (an RL run's "
    "reward, else the loss), state, step, steps/s, ETA to the target step, latest loss, MFU and tokens/s, "
    "when it was last seen, firing and pending alerts by severity, goodput, and what is wrong in words. "
    "Ordered by run id; `order=urgency` puts what needs on-call first; `kind=rl` lists RL runs only. "
    "Served from the status snapshot (at most one poll interval old) with an `ETag`: a request with "
    "`If-None-Match` gets `304 Not Modified` and no body while nothing has changed.",
    responses={304: {"description": "not modified since the ETag sent in If-None-Match"}},
)
async def list_runs(
    request: Request,
    order: str = Query("id", pattern="^(id|urgency)$", description="id, or urgency (firing alerts first)"),
    kind: str | None = Query(
        None,
        pattern=r"^[a-z][a-z0-9_-]{0,31}$",
        description="only runs of this kind: pretraining, sft, rl, other (or a kind a pack declares)",
    ),
) -> Response:
    snap = await current(request)

    def make():  # noqa: ANN202
        runs = snap.runs_of(kind)
        runs = sorted(runs, key=status.urgency) if order == "urgency" else runs
        return encoded(f"runs|{kind}|{order}", json_bytes(RunOut, runs))

    return answer(request, await memo(snap, ("api/runs", kind, order), make))


@router.get(
    "/api/runs/{run_id:path}/coverage",
    response_model=CoverageOut,
    summary="Which of a run's rules can see",
    description="Per rule and input (a metric, a Prometheus alias, the step counter, the run state): "
    "when a value last arrived and whether the rule is covered, warming up, blind (an input it needs "
    "never arrived, or stopped for far longer than its own cadence), unknown (its source cannot be "
    "read) or unused (an optional input this run does not log). `summary` is the watching_blind text, "
    "`keys` what the run logs, `gaps` why a source found nothing (a Prometheus query with no series).",
    responses={404: {"model": ErrorOut, "description": "no such run"}},
)
def get_coverage(run_id: str, ctx: ApiContext = Depends(context)) -> CoverageOut:
    with ctx.sessions() as s:
        return coverage_out(status.one_run(s, run_id))


@router.get(
    "/api/runs/{run_id:path}",
    response_model=RunDetail,
    summary="One run: summary, series, restarts and alert timeline",
    description="`run_id` is herowatch's id of the run (`wandb:entity/project/run id`, `sim:watch/run`, "
    "`prometheus:watch/run`); a display name or a W&B run id that only one run has finds it too. "
    "The run's summary plus its chart series (per metric, min and max per bucket, so a "
    "one-step spike survives downsampling), its restarts and downtimes with the time each cost, its "
    "goodput breakdown with every incident, and its alert timeline (transitions, newest first).",
    responses={
        404: {"model": ErrorOut, "description": "no such run"},
        409: {"model": ErrorOut, "description": "several runs have this display name: use an id"},
    },
)
def get_run(
    run_id: str,
    metric: list[str] | None = Query(None, description="only these metrics (repeatable); default: all"),
    max_points: int = Query(MAX_POINTS, ge=8, le=4096, description="at most this many buckets per series"),
    timeline_limit: int = Query(300, ge=1, le=5000),
    ctx: ApiContext = Depends(context),
) -> RunDetail:
    with ctx.sessions() as s:
        run = status.one_run(s, run_id)
        return run_detail(ctx, s, run, metrics=metric, max_points=max_points, timeline_limit=timeline_limit)
