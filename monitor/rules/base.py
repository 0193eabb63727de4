"""The detector interface and the registry from rule ``kind`` to detector class."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar, Generic, TypeVar

from alerts.model import Finding
from monitor.rules.spec import RuleSpec
from monitor.samples import Sample

SpecT = TypeVar("SpecT", bound=RuleSpec)


class Detector(ABC, Generic[SpecT]):
    """Evaluates one rule for one run. Fed every sample of the run once, in time order."""

    kind: ClassVar[str]
    spec_model: ClassVar[type[RuleSpec]]

    def __init__(self, rule: SpecT, run: str) -> None:
        self.rule = rule
        self.run = run

    @abstractmethod
    def observe(self, sample: Sample) -> None:
        """Take in one sample. Cheap: O(log W) or amortised O(1)."""

    @abstractmethod
    def evaluate(self, now: float) -> Finding:
        """Is the rule's condition true at ``now``?"""


DETECTORS: dict[str, type[Detector]] = {}


def register(cls: type[Detector]) -> type[Detector]:
    if cls.kind in DETECTORS:
        raise ValueError(f"detector kind {cls.kind!r} registered twice")
    DETECTORS[cls.kind] = cls
    return cls
