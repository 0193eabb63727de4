"""Applying profiles to samples: a trainer's key names -> the canonical names. Pure.

Rules, in one place:
- a mapped key is renamed to its canonical name and its value scaled to the canonical unit;
- when several keys of a sample map to one canonical name, the profile's first-listed key wins;
- keys matching a pattern (one per GPU) are folded into one value (mean, max, min or sum; NaN wins);
- every other key passes through unchanged, unless a mapped key already produced that name.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace

from monitor.profiles.profile import PROFILES, Pattern, Profile, overlays
from monitor.samples import Sample

_REDUCE = {"mean": lambda xs: math.fsum(xs) / len(xs), "max": max, "min": min, "sum": math.fsum}


def _fold(values: list[float], how: str) -> float:
    if any(v != v for v in values):
        return math.nan
    return _REDUCE[how](values)


class Translation:
    """One run's translation: a trainer profile (or none) plus the overlays."""

    def __init__(self, profiles: Iterable[Profile], custom: Mapping[str, str] | None = None) -> None:
        profiles = list(profiles)
        self.names = tuple(p.name for p in profiles)
        self.rename: dict[str, str] = {}
        self.rank: dict[str, int] = {}  # key -> precedence among keys of one canonical name
        self.factor: dict[str, float] = {}
        patterns: list[Pattern] = []
        for key, name in (custom or {}).items():  # the watch's own ``metrics:`` mapping wins
            self.rename[key] = name
            self.rank[key] = len(self.rank)
        for p in profiles:
            for key, canonical in p.keys.items():
                if key not in self.rename:
                    self.rename[key] = canonical
                    self.rank[key] = len(self.rank)
            self.factor.update(p.scale)
            patterns.extend(p.patterns)
        self.patterns = [(re.compile(p.regex), p) for p in patterns]
        self._matched: dict[str, Pattern | None] = {}  # key -> its pattern (memo: keys repeat)
        self.identity = not self.patterns and not self.factor and all(k == v for k, v in self.rename.items())

    def _pattern(self, key: str) -> Pattern | None:
        try:
            return self._matched[key]
        except KeyError:
            found = next((p for rx, p in self.patterns if rx.match(key)), None)
            self._matched[key] = found
            return found

    def metrics(self, metrics: Mapping[str, float]) -> Mapping[str, float]:
        if self.identity:
            return metrics
        out: dict[str, float] = {}
        won: dict[str, int] = {}  # canonical -> rank of the key that set it
        rest: list[tuple[str, float]] = []
        folds: dict[str, tuple[Pattern, list[float]]] = {}
        changed = False
        for key, value in metrics.items():
            canonical = self.rename.get(key)
            if canonical is not None:
                rank = self.rank[key]
                if canonical not in won or rank < won[canonical]:
                    out[canonical] = value * self.factor[key] if key in self.factor else value
                    won[canonical] = rank
                changed = changed or canonical != key or key in self.factor
                continue
            pattern = self._pattern(key) if self.patterns else None
            if pattern is not None:
                folds.setdefault(pattern.canonical, (pattern, []))[1].append(value)
                changed = True
            else:
                rest.append((key, value))
        for name, (pattern, values) in folds.items():
            if name not in out:
                out[name] = _fold(values, pattern.reduce) * pattern.scale
        for key, value in rest:
            if key in out:
                changed = True  # shadowed by a mapped key
            else:
                out[key] = value
        return out if changed else metrics

    def plain(self, keys: Iterable[str]) -> set[str]:
        """Those of ``keys`` a sample can carry unchanged: not renamed, scaled or folded. (A sample of
        plain keys only has no mapped key either, so none of its keys can be shadowed.)"""
        rename, factor = self.rename, self.factor
        return {
            k
            for k in keys
            if rename.get(k, k) == k and k not in factor and (not self.patterns or self._pattern(k) is None)
        }

    def sample(self, sample: Sample) -> Sample:
        if self.identity or not sample.metrics:
            return sample
        metrics = self.metrics(sample.metrics)
        return sample if metrics is sample.metrics else replace(sample, metrics=metrics)


def translation(profile: str | None, custom: Mapping[str, str] | None = None) -> Translation:
    """The translation for a trainer profile name (None: only the overlays; "none": nothing at all but
    ``custom``, a watch's own ``metrics:`` mapping, which comes first)."""
    if profile == "none":
        return Translation((), custom)
    chosen = [PROFILES[profile]] if profile is not None else []
    return Translation([*chosen, *overlays()], custom)
