"""Shared helpers of the rule-engine tests: sample builders, the real data, the simulated run."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator
from pathlib import Path

from monitor.rules.loader import apply_overrides, load_pack, validate_rule
from monitor.rules.spec import RuleSpec
from monitor.samples import Sample
from monitor.sources.sim import INFRA_METRIC, SimRun
from monitor.sources.sim_config import SimTarget
from monitor.traces.replay import ReplayResult, replay
from tests.conftest import REAL_DATA

REPO = Path(__file__).resolve().parents[2]
REAL = REAL_DATA
T0 = 1_700_000_000.0


def real_file(name: str) -> Path:
    """A file of the real public logs. Missing data is a failure, never a skip."""
    path = REAL / name
    assert path.is_file(), f"real data missing: {path} (see /work/shared/data/real/README.md)"
    return path


def rule(**raw: object) -> RuleSpec:
    return validate_rule({"name": "r", **raw})


def hero(**overrides: dict) -> list[RuleSpec]:
    rules = load_pack("hero")
    return apply_overrides(rules, overrides, "test") if overrides else rules


def steps(
    values: Iterable[float],
    metric: str = "train/loss",
    every: float = 10.0,
    start_step: int = 0,
    run: str = "r",
    t0: float = T0,
    state: str | None = "running",
) -> list[Sample]:
    """One W&B-style row per value: step i at t0 + i * every."""
    return [
        Sample(t0 + i * every, run, start_step + i, {metric: float(v)}, state) for i, v in enumerate(values)
    ]


def with_grad_norm(samples: Iterable[Sample], value: float = 0.5) -> list[Sample]:
    """The rows with a steady grad norm too: the hero pack expects one from every run (a loss-only trace
    leaves its grad-norm rules blind, and watching_blind says so)."""
    return [
        Sample(s.t, s.run, s.step, {**s.metrics, "grad/norm/total": value}, s.state)
        if s.step is not None
        else s
        for s in samples
    ]


def feed(det, samples: Iterable[Sample]) -> None:
    for s in samples:
        det.observe(s)


def sim_samples(
    incidents: list[dict] | None = None,
    hours: float = 4.0,
    poll: float = 15.0,
    run: str = "sim-1",
    seed: int = 0,
    **settings: object,
) -> Iterator[Sample]:
    """The simulated hero run as the sim source delivers it: rows plus an infra sample per poll."""
    cfg = SimTarget(seed=seed, incidents=incidents or [], **settings)
    sim = SimRun(cfg, run, T0)
    t = T0
    while t < T0 + hours * 3600:
        t += poll
        yield from sim.advance(t)
        yield Sample(t, run, metrics={INFRA_METRIC: float(sim.oom_kills(t))}, state=sim.state, source="sim")


def replay_hero(samples: Iterable[Sample], **overrides: dict) -> ReplayResult:
    return replay(samples, hero(**overrides))


def fired(result: ReplayResult, severity: str | None = None) -> list[tuple[str, str, int | None]]:
    return [(e.rule, e.severity, e.step) for e in result.firing(severity)]


def above_info(result: ReplayResult) -> list[tuple[str, str, int | None, str]]:
    return [
        (e.rule, e.severity, e.step, e.reason)
        for e in result.events
        if e.state in ("pending", "firing") and e.severity != "info"
    ]


def llmc_samples(every: float = 1.0) -> list[Sample]:
    """The llm.c GPT-2 124M log as a W&B-like trace at a steady ``every`` seconds per step."""
    out = []
    with open(real_file("llmc_gpt2_124m_steps.csv"), newline="") as fh:
        for row in csv.DictReader(fh):
            step = int(row["step"])
            t = T0 + step * every
            if row["kind"] == "val":
                out.append(
                    Sample(t, "llmc-gpt2-124m", step, {"eval/loss": float(row["loss"])}, source="wandb")
                )
            else:
                metrics = {
                    "train/loss": float(row["loss"]),
                    "grad/norm/total": float(row["grad_norm"]),
                    "optim/learning_rate": float(row["lr"]),
                }
                out.append(Sample(t, "llmc-gpt2-124m", step, metrics, "running", "wandb"))
    return out


def fields(obj: object) -> dict[str, object]:
    """An object's attributes but its rule: its ``__dict__`` and its slots (the detectors have slots)."""
    slots = (n for c in type(obj).__mro__ for n in getattr(c, "__slots__", ()))
    names = [*getattr(obj, "__dict__", ()), *slots]
    return {n: getattr(obj, n) for n in names if n != "rule" and hasattr(obj, n)}
