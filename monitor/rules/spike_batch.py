"""``SpikeBatch``: replay's batched path (engine/segment.py) for a spike baseline, a part of
``SpikeBaseline`` (which inherits it) kept in a file of its own for length.

The common case of ``SpikeBaseline.observe`` in a loop on local copies of the open bucket: a value
below the gate, no streak, the floor not raised, into the open bucket or opening the next one (the
roll, then the same common case, or ``observe``'s verdict); anything else (a rewind, a value at or
above the gate) goes through ``observe``, ending in the state ``observe`` one by one would leave.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from monitor.samples import Sample

_log = math.log


class SpikeBatch:
    """The batched loop of ``SpikeBaseline``. Its fields are the baseline's (``SpikeBaseline.__init__``
    and ``_clear`` set them all); the ones the loop reads or writes are declared here."""

    __slots__ = ()  # the baseline's fields are its slots

    metric: str
    log: bool
    sign: float
    _width: float
    reset_on_rewind: bool
    streak: int
    _last_step: int | None
    _ob: float
    _on: int
    _olast: float
    _omin: float
    _gate: float
    _sample: Sample | None
    _y: float
    is_spike: bool
    floor_raised: bool

    if TYPE_CHECKING:

        def observe(self, sample: Sample) -> bool: ...
        def _roll(self, b: float, t: float, y: float) -> None: ...
        def _judge(self, sample: Sample, t: float, step: int | None, v: float, y: float) -> None: ...

    def observe_until(self, samples: Sequence[Sample], i: int, end: int, point: bool, floor: bool) -> int:
        """``observe`` over ``samples[i:end]`` up to the first sample after which the newest value is a
        spike (``point``) or the floor is raised (``floor``); the index after the last sample taken.
        Replay's batched path: the common case (a value below the gate, into the open bucket or after
        the roll of a new one) in a loop on local copies of the open bucket; a new bucket's value that is
        not the common case gets ``observe``'s verdict; anything else (a rewind) goes through ``observe``."""
        m, log, sign, width, rewind = self.metric, self.log, self.sign, self._width, self.reset_on_rewind
        last_step, ob, on, olast, omin = self._last_step, self._ob, self._on, self._olast, self._omin
        gate = self._gate
        sample, y_now, spike, raised = self._sample, self._y, self.is_spike, self.floor_raised
        quiet = not self.streak and not raised  # no values in a row beyond the bar, the floor not raised
        # the open bucket's end: a value before it is in the open bucket (the samples are in time order,
        # none before the open bucket's first); one at or after it is checked by its index (the product
        # may round down to a time still in the open bucket)
        edge = (ob + 1.0) * width
        for k in range(i, end):
            s = samples[k]
            v = s.metrics.get(m)
            if v is None or v - v:  # missing, NaN or Inf: observe takes nothing
                if point and spike or floor and raised:
                    break
                continue
            step = s.step
            if step is not None:
                if last_step is not None and step < last_step and rewind:
                    y = None  # a rewind: through observe
                else:
                    last_step = step
                    y = 0.0
            else:
                y = 0.0
            if y is not None:
                if log:
                    if v <= 0.0:  # (observe takes its step only)
                        if point and spike or floor and raised:
                            break
                        continue
                    y = _log(v) * sign
                else:
                    y = v * sign
                t = s.t
                if t < edge or t // width == ob:
                    if quiet and y < gate:  # the common case: into the open bucket
                        on += 1
                        olast = t
                        if y < omin:
                            omin = y
                        # (the floor stays down: the recent window's minimum is now below the gate)
                        sample, y_now, spike = s, y, False
                        continue
                else:  # a new bucket: observe's roll, then the common case or observe's verdict
                    self._last_step, self._on, self._olast, self._omin = last_step, on, olast, omin
                    self._sample, self._y, self.is_spike, self.floor_raised = sample, y_now, spike, raised
                    self._roll(t // width, t, y)
                    ob, on, olast, omin, gate = self._ob, self._on, self._olast, self._omin, self._gate
                    edge = (ob + 1.0) * width
                    if quiet and y < gate:
                        sample, y_now, spike = s, y, False
                        continue
                    self._judge(s, t, s.step, v, y)
                    sample, y_now, spike, raised = self._sample, self._y, self.is_spike, self.floor_raised
                    quiet = not self.streak and not raised
                    if point and spike or floor and raised:
                        return k + 1
                    continue
            self._last_step, self._on, self._olast, self._omin = last_step, on, olast, omin
            self._sample, self._y, self.is_spike, self.floor_raised = sample, y_now, spike, raised
            self.observe(s)
            last_step, ob, on, olast, omin = self._last_step, self._ob, self._on, self._olast, self._omin
            gate = self._gate
            edge = (ob + 1.0) * width
            sample, y_now, spike, raised = self._sample, self._y, self.is_spike, self.floor_raised
            quiet = not self.streak and not raised
            if point and spike or floor and raised:
                return k + 1
        else:
            k = end - 1
        self._last_step, self._on, self._olast, self._omin = last_step, on, olast, omin
        self._sample, self._y, self.is_spike, self.floor_raised = sample, y_now, spike, raised
        return k + 1
