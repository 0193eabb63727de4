"""Request and response models of the status API (they make the OpenAPI document).

Times are ISO 8601 UTC strings ("2026-01-01T12:00:00Z"); durations are seconds.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from fastapi import Path
from pydantic import BaseModel, Field

from alerts.text import check_plain
from monitor.times import NotATime, bounded, parse_iso

Health = Literal["critical", "warning", "ok", "unknown", "ended"]

# ---- what a request may hold (checked here, at the edge, so storage never sees it) -------------------
MAX_ID = 2**31 - 1  # ids are 32-bit integers in PostgreSQL
db_id = Annotated[int, Path(ge=1, le=MAX_ID, description="a positive id")]


def plain_text(value: str, multiline: bool = False) -> str:
    """``value`` unless it holds a control character (NUL, escape, C1 controls such as U+0085, bidi
    overrides such as U+202E, lone surrogates; newlines and tabs only where ``multiline``): PostgreSQL
    refuses NUL in text, and none of them belongs in a name or a comment (``alerts.text``)."""
    return check_plain(value, multiline)


def epoch_seconds(value: str | float | None) -> float | None:
    """Epoch seconds from epoch seconds or an ISO 8601 time (UTC when no offset is given), finite and
    between 2000 and 2100 (``monitor.times``, the bound report periods use too)."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ValueError("expected a time, not true/false")
    if isinstance(value, int | float):
        return bounded(float(value) if abs(value) < 1e300 else math.inf, value)
    try:
        t = float(value.strip())
    except ValueError:
        t = None
    if t is not None:
        return bounded(t, value)
    try:
        return parse_iso(value)
    except NotATime:
        raise ValueError(f"{value[:60]!r} is not a time; use ISO 8601, e.g. 2026-01-31T08:00:00Z") from None


class Incident(BaseModel):
    kind: str = Field(description="stall | restart | down | startup")
    start: str
    end: str | None = Field(description="None while it lasts")
    ongoing: bool
    seconds_lost: float
    step: int | None = Field(description="the step it happened at (a restart: the step resumed from)")
    steps_redone: int = Field(0, description="restart: steps computed again after the rewind (lost work)")
    alerts: list[str] = Field(default_factory=list, description="rules that fired during it")


class GoodputSummary(BaseModel):
    ratio: float | None = Field(
        description="productive share of the wall time since first seen that herowatch could see (ETTR)"
    )
    wall_seconds: float
    productive_seconds: float
    lost_seconds: dict[str, float] = Field(
        description="data_loading, checkpoint, evaluation, paused (other pauses), startup, stalled (hung), "
        "restarting, down, rework (redone steps), source_blind (herowatch could not read the run's "
        "source); see docs/reports.md"
    )
    steps_redone: int
    median_step_seconds: float | None
    incident_counts: dict[str, int]
    since: str | None = Field(description="when herowatch first saw the run: the start of the accounting")


class Goodput(GoodputSummary):
    incidents: list[Incident] = Field(description="newest last; the last may be ongoing")


class MetricsProfileOut(BaseModel):
    """Whose metric names the run logs, and how herowatch knows (monitor/profiles)."""

    name: str | None = Field(description="the profile applied (megatron, huggingface, ...); null: none")
    trainer: str | None = None
    how: Literal["configured", "detected", "off"] = Field(
        description="set in the watch config, detected from the run's keys, or mapping switched off"
    )
    confidence: float | None = Field(default=None, description="detected: 0..1")
    keys: list[str] = Field(default_factory=list, description="the marker keys that identified it")
    renames: bool = Field(
        default=True,
        description="detected: whether the profile renames any key "
        "(false: the run logs herowatch's own names, which say nothing of its trainer)",
    )
    explain: str = ""


class RunKindOut(BaseModel):
    """What the run is, and how herowatch knows (monitor/rules/panels)."""

    name: str = Field(description="pretraining, sft, rl, other, or a kind a pack in force declares")
    how: Literal["configured", "inferred"] = Field(description="set in the watch config, or from its metrics")
    evidence: list[str] = Field(default_factory=list, description="inferred: the metrics that tell")


class HeadlineOut(BaseModel):
    metric: str = Field(description="the metric the run's kind puts first: loss, or an RL run's reward")
    label: str
    value: float | None = Field(description="its latest value")


class RunOut(BaseModel):
    id: str = Field(
        description="source-qualified: wandb:entity/project/run id, sim:watch/run, prometheus:watch/run, "
        "push:watch/run, tensorboard:watch/run dir, mlflow:experiment/run id"
    )
    watch: str
    source: str
    name: str | None = Field(description="the run's own id at its source (a W&B run's 8-character id)")
    project: str | None = Field(description="where that name is unique: W&B entity/project, else the watch")
    title: str = Field(description="its display name, with the project where another run shares that name")
    kind: str = Field(description="pretraining, sft, rl or other (see run_kind)")
    run_kind: RunKindOut | None = None
    headline: HeadlineOut
    display_name: str | None
    url: str | None
    labels: dict[str, str]
    state: str | None
    health: Health
    problem: str = Field(description='what is wrong, in words ("Healthy" when nothing is)')
    step: int | None
    target_step: int | None
    steps_per_second: float | None = Field(description="over the last 64 steps")
    eta_seconds: float | None = Field(description="to the target step at the current rate")
    eta_at: str | None
    loss: float | None = Field(description="latest train/loss")
    tokens_per_second: float | None
    mfu: float | None = Field(description="latest model FLOPs utilisation, percent")
    last_step_at: str | None
    last_seen_at: str | None
    last_polled_at: str | None
    stale: dict[str, float] = Field(
        default_factory=dict,
        description="metric -> age in seconds of each latest value older than the run's cadence allows "
        "(three of its usual gaps): shown as stale, with its age, never as now",
    )
    source_error: str | None
    restarts: int
    active_alerts: dict[str, int] = Field(description="firing alerts by severity")
    pending_alerts: dict[str, int] = Field(description="pending alerts by severity")
    silenced_alerts: int = Field(description="firing or pending alerts muted by a silence")
    metrics_profile: MetricsProfileOut | None = Field(
        default=None, description="the trainer vocabulary applied to the run's metric names"
    )
    blind_rules: list[str] = Field(
        default_factory=list, description="rules that get no data from this run (watched blind)"
    )
    unlogged_inputs: list[str] = Field(
        default_factory=list,
        description="optional inputs this run never logged (their rules are not counted; nobody is paged)",
    )
    goodput: GoodputSummary | None


class Bucket(BaseModel):
    x0: float
    x1: float
    min: float | None
    max: float | None
    mean: float | None
    last: float | None
    count: int
    nonfinite: int = Field(description="NaN or infinite values folded into the bucket")
    t: float | None = Field(None, description="epoch seconds of the newest point in the bucket (time axis)")


class Series(BaseModel):
    axis: Literal["step", "time"] = Field(description="x is a step, or epoch seconds for step-less metrics")
    buckets: list[Bucket]
    earlier: list[Bucket] = Field(
        default_factory=list,
        description="steps a rewind (a restart from a checkpoint) redid, as first logged",
    )


class TimelineEntry(BaseModel):
    at: str
    alert_id: int
    rule: str
    severity: str
    from_state: str
    to_state: str
    reason: str
    value: float | None
    step: int | None


class PanelOut(BaseModel):
    id: str
    title: str
    unit: str
    metrics: list[str] = Field(description="what it draws: series, bands and the metrics of its lines")


class SourcePartOut(BaseModel):
    """One source of a run joined from several (``join:`` in its watch): what it gives the run."""

    source: str = Field(description="the source kind: slurm, wandb, logs, prometheus, ...")
    run: str | None = Field(description="the run's own id at that source (null: read under the joined id)")
    last_at: float | None = Field(default=None, description="when it last answered for the run (epoch s)")
    gives: list[str] = Field(default_factory=list, description="state, steps, alerts, metric names")
    also: list[str] = Field(default_factory=list, description="what it logs that another part gives")


class RunDetail(RunOut):
    goodput: Goodput | None  # type: ignore[assignment]
    sources: list[SourcePartOut] = Field(
        default_factory=list, description="a joined run's parts, in the order of trust; empty otherwise"
    )
    panels: list[PanelOut] = Field(
        default_factory=list, description="the panels of the packs in force for the run's kind, in order"
    )
    series: dict[str, Series] = Field(description="metric -> min/max per bucket, at most max_points buckets")
    restart_incidents: list[Incident] = Field(description="restarts and downtimes, from goodput")
    timeline: list[TimelineEntry] = Field(description="alert transitions, newest first")
    alerts: list[AlertOut] = Field(description="the run's pending and firing alerts")


class HintOut(BaseModel):
    text: str = Field(description='e.g. "node-17 GPU 3: SM active 0.02, fleet median 0.97"')
    member: str | None = Field(
        description='"node-17 GPU 3" or "node-17"; null: the verdict that none stands out'
    )
    host: str | None
    device: str | None = Field(
        description="the GPU on the host; null for a host's own metric (network, disk)"
    )
    metric: str | None = Field(description="the fleet metric, e.g. sm_active, net_rx")
    label: str | None = Field(description='what people call it, e.g. "SM active"')
    unit: str | None
    value: float | None = Field(description="the member's mean over the window")
    median: float | None = Field(description="the fleet median of those means")
    score: float | None = Field(description="distance from the median in robust sigmas (1.4826 x MAD)")


class HintsOut(BaseModel):
    """Culprit hints: the run's fleet members that stood out when the alert fired, or one item saying
    that none did."""

    window_start: str
    window_end: str
    window_seconds: float
    items: list[HintOut]


class AlertOut(BaseModel):
    id: int
    fingerprint: str
    rule: str
    kind: str
    run: str
    run_title: str | None = Field(None, description="the run's display name (and project, where shared)")
    metric: str | None
    severity: str
    state: str
    labels: dict[str, str]
    summary: str = Field(description="what it fired with (for a resolved alert: the past)")
    resolved_reason: str | None = Field(None, description="a resolved alert: why it ended, true now")
    description: str | None
    runbook_url: str | None
    value: float | None
    threshold: float | None
    step: int | None
    active_at: str
    fired_at: str | None
    resolved_at: str | None
    silenced: bool = Field(description="an active silence mutes it (only pending or firing alerts)")
    silenced_by: int | None = Field(description="id of that silence")
    acknowledged: bool
    acked_by: str | None
    acked_at: str | None
    hints: HintsOut | None = Field(
        None, description="stall, telemetry_gone, drop and straggler alerts of runs with fleet data"
    )


class RuleOut(BaseModel):
    name: str
    kind: str
    severity: str
    metric: str | None
    for_seconds: float
    keep_firing_for_seconds: float
    parameters: dict[str, Any] = Field(description="the kind's own parameters, as configured")
    labels: dict[str, str]
    annotations: dict[str, str]


class HealthOut(BaseModel):
    status: str
    version: str


class ReadyOut(BaseModel):
    status: Literal["ready", "not ready"]
    checks: dict[str, str] = Field(description="database and each source: ok, or what is wrong")
    reasons: list[str]


class ErrorOut(BaseModel):
    error: str = Field(description="what went wrong, in words")
    detail: Any = None


RunDetail.model_rebuild()
