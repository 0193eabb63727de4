"""Which trainer logged a run, from its history keys alone: a pure function keys -> Detection.

Each trainer profile has marker keys (names only that trainer logs). The profile with the most markers
present wins (ties: the larger share of its markers, then the name). Its confidence weighs that
evidence against the evidence for any other trainer (markers of another profile that the winner does
not share) and is reduced while fewer than ``MIN_EVIDENCE`` markers are present:

    confidence = n / (n + rival) x min(1, n / MIN_EVIDENCE)

Below ``THRESHOLD`` no profile is applied and the keys are used as they are (the canonical names).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from monitor.profiles.profile import trainer_profiles

MIN_EVIDENCE = 2
THRESHOLD = 0.6  # one marker alone (0.5) is not enough


@dataclass(frozen=True)
class Detection:
    profile: str | None  # None: no trainer recognised
    confidence: float  # 0..1
    markers: tuple[str, ...] = ()  # the winner's markers present in the keys
    rival: str | None = None  # the next candidate with evidence of its own, if any

    def explain(self) -> str:
        if self.profile is None:
            if not self.markers:
                return "no trainer's marker keys seen: keys are used as they are"
            return f"unsure (confidence {self.confidence:.2f}): keys are used as they are"
        why = ", ".join(repr(m) for m in self.markers[:4]) + (" ..." if len(self.markers) > 4 else "")
        rival = f"; also looked like {self.rival}" if self.rival else ""
        return f"{self.profile} (confidence {self.confidence:.2f}, from {why}{rival})"


def detect(keys: Iterable[str]) -> Detection:
    present = set(keys)
    scored = []
    for p in trainer_profiles():
        hits = p.markers & present
        if hits:
            scored.append((len(hits), len(hits) / len(p.markers), p.name, hits))
    if not scored:
        return Detection(None, 0.0)
    scored.sort(key=lambda x: (x[0], x[1], x[2]), reverse=True)
    n, _, best, hits = scored[0]
    rival_n, rival = 0, None
    for _, _, name, other in scored[1:]:
        own = len(other - hits)  # evidence the winner cannot explain
        if own > rival_n:
            rival_n, rival = own, name
    confidence = round(n / (n + rival_n) * min(1.0, n / MIN_EVIDENCE), 3)
    return Detection(best if confidence >= THRESHOLD else None, confidence, tuple(sorted(hits)), rival)
