"""The report as typed records: what the JSON, the Markdown, the page and the Slack post show."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from monitor.runs.goodput import BUCKETS

BADPUT = BUCKETS[1:]
LOST_TIME = tuple(b for b in BADPUT if b != "source_blind")  # badput: what the run lost (blind is unknown)
GpuBasis = Literal["setting", "fleet", "none"]


class Period(BaseModel):
    start: float = Field(description="epoch seconds, included")
    end: float = Field(description="epoch seconds, excluded")
    label: str = Field(description="e.g. 'week of 2026-11-23 (Mon 00:00 UTC) to 2026-11-30'")


class Hours(BaseModel):
    """Hours per goodput bucket (productive is the goodput; the others are badput). A report stored before
    a bucket existed reads it as 0."""

    productive: float = 0.0
    data_loading: float = Field(default=0.0, description="steps waiting for their batch (where logged)")
    checkpoint: float = Field(default=0.0, description="checkpoint saves")
    evaluation: float = Field(default=0.0, description="evaluations")
    paused: float = Field(default=0.0, description="other pauses (unexplained overhead)")
    startup: float = Field(default=0.0, description="process start to first step (start-up, restore)")
    stalled: float = Field(default=0.0, description="hung: no step while running")
    restarting: float = Field(default=0.0, description="exit of a process to the start of the next")
    down: float = Field(default=0.0, description="not running: crashed, killed, preempted")
    rework: float = Field(default=0.0, description="redone steps: work lost to a rewind")
    source_blind: float = Field(
        default=0.0, description="herowatch could not read the run's source, and no step accounts for it"
    )

    def total(self) -> float:
        return sum(getattr(self, b) for b in BUCKETS)

    def badput(self) -> float:
        """What the runs lost (source blind is not counted: what the run did then is unknown)."""
        return sum(getattr(self, b) for b in LOST_TIME)

    def ratio(self) -> float | None:
        """Productive share of the time herowatch could see (ETTR; source blind left out)."""
        t = self.total() - self.source_blind
        return self.productive / t if t > 0 else None

    def times(self, k: float) -> Hours:
        return Hours(**{b: getattr(self, b) * k for b in BUCKETS})


class RunReport(BaseModel):
    run: str
    name: str | None
    watch: str
    watched_hours: float = Field(description="wall time herowatch accounted in the period")
    goodput: float | None = Field(description="productive share of the watched time it could see (ETTR)")
    hours: Hours
    gpus: int | None = Field(description="GPUs the GPU-hours are counted with; None: hours only")
    gpus_from: GpuBasis = Field(description="setting: the watch's gpus:, fleet: fleet members, none")
    gpu_hours: Hours | None
    steps_made: int | None = Field(description="steps gained in the period (from the stored series)")
    tokens_made: float | None = Field(description="tokens in the period, when the run logs a token count")
    eta_start_hours: float | None = Field(description="time to the target step at the start of the period")
    eta_end_hours: float | None = Field(description="... and at its end")
    previous: Hours | None = Field(description="the period before, for comparison")
    previous_goodput: float | None


class Page(BaseModel):
    """An alert that fired in the period, with what it cost."""

    alert_id: int
    run: str
    rule: str
    severity: str
    symptom_at: float = Field(description="the last step before a hang, else the first bad sample")
    fired_at: float
    detect_seconds: float
    acked_at: float | None
    acked_by: str | None
    ack_seconds: float | None
    resolved_at: float | None
    resolve_seconds: float | None = Field(description="from the symptom to the resolution")
    badput_hours: float = Field(description="goodput lost in the incidents it overlapped")
    badput_gpu_hours: float | None
    noise: bool = Field(
        description="likely noise: resolved within the noise window (10 min after it fired) without an "
        "acknowledgement, or marked as noise by a person (an ack or silence comment starting 'noise')"
    )
    marked_noise: bool = Field(False, description="a person marked it as noise")
    culprit: str | None = Field(
        None,
        description='a hang: the call its stacks found the odd ranks in, e.g. "hung in read_chunk '
        '(tensorstore_io.py:120) on node-17 (rank 417)"',
    )


class PagedIncident(BaseModel):
    """The pages of one incident folded into one row: pages of one run whose spans (symptom to
    resolution) overlap each other or the same goodput incident."""

    run: str
    start: float = Field(description="the earliest symptom of its pages")
    end: float | None = Field(
        description="its last resolution; None: a page was still open at the period's end"
    )
    kind: str | None = Field(
        description="the goodput incident it overlapped (stall, restart, down, ...), if any"
    )
    rules: list[str] = Field(description="the rules that paged, most pages first")
    count: int
    first_fired: float
    last_fired: float
    detect_seconds: float = Field(description="first page - earliest symptom")
    ack_seconds: float | None = Field(description="first acknowledgement - first page")
    acked_by: str | None
    badput_hours: float = Field(description="what the goodput incidents it overlapped lost, each once")
    badput_gpu_hours: float | None
    noise: bool = Field(description="every page of it was likely noise")
    pages: list[int] = Field(description="alert ids of its pages, in the order they fired")
    culprit: str | None = Field(None, description="a hang: the call its pages' stacks named (Page.culprit)")


class Incident(BaseModel):
    """A goodput incident (a stall, restart, downtime or slow start) and the pages that named it."""

    run: str
    kind: str
    start: float
    end: float
    step: int | None
    steps_redone: int
    lost_hours: float = Field(description="its loss inside the period (as the goodput buckets count it)")
    lost_gpu_hours: float | None
    whole_lost_hours: float | None = Field(
        None, description="the whole incident's loss, when part of it fell outside the period"
    )
    rules: list[str]
    culprit: str | None = Field(None, description="a hang: the call its pages' stacks named (Page.culprit)")


class Recurring(BaseModel):
    rule: str
    run: str
    count: int
    every_seconds: float | None = Field(description="median time between consecutive pages")
    during_saves: int = Field(description="how many fell during a checkpoint save")
    summary: str = Field(description='e.g. "oom_kills: 9 times, every ~3 h, each during a checkpoint save"')


class RuleQuality(BaseModel):
    rule: str
    pages: int
    acked: int
    acked_share: float | None
    noise: int = Field(description="resolved within the noise window without an ack")
    noise_share: float | None
    median_detect_seconds: float | None


class Blind(BaseModel):
    run: str
    input: str
    hours: float


class Silenced(BaseModel):
    matchers: list[str]
    created_by: str
    comment: str
    hours: float = Field(description="hours of the period it was in force")


class Report(BaseModel):
    period: Period
    previous: Period
    generated_at: float
    timezone: str
    watch: str | None
    gpu_note: str = Field(description="how GPU-hours were counted, in words")
    runs: list[RunReport]
    totals: Hours
    gpu_totals: Hours | None = Field(description="over the runs with a GPU count")
    pages: list[Page]
    paged: list[PagedIncident] = Field(description="the pages folded into one row per incident")
    costliest: list[Incident] = Field(description="the three costliest incidents")
    incidents: list[Incident]
    recurring: list[Recurring]
    quality: list[RuleQuality]
    blind: list[Blind]
    silences: list[Silenced]
    not_accounted: list[str] = Field(description="runs without any goodput ledger in the period")

    def badput_shown(self) -> list[str]:
        """The badput buckets the tables show: those with any time in the period (a zero column says
        nothing); the hidden ones are zero, so the columns still add up to the watched time."""
        return [b for b in BADPUT if getattr(self.totals, b) > 0]

    def name_of(self, run: str) -> str:
        """What people call a run of this report (its name), else herowatch's id of it."""
        return next((x.name for x in self.runs if x.run == run and x.name), run)
