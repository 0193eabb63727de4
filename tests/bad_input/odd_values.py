"""The odd metric values the bad-input tests feed to the Evaluator and the engine, and the metrics of the
hero pack they feed them to."""

from __future__ import annotations

import math

HERO_METRICS = [
    "train/loss",
    "grad/norm/total",
    "throughput/tokens_per_second",
    "throughput/mfu",
    "moe/drop_fraction",
    "train/router/routing_entropy_mean",
    "eval/paloma/macro_loss",
    "optim/skipped_step",
    "oom_kills_total",
    "xid_errors_total",
    "gpu_sm_active_ratio",
    "host_memory_available_bytes",
    "restarts_total",
]
ODD = [math.nan, math.inf, -math.inf, 1e308, -1e308, 5e-324, -0.0, 0.0, 1e-308]
