"""Batched observation: a run of samples fed to one run's detectors, each detector in a loop of its own.

``herowatch replay`` hands the evaluator a *segment*: consecutive samples of one run that carry the
same metric names, none of them news (no state, no source error), and between which the replayer
has nothing of its own to do (no coverage judgement, no grid tick, no source down). Fed one by one,
the run would be evaluated at each new sample time; almost always that evaluation finds nothing to
look at. Here it is skipped whenever it provably finds nothing, and the samples go to the detectors
in batches (``Detector.observe_many``), which saves a call per sample and detector.

Exact, because an evaluation looks only at slots that are queued (a detector turned ``hot``), clocked
ones (``wake_at``) and ones with open alerts. So:

- *free* detectors (not clocked, not sharing statistics) each consume the segment on their own, up to
  the end of the first sample time after which they are hot; one may run ahead of the others: it is
  not looked at until it is queued, and it is queued at the sample time at which it turned hot;
- *synchronous* detectors (clocked ones, shared-statistics groups) are fed sample by sample together,
  up to the earliest stop of the free ones, and stop at the end of a sample time after which one of
  them is hot or a clocked detector of the run may be due;
- at a stop the run is evaluated at that sample time, as the sample-by-sample path would; with a
  queued slot or an open alert the stops come at every sample time (the sample-by-sample path).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from operator import attrgetter

from monitor.engine.run_rules import RunRules, Slot
from monitor.rules.base import HOT, RAN_OUT, Stop
from monitor.rules.columns import batch_columns
from monitor.samples import Sample

Evaluate = Callable[[float], list]
_T, _STEP, _SOURCE = attrgetter("t"), attrgetter("step"), attrgetter("source")


class Group:
    """Detectors sharing statistics (a leader and its followers), fed together as one free feed."""

    clocked = False

    def __init__(self, slots: list[Slot]) -> None:
        self.members = [slot.det for slot in slots]
        self.slots = slots
        self.leader, self.followers = self.members[0], self.members[1:]
        self.hot_slots: list[Slot] = []  # the members hot at the sample time it stopped at

    def observe_many(self, samples: Sequence[Sample], i: int, end: int) -> tuple[int, Stop]:
        members = self.members
        k = self.leader.observe_shared(self.followers, samples, i, end)
        hot = k > i and any(m.hot for m in members)  # (hot only after a sample taken)
        i = k
        while i < end and not hot:
            s = samples[i]
            for m in members:
                m.observe(s)
            i += 1
            hot = any(m.hot for m in members)
        if not hot:
            return i, RAN_OUT
        hot_slots = {id(slot): slot for m, slot in zip(members, self.slots, strict=True) if m.hot}
        t = samples[i - 1].t
        while i < end and samples[i].t == t:  # the rest of that sample time
            s = samples[i]
            for m, slot in zip(members, self.slots, strict=True):
                m.observe(s)
                if m.hot:
                    hot_slots[id(slot)] = slot
            i += 1
        self.hot_slots = list(hot_slots.values())
        return i, HOT


def split(rr: RunRules, plan: list[Slot]) -> tuple[list, list[Slot]]:
    """A plan's free feeds, (detector, slot) or (group, None) for a group sharing statistics, and its
    synchronous slots (clocked detectors sharing statistics), cached per plan."""
    got = rr.splits.get(id(plan))
    if got is not None and got[0] is plan:
        return got[1], got[2]
    groups: dict[int, list[Slot]] = {}
    for slot in plan:  # (a leader comes before its followers)
        if slot.leader is not None:
            groups.setdefault(id(slot.leader), []).append(slot)
    free: list = []
    sync: list[Slot] = []
    for slot in plan:
        det = slot.det
        if id(det) in groups:
            group = [slot, *groups[id(det)]]
            if any(s.det.clocked for s in group):
                sync.extend(group)
            else:
                free.append((Group(group), None))
        elif slot.leader is None:
            free.append((det, slot))
    leaders = {id(slot.det) for slot in plan}
    for leader, followers in groups.items():
        if leader not in leaders:  # (followers always come with their leader: same inputs)
            sync.extend(followers)
    sync.sort(key=lambda slot: slot.index)
    if len(rr.splits) >= 64:
        rr.splits.clear()
    rr.splits[id(plan)] = (plan, free, sync)
    return free, sync


def _group_end(samples: Sequence[Sample], k: int, end: int) -> int:
    """The index after the last sample at ``samples[k].t`` (before ``end``)."""
    t = samples[k].t
    k += 1
    while k < end and samples[k].t == t:
        k += 1
    return k


def observe_segment(
    rr: RunRules, plan: list[Slot], samples: Sequence[Sample], i: int, j: int, evaluate: Evaluate
) -> list:
    """Feed ``samples[i:j]`` (already recorded as arrivals) to the plan's detectors; evaluate the run
    (``evaluate(now)``) at each sample time before the last at which the sample-by-sample path could
    find something. Returns those evaluations' events. At the end every detector has seen all of
    ``samples[i:j]``; slots hot since the last sample time are queued, for the caller's evaluation."""
    free, sync = split(rr, plan)
    n_free = len(free)
    cursor = [i] * n_free
    stopped = [RAN_OUT] * n_free  # why each stopped, at the end of the sample time before its cursor
    masked = [False] * n_free
    fed = {id(slot.det) for slot in plan}
    unfed = [d for d, _ in rr.clocks if id(d) not in fed]  # their wake_at moves only when evaluated
    events: list = []
    pos = i
    while pos < j:
        limit = j
        if rr.dirty or rr.live or rr.orphans:  # evaluated at the next sample time whatever comes
            limit = _group_end(samples, pos, j)
        if unfed:
            due = min(d.wake_at for d in unfed)
            if due <= samples[limit - 1].t:
                k = bisect_left(samples, due, pos, limit, key=_T)
                limit = _group_end(samples, k, limit) if k < limit else limit
        stop = limit
        for k in range(n_free):
            code = stopped[k]
            if not code:
                c = cursor[k]
                if c >= limit:
                    continue
                det = free[k][0]
                c, code = det.observe_many(samples, c, limit)
                cursor[k] = c
                if not code:
                    continue
                stopped[k] = code
                slot = free[k][1]
                if det.clocked and not slot.queued:
                    # ahead of the others until its stop: the evaluations before it must not see it due
                    slot.queued = masked[k] = True
            if cursor[k] < stop:
                stop = cursor[k]
        k = pos
        if sync:
            end = stop
            stopping = False
            while k < end:
                s = samples[k]
                for slot in sync:
                    det = slot.det
                    det.observe(s)
                    if det.hot and not slot.queued:
                        slot.queued = True
                        rr.dirty.append(slot)
                k += 1
                if not stopping and rr.dirty:
                    stopping = True  # evaluated at the end of this sample time: feed the rest of it
                    end = _group_end(samples, k - 1, stop)
        else:
            k = stop
        if rr.live and k > pos:  # an open alert: each sample may have ended it
            for slot in rr.live.values():
                rr.queue(slot)
        pos = k
        for m in range(n_free):
            if stopped[m] and cursor[m] == pos:
                slot = free[m][1]
                if masked[m]:
                    slot.queued = masked[m] = False
                if stopped[m] == HOT:
                    if slot is None:  # a group: the members that turned hot
                        for member in free[m][0].hot_slots:
                            rr.queue(member)
                    else:
                        rr.queue(slot)
                stopped[m] = RAN_OUT
        if pos < j and samples[pos].t != samples[pos - 1].t:
            events += evaluate(samples[pos - 1].t)
    return events


def feed_segment(
    rr: RunRules,
    samples: Sequence[Sample],
    i: int,
    j: int,
    evaluate: Evaluate,
    observe: Callable[[Sample], None],
    names: tuple[str, ...] | None = None,
) -> list:
    """``Evaluator.observe_segment``: the run's bookkeeping of ``samples[i:j]`` (arrivals, newest time
    and step, providers), then ``observe_segment`` over each stretch with the same metric names.
    With ``names``, every sample carries those metric names (in some order): one stretch."""
    if samples[i].t < rr.newest:  # (a replay never goes back in time: the sample-by-sample path)
        events: list = []
        for k in range(i, j):
            if k > i and samples[k].t != samples[k - 1].t:
                events += evaluate(samples[k - 1].t)
            observe(samples[k])
        return events
    if names is not None and _same_names(rr, samples, i, j, names):
        plan = rr.plans.get(names)
        if plan is None:
            plan = rr.plan(names)
        return observe_segment(rr, plan, samples, i, j, evaluate)
    top = rr.top_step
    said = None
    stretches: list[tuple[int, tuple[str, ...]]] = []  # where the metric names change, and to what
    times: list[float] = []  # of the samples with the same names and stepping, for the arrivals
    names_then = stepping = None
    for k in range(i, j):
        s = samples[k]
        names = tuple(s.metrics)
        step = s.step
        if names != names_then or (step is not None) is not stepping:
            if names_then is not None:
                rr.arrivals.observe_times(names_then, stepping, times)
            if names != names_then:
                stretches.append((k, names))
            names_then, stepping, times = names, step is not None, []
        times.append(s.t)
        if step is not None and step > top:
            top = step
        if s.source is not None and (s.source, names, step is None) != said:
            said = (s.source, names, step is None)
            rr.provided(s, names)
    if names_then is not None:
        rr.arrivals.observe_times(names_then, stepping, times)
    rr.top_step = top
    rr.newest = samples[j - 1].t
    events = []
    for n, (start, names) in enumerate(stretches):
        k = stretches[n + 1][0] if n + 1 < len(stretches) else j
        plan = rr.plans.get(names)
        if plan is None:
            plan = rr.plan(names)
        events += observe_segment(rr, plan, samples, start, k, evaluate)
        if k < j and samples[k].t != samples[k - 1].t:
            events += evaluate(samples[k - 1].t)
    return events


def _same_names(rr: RunRules, samples: Sequence[Sample], i: int, j: int, names: tuple[str, ...]) -> bool:
    """``feed_segment``'s bookkeeping when every sample carries ``names``, in loops over the segment
    rather than sample by sample. False (and nothing done) if the samples do not all have a step, or
    all lack one: then the general path."""
    seg = samples[i:j]
    cols = batch_columns(samples)  # (the batch's, taken once for all its segments and rules)
    steps = cols.step[i:j] if cols is not None else list(map(_STEP, seg))
    if cols is not None and cols.rising:  # every step there, none lower than the one before
        stepping = True
        if steps[-1] > rr.top_step:
            rr.top_step = steps[-1]
    elif None in steps:
        if any(step is not None for step in steps):
            return False
        stepping = False
    else:
        stepping = True
        top = max(steps)
        if top > rr.top_step:
            rr.top_step = top
    rr.arrivals.observe_times(names, stepping, cols.t[i:j] if cols is not None else list(map(_T, seg)))
    sources = list(map(_SOURCE, seg))
    if sources.count(None) < len(sources):  # (most segments: no sample names its source)
        said = None
        for s, source in zip(seg, sources, strict=True):
            if source is not None and source != said:  # (a segment's samples are all stepping or not)
                said = source
                rr.provided(s, names)
    rr.newest = samples[j - 1].t
    return True
