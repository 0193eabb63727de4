"""What arrived for a run, per input its rules feed on: first and last arrival, how many, the recent
gaps (``Arrivals``, kept by ``RunRules``, saved with the detector state). ``coverage.judge`` turns it
into a state per rule and input."""

from __future__ import annotations

import math
import statistics
from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field
from operator import sub
from typing import Any

from monitor.rules.base import ANY, STATE, STEP
from monitor.samples import RunState

STOP_FACTOR = 10.0  # an input silent this many times its own median gap has stopped
MIN_GAPS = 3  # gaps needed before an input's cadence is trusted
GAPS_KEPT = 16


class Seen:
    """Arrivals of one input: first and last time, how many distinct times, the recent gaps."""

    __slots__ = ("first", "last", "count", "gaps")

    def __init__(self, t: float) -> None:
        self.first = self.last = t
        self.count = 1
        self.gaps = array("d")  # the last GAPS_KEPT (an array: 8 bytes a gap; an empty deque is 624)

    def add(self, t: float) -> None:
        if t > self.last:
            gaps = self.gaps
            gaps.append(t - self.last)
            if len(gaps) > GAPS_KEPT:
                del gaps[0]
            self.last = t
            self.count += 1

    def limit(self) -> float | None:
        """How long this input may be silent before it has stopped (None: its cadence is not known)."""
        if len(self.gaps) < MIN_GAPS:
            return None
        return max(STOP_FACTOR * statistics.median(self.gaps), 2.0 * max(self.gaps))

    def cadence(self) -> float | None:
        return statistics.median(self.gaps) if self.gaps else None

    def export(self) -> list:
        return [self.first, self.last, self.count, list(self.gaps)]

    @classmethod
    def restore(cls, data: Any) -> Seen:
        first, last, count, gaps = data
        seen = cls(float(first))
        seen.last, seen.count = float(last), int(count)
        seen.gaps.extend(float(g) for g in gaps if math.isfinite(float(g)))
        del seen.gaps[:-GAPS_KEPT]
        return seen


@dataclass(eq=False)
class Arrivals:
    """What arrived for one run, per input the run's rules feed on. Fed every sample, so it keeps one
    ``Seen`` per shape of sample (the tracked metrics it carries, whether it has a step): a run's rows
    mostly have one shape, and one update per sample is what the replay budget allows. ``seen()``
    merges them per input when coverage is judged."""

    tracked: frozenset[str]
    shapes: dict[tuple[tuple[str, ...], bool], Seen] = field(default_factory=dict)
    state_seen: Seen | None = None
    state: RunState | None = None
    looked: dict[str, float] = field(default_factory=dict)  # input -> herowatch's first look (queried)
    _plans: dict[tuple[tuple[str, ...], bool], tuple[tuple[str, ...], bool]] = field(default_factory=dict)

    def observe(self, t: float, names: tuple[str, ...], step: int | None, state: RunState | None) -> None:
        if state is not None:
            self.state = state
            st = self.state_seen
            if st is None:
                self.state_seen = Seen(t)
            elif t > st.last:  # no gaps kept: the state is never judged as stopped (it is sent on change)
                st.last = t
                st.count += 1
        if step is None and not names:
            return
        raw = (names, step is not None)
        key = self._plans.get(raw)
        if key is None:
            key = (tuple(sorted(n for n in names if n in self.tracked)), raw[1])
            if len(self._plans) >= 256:
                self._plans.clear()
            self._plans[raw] = key
        seen = self.shapes.get(key)
        if seen is None:
            self.shapes[key] = Seen(t)
        else:
            seen.add(t)

    def observe_times(self, names: tuple[str, ...], stepped: bool, times: list[float]) -> None:
        """``observe`` of samples without a state at ``times`` (in order), all with these names."""
        if not times or (not stepped and not names):
            return
        raw = (names, stepped)
        key = self._plans.get(raw)
        if key is None:
            key = (tuple(sorted(n for n in names if n in self.tracked)), stepped)
            if len(self._plans) >= 256:
                self._plans.clear()
            self._plans[raw] = key
        seen = self.shapes.get(key)
        if seen is None:
            seen = self.shapes[key] = Seen(times[0])
        last, count, gaps = seen.last, seen.count, seen.gaps
        steps = list(map(sub, times, [last, *times[:-1]]))  # each time after the one before: at once
        if min(steps) > 0:
            gaps.extend(steps if len(steps) <= GAPS_KEPT else steps[-GAPS_KEPT:])
            last, count = times[-1], count + len(times)
        else:
            for t in times:
                if t > last:
                    gaps.append(t - last)
                    last = t
                    count += 1
        if len(gaps) > GAPS_KEPT:
            del gaps[:-GAPS_KEPT]
        seen.last, seen.count = last, count

    def look(self, names: frozenset[str], now: float) -> None:
        """herowatch looks for these queried inputs now (a source of the watch asks for them): the first
        look is remembered, and saved with the rest, so a restart does not start the grace afresh."""
        for name in names:
            if name not in self.looked and len(self.looked) < 256:
                self.looked[name] = now

    def step_cadence(self) -> float | None:
        """The run's usual interval between rows with a step (the shortest of its shapes' medians, each
        over ``MIN_GAPS`` gaps at least); None while not known."""
        known = [
            seen.gaps for (_, stepped), seen in self.shapes.items() if stepped and len(seen.gaps) >= MIN_GAPS
        ]
        return min(statistics.median(gaps) for gaps in known) if known else None

    def seen(self) -> dict[str, Seen]:
        """Per input (metric, ``STEP``, ``STATE``, ``ANY``): its arrivals, merged over the shapes."""
        parts: dict[str, list[Seen]] = {}
        for (names, stepped), seen in self.shapes.items():
            for name in (*names, ANY, *((STEP,) if stepped else ())):
                parts.setdefault(name, []).append(seen)
        out = {name: _merge(seens) for name, seens in parts.items()}
        if self.state_seen is not None:
            out[STATE] = self.state_seen
        return out

    def export(self) -> dict:
        shapes = [[list(names), stepped, seen.export()] for (names, stepped), seen in self.shapes.items()]
        state_seen = self.state_seen.export() if self.state_seen is not None else None
        return {"state": self.state, "state_seen": state_seen, "shapes": shapes, "looked": dict(self.looked)}

    def restore(self, data: Mapping | None) -> None:
        if not isinstance(data, Mapping):
            return
        state = data.get("state")
        self.state = RunState.of(state) or self.state
        try:
            if data.get("state_seen") is not None and self.state_seen is None:
                self.state_seen = Seen.restore(data["state_seen"])
            for names, stepped, raw in data.get("shapes") or ():
                self.shapes.setdefault((tuple(str(n) for n in names), bool(stepped)), Seen.restore(raw))
            looked = data.get("looked")
            if isinstance(looked, Mapping):
                for name, t in list(looked.items())[:256]:
                    if math.isfinite(float(t)):  # the earlier look wins: it is herowatch's first
                        self.looked[str(name)] = min(float(t), self.looked.get(str(name), math.inf))
        except (TypeError, ValueError):
            return


def _merge(seens: list[Seen]) -> Seen:
    if len(seens) == 1:
        return seens[0]
    newest = max(seens, key=lambda s: s.last)
    out = Seen(min(s.first for s in seens))
    out.last, out.count = newest.last, sum(s.count for s in seens)
    out.gaps.extend(newest.gaps)  # the cadence of the shape that came last (at most GAPS_KEPT)
    return out
