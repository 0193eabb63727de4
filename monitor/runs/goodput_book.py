"""How the goodput tracker (goodput.py) books a stretch of wall time: its totals per bucket and incidents,
the stretch it hands the ledger (goodput_ledger.py), and the two buckets that cut across the others:

- ``data_loading`` (ml-goodput-measurement's data loading badput): the part of a step interval the
  run's steps spent waiting for their batch, where the run logs it (``throughput/loading_time``,
  seconds per step: Levanter's name, which the metric profiles map torchtitan's
  ``time_metrics/data_loading(s)`` and Megatron-LM's ``batch-generator-time`` to; else
  ``throughput/loading_fraction``, the share of the interval: torchtitan's ``data_loading(%)``/100).
  It moves that much of the interval's productive time to data loading, never more than the interval's
  productive time; a run that logs neither has none.
- ``source_blind``: time herowatch could not see the run, its own source unreadable (an outage, an
  error on every poll), from the source's last answer to its next one. Time the run's steps account
  for (read later, with their own timestamps) is booked by what they show; of the time they do not
  (no step came), the part inside such a span is booked source blind instead of hung, paused, down or
  restarting: herowatch does not know what the run did then. The goodput ratio is the productive share
  of the time herowatch could see (source blind left out of it, as unknown).
"""

from __future__ import annotations

from typing import Any

from monitor.runs.goodput_ledger import Ledger

# fmt: off
BUCKETS = ("productive", "data_loading", "checkpoint", "evaluation", "paused", "startup", "stalled",
           "restarting", "down", "rework", "source_blind")
# fmt: on
LOST = BUCKETS[1:]
MAX_INCIDENTS = 50  # closed incidents kept (totals and counts cover all of them)
MAX_UNSEEN = 64  # spans of blindness kept (older ones, if a run stalls through many outages, are dropped)

Span = tuple[float, float]
DataWait = tuple[float | None, float | None]  # (seconds per step, share of the interval) a step logged


def r3(x: float) -> float:
    return round(x, 3)


def waited(wait: DataWait | None, steps: int, gap: float, worked: float) -> float:
    """Seconds of ``worked`` (the productive part of a ``gap`` of ``steps`` steps) spent waiting for data."""
    if wait is None or worked <= 0:
        return 0.0
    per_step, share = wait
    if per_step is not None:
        w = per_step * max(steps, 1)
    elif share is not None:
        w = share * gap
    else:
        return 0.0
    return min(max(w, 0.0), worked)


class Book:
    def __init__(self) -> None:
        self.acct: float | None = None  # wall time is classified up to here
        self.totals = dict.fromkeys(BUCKETS, 0.0)
        self.last_step: int | None = None  # the step an incident followed
        self.incidents: list[dict[str, Any]] = []
        self.counts: dict[str, int] = {}
        self.unseen: list[list[float | None]] = []  # [from, to or None]: the source could not be read
        # What the engine writes durably after each poll (``drain``): where each second went, slot by
        # slot, and every incident (the in-memory list above keeps only the newest).
        self.ledger = Ledger()
        self._holes: list[Span] = []  # the source-blind spans of the stretch being booked
        self._mark: tuple[float | None, dict[str, float]] = (None, dict(self.totals))

    # ---- incidents ---------------------------------------------------------------------------
    def _incident(
        self, kind: str, start: float, end: float, lost: float, step: int | None, redone: int = 0
    ) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        self.incidents.append(
            {
                "kind": kind,
                "start": r3(start),
                "end": r3(end),
                "seconds_lost": r3(lost),
                "step": step,
                "steps_redone": redone,
            }
        )
        del self.incidents[:-MAX_INCIDENTS]
        self.ledger.incident(self.incidents[-1], self.last_step)

    def _ongoing(self, kind: str, start: float, lost: float) -> dict[str, Any]:
        return {
            "kind": kind,
            "start": r3(start),
            "end": None,
            "seconds_lost": r3(lost),
            "step": self.last_step,
            "steps_redone": 0,
        }

    # ---- what herowatch could not see ----------------------------------------------------------
    def blind(self, since: float) -> None:
        """The run's source has not answered since ``since`` (its last answer)."""
        if not (self.unseen and self.unseen[-1][1] is None):
            self.unseen.append([since, None])
            del self.unseen[:-MAX_UNSEEN]

    def sight(self, t: float) -> None:
        """The run's source answered at ``t``: the open span of blindness, if any, ends there."""
        if self.unseen and self.unseen[-1][1] is None:
            start = self.unseen[-1][0]
            if start is not None and t > start:
                self.unseen[-1][1] = t
            else:
                self.unseen.pop()

    def unseen_in(self, a: float, b: float) -> list[Span]:
        """The parts of ``[a, b)`` herowatch could not see (an open span reaches to ``b``)."""
        out = []
        for s, e in self.unseen:
            lo, hi = max(a, s or a), min(b, b if e is None else e)
            if hi - lo > 1e-9:
                out.append((lo, hi))
        return out

    def blind_of(self, a: float, seconds: float) -> float:
        return sum(hi - lo for lo, hi in self.unseen_in(a, a + seconds)) if self.unseen else 0.0

    def split(
        self, bucket: str, a: float, seconds: float, into: dict[str, float], holes: list[Span]
    ) -> float:
        """Add ``seconds`` from ``a`` on to ``bucket`` of ``into``, the part herowatch could not see to
        source blind (its spans to ``holes``). Returns the seconds that went to ``bucket``."""
        if seconds <= 0:
            return 0.0
        found = self.unseen_in(a, a + seconds) if self.unseen else []
        blind = sum(hi - lo for lo, hi in found)
        into["source_blind"] += blind
        holes.extend(found)
        into[bucket] += seconds - blind
        return seconds - blind

    def _lose(self, bucket: str, a: float, seconds: float) -> float:
        return self.split(bucket, a, seconds, self.totals, self._holes)

    def _worked(self, seconds: float, steps: int, gap: float, wait: DataWait | None) -> None:
        """``seconds`` of step time (``steps`` steps in a ``gap``): productive, less their data wait."""
        if wait is None:
            self.totals["productive"] += seconds
            return
        dl = waited(wait, steps, gap, seconds)
        self.totals["data_loading"] += dl
        self.totals["productive"] += seconds - dl

    # ---- the ledger ----------------------------------------------------------------------------
    def _book(self) -> None:
        """Hand the ledger the stretch classified since the last mark, with the seconds of each bucket."""
        acct, before = self._mark
        self.ledger.account(acct, self.acct, {k: self.totals[k] - before[k] for k in BUCKETS}, self._holes)
        self._mark, self._holes = (self.acct, dict(self.totals)), []
        if self.unseen and self.acct is not None:  # spans wholly booked are done with
            self.unseen = [u for u in self.unseen if u[1] is None or u[1] > self.acct]

    def unseen_dict(self) -> list[list[float | None]]:
        return [list(u) for u in self.unseen]

    def load_unseen(self, data: Any) -> None:
        self.unseen = [[float(a), None if b is None else float(b)] for a, b in (data or ())][-MAX_UNSEEN:]
