"""After a restart, the ``slowdown`` rule (monitor/rules/slowdown.py) keeps what it learned: a restarted
run usually runs at its old speed, and learning the baseline afresh took 500 step times (14 hours at
100 s a step) during which a slowdown went unseen. The baseline (its level, its noise, the run's cycle
and the swings it came back from) is carried over; the new buckets wait (``Rewarm``): the first one is
skipped (a restart's first steps are slow: compiling, warming caches, loading data), then ``BUCKETS``
more are compared with what the carried baseline expects at their point. Within ``RELEARN`` x shift of
it (their median excess) they are the same run at its old speed: they are judged as usual and the rule
goes on. Further off, the run runs at another speed (another GPU count, batch size or configuration):
the baseline is learned afresh. The rule cannot tell while the buckets wait. Pure computation."""

from __future__ import annotations

from monitor.rules.windows import median_of_sorted

SKIP = 1  # the buckets right after a restart left out (its first slow steps)
BUCKETS = 3  # ... then the buckets compared with the carried baseline
RELEARN = 2.0  # their median excess beyond this x shift (either way): another speed, learned afresh


class SlowdownRestart:
    """A part of ``SlowdownDetector`` (which inherits it)."""

    __slots__ = ()

    def _carry(self) -> bool:
        """A restart: keep the learned baseline and wait for the new buckets (True), or nothing to keep."""
        if self.mu is None:
            return False
        self.rewarm = []
        return True

    def _rewarm(self, b: list[float]) -> None:
        """A bucket closed while the baseline waits: once enough have come, judge them against it as the
        same run (each through the usual path), or learn the baseline afresh from them."""
        waiting = self.rewarm
        waiting.append(b)
        if len(waiting) < SKIP + BUCKETS:
            return
        kept = waiting[SKIP:]
        excess = median_of_sorted(sorted(x[2] - self._expect(x[4] if len(x) > 4 else None) for x in kept))
        self.rewarm = None
        if abs(excess) > RELEARN * self.rule.shift:
            self.reset(carry_over=False)  # another speed: learned afresh, from these buckets on
        for x in kept:
            self._take(x)
