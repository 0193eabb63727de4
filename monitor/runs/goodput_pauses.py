"""What a run's pause was spent on, from what the run itself shows: the goodput tracker's (goodput.py)
overhead categories, named after Google's ml-goodput-measurement badput types where they fit.

A pause is a gap between two steps longer than the run's cadence allows but too short to be a hang. It is

- ``evaluation`` when the step that began it or the step that ended it logged evaluation metrics (a
  key the canonical vocabulary names ``eval/...``, or a raw key beginning ``eval``, ``val`` or
  ``validation``: the metric profiles map ``val_loss``, ``lm loss validation`` ... to ``eval/loss``);
- ``checkpoint`` (a checkpoint save) when either step logged a checkpoint marker (a key naming
  ``checkpoint`` or ``ckpt``), or when the pause recurs on the run's own save cadence: the pauses not
  explained by an evaluation are learned as a pause schedule (monitor.rules.schedule, the one the
  stall rule learns: three similar pauses evenly spaced in steps or in time), and a pause the schedule
  predicts is a save. A pause that is both an evaluation and on the save cadence is split: the save's
  usual length is booked as ``checkpoint``, the rest as ``evaluation``;
- ``paused`` otherwise: overhead herowatch cannot explain (the first saves, before their cadence is
  learned, are booked here: a span is never relabelled afterwards).

Pure; its state (the schedule) is plain JSON-able data stored with the tracker's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from monitor.profiles.profile import CANONICAL
from monitor.rules.schedule import PauseSchedule, usual

EVAL, SAVE, OTHER = "evaluation", "checkpoint", "paused"
_EVAL_CANONICAL = frozenset(k for k in CANONICAL if k.startswith("eval/"))
_EVAL_PREFIXES = ("eval", "val/", "val_", "val-", "valid", "validation")
_SAVE_WORDS = ("checkpoint", "ckpt")
_kinds: dict[str, str | None] = {}  # key -> what logging it marks (cached: a run logs the same keys)


def _kind(key: str) -> str | None:
    k = key.lower()
    if key in _EVAL_CANONICAL or k.startswith(_EVAL_PREFIXES):
        return EVAL
    if any(w in k for w in _SAVE_WORDS):
        return SAVE
    return None


def marks_of(keys: Iterable[str]) -> frozenset[str]:
    """What a row that logged ``keys`` shows happened at its step: ``evaluation``, ``checkpoint``."""
    out: set[str] = set()
    for key in keys:
        kind = _kinds.get(key, "")
        if kind == "":
            if len(_kinds) > 100_000:
                _kinds.clear()
            kind = _kinds[key] = _kind(key)
        if kind is not None:
            out.add(kind)
    return frozenset(out)


class PauseKinds:
    """The run's save cadence, learned from its unexplained pauses; ``split`` books one pause."""

    def __init__(self) -> None:
        self.schedule = PauseSchedule()

    def split(
        self, step: int | None, t: float, lost: float, stride: float, slack: float, marks: frozenset[str]
    ) -> dict[str, float]:
        """Seconds per category of a pause that began after ``step`` at ``t`` and lost ``lost`` seconds;
        ``marks``: what the steps on either side of it logged. Learns from it (hence: call once)."""
        if step is None:
            return {OTHER: lost}
        if EVAL not in marks:
            self.schedule.add(step, t, lost, stride, slack)
        habit = self.schedule.match(step, t, stride, slack)
        if EVAL in marks:
            save = min(lost, usual(habit)) if habit is not None else 0.0
            return {SAVE: save, EVAL: lost - save}
        return {SAVE if SAVE in marks or habit is not None else OTHER: lost}

    def peek(self, step: int | None, t: float, stride: float, slack: float, marks: frozenset[str]) -> str:
        """The category an ongoing pause after ``step`` would be booked as so far (learns nothing)."""
        if EVAL in marks:
            return EVAL
        if SAVE in marks or (step is not None and self.schedule.match(step, t, stride, slack)):
            return SAVE
        return OTHER

    def to_dict(self) -> dict[str, Any]:
        s = self.schedule
        return {"marks": [list(m) for m in s.marks], "habits": [dict(h) for h in s.habits]}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> PauseKinds:
        pk = cls()
        if not data:
            return pk
        s = pk.schedule
        s.marks.extend([m[0], m[1], m[2], bool(m[3])] for m in data.get("marks", ()))
        s.habits = [dict(h) for h in data.get("habits", ())]
        s.unexplained = sum(1 for m in s.marks if not m[3])
        return pk
