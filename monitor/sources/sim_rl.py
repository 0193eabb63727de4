"""What a simulated RL post-training step logs (``sim.trains: rl``), on the canonical names of the rl pack.

A GRPO-like run: the mean reward of each rollout batch rises from near zero towards a plateau with
batch noise, KL to the reference grows slowly (like a power of the step), the policy entropy decays
slowly, and responses grow longer until the longest ones reach ``max_response_length`` (a few get cut
there: the length cap the run page draws). A ``reward_collapse`` incident makes the policy degenerate
within a step: the reward gives back 90% of what was learned, KL runs away (12x) and the entropy
collapses (to a fifth), until the incident ends. A ``nan`` incident logs a NaN reward and KL.
Pure: the step, the run's random generator, the step's compute time and the incident's strength.
"""

from __future__ import annotations

import math
import random

from monitor.sources.sim_config import SimTarget

RESPONSES, PROMPT_TOKENS = 256, 200  # per rollout batch


def rl_metrics(
    cfg: SimTarget, step: int, rng: random.Random, duration: float, collapse: float, nan: bool
) -> dict[str, float]:
    """``collapse``: 0 (healthy) .. 1 (fully collapsed)."""
    learned = 1.0 - math.exp(-step / 60.0)
    reward = 0.08 + 0.64 * learned * (1.0 - 0.9 * collapse) + 0.025 * rng.gauss(0.0, 1.0)
    spread = (0.32 - 0.08 * learned) * (1.0 - 0.5 * collapse) * (1.0 + 0.03 * rng.gauss(0.0, 1.0))
    kl = (
        (0.004 + 0.05 * (step / 1000.0) ** 0.7) * (1.0 + 0.05 * rng.gauss(0.0, 1.0)) * (1.0 + 11.0 * collapse)
    )
    entropy = (
        (0.35 + 0.9 * math.exp(-step / 2000.0)) * (1.0 + 0.02 * rng.gauss(0.0, 1.0)) * (1.0 - 0.8 * collapse)
    )
    mean_len = (160.0 + 300.0 * (1.0 - math.exp(-step / 150.0))) * (1.0 + 0.03 * rng.gauss(0.0, 1.0))
    cap = float(cfg.max_response_length)
    tail = 2.6 * mean_len  # the longest response the batch would have, were there no cap
    clipped = max(0.0, (tail - cap) / tail * 0.6)
    if nan:
        reward = kl = math.nan
    tokens = RESPONSES * (PROMPT_TOKENS + mean_len)
    rollout = 0.55 + 0.1 * mean_len / (mean_len + 300.0)  # generation grows with the response length
    return {
        "rl/reward/mean": reward,
        "rl/reward/std": spread,
        "rl/kl": kl,
        "rl/entropy": entropy,
        "rl/response_length/mean": mean_len,
        "rl/response_length/min": 0.22 * mean_len,
        "rl/response_length/max": min(cap, tail),
        "rl/response_length/clip_ratio": clipped,
        "rl/throughput/tokens_per_second": tokens / duration,
        "rl/seconds/rollout": duration * rollout,
        "rl/seconds/training": duration * (1.0 - rollout),
    }
