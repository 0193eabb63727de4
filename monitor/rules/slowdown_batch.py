"""Replay's batched path (engine/segment.py) for the ``slowdown`` rule (monitor/rules/slowdown.py), kept in
a file of its own for length: in step time mode, the next step's time into the open bucket (``observe``'s
common case) in a loop; anything else (a bucket closing, a rewind, a restart) through ``observe``,
ending in the state ``observe`` one by one would leave."""

from __future__ import annotations

from collections.abc import Sequence

from monitor.rules.base import RAN_OUT, Detector, Stop
from monitor.rules.windows import MAX_WINDOW
from monitor.samples import Sample


class SlowdownBatch:
    """A part of ``SlowdownDetector`` (which inherits it)."""

    __slots__ = ()

    def observe_many(self, samples: Sequence[Sample], i: int, end: int) -> tuple[int, Stop]:
        """Replay's batched path, step time mode: the next step's time into the open bucket (``observe``'s
        common case) in a loop; anything else (a bucket closing, a rewind, a restart) through ``observe``."""
        if self._metric is not None:
            return Detector.observe_many(self, samples, i, end)
        counter, min_points = self._counter, self._min_points
        while i < end:
            width = self._width  # (decided when the baseline's first bucket closes)
            if not (self.hot or self.bucket_start is None or self.prev_step is None):
                prev_t, prev_step, last_step, pause = self.prev_t, self.prev_step, self.last_step, self._pause
                peek_at, pos, pos_last = self.peek_at, self.pos, self.pos_last
                values, start = self.values, self.bucket_start[0]
                add, n = values.append, len(values)  # (n: the open bucket's values, kept as they come)
                while i < end:
                    s = samples[i]
                    if s.state is not None or counter in s.metrics:
                        break  # news, or a restart counter
                    step = s.step
                    if step is not None:
                        if step < prev_step:
                            break  # a rewind
                        t = s.t
                        if step != prev_step and t > prev_t:
                            value = (t - prev_t) / (step - prev_step)
                            if value <= pause:
                                if t - start >= width and n >= min_points or n >= MAX_WINDOW:
                                    break  # the bucket closes
                                last_step = step
                                add(value)
                                n += 1
                                pos += step - prev_step
                                pos_last = pos
                                if n >= peek_at:  # the open bucket is judged (``observe``'s end)
                                    self.prev_t, self.prev_step, self.last_step = t, step, step
                                    self.pos = self.pos_last = pos
                                    self._peek()
                                    i += 1
                                    if self.hot:
                                        return self._stop(samples, i, end)
                                    prev_t, prev_step, peek_at = t, step, self.peek_at
                                    continue
                            else:
                                pos += step - prev_step
                        prev_t, prev_step = t, step
                    i += 1
                self.prev_t, self.prev_step, self.last_step = prev_t, prev_step, last_step
                self.pos, self.pos_last = pos, pos_last
            if i < end:  # not the common case: one sample through observe
                i, stop = self._uncommon(samples, i, end)
                if stop is not None:
                    return stop
        return i, RAN_OUT
