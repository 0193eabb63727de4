"""A simulated hero-run week with known incidents, written into storage the way the engine writes it:
observations through the run's goodput tracker (``RunStats``), its ledger drained into the goodput
tables after every "poll", and the alerts each incident raised (with acks) as the evaluator and the
on-call actions store them. ``Truth`` holds what the report must find, computed from the schedule.

The run: 703 GPUs, a step every 30 s, a checkpoint save after every 60th step (150 s), and in the week
of Monday 2026-11-23 (UTC):
- a rank hangs after a step on Tuesday 10:00 for 4.5 h (progress_stalled, acked by amy);
- the host OOM-kills the job during a checkpoint save (60 s into it) whenever 3 h have passed since the
  last kill; the job restores from the checkpoint before in 10 min (oom_kills, never acked);
- Wednesday 14:00 the job dies and takes 50 min to restore (run_restarted, acked by bo);
- Friday 20:00 it crashes and is down for 2 h, then restores in 10 min (run_crashed, acked by amy);
- Thursday from 08:00 loss_spike flaps: six times, 3 min each, never acked.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sqlalchemy.orm import Session

from monitor.runs.goodput import BUCKETS
from monitor.runs.run_stats import RunStats
from monitor.storage import goodput_repo, series
from monitor.storage.models import Alert, Run
from monitor.storage.series import Point

WEEK0 = datetime(2026, 11, 23, tzinfo=UTC).timestamp()  # Monday 00:00 UTC
DAY, H, M = 86400.0, 3600.0, 60.0
CADENCE, SAVE_EVERY, SAVE = 30.0, 60, 150.0
RUN = "sim:hero/hero-1"
GPUS = 703


@dataclass
class Page:
    rule: str
    active: float
    fired: float
    resolved: float
    acked: float | None = None
    by: str | None = None
    symptom: float = 0.0  # the truth: when the trouble began
    step: int | None = None


@dataclass
class Truth:
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(BUCKETS, 0.0))
    pages: list[Page] = field(default_factory=list)
    ooms: list[float] = field(default_factory=list)  # when each kill's save began (the last step)
    hang_start: float = 0.0


class Week:
    """Drives one run through the week; ``poll`` stores what was observed since the last call."""

    def __init__(self, s: Session, week0: float, lead: float, run: str = RUN) -> None:
        self.s = s
        self.run = run
        self.week0 = week0
        self.stats = RunStats(target_step=1_000_000)
        self.t = week0 - lead
        self.step = 0
        self.started = self.t  # when the job's current process started (it logs its uptime, as W&B does)
        self.truth = Truth()
        self.saves = 0
        self.points: list[Point] = []  # the loss since the last flush, as the engine stores series
        self.in_period = lambda a, b: max(0.0, min(b, week0 + 7 * DAY) - max(a, week0))

    def obs(self, t: float, step: int | None, state: str | None = "running") -> None:
        loss = 2.0 + 6.0 * math.exp(-(step or 0) / 4000) + 0.05 * math.sin((step or 0) / 7)
        metrics = {"train/loss": loss, "_runtime": t - self.started}
        self.stats.observe(t, step, metrics, state=state)
        if step is not None:
            self.points.append(Point(float(step), loss, t))

    def flush(self) -> None:
        goodput_repo.add(self.s, self.run, *self.stats.goodput.ledger.drain())
        series.ingest(self.s, self.run, "train/loss", self.points, "step")
        self.points = []

    def add(self, bucket: str, a: float, b: float) -> None:
        self.truth.seconds[bucket] += self.in_period(a, b)

    def rework(self, t: float, steps: int) -> None:
        """Steps redone, seen at ``t``: their time moves from productive to rework."""
        if self.week0 <= t < self.week0 + 7 * DAY:
            self.truth.seconds["productive"] -= steps * CADENCE
            self.truth.seconds["rework"] += steps * CADENCE

    def next_step(self) -> None:
        """One normal step (after a save if the last step was a checkpoint)."""
        gap = CADENCE + (SAVE if self.step and self.step % SAVE_EVERY == 0 else 0.0)
        if gap > CADENCE:  # the first two saves are other pauses; from the third on the cadence is known
            self.add("checkpoint" if self.saves >= 2 else "paused", self.t, self.t + SAVE)
            self.saves += 1
            self.add("productive", self.t + SAVE, self.t + gap)
        else:
            self.add("productive", self.t, self.t + gap)
        self.t += gap
        self.step += 1
        self.obs(self.t, self.step)


def build(
    s: Session, week0: float = WEEK0, lead: float = 2 * H, run: str = RUN, hang_at: float = DAY + 10 * H
) -> Truth:
    """The week from ``week0``; the run (id ``run``) is watched from ``lead`` before it; the rank hangs
    ``hang_at`` after ``week0`` (the run goes on until the hang is over, if that is after the week)."""
    WEEK0 = week0  # noqa: N806 - the schedule below reads as the docstring above
    name = run.rsplit("/", 1)[-1]
    s.add(Run(id=run, watch="hero", source="sim", name=name, first_seen_at=WEEK0 - lead, labels={}))
    s.flush()
    w = Week(s, WEEK0, lead, run)
    w.obs(w.t, 0)
    hang = WEEK0 + hang_at
    end = max(WEEK0 + 7 * DAY + H, hang + 5 * H)
    slow = WEEK0 + 2 * DAY + 14 * H
    crash = WEEK0 + 4 * DAY + 20 * H
    flaps = WEEK0 + 3 * DAY + 8 * H
    last_oom = WEEK0 - H
    done = set()
    pages = w.truth.pages
    while w.t < end:
        t0 = w.t
        if "hang" not in done and t0 >= hang and w.step % SAVE_EVERY:
            done.add("hang")  # no step for 4.5 h after this one; the next comes 4.5 h + a cadence later
            w.truth.hang_start = t0
            w.add("stalled", t0, t0 + 4.5 * H)
            w.add("productive", t0 + 4.5 * H, t0 + 4.5 * H + CADENCE)
            w.t, w.step = t0 + 4.5 * H + CADENCE, w.step + 1
            w.obs(w.t, w.step)
            pages.append(Page("progress_stalled", t0 + 10 * M, t0 + 15 * M, w.t + M, t0 + 40 * M, "amy", t0))
        elif "slow" not in done and t0 >= slow and w.step % SAVE_EVERY:
            done.add("slow")
            _restart(w, t0, down=2 * M, restore=50 * M)
            pages.append(Page("run_restarted", t0 + 2 * M, t0 + 3 * M, w.t + 5 * M, t0 + 20 * M, "bo", t0))
        elif "crash" not in done and t0 >= crash and w.step % SAVE_EVERY:
            done.add("crash")
            _restart(w, t0, down=2 * H, restore=10 * M)
            pages.append(Page("run_crashed", t0 + M, t0 + 2 * M, t0 + 2 * H + M, t0 + 12 * M, "amy", t0))
        elif w.step and w.step % SAVE_EVERY == 0 and t0 - last_oom >= 3 * H and t0 >= WEEK0:
            last_oom = t0  # killed 60 s into this save: back from the checkpoint before, 10 min later
            w.truth.ooms.append(t0)
            back = t0 + M + 10 * M
            w.add("restarting", t0, t0 + M)  # to the new process's start (its uptime says when)
            w.add("startup", t0 + M, back - CADENCE)  # restoring the checkpoint
            w.add("productive", back - CADENCE, back)
            w.rework(back, SAVE_EVERY)
            ckpt_step = w.step
            w.started = t0 + M
            w.step -= SAVE_EVERY - 1
            w.t = back
            w.obs(w.t, w.step)
            pages.append(Page("oom_kills", t0 + M, t0 + M + 15, t0 + 31 * M, None, None, t0, ckpt_step))
        else:
            w.next_step()
        if int(w.t // 900) != int(t0 // 900):
            w.flush()
    w.flush()
    row = s.get(Run, run)
    row.stats, row.last_polled_at = w.stats.snapshot(w.t), w.t
    for i in range(6):
        a = flaps + i * 40 * M
        pages.append(Page("loss_spike", a, a + 30, a + 3 * M + 30, symptom=a))
    for n, p in enumerate(pages):
        s.add(
            Alert(
                fingerprint=f"fp{n}",
                rule=p.rule,
                kind="rule",
                run_id=run,
                severity="critical" if p.rule != "loss_spike" else "warning",
                labels={"alertname": p.rule, "run": run},
                annotations={},
                state="resolved",
                active_at=p.active,
                fired_at=p.fired,
                resolved_at=p.resolved,
                updated_at=p.resolved,
                acked_by=p.by,
                acked_at=p.acked,
                step=p.step,
            )
        )
    s.commit()
    return w.truth


def _restart(w: Week, t0: float, down: float, restore: float) -> None:
    """The job dies after the step at ``t0``: reported crashed, running again ``down`` later, its first
    step (from the last checkpoint) ``restore`` after that."""
    w.obs(t0 + M / 2, None, "crashed")
    up = t0 + down
    w.started = up
    w.obs(up, None, "running")
    first = up + restore
    w.add("down", t0, up)
    w.add("startup", up, first - CADENCE)  # the new process started when seen running
    w.add("productive", first - CADENCE, first)
    ckpt = w.step - w.step % SAVE_EVERY
    w.rework(first, w.step - ckpt)
    w.step = ckpt + 1
    w.t = first
    w.obs(w.t, w.step)
