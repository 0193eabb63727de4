"""What a run does send that looks like an input it does not: for the ``watching_blind`` warning and
``herowatch doctor``. Pure: key names in, suggestions out.

A run key looks related to a canonical name when a trainer profile maps it there (``lm loss`` ->
``train/loss``), or when one of its words is a word of that name or a known synonym of it (``objective``
for a loss, ``gnorm`` for a gradient norm, ``tps`` for tokens per second), and its values have the
right shape (``monitor.profiles.shape``: never a counter such as ``restarts_total`` for a gauge such as a
grad norm). The fix is then a watch's ``metrics:`` mapping, or the ``metrics_profile`` whose trainer
logs such keys.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from monitor.profiles.profile import CANONICAL, PROFILES, trainer_profiles
from monitor.profiles.shape import Shape, fits

# Words that say what a canonical name measures. A run key sharing one looks related to it.
SYNONYMS: dict[str, frozenset[str]] = {
    "train/loss": frozenset({"loss", "objective", "nll", "xent", "ce", "crossentropy", "perplexity", "ppl"}),
    "grad/norm/total": frozenset({"gnorm", "gradnorm", "grad", "grads", "gradient"}),
    "throughput/tokens_per_second": frozenset({"tps", "tokens", "tok", "toks", "throughput", "tokps"}),
    "throughput/tokens_per_second_per_device": frozenset({"tps", "tokens", "tok", "throughput"}),
    "throughput/tflops_per_device": frozenset({"tflops", "flops", "throughput"}),
    "throughput/mfu": frozenset({"mfu", "utilization"}),
    "throughput/duration": frozenset({"duration", "iteration", "steptime", "elapsed"}),
    "optim/learning_rate": frozenset({"lr", "learning"}),
    "optim/skipped_step": frozenset({"skipped", "skip"}),
    "eval/loss": frozenset({"eval", "val", "validation"}),
    "eval/paloma/macro_loss": frozenset({"paloma"}),
    "moe/drop_fraction": frozenset({"drop", "dropped", "capacity"}),
    "rl/reward/mean": frozenset({"reward", "rewards", "score"}),
    "rl/kl": frozenset({"kl"}),
    "rl/entropy": frozenset({"entropy"}),
}
GENERIC = frozenset({"train", "total", "mean", "per", "second", "device", "s", "avg", "global", "step"})
MAX_RELATED = 4
_WORD = re.compile(r"[a-z]+")


def words(key: str) -> set[str]:
    return set(_WORD.findall(key.lower().replace("grad_norm", "gradnorm").replace("grad-norm", "gradnorm")))


def related(canonical: str, keys: Iterable[str], shapes: Mapping[str, Shape] | None = None) -> list[str]:
    """The run's keys that look like ``canonical``, most likely first (a profile's mapping, then words),
    of the right shape (``shape.fits``: never a counter for a gauge, a loss-like series for a loss;
    ``shapes``: what the run's values look like, where known). Left out rather than wrong."""
    shapes = shapes or {}
    keys = [  # a key that is the canonical name of something else stands for that, never for this
        k for k in dict.fromkeys(keys) if k not in CANONICAL and fits(canonical, k, shapes.get(k))
    ]
    mapped = {k for p in PROFILES.values() for k, c in p.keys.items() if c == canonical}
    wanted = (words(canonical) - GENERIC) | SYNONYMS.get(canonical, frozenset())
    scored = []
    for key in keys:
        if key == canonical:
            continue
        shared = words(key) & wanted
        if key in mapped:
            scored.append((0, -len(shared), key))
        elif shared:
            scored.append((1, -len(shared), key))
    return [k for *_, k in sorted(scored)][:MAX_RELATED]


@dataclass(frozen=True)
class Hint:
    """How to feed the missing inputs: a ``metrics:`` mapping and/or a profile."""

    mapping: dict[str, str]  # run key -> canonical name
    profile: str | None = None  # a trainer profile that maps keys this run logs onto missing inputs

    def text(self) -> str:
        parts = []
        if self.mapping:
            pairs = ", ".join(f"{_yaml_key(k)}: {v}" for k, v in self.mapping.items())
            parts.append(f"map them with metrics: {{{pairs}}}")
        if self.profile:
            parts.append(f"metrics_profile: {self.profile}")
        return " or ".join(parts)


def _yaml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_/.\-]*", key) else "'" + key.replace("'", "''") + "'"


def hint(missing: Iterable[str], keys: Iterable[str], shapes: Mapping[str, Shape] | None = None) -> Hint:
    """The fix for ``missing`` canonical inputs given the keys the run logs (and their ``shapes``)."""
    keys = list(dict.fromkeys(keys))
    mapping: dict[str, str] = {}
    for name in missing:
        found = related(name, [k for k in keys if k not in mapping], shapes)
        if found:
            mapping[found[0]] = name
    best, best_n = None, 0
    present = set(keys)
    for p in trainer_profiles():
        n = sum(1 for k, c in p.keys.items() if k in present and c in set(mapping.values()) | set(missing))
        if n > best_n:
            best, best_n = p.name, n
    return Hint(mapping, best)


def unused_keys(
    keys: Iterable[str], used: Iterable[str], translate: Mapping[str, str] | None = None
) -> list[str]:
    """The run's keys that no rule reads (``translate``: run key -> the name the rules see)."""
    used = set(used)
    translate = translate or {}
    return [k for k in dict.fromkeys(keys) if translate.get(k, k) not in used and not k.startswith("_")]
