"""Realistic traces built from the real public logs (../shared/data/real, see its README), with the
pauses and incidents a test adds: shared by the detector tests and bench/detection_quality.py.

The loss, learning rate and grad norm of every step are the llm.c GPT-2 124M run's (19,560 steps,
an eval every 250 steps). That log has no wall clock, so step times come from another real log: the
PAI job's mini-batch times (the slowest of its 9 healthy workers at each sampled iteration, as a
synchronous job waits for it), normalised to a median of 1 and cycled, one value per step, times
``step_time`` (``jitter_hold``: each value held for that many steps; ``jitter_scale``: its deviations
scaled, 0 is a steady run). Checkpoint saves and evals pause the run after their step; their lengths vary with
the same real series.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

from monitor.samples import Sample
from tests.rules.helpers_rules import T0, real_file

RUN = "llmc-hero"


@cache
def llmc_rows() -> tuple[tuple[int, float, float, float], ...]:
    """(step, loss, lr, grad_norm) of every training step of the llm.c log."""
    out = []
    with open(real_file("llmc_gpt2_124m_steps.csv"), newline="") as fh:
        for row in csv.DictReader(fh):
            if row["kind"] == "train":
                out.append((int(row["step"]), float(row["loss"]), float(row["lr"]), float(row["grad_norm"])))
    return tuple(out)


@cache
def llmc_eval_steps() -> frozenset[int]:
    with open(real_file("llmc_gpt2_124m_steps.csv"), newline="") as fh:
        return frozenset(int(r["step"]) for r in csv.DictReader(fh) if r["kind"] == "val")


@cache
def pai_jitter(exclude: tuple[int, ...] = (6,)) -> tuple[float, ...]:
    """The PAI job's step time at each sampled iteration (slowest worker not excluded), median 1."""
    by_iteration: dict[int, dict[int, float]] = {}
    with open(real_file("pai_job_1_minibatch_norm.csv"), newline="") as fh:
        for row in csv.DictReader(fh):
            by_iteration.setdefault(int(row["time"]), {})[int(row["worker"])] = float(row["batch_time_norm"])
    series = [max(v for w, v in by_iteration[i].items() if w not in exclude) for i in sorted(by_iteration)]
    mid = sorted(series)[len(series) // 2]
    return tuple(x / mid for x in series)


@dataclass
class Scenario:
    """A llm.c-based run: its rows, pauses and incidents. ``build()`` gives the samples in time order.

    ``slow(t)`` multiplies the step time of the step that starts at ``t`` (a throughput incident);
    ``loss_shift(step)`` is added to the loss. ``hang_after_step``: no step after this one (a hang; with
    ``hang_in_save`` the save of that step never finishes). ``end_state``: reported after the last step
    (e.g. ``finished``, ``crashed``) at ``end_after`` seconds past it. The run list is polled every
    ``poll`` seconds (a state-only sample) until ``watch_after`` seconds past the last step.
    ``restarts``: (step, restore seconds), in order: after that step the process crashes, restarts a
    minute later (``restarts_total`` rises) and takes its first step after the restore, from the last
    save on; a restore of None never ends."""

    step_time: float = 1.7
    save_every: int | None = 1000
    save_pause: float = 360.0
    eval_pause: float | None = 90.0
    last_step: int | None = None
    hang_after_step: int | None = None
    end_state: str | None = None
    end_after: float = 60.0
    jitter_offset: int = 0
    jitter_hold: int = 1
    jitter_scale: float = 1.0
    slow: Callable[[float], float] | None = None
    loss_shift: Callable[[int], float] | None = None
    extra: list[Sample] = field(default_factory=list)
    poll: float = 60.0
    watch_after: float = 0.0
    restarts: list[tuple[int, float | None]] = field(default_factory=list)
    log_every: int = 1
    save_every_s: float | None = None
    eval_every: int | None = None  # evals every this many steps (None: at the llm.c log's own val steps)
    run: str = RUN

    def jitter(self, i: int) -> float:
        r = pai_jitter()
        return 1.0 + self.jitter_scale * (r[((i // self.jitter_hold) + self.jitter_offset) % len(r)] - 1.0)

    def build(self) -> list[Sample]:
        out: list[Sample] = []
        t, rows = T0, llmc_rows()
        every = self.eval_every
        evals = llmc_eval_steps() if every is None else frozenset(range(every, len(rows) + every, every))
        self.pauses: dict[int, tuple[float, float]] = {}  # step -> (start, length)
        self.step_at: dict[int, float] = {}
        self.restarted_at: list[float] = []
        restarts = list(self.restarts)  # taken in order: the same step may crash again
        i = n = 0
        last_save = T0
        while i < len(rows):
            step, loss, lr, grad = rows[i]
            if self.last_step is not None and step > self.last_step:
                break
            if self.loss_shift is not None:
                loss += self.loss_shift(step)
            metrics = {"train/loss": loss, "optim/learning_rate": lr, "grad/norm/total": grad}
            if step % self.log_every == 0 or step == self.hang_after_step:
                out.append(Sample(t, self.run, step, metrics, "running", "wandb"))
            self.step_at[step] = t
            if step == self.hang_after_step:
                break
            if restarts and step == restarts[0][0]:  # the process dies, comes back from the last save
                restore = restarts.pop(0)[1]
                out.append(Sample(t + 30, self.run, state="crashed", source="wandb"))
                t += 60
                self.restarted_at.append(t)
                out.append(Sample(t, self.run, metrics={"restarts_total": len(self.restarted_at)}))
                out.append(Sample(t, self.run, state="running", source="wandb"))
                if restore is None:
                    break  # it never takes a step again
                t += restore
                last_save = t
                saved = step - step % self.save_every if self.save_every else 0
                i = next(j for j, r in enumerate(rows) if r[0] > saved)
                continue
            pause = 0.0
            if self.save_every and step > 0 and step % self.save_every == 0:
                pause += self.save_pause * self.jitter(7 * step + 3)
            if self.save_every_s and t - last_save >= self.save_every_s:
                pause += self.save_pause * self.jitter(7 * step + 3)
                last_save = t + pause
            if self.eval_pause and step in evals:
                pause += self.eval_pause * self.jitter(5 * step + 1)
            if pause:
                self.pauses[step] = (t, pause)
            dt = self.step_time * self.jitter(n)
            if self.slow is not None:
                dt *= self.slow(t - T0)
            t += pause + dt
            i += 1
            n += 1
        self.last_t = max(x.t for x in out)
        self.last_t = out[-1].t
        end_at = math.inf
        if self.end_state is not None:
            end_at = self.last_t + self.end_after
            out.append(Sample(end_at, self.run, state=self.end_state, source="wandb"))
        polls = [  # the run list's state at each poll
            Sample(
                T0 + k * self.poll,
                self.run,
                state="running" if T0 + k * self.poll < end_at else self.end_state,
                source="wandb",
            )
            for k in range(1, int((self.last_t + self.watch_after - T0) // self.poll) + 1)
        ]
        self.end = max(self.last_t + self.watch_after, T0 + len(polls) * self.poll)
        return sorted(out + polls + self.extra, key=lambda s: s.t)


def save_steps(scenario: Scenario) -> list[int]:
    return [s for s in scenario.pauses if scenario.save_every and s % scenario.save_every == 0]


def ramp(start: float, length: float, size: float) -> Callable[[float], float]:
    """0 before ``start``, rising linearly to ``size`` over ``length``, then held."""

    def f(x: float) -> float:
        return 0.0 if x < start else size * min(1.0, (x - start) / length)

    return f


def step_change(at: float, factor: float) -> Callable[[float], float]:
    return lambda x: factor if x >= at else 1.0


def swing(amplitude: float, period: float) -> Callable[[float], float]:
    return lambda x: 1.0 + amplitude * math.sin(2 * math.pi * x / period)


@cache
def llmc_val_losses() -> dict[int, float]:
    """The llm.c run's real validation loss at each eval step."""
    with open(real_file("llmc_gpt2_124m_steps.csv"), newline="") as fh:
        return {int(r["step"]): float(r["loss"]) for r in csv.DictReader(fh) if r["kind"] == "val"}


MEGATRON = {
    "train/loss": "lm loss",
    "grad/norm/total": "grad-norm",
    "optim/learning_rate": "learning-rate",
    "eval/loss": "lm loss validation",
}
HUGGINGFACE = {
    "train/loss": "train/loss",
    "grad/norm/total": "train/grad_norm",
    "optim/learning_rate": "train/learning_rate",
    "eval/loss": "eval/loss",
}


def as_trainer(
    scenario: Scenario,
    samples: list[Sample],
    names: dict[str, str],
    eval_shift: Callable[[int], float] | None = None,
) -> list[Sample]:
    """The scenario's rows under a trainer's key names (canonical -> the trainer's), with the llm.c run's
    real validation loss logged at the end of each eval pause (``eval_shift(step)`` added to it)."""
    out = [
        Sample(s.t, s.run, s.step, {names.get(k, k): v for k, v in s.metrics.items()}, s.state, s.source)
        for s in samples
    ]
    for step, loss in llmc_val_losses().items():
        if step not in scenario.step_at:
            continue
        start, length = scenario.pauses.get(step, (scenario.step_at[step], 0.0))
        value = loss + (eval_shift(step) if eval_shift is not None else 0.0)
        out.append(
            Sample(start + length, scenario.run, step, {names["eval/loss"]: value}, "running", "wandb")
        )
    return sorted(out, key=lambda s: s.t)


def with_tokens_per_second(
    samples: list[Sample], tokens: float = 524_288.0, max_gap: float = 30.0
) -> list[Sample]:
    """The rows with tokens/s as a trainer logs it: the batch's tokens over the step's own time (the
    steps right after a pause, whose time is the pause's, log none: a step longer than ``max_gap``)."""
    out: list[Sample] = []
    prev: tuple[int, float] | None = None
    for s in samples:
        if s.step is not None and s.metrics:
            if prev is not None and s.step == prev[0] + 1 and s.t - prev[1] < max_gap:
                tps = tokens / (s.t - prev[1])
                s = Sample(
                    s.t, s.run, s.step, {**s.metrics, "throughput/tokens_per_second": tps}, s.state, s.source
                )
            prev = (s.step, s.t)
        out.append(s)
    return out


def renamed(samples: list[Sample], rename: dict[str, str], drop: tuple[str, ...] = ()) -> list[Sample]:
    """The rows with keys renamed (a trainer's own names) and some dropped (what it does not log)."""
    return [
        Sample(
            s.t,
            s.run,
            s.step,
            {rename.get(k, k): v for k, v in s.metrics.items() if not k.startswith(drop)},
            s.state,
            s.source,
        )
        for s in samples
    ]
