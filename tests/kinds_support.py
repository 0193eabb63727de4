"""Runs of three kinds as their trainers log them to W&B, for the W&B stand-in.

Key names are the trainers' own, as their W&B callbacks write them (``train/<key>`` through the Hugging
Face ``WandbCallback.rewrite_logs``; ``eval_x`` -> ``eval/x``):

- TRL's ``GRPOTrainer`` (huggingface/trl: trl/trainer/grpo_trainer.py, ``_generate_and_score_completions``
  and ``_compute_loss``): ``reward``, ``reward_std``, ``frac_reward_zero_std``,
  ``rewards/<reward function>/mean|std``, ``kl``, ``entropy``, ``completions/mean_length|min_length|
  max_length|clipped_ratio|mean_terminated_length``, ``num_tokens``, ``clip_ratio/region_mean``, and the
  Trainer's ``loss``, ``grad_norm``, ``learning_rate``, ``epoch``;
- TRL's ``SFTTrainer``: ``loss``, ``grad_norm``, ``learning_rate``, ``epoch``, ``num_tokens``,
  ``mean_token_accuracy``, ``entropy``; ``eval_loss`` at each evaluation;
- Levanter (a pretraining run): ``train/loss``, ``throughput/*``, ``grad/norm/total``, ...

The curves are made up but shaped like real ones (a reward that rises and plateaus, responses that grow
until the longest reach the cap); each step's noise is seeded by the step.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

from tests.standins.wandb_server import WandbStandin

CAP = 1024  # GRPOConfig.max_completion_length of the RL run: cut responses are exactly this long
STEP_SECONDS = 30.0


def grpo(step: int, nan: bool = False) -> dict[str, Any]:
    rnd = random.Random(step)
    learned = 1.0 - math.exp(-step / 80.0)
    reward = 0.1 + 0.6 * learned + 0.03 * rnd.gauss(0.0, 1.0)
    mean_len = (180.0 + 320.0 * (1.0 - math.exp(-step / 120.0))) * (1.0 + 0.02 * rnd.gauss(0.0, 1.0))
    tail = 2.4 * mean_len
    clipped = max(0.0, (tail - CAP) / tail * 0.5)
    return {
        "train/reward": math.nan if nan else reward,
        "train/reward_std": 0.3 - 0.08 * learned,
        "train/frac_reward_zero_std": 0.1 + 0.2 * learned,
        "train/rewards/accuracy_reward/mean": reward,
        "train/rewards/accuracy_reward/std": 0.3,
        "train/kl": 0.003 + 0.04 * (step / 1000.0) ** 0.7,
        "train/entropy": 0.4 + 0.8 * math.exp(-step / 1500.0),
        "train/completions/mean_length": mean_len,
        "train/completions/min_length": 0.25 * mean_len,
        "train/completions/max_length": min(float(CAP), tail),
        "train/completions/clipped_ratio": clipped,
        "train/completions/mean_terminated_length": mean_len * (1.0 - clipped),
        "train/num_tokens": 256 * (200 + 340) * step,
        "train/clip_ratio/region_mean": 0.002,
        "train/loss": 0.01 * rnd.gauss(0.0, 1.0),
        "train/grad_norm": 0.3 + 0.05 * abs(rnd.gauss(0.0, 1.0)),
        "train/learning_rate": 1e-6,
        "train/epoch": step / 2000.0,
        "train/global_step": step,
    }


def sft(step: int, nan: bool = False) -> dict[str, Any]:
    rnd = random.Random(10_000 + step)
    expected = 0.9 + 1.4 / (1.0 + step / 40.0)
    loss = expected + 0.02 * rnd.gauss(0.0, 1.0)
    row = {
        "train/loss": math.nan if nan else loss,
        "train/grad_norm": 1.1 + 0.1 * abs(rnd.gauss(0.0, 1.0)),
        "train/learning_rate": 2e-5,
        "train/epoch": step / 300.0,
        "train/global_step": step,
        "train/num_tokens": 65_536 * step,
        "train/mean_token_accuracy": 0.55 + 0.2 * (1.0 - math.exp(-step / 60.0)),
        "train/entropy": 1.2,
    }
    if step % 25 == 0:
        row.update({"eval/loss": expected * 1.04, "eval/runtime": 12.0, "eval/samples_per_second": 80.0})
    return row


def levanter(step: int, nan: bool = False) -> dict[str, Any]:
    rnd = random.Random(20_000 + step)
    loss = 2.2 + 3.0 / (1.0 + step / 150.0) + 0.02 * rnd.gauss(0.0, 1.0)
    return {
        "train/loss": math.nan if nan else loss,
        "grad/norm/total": 0.6 + 0.03 * rnd.gauss(0.0, 1.0),
        "optim/learning_rate": 3e-4,
        "throughput/tokens_per_second": 4.0e5 * (1.0 + 0.01 * rnd.gauss(0.0, 1.0)),
        "throughput/mfu": 42.0 + 0.3 * rnd.gauss(0.0, 1.0),
        "throughput/duration": STEP_SECONDS,
        "global_step": step,
    }


Rows = Callable[..., dict[str, Any]]


def log_steps(
    server: WandbStandin, project: str, run: str, rows: Rows, first: int, last: int, t0: float, **kw: Any
) -> None:
    """Steps ``first`` .. ``last - 1`` of ``rows`` (of the step), one every STEP_SECONDS after ``t0``."""
    server.log(
        project,
        run,
        [
            {"_step": s, "_timestamp": t0 + (s - first + 1) * STEP_SECONDS, **rows(s, **kw)}
            for s in range(first, last)
        ],
    )
