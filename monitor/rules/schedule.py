"""A run's pause schedule, learned from the run itself: at which steps (or times) it habitually pauses,
and for how long. Used by the ``stall`` detector; pure, and its state is plain JSON-able data.

A **mark** is a long pause the run came back from by itself: the last step before it, when it began,
how long it lasted. A **habit** is a kind of pause that recurs regularly:

- by step: three marks of similar length (within 2x) at steps in arithmetic progression (saves every
  N steps, evals every M), within the logging stride (a run that logs every 10 steps is seen
  pausing after step 990 or 1000);
- by time: three such marks equally spaced in time, within 10% (a checkpointer that saves every 15
  minutes of wall time). A step progression is preferred when both fit.

A habit is anchored at its latest occurrence, so a period estimated a step off does not drift. A
pause is *habitual* if it begins at a step (or a time) the habit predicts; its usual length is the
second longest of the habit's last 5 pauses (one unusually slow save does not double the next
allowance). The schedule is **known** once there is a habit, every remembered mark is explained by
one (a recurring pause of a kind not learned yet, or a one-off long pause, keeps the run in the
conservative regime until it leaves the memory, the last ``MEMORY`` marks), and the run has been
watched for more than ``COVER`` x the longest period learned: a rarer kind of pause (a save every 4
evals) would have shown itself by then.
"""

from __future__ import annotations

from typing import Any

from monitor.durations import format_duration
from monitor.rules.windows import keep_last

MEMORY = 16  # long pauses remembered
HABITS = 6  # habits kept (the least recently seen goes first)
DURATIONS = 5  # recent lengths kept per habit
SIMILAR = 2.0  # two pauses within this factor of each other may be the same kind of pause
TIME_TOLERANCE = 0.1  # a time habit's pause comes within 10% of its period of the predicted time
COVER = 4  # the schedule is trusted after this many of its longest period without a surprise


def _similar(a: float, b: float) -> bool:
    return max(a, b) <= SIMILAR * min(a, b)


class PauseSchedule:
    """Marks and habits. ``add`` a finished pause; ``match`` an ongoing one."""

    __slots__ = ("marks", "habits", "unexplained")

    def __init__(self) -> None:
        # [step, t, duration, explained], the last MEMORY (a list: an empty deque costs 624 bytes)
        self.marks: list[list[Any]] = []
        self.habits: list[dict[str, Any]] = []  # {"by", "period", "anchor", "durations", "seen", "last"}
        self.unexplained = 0  # remembered marks no habit explains

    # ---- what the stall detector asks ----------------------------------------------------------
    def known(self, steps: float, seconds: float) -> bool:
        """Is the schedule trusted, after watching the run for ``steps`` steps and ``seconds``?"""
        trust = self.trusted_after()
        return trust is not None and steps > trust[0] and seconds > trust[1]

    def trusted_after(self) -> list[float] | None:
        """[steps, seconds]: watched longer than both, the schedule is trusted (None: not yet)."""
        if not self.habits or self.unexplained:
            return None
        steps = max((h["period"] for h in self.habits if h["by"] == "step"), default=0.0)
        seconds = max((h["period"] for h in self.habits if h["by"] == "time"), default=0.0)
        return [COVER * steps, COVER * seconds]

    def match(self, step: int, t: float, stride: float, slack: float) -> dict[str, Any] | None:
        """The habit that predicts a pause beginning after ``step`` at ``t`` (the longest if several)."""
        best = None
        for h in self.habits:
            if self._fits(h, step, t, stride, slack) and (best is None or usual(h) > usual(best)):
                best = h
        return best

    def longest_at(self, h: dict[str, Any], stride: float, slack: float) -> float:
        """The longest remembered pause that no habit explains yet, of a longer kind than ``h``'s, that began
        where ``h`` pauses (every 4th save also evaluates; 0 if none): the run came back from it by itself.
        Once such pauses recur as a habit of their own, that habit answers for them."""
        norm, fits = usual(h), self._fits
        return max(
            (
                m[2]
                for m in self.marks
                if not m[3]
                and m[2] > norm
                and not _similar(m[2], norm)
                and fits(h, m[0], m[1], stride, slack, False)
            ),
            default=0.0,
        )

    def restarted(self, t: float) -> None:
        """The process restarted at ``t``: time-based habits count again from there."""
        for h in self.habits:
            if h["by"] == "time":
                h["anchor"] = t

    # ---- learning --------------------------------------------------------------------------------
    def add(self, step: int, t: float, duration: float, stride: float, slack: float) -> None:
        """A long pause after ``step``, from ``t``, lasting ``duration``, that the run came back from."""
        # a habit of this step (or time) and of this length (a longer pause there is another kind)
        fits = [h for h in self.habits if _similar(usual(h), duration)]
        h = next((h for h in fits if self._fits(h, step, t, stride, slack)), None)
        if h is not None:
            self._seen(h, step, t, duration)
            self.marks.append([step, t, duration, True])
            keep_last(self.marks, MEMORY)
        else:
            mark = [step, t, duration, False]
            self.marks.append(mark)
            keep_last(self.marks, MEMORY)
            h = self._progression(mark, stride, slack)
            if h is not None:
                self.habits.append(h)
                if len(self.habits) > HABITS:
                    self.habits.remove(min(self.habits, key=lambda x: x["last"]))
                for m in self.marks:  # the earlier marks it explains
                    if not m[3] and _similar(m[2], usual(h)):
                        m[3] = self._fits(h, m[0], m[1], stride, slack, anchored=False)
        self.unexplained = sum(1 for m in self.marks if not m[3])

    def _progression(self, new: list[Any], stride: float, slack: float) -> dict[str, Any] | None:
        """A habit from three similar marks, the newest being ``new``, evenly spaced in steps or time."""
        marks = list(self.marks)[:-1]
        step, t, d = new[0], new[1], new[2]
        tol = _step_tolerance(stride)
        found_time = None
        for i in range(len(marks) - 1, -1, -1):
            si, ti, di = marks[i][0], marks[i][1], marks[i][2]
            if not _similar(di, d):
                continue
            ds, dt = step - si, t - ti
            for k in range(i - 1, -1, -1):
                sk, tk, dk = marks[k][0], marks[k][1], marks[k][2]
                if not _similar(dk, d):
                    continue
                if ds > 2 * tol and abs((si - sk) - ds) <= 2 * (stride - 1) + 0.5:
                    return _habit("step", (step - sk) / 2, step, [dk, di, d], t)
                if found_time is None and dt > 0 and abs((ti - tk) - dt) <= TIME_TOLERANCE * dt + slack:
                    found_time = _habit("time", (t - tk) / 2, t, [dk, di, d], t)
        return found_time

    def _seen(self, h: dict[str, Any], step: int, t: float, duration: float) -> None:
        where = step if h["by"] == "step" else t
        n = round((where - h["anchor"]) / h["period"])
        if n >= 1:  # refine the period a little with each occurrence
            h["period"] += ((where - h["anchor"]) / n - h["period"]) / (h["seen"] + 1)
        h["anchor"] = where
        h["durations"] = (h["durations"] + [duration])[-DURATIONS:]
        h["seen"] += 1
        h["last"] = t

    @staticmethod
    def _fits(
        h: dict[str, Any], step: int, t: float, stride: float, slack: float, anchored: bool = True
    ) -> bool:
        if h["by"] == "step":
            off = step - h["anchor"]
            return abs(off - round(off / h["period"]) * h["period"]) <= _step_tolerance(stride)
        off = t - h["anchor"]
        n = round(off / h["period"])
        if anchored and n < 1:
            return False  # the next timed pause is due a period after the last one
        return abs(off - n * h["period"]) <= TIME_TOLERANCE * h["period"] + slack

    # ---- words -----------------------------------------------------------------------------------
    @staticmethod
    def describe(h: dict[str, Any]) -> str:
        if h["by"] == "step":
            every = f"every {round(h['period'])} steps"
        else:
            every = f"every {format_duration(h['period'])}"
        return f"the usual {format_duration(usual(h))} pause {every}"


def usual(h: dict[str, Any]) -> float:
    """A habit's usual pause: the second longest of its recent ones (one slow save is not the norm)."""
    ds = sorted(h["durations"], reverse=True)
    return ds[1] if len(ds) > 1 else ds[0]


def _habit(by: str, period: float, anchor: float, durations: list[float], t: float) -> dict[str, Any]:
    return {"by": by, "period": period, "anchor": anchor, "durations": durations, "seen": 3, "last": t}


def _step_tolerance(stride: float) -> float:
    """How far a pause's logged step may sit from the habit's prediction: the last step logged before
    a pause is up to one stride - 1 before the step that paused, and a period estimated from such
    steps is off by up to half that (exact when every step is logged)."""
    return 1.5 * (stride - 1) + 0.5
