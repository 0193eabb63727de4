"""Where samples enter the rules (the engine, replay): each run's profile, chosen or detected, applied.

A watch chooses a profile (``metrics_profile: megatron``), turns mapping off (``none``) or leaves it to
detection (``auto``, the default): the run's profile is then ``detect`` of every key the run has
logged so far, re-judged whenever a new key appears (a pure function of the key set, so a replay
decides as the live engine did). ``describe`` is what the run page and the API show; it is stored
with the run's stats, and ``seed`` resumes from it after a restart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from monitor.profiles.detect import Detection, detect
from monitor.profiles.profile import PROFILES
from monitor.profiles.shape import Shape, Shapes
from monitor.profiles.translate import Translation, translation
from monitor.samples import Sample

AUTO, NONE = "auto", "none"
SHARED_MAX = 4096
_SETS: dict[frozenset[str], frozenset[str]] = {}


def shared(names: frozenset[str]) -> frozenset[str]:
    """One object for equal sets of keys: the runs of a watch log the same keys (a set of 20 costs 2 KB)."""
    held = _SETS.get(names)
    if held is None:
        if len(_SETS) >= SHARED_MAX:
            _SETS.clear()
        held = _SETS[names] = names
    return held


def choices() -> list[str]:
    """What ``metrics_profile`` accepts."""
    return [AUTO, NONE, *sorted(p.name for p in PROFILES.values() if not p.overlay)]


class _Run:
    __slots__ = ("choice", "custom", "seen", "detection", "translation", "fast", "shapes")

    def __init__(self, choice: str, custom: Mapping[str, str] | None = None) -> None:
        self.choice = choice
        self.custom = dict(custom or {})
        self.seen: frozenset[str] = frozenset()  # (these two sets: one object for the runs alike, shared)
        self.detection: Detection | None = None
        self.translation: Translation = translation(None if choice == AUTO else choice, self.custom)
        self.fast: frozenset[str] = frozenset()  # keys that pass unchanged: a sample of only these is done
        self.shapes = Shapes()  # what the run's keys look like (their first values), for suggestions

    def learn(self, keys: Iterable[str]) -> None:
        """New keys seen: judge the run's trainer again (auto only)."""
        keys = list(keys)
        self.seen = shared(self.seen.union(keys))
        self.shapes.learn(keys)
        if self.choice != AUTO:
            return
        found = detect(self.seen)
        before = self.detection.profile if self.detection else None
        self.detection = found
        if found.profile != before:
            self.translation = translation(found.profile, self.custom)
            self.fast = frozenset()

    def apply(self, sample: Sample) -> Sample:
        metrics = sample.metrics
        if not metrics or self.fast.issuperset(metrics):
            if self.shapes.busy and metrics:
                self.shapes.add(metrics)
            return sample  # the common case: one set lookup per key
        if not self.seen.issuperset(metrics):
            self.learn(metrics)
        if self.shapes.busy:
            self.shapes.add(metrics)
        self.fast = shared(self.fast | self.translation.plain(metrics))
        return self.translation.sample(sample)


class Vocabulary:
    """Per-run profile state for one engine or replay. Not thread-safe (the engine holds its lock)."""

    def __init__(self) -> None:
        self._runs: dict[str, _Run] = {}

    def _run(
        self, run: str, choice: str, stored: Mapping[str, Any] | None, custom: Mapping[str, str] | None = None
    ) -> _Run:
        state = self._runs.get(run)
        if state is None or state.choice != choice or state.custom != dict(custom or {}):
            state = self._runs[run] = _Run(choice, custom)
            seed = stored.get("metrics_profile") if stored else None
            if isinstance(seed, Mapping):
                state.learn(str(k) for k in seed.get("keys") or ())
        return state

    def translate(
        self,
        run: str,
        samples: list[Sample],
        choice: str = AUTO,
        stored: Mapping[str, Any] | None = None,
        custom: Mapping[str, str] | None = None,
    ) -> list[Sample]:
        """The run's samples with canonical metric names. ``stored``: the run's saved stats (a restart);
        ``custom``: the watch's own ``metrics:`` mapping (run key -> the rules' name)."""
        state = self._run(run, choice, stored, custom)
        for sample in samples:  # learn every key first: a batch is translated with one verdict
            if sample.metrics and not state.seen.issuperset(sample.metrics):
                state.learn(sample.metrics)
        return [state.apply(s) for s in samples]

    def translate_one(self, sample: Sample, choice: str = AUTO) -> Sample:
        state = self._runs.get(sample.run)
        if state is None or state.choice != choice:
            state = self._run(sample.run, choice, None)
        return state.apply(sample)

    def translator(self, run: str, choice: str = AUTO) -> Callable[[Sample], Sample]:
        """``translate_one`` for one run's samples, the lookups done once (replay's hot path). Valid
        while the run is translated with this ``choice`` only (then its state is never replaced)."""
        state = self._runs.get(run)
        if state is None or state.choice != choice:
            state = self._run(run, choice, None)
        return state.apply

    def describe(self, run: str) -> dict[str, Any] | None:
        """The run's profile for the API and the run page (JSON), or None before any sample."""
        state = self._runs.get(run)
        if state is None:
            return None
        return describe(state.choice, state.detection, state.seen)

    def keys(self, run: str) -> list[str]:
        """Every key the run has logged, as logged (before any mapping)."""
        state = self._runs.get(run)
        return sorted(state.seen) if state is not None else []

    def shapes(self, run: str) -> Mapping[str, Shape]:
        """What the run's keys look like, as logged (``monitor.profiles.shape``)."""
        state = self._runs.get(run)
        return state.shapes.view() if state is not None else {}

    def renames(self, run: str) -> dict[str, str]:
        """Run key -> the name the rules see it under, for the keys the run's translation renames."""
        state = self._runs.get(run)
        if state is None:
            return {}
        return {k: state.translation.rename[k] for k in state.seen if k in state.translation.rename}

    def forget(self, run: str) -> None:
        self._runs.pop(run, None)


def describe(choice: str, detection: Detection | None, seen: Iterable[str] = ()) -> dict[str, Any]:
    if choice == NONE:
        return {"name": None, "how": "off", "confidence": None, "keys": [], "explain": "mapping off"}
    if choice != AUTO:
        profile = PROFILES[choice]
        markers = sorted(profile.markers & set(seen))
        return {
            "name": choice,
            "trainer": profile.trainer,
            "how": "configured",
            "confidence": None,
            "keys": markers,
            "explain": f"{choice}, set in the watch config",
        }
    d = detection or Detection(None, 0.0)
    return {
        "name": d.profile,
        "trainer": PROFILES[d.profile].trainer if d.profile else None,
        # a profile that renames nothing (herowatch's own names) says nothing of the trainer: any run
        # logging those names matches it, a GRPO run as much as a Levanter one
        "renames": bool(d.profile) and any(k != v for k, v in PROFILES[d.profile].keys.items()),
        "how": "detected",
        "confidence": d.confidence,
        "keys": list(d.markers),
        "explain": d.explain(),
    }
