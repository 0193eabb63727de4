"""Settings of the built-in simulated hero run."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from monitor.durations import Duration
from monitor.sources.registry import SourceTarget, register

IncidentKind = Literal[
    "stall",
    "restart",
    "loss_spike",
    "nan",
    "throughput_drop",
    "oom_kill",
    "crash",
    "outage",
    "reward_collapse",
]


class Incident(BaseModel):
    """Something going wrong at ``at`` after the simulated run starts."""

    model_config = ConfigDict(extra="forbid")

    kind: IncidentKind
    at: Duration
    duration: Duration | None = Field(
        default=None,
        description="stall, loss_spike, nan, throughput_drop, outage (source unreadable), reward_collapse",
    )
    factor: float = Field(default=0.9, gt=0, description="throughput_drop: speed kept, e.g. 0.9 = 10% slower")
    magnitude: float = Field(default=1.0, gt=0, description="loss_spike: relative jump, 1.0 = loss doubles")
    count: int = Field(default=1, ge=1, description="oom_kill: kills at once")
    rewind_to: int | None = Field(
        default=None, ge=0, description="restart: step to resume from (default: last checkpoint)"
    )

    @model_validator(mode="after")
    def _needs_duration(self) -> Incident:
        if self.kind == "stall" and not self.duration:
            raise ValueError("a stall needs a duration (how long no step completes)")
        if self.kind == "outage" and not self.duration:
            raise ValueError("an outage needs a duration (how long the source cannot be read)")
        if self.kind == "reward_collapse" and not self.duration:
            raise ValueError("a reward_collapse needs a duration (how long the policy stays collapsed)")
        return self

    def end(self) -> float:
        """When the incident is over, from the run's start (single-step ones: at ``at``)."""
        return self.at + (self.duration or 0.0)


class SimTarget(SourceTarget):
    """A simulated run. All times are on the engine's clock, which the demo speeds up."""

    model_config = ConfigDict(extra="forbid")

    run: str | None = Field(default=None, description="run id; default: the watch name")
    trains: Literal["pretraining", "rl"] = Field(
        default="pretraining",
        description="pretraining: loss, tokens/s, MFU; rl: an RL post-training run (reward rising, KL, "
        "entropy, response length against max_response_length), on the rl pack's names",
    )
    max_response_length: int = Field(default=1024, gt=0, description="rl: the response length cap, tokens")
    seed: int = 0
    runs: int = Field(
        default=1,
        ge=1,
        le=100_000,
        description="simulated runs in this watch, as a tracker project holds many (ids <run>-0000, ...; "
        "seeds seed, seed+1, ...); for load tests",
    )
    step_time: Duration = 10.0
    data_wait: Duration = Field(
        default=0.0,
        ge=0,
        description="seconds of each step spent waiting for its batch (part of step_time), logged as "
        "throughput/loading_time; 0: not logged",
    )
    jitter: float = Field(default=0.03, ge=0, le=0.5)
    tokens_per_step: int = Field(default=4_194_304, gt=0)
    mfu: float = Field(default=42.0, gt=0, le=100, description="percent")
    initial_loss: float = Field(default=10.5, gt=0)
    final_loss: float = Field(default=2.1, gt=0)
    checkpoint_every: int = Field(default=500, ge=1)
    checkpoint_pause: Duration = 60.0
    eval_every: int = Field(default=1000, ge=1)
    eval_pause: Duration = 45.0
    restore_time: Duration = 300.0
    start_step: int = Field(default=0, ge=0)
    target_step: int | None = Field(default=None, ge=1)
    finish_after: Duration | None = Field(
        default=None, gt=0, description="the run finishes this long after it starts (default: at target_step)"
    )
    extra_metrics: int = Field(default=0, ge=0, le=1000, description="more metrics per step (extra/m0, ...)")
    incidents: list[Incident] = Field(default_factory=list)
    repeat_every: Duration | None = Field(
        default=None,
        gt=0,
        description="the incidents happen again every this long (the demo loops through them)",
    )

    def promises(self) -> frozenset[str]:
        """What this source delivers for every run (coverage): the step counter and the run state."""
        from monitor.samples import STATE, STEP

        return frozenset({STEP, STATE})

    @model_validator(mode="after")
    def _repeatable(self) -> SimTarget:
        if self.repeat_every is None:
            return self
        for i, inc in enumerate(self.incidents):
            if inc.kind == "crash":
                raise ValueError(f"incidents[{i}]: a crash ends the run, it cannot repeat")
            if inc.kind == "throughput_drop" and inc.duration is None:
                raise ValueError(f"incidents[{i}]: a repeating throughput_drop needs a duration")
            if inc.end() >= self.repeat_every:
                raise ValueError(f"incidents[{i}]: must be over before the loop restarts (repeat_every)")
        return self


register("sim", SimTarget, "monitor.sources.sim:SimSource", "the built-in simulated run")
