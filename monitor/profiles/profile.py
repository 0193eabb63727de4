"""A metric profile: one trainer's key names mapped to the canonical names the rule packs use.

The canonical names are Levanter's (``train/loss``, ``grad/norm/total``, ``throughput/mfu``, ...), the
hero pack's own vocabulary, plus a few names for what Levanter does not log (``rl/*`` for RL runs,
``throughput/tflops_per_device`` for trainers that report model FLOP/s instead of tokens/s).
``CANONICAL`` lists them with their units: a profile maps a key only to a name in that list, and
only when the value means the same thing (converted by ``scale`` when only the unit differs).

A profile is data, registered by name (``register``), and pure to apply (monitor.profiles.translate).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

# Canonical name -> what it means (and its unit). Rule packs are written in these names.
CANONICAL: dict[str, str] = {
    "train/loss": "training loss",
    "grad/norm/total": "global gradient norm (before clipping)",
    "optim/learning_rate": "learning rate",
    "optim/skipped_step": "1 when the optimizer skipped the step",
    "optim/loss_scale": "mixed-precision loss scale",
    "throughput/tokens_per_second": "tokens per second, whole job",
    "throughput/tokens_per_second_per_device": "tokens per second per accelerator",
    "throughput/tflops_per_device": "model TFLOP/s per accelerator",
    "throughput/mfu": "model FLOPs utilisation, percent",
    "throughput/duration": "seconds per step",
    "throughput/loading_time": "seconds a step waited for its batch (goodput's data loading)",
    "throughput/loading_fraction": "share of the time since the last logged step spent loading data, 0..1",
    "eval/loss": "validation loss",
    "eval/paloma/macro_loss": "Paloma macro-averaged loss",
    "moe/drop_fraction": "share of tokens dropped by MoE capacity",
    "train/router/routing_entropy_mean": "MoE routing entropy",
    "global_step": "the trainer's own step counter",
    "rl/reward/mean": "mean sequence reward of the rollout batch",
    "rl/reward/std": "standard deviation of the rewards within a group",
    "rl/kl": "KL divergence of the policy to the reference policy",
    "rl/entropy": "policy entropy per token",
    "rl/response_length/mean": "mean response length, tokens",
    "rl/response_length/clip_ratio": "share of responses cut at the maximum length",
    "rl/response_length/max": "longest response of the rollout batch, tokens",
    "rl/response_length/min": "shortest response of the rollout batch, tokens",
    "rl/throughput/tokens_per_second": "rollout+training tokens per second (per GPU when so logged)",
    "rl/seconds/rollout": "seconds a step spent generating rollouts",
    "rl/seconds/training": "seconds a step spent updating the policy",
    "rl/policy_lag": "policy versions the rollouts lag behind the trained policy (asynchronous RL)",
    "tokens_seen": "tokens trained on so far (a running total)",
    "gpu_utilization_ratio": "GPU utilisation (NVML: time a kernel ran), 0..1, mean over GPUs",
    "gpu_memory_allocated_ratio": "GPU memory allocated, 0..1, max over GPUs",
    "gpu_temperature_celsius": "GPU temperature, max over GPUs",
    "gpu_power_watts": "GPU power draw, sum over GPUs",
    "host_memory_available_bytes": "host memory available",
}

Reduce = Literal["mean", "max", "min", "sum"]


@dataclass(frozen=True)
class Pattern:
    """Keys matching ``regex`` (e.g. one per GPU) folded into one canonical value per sample."""

    regex: str
    canonical: str
    reduce: Reduce = "mean"
    scale: float = 1.0

    def __post_init__(self) -> None:
        re.compile(self.regex)


@dataclass(frozen=True)
class Profile:
    """One trainer's vocabulary. ``keys``: the trainer's key -> canonical name (several keys may map
    to one name: the first present in a sample wins, in this order). ``markers``: keys that identify
    the trainer in a run's history (detection, monitor.profiles.detect); ``extends``: a profile whose
    keys and markers this one includes (TRL runs on the Hugging Face Trainer)."""

    name: str
    trainer: str
    sources: tuple[str, ...]  # where the key names come from: "owner/repo: path (function)"
    keys: Mapping[str, str] = field(default_factory=dict)
    markers: frozenset[str] = frozenset()
    scale: Mapping[str, float] = field(default_factory=dict)  # trainer key -> factor to the canonical unit
    patterns: tuple[Pattern, ...] = ()
    extends: str | None = None
    overlay: bool = False  # applied to every run on top of its trainer's profile (system metrics)
    notes: str = ""

    def __post_init__(self) -> None:
        unknown = sorted(
            {c for c in self.keys.values() if c not in CANONICAL}
            | {p.canonical for p in self.patterns if p.canonical not in CANONICAL}
        )
        if unknown:
            raise ValueError(f"profile {self.name!r} maps to unknown canonical names: {unknown}")
        stray = sorted(set(self.scale) - set(self.keys))
        if stray:
            raise ValueError(f"profile {self.name!r} scales keys it does not map: {stray}")

    @property
    def renames(self) -> bool:
        """False when every key already has its canonical name and nothing is scaled (Levanter)."""
        return bool(self.patterns or self.scale or any(k != v for k, v in self.keys.items()))


PROFILES: dict[str, Profile] = {}


def register(profile: Profile) -> Profile:
    if profile.name in PROFILES:
        raise ValueError(f"metric profile {profile.name!r} registered twice")
    if profile.extends is not None:
        base = PROFILES[profile.extends]  # the base is registered first
        profile = Profile(
            name=profile.name,
            trainer=profile.trainer,
            sources=profile.sources + base.sources,
            keys={**profile.keys, **{k: v for k, v in base.keys.items() if k not in profile.keys}},
            markers=profile.markers | base.markers,
            scale={**base.scale, **profile.scale},
            patterns=profile.patterns + base.patterns,
            extends=profile.extends,
            overlay=profile.overlay,
            notes=profile.notes,
        )
    PROFILES[profile.name] = profile
    return profile


def trainer_profiles() -> list[Profile]:
    """The profiles a run can be detected as (overlays apply to every run instead)."""
    return [p for p in PROFILES.values() if not p.overlay]


def overlays() -> list[Profile]:
    return [p for p in PROFILES.values() if p.overlay]


def source_keys() -> list[str]:
    """Every trainer key some profile maps or detects by: what a source must read for auto-detection."""
    keys: dict[str, None] = {}
    for p in PROFILES.values():
        keys.update(dict.fromkeys(p.keys))
        keys.update(dict.fromkeys(sorted(p.markers)))
    return list(keys)
