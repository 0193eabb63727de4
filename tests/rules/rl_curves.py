"""Synthetic RL post-training runs for the rl pack's tests: what GRPO/PPO runs log, at any scale.

A healthy run: the reward climbs from its start level towards a plateau (any offset and scale: a
verifier's 0..1 accuracy or a reward model's logits), with batch noise and the odd bad batch; the KL to
the reference grows from ~0 (quadratically at first) towards a plateau; the entropy falls slowly; a few
responses are truncated; throughput wobbles with response length. Incidents are applied from a step on.
Every draw is seeded: a failing seed reproduces.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass

from monitor.samples import Sample

T0 = 1_700_000_000.0

# canonical name -> the key TRL's GRPOTrainer logs (through the HF Trainer's W&B callback) / verl's
TRL_KEYS = {
    "rl/reward/mean": "train/reward",
    "rl/reward/std": "train/reward_std",
    "rl/kl": "train/kl",
    "rl/entropy": "train/entropy",
    "rl/response_length/mean": "train/completions/mean_length",
    "rl/response_length/clip_ratio": "train/completions/clipped_ratio",
    "train/loss": "train/loss",
    "grad/norm/total": "train/grad_norm",
    "optim/learning_rate": "train/learning_rate",
}
VERL_KEYS = {
    "rl/reward/mean": "critic/rewards/mean",
    "rl/kl": "actor/kl_loss",
    "rl/entropy": "actor/entropy",
    "rl/response_length/mean": "response_length/mean",
    "rl/response_length/clip_ratio": "response_length/clip_ratio",
    "rl/throughput/tokens_per_second": "perf/throughput",
    "grad/norm/total": "actor/grad_norm",
    "optim/learning_rate": "actor/lr",
}


@dataclass(frozen=True)
class Shape:
    """One healthy run's character, drawn per seed."""

    step_seconds: float
    r_start: float
    r_gain: float
    r_noise: float
    r_tau: float  # steps to most of the gain
    kl_end: float
    kl_tau: float
    ent_start: float
    ent_end: float
    ent_tau: float
    clip: float
    tps: float
    warmup: int  # LR warm-up steps

    @classmethod
    def draw(cls, rng: random.Random, step_seconds: float | None = None) -> Shape:
        scale = rng.choice([1.0, 1.0, 3.0, 10.0])  # a 0..1 verifier, or a reward model's logits
        return cls(
            step_seconds=step_seconds or rng.choice([15.0, 30.0, 60.0, 120.0, 300.0]),
            r_start=rng.uniform(-0.5, 0.3) * scale,
            r_gain=rng.uniform(0.1, 0.6) * scale,
            r_noise=rng.uniform(0.02, 0.06) * scale,
            r_tau=rng.uniform(50, 400),
            kl_end=10 ** rng.uniform(-3, -0.7),
            kl_tau=rng.uniform(100, 600),
            ent_start=rng.uniform(0.4, 2.0),
            ent_end=rng.uniform(0.5, 0.8),
            ent_tau=rng.uniform(300, 2000),
            clip=rng.uniform(0.0, 0.08),
            tps=rng.uniform(500, 20000),
            warmup=rng.choice([0, 10, 30]),
        )


Incident = Callable[[int, dict[str, float], random.Random, Shape], None]


def run(
    seed: int,
    steps: int,
    incident: Incident | None = None,
    keys: dict[str, str] | None = None,
    run_id: str = "rl",
    step_seconds: float | None = None,
) -> list[Sample]:
    rng = random.Random(seed)
    shape = Shape.draw(rng, step_seconds)
    out = []
    for i in range(steps):
        m = healthy(shape, i, rng)
        if incident is not None:
            incident(i, m, rng, shape)
        names = keys or {k: k for k in m}
        out.append(
            Sample(
                T0 + i * shape.step_seconds,
                run_id,
                i,
                {names[k]: v for k, v in m.items() if k in names},
                "running",
            )
        )
    return out


def healthy(s: Shape, i: int, rng: random.Random) -> dict[str, float]:
    gauss = rng.gauss
    reward = s.r_start + s.r_gain * (1 - math.exp(-i / s.r_tau)) + gauss(0, s.r_noise)
    if rng.random() < 0.02:
        reward -= 4 * s.r_noise  # a bad batch
    x = i / s.kl_tau
    warm = min(1.0, i / s.warmup) if s.warmup else 1.0  # a linear LR warm-up: KL ~ step^4 meanwhile
    kl = s.kl_end * (x * x / (1 + x * x)) * warm * warm * math.exp(gauss(0, 0.15)) + 1e-6
    ent = s.ent_start * (s.ent_end + (1 - s.ent_end) * math.exp(-i / s.ent_tau)) * math.exp(gauss(0, 0.05))
    length = 400 * (1 + 0.3 * (1 - math.exp(-i / 500))) * math.exp(gauss(0, 0.05))
    return {
        "rl/reward/mean": reward,
        "rl/reward/std": abs(s.r_noise * 3 * math.exp(gauss(0, 0.1))),
        "rl/kl": kl,
        "rl/entropy": ent,
        "rl/response_length/mean": length,
        "rl/response_length/clip_ratio": max(0.0, min(1.0, s.clip + gauss(0, 0.01))),
        "rl/throughput/tokens_per_second": s.tps * math.exp(gauss(0, 0.08)),
        "train/loss": gauss(0, 0.01),
        "grad/norm/total": 0.5 * math.exp(gauss(0, 0.2)),
        "optim/learning_rate": 1e-6,
    }


def from_step(start: int, change: Callable[[dict[str, float], random.Random, Shape], None]) -> Incident:
    def incident(i: int, m: dict[str, float], rng: random.Random, shape: Shape) -> None:
        if i >= start:
            change(m, rng, shape)

    return incident


# ---- incidents: what goes wrong, in the run's own terms ----------------------------------------------
def collapse(m: dict[str, float], rng: random.Random, s: Shape) -> None:
    """The policy degenerates: the reward falls well below where the run started (by half its gain and
    5 batch-noise sigmas: a drop within the batch noise is not a collapse anyone could tell)."""
    m["rl/reward/mean"] = s.r_start - 0.5 * s.r_gain - 5 * s.r_noise + rng.gauss(0, s.r_noise)


def kl_blowup(m: dict[str, float], rng: random.Random, s: Shape) -> None:
    m["rl/kl"] = s.kl_end * 30 * math.exp(rng.gauss(0, 0.15))


def entropy_collapse(m: dict[str, float], rng: random.Random, s: Shape) -> None:
    m["rl/entropy"] *= 0.05


def flat(m: dict[str, float], rng: random.Random, s: Shape) -> None:
    m["rl/reward/mean"] = 0.0  # the reward function returns 0 for everything


def truncation(m: dict[str, float], rng: random.Random, s: Shape) -> None:
    m["rl/response_length/clip_ratio"] = min(1.0, 0.8 + abs(rng.gauss(0, 0.05)))


def slow_rollouts(m: dict[str, float], rng: random.Random, s: Shape) -> None:
    m["rl/throughput/tokens_per_second"] *= 0.5


def nan_reward(m: dict[str, float], rng: random.Random, s: Shape) -> None:
    m["rl/reward/mean"] = math.nan
