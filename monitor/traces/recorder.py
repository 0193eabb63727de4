"""`herowatch record`: what the pollers read, written as a trace (docs/trace-format.md) for replay.

Sources are polled as the service would (same cursors semantics, kept in memory), without rules. A
source outage is written as ``source_error`` lines. Rows reach the file in time order per run: a small
reorder buffer holds samples for ``lag`` seconds, because W&B history rows come in with the time they
were logged, after Prometheus samples taken at poll time.
"""

from __future__ import annotations

import heapq
import itertools
import logging
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from alerts.clock import Clock
from monitor.config.schema import Watch
from monitor.samples import Sample
from monitor.sources.base import Cursor, Source, Target
from monitor.traces.trace import TraceWriter

log = logging.getLogger(__name__)


@dataclass
class _WatchState:
    cursors: dict[str, dict[str, Cursor]] = field(default_factory=lambda: defaultdict(dict))
    known: dict[str, dict[str, str]] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)  # run id -> its name at its source
    next_at: float = 0.0


class Recorder:
    def __init__(
        self,
        watches: list[Watch],
        sources: Mapping[str, Source],
        writer: TraceWriter,
        clock: Clock,
        lag: float | None = None,
    ) -> None:
        self.watches = watches
        self.sources = sources
        self.writer = writer
        self.clock = clock
        self.lag = lag if lag is not None else 2 * max((w.poll_interval for w in watches), default=15.0)
        self._state = {w.name: _WatchState() for w in watches}
        self._heap: list[tuple[float, int, Sample]] = []
        self._seq = itertools.count()
        self._written: dict[str, float] = {}
        self.late = 0

    def poll_due(self) -> int:
        """Poll every watch whose interval has come; returns the number of samples read."""
        n = 0
        for w in self.watches:
            st = self._state[w.name]
            now = self.clock.time()
            if now < st.next_at:
                continue
            st.next_at = now + w.poll_interval
            for kind, cfg in w.targets().items():
                res = self.sources[kind].poll(
                    Target(w.name, cfg, w.labels, dict(st.known), dict(st.names)), st.cursors[kind], now
                )
                for info in res.runs:
                    st.known.setdefault(info.run, dict(info.labels))
                    if info.name:
                        st.names.setdefault(info.run, info.name)
                if res.error:
                    watch = {"watch": w.name}
                    for run in st.known or {w.name: {}}:
                        self._push(Sample(t=now, run=run, source=kind, labels=watch, source_error=res.error))
                    continue
                st.cursors[kind].update(res.cursors)
                for sample in res.samples:
                    self._push(sample)
                n += len(res.samples)
        self.flush(self.clock.time() - self.lag)
        return n

    def _push(self, sample: Sample) -> None:
        heapq.heappush(self._heap, (sample.t, next(self._seq), sample))

    def flush(self, until: float = float("inf")) -> None:
        while self._heap and self._heap[0][0] <= until:
            _, _, sample = heapq.heappop(self._heap)
            if sample.t < self._written.get(sample.run, float("-inf")):
                self.late += 1
            self._written[sample.run] = max(sample.t, self._written.get(sample.run, sample.t))
            self.writer.write(sample)
        self.writer.flush()

    def next_poll_in(self) -> float:
        now = self.clock.time()
        return max(0.0, min((st.next_at for st in self._state.values()), default=now) - now)


def record(
    recorder: Recorder,
    duration: float | None,
    sleep: Callable[[float], None],
    on_progress: Callable[[float, int], None] = lambda elapsed, n: None,
) -> int:
    """Poll until ``duration`` seconds have passed (or forever); returns the samples written."""
    start = recorder.clock.time()
    try:
        while duration is None or recorder.clock.time() - start < duration:
            recorder.poll_due()
            on_progress(recorder.clock.time() - start, recorder.writer.count)
            wait = recorder.next_poll_in()
            if duration is not None:
                wait = min(wait, max(0.0, start + duration - recorder.clock.time()))
            sleep(max(wait, 0.05))
    finally:
        recorder.flush()
    return recorder.writer.count
