"""Which metric histories a poll of the MLflow source reads, grouped into as few requests as they fit.

Each moved (run, key) wants the steps from its cursor to its latest value. Reads of one key whose step
windows fit one page together share a request (``get-history-bulk-interval`` takes up to 100 runs and
one step interval): runs that log in step with each other, the usual case, cost one request per key
and poll, not one per run and key. A window wider than a page is read page by page on its own, so no
answer is ever sampled down by the server.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

MAX_RUNS = 100  # run ids per bulk request (MLflow's limit)


@dataclass(frozen=True)
class Read:
    run_id: str
    key: str
    lo: int
    hi: int
    before: tuple[int, int] | None  # (step, timestamp) of the key's latest value; None: first sight
    horizon: tuple[int, int] | None = None  # (timestamp, step) of the newest value read

    def wants(self, step: int, timestamp: int) -> bool:
        """In the window, and past the latest value, or logged after the newest value read (a step
        logged again below the latest one: the run was resumed from a checkpoint)."""
        if not self.lo <= step <= self.hi:
            return False
        if self.before is None or (step, timestamp) > self.before:
            return True
        return self.horizon is not None and (timestamp, step) > self.horizon


@dataclass(frozen=True)
class Batch:
    key: str
    run_ids: tuple[str, ...]
    lo: int
    hi: int


def batches(reads: list[Read], page_steps: int, max_runs: int = MAX_RUNS) -> Iterator[Batch]:
    by_key: dict[str, list[Read]] = defaultdict(list)
    for r in reads:
        by_key[r.key].append(r)
    for key in sorted(by_key):
        group: list[str] = []
        lo = hi = 0
        for r in sorted(by_key[key], key=lambda r: (r.lo, r.run_id)):
            if r.hi - r.lo + 1 > page_steps:  # a long backlog: its own pages
                for a in range(r.lo, r.hi + 1, page_steps):
                    yield Batch(key, (r.run_id,), a, min(r.hi, a + page_steps - 1))
                continue
            if group and (max(hi, r.hi) - lo + 1 > page_steps or len(group) >= max_runs):
                yield Batch(key, tuple(group), lo, hi)
                group = []
            if not group:
                lo, hi = r.lo, r.hi
            group.append(r.run_id)
            hi = max(hi, r.hi)
        if group:
            yield Batch(key, tuple(group), lo, hi)
