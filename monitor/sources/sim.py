"""The built-in simulated hero run: a realistic training run that can be made to fail on schedule.

A pretraining run by default; with ``trains: rl`` an RL post-training run (monitor.sources.sim_rl).
Loss falls with noise, steps come at a steady cadence with jitter, tokens/s and MFU follow the step
time, checkpoints and evals pause the run. Incidents (stall, restart with a step rewind, loss spike,
NaN, throughput drop, OOM kills, crash, an outage of the source itself) happen at set times after the
run starts, once or again every ``repeat_every`` (the demo's loop). The run is a deterministic function
of its settings, its start time and the clock, so a restarted herowatch regenerates the same history
and resumes where its cursor says.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import ClassVar

from monitor.run_ids import qualify
from monitor.samples import RunInfo, RunState, Sample
from monitor.sources.base import Cursor, PollResult, Target
from monitor.sources.sim_config import Incident, SimTarget
from monitor.sources.sim_rl import rl_metrics

INFRA_METRIC = "oom_kills_total"


class SimRun:
    """One simulated run, advanced on demand up to a given time."""

    def __init__(self, cfg: SimTarget, run_id: str, origin: float) -> None:
        self.cfg = cfg
        self.run_id = run_id
        self.origin = origin
        self.rng = random.Random(cfg.seed)
        self.step = cfg.start_step
        self.t = origin
        self.last_checkpoint = cfg.start_step
        self.state = RunState.RUNNING
        self.started_at = origin  # of the current process (changes on restart)
        self.restarts = 0
        self._period = cfg.repeat_every or 0.0
        self._last_event = -math.inf  # time of the last restart or crash applied
        self._next: float | None = None  # completion time of the step in flight
        self._compute = cfg.step_time
        self._spent: set[tuple[int, int]] = set()  # single-step incidents applied: (incident, loop)

    # ---- the timeline ------------------------------------------------------------------------
    def _loop(self, inc: Incident, t: float) -> int | None:
        """Which occurrence of ``inc`` started last at or before ``t`` (0 the first), None before it."""
        first = self.origin + inc.at
        if t < first:
            return None
        return int((t - first) // self._period) if self._period else 0

    def _start(self, inc: Incident, loop: int) -> float:
        return self.origin + inc.at + loop * self._period

    def _window(self, inc: Incident, t: float) -> bool:
        loop = self._loop(inc, t)
        if loop is None:
            return False
        if inc.kind == "throughput_drop" and inc.duration is None:
            return True
        if inc.duration:
            return t < self._start(inc, loop) + inc.duration
        return True  # single-step incidents: the first step at or after ``at``

    def _windows(self, kind: str, t: float) -> list[tuple[float, float]]:
        """The (start, end) of the occurrences of ``kind`` incidents around ``t`` (this loop and the next)."""
        out = []
        for inc in self.cfg.incidents:
            if inc.kind != kind:
                continue
            loop = self._loop(inc, t)
            for k in {0} if not self._period else {max(0, loop or 0), (loop or 0) + 1}:
                start = self._start(inc, k)
                out.append((start, start + (inc.duration or 0.0)))
        return out

    def _next_event(self) -> tuple[float, Incident] | None:
        """The first restart or crash after the last one applied."""
        best: tuple[float, Incident] | None = None
        for inc in self.cfg.incidents:
            if inc.kind not in ("restart", "crash"):
                continue
            first = self.origin + inc.at
            k = 0
            if self._period and self._last_event >= first:
                k = int((self._last_event - first) // self._period) + 1
            at = self._start(inc, k)
            if at > self._last_event and (best is None or at < best[0]):
                best = (at, inc)
        return best

    def in_outage(self, t: float) -> bool:
        return any(s <= t < e for s, e in self._windows("outage", t))

    def _speed(self, t: float) -> float:
        f = 1.0
        for inc in self.cfg.incidents:
            if inc.kind == "throughput_drop" and self._window(inc, t):
                f *= inc.factor
        return f

    def _compute_time(self, t: float) -> float:
        noise = 1.0 + self.cfg.jitter * max(-3.0, min(3.0, self.rng.gauss(0.0, 1.0)))
        return self.cfg.step_time * noise / self._speed(t)

    def _pause_after(self, step: int) -> float:
        pause = 0.0
        if step > 0 and step % self.cfg.checkpoint_every == 0:
            pause += self.cfg.checkpoint_pause
        if step > 0 and step % self.cfg.eval_every == 0:
            pause += self.cfg.eval_pause
        return pause

    def _schedule_next(self) -> float:
        start = self.t + self._pause_after(self.step)
        self._compute = self._compute_time(start)
        end = start + self._compute
        for s0, s1 in self._windows("stall", start):  # a hung collective holds the step until it ends
            if s0 < end and s1 > start:
                end = max(end, s1 + self._compute * 0.5)
        return end

    def advance(self, now: float) -> list[Sample]:
        rows: list[Sample] = []
        finish = self.origin + self.cfg.finish_after if self.cfg.finish_after is not None else math.inf
        if now >= finish and self.state == RunState.RUNNING:
            rows = self.advance(finish - 1e-6)  # its last steps, then it ends
            self.state = RunState.FINISHED
            return rows
        while self.state == RunState.RUNNING:
            if self._next is None:
                self._next = self._schedule_next()
            event = self._next_event()
            if event is not None and event[0] <= min(self._next, now):
                at, inc = event
                self._last_event = at
                self._next = None
                if inc.kind == "crash":
                    self.state = RunState.CRASHED
                    break
                self.restarts += 1
                self.step = inc.rewind_to if inc.rewind_to is not None else self.last_checkpoint
                self.t = at + self.cfg.restore_time
                self.started_at = at
                continue
            if self._next > now:
                break
            self.t = self._next
            self._next = None
            self.step += 1
            if self.step % self.cfg.checkpoint_every == 0:
                self.last_checkpoint = self.step
            rows.append(self._row())
            if self.cfg.target_step and self.step >= self.cfg.target_step:
                self.state = RunState.FINISHED
        return rows

    def oom_kills(self, now: float) -> int:
        total = 0
        for inc in self.cfg.incidents:
            loop = self._loop(inc, now) if inc.kind == "oom_kill" else None
            if loop is not None:
                total += inc.count * (loop + 1)
        return total

    # ---- what a step logs ----------------------------------------------------------------------
    def _collapse(self, t: float) -> float:
        """1 while a reward_collapse incident lasts (a policy degenerates within a few steps), else 0."""
        return (
            1.0
            if any(i.kind == "reward_collapse" and self._window(i, t) for i in self.cfg.incidents)
            else 0.0
        )

    def _row(self) -> Sample:
        cfg, s, t = self.cfg, self.step, self.t
        if cfg.trains == "rl":
            return self._rl_row()
        base = cfg.final_loss + (cfg.initial_loss - cfg.final_loss) / math.sqrt(1.0 + s / 150.0)
        loss = base * (1.0 + 0.012 * self.rng.gauss(0.0, 1.0))
        grad = 0.22 + 0.04 * abs(self.rng.gauss(0.0, 1.0))
        for i, inc in enumerate(cfg.incidents):
            if inc.kind not in ("loss_spike", "nan") or not self._window(inc, t):
                continue
            if not inc.duration:
                key = (i, self._loop(inc, t) or 0)
                if key in self._spent:
                    continue
                self._spent.add(key)
            if inc.kind == "loss_spike":
                loss *= 1.0 + inc.magnitude
                grad *= 4.0 if inc.duration else 8.0  # a divergence raises it less than a one-batch blip
            else:
                loss = grad = float("nan")
        duration = self._compute
        tps = cfg.tokens_per_step / duration
        metrics: dict[str, float] = {
            "train/loss": loss,
            "global_step": float(s),
            "throughput/duration": duration,
            "throughput/tokens_per_second": tps,
            "throughput/mfu": cfg.mfu * cfg.step_time / duration,
            "grad/norm/total": grad,
            "optim/learning_rate": 3e-4 * min(1.0, s / 2000.0) * (0.1 + 0.9 * math.exp(-s / 200_000.0)),
            "_runtime": t - self.started_at,
        }
        for i in range(cfg.extra_metrics):
            metrics[f"extra/m{i}"] = 1.0 + 0.1 * self.rng.random()
        if cfg.data_wait > 0:
            metrics["throughput/loading_time"] = min(cfg.data_wait, duration)
        if s % cfg.eval_every == 0:
            metrics["eval/loss"] = base * 1.03
        return Sample(t=t, run=self.run_id, step=s, metrics=metrics, state=RunState.RUNNING, source="sim")

    def _rl_row(self) -> Sample:
        cfg, s, t = self.cfg, self.step, self.t
        nan = any(inc.kind == "nan" and self._window(inc, t) for inc in cfg.incidents)
        metrics = rl_metrics(cfg, s, self.rng, self._compute, self._collapse(t), nan)
        metrics.update(
            {
                "global_step": float(s),
                "grad/norm/total": 0.22 + 0.04 * abs(self.rng.gauss(0.0, 1.0)),
                "optim/learning_rate": 1e-6 * min(1.0, s / 50.0),
                "_runtime": t - self.started_at,
            }
        )
        return Sample(t=t, run=self.run_id, step=s, metrics=metrics, state=RunState.RUNNING, source="sim")


class SimSource:
    """Source kind ``sim``. One SimRun per watch entry, kept in memory and rebuilt from its cursor."""

    kind: ClassVar[str] = "sim"

    def __init__(self, settings: object | None = None) -> None:
        self._runs: dict[str, SimRun] = {}

    @staticmethod
    def run_id(target: Target, name: str | None = None) -> str:
        """``sim:<watch>/<run>`` (monitor.run_ids)."""
        return qualify("sim", target.watch, name or target.config.run or target.watch)

    def _run_for(
        self, target: Target, name: str, cfg: SimTarget, cursor: Cursor | None, now: float, i: int = 0
    ) -> SimRun:
        run_id = self.run_id(target, name)
        key = target.watch if cfg.runs == 1 else f"{target.watch}/{name}"
        sim = self._runs.get(key)
        if sim is None:
            origin = float(cursor["origin"]) if cursor and "origin" in cursor else now
            sim = SimRun(cfg if i == 0 else cfg.model_copy(update={"seed": cfg.seed + i}), run_id, origin)
            if cursor and "t" in cursor:  # resume: replay silently up to what was already read
                sim.advance(float(cursor["t"]))
            self._runs[key] = sim
        return sim

    def poll(self, target: Target, cursors: Mapping[str, Cursor], now: float) -> PollResult:
        cfg: SimTarget = target.config
        base = cfg.run or target.watch
        if cfg.runs == 1:
            return self._poll(target, base, cfg, cursors, now)
        out = PollResult(requests=0)
        for i in range(cfg.runs):
            res = self._poll(target, f"{base}-{i:04d}", cfg, cursors, now, i)
            if res.error:
                return res
            out.samples += res.samples
            out.runs += res.runs
            out.cursors.update(res.cursors)
        return out

    def _poll(
        self, target: Target, name: str, cfg: SimTarget, cursors: Mapping[str, Cursor], now: float, i: int = 0
    ) -> PollResult:
        run_id = self.run_id(target, name)
        sim = self._run_for(target, name, cfg, cursors.get(run_id), now, i)
        if sim.in_outage(now):  # as a W&B or Prometheus outage looks to a poller: nothing can be read
            return PollResult(error="simulated outage: the API answers 503 Service Unavailable")
        rows = sim.advance(now)
        infra = Sample(
            t=now,
            run=run_id,
            metrics={INFRA_METRIC: float(sim.oom_kills(now))},
            state=sim.state,
            source="sim",
        )
        labels = {"source": "sim", **dict(target.labels)}
        info = RunInfo(
            run=run_id,
            source="sim",
            display_name=name,
            state=sim.state,
            labels=labels,
            heartbeat_at=now if sim.state == RunState.RUNNING else None,
            name=name,
            project=target.watch,
        )
        cursor = {"origin": sim.origin, "t": now, "step": sim.step}
        return PollResult(samples=[*rows, infra], runs=[info], cursors={run_id: cursor}, requests=0)

    def close(self) -> None:
        self._runs.clear()
