"""Which runs' history a W&B poll reads when the quota cannot cover every run that moved.

A poll lists the project's runs (every run's state and heartbeat, a ``Runs`` page per ``per_page``
runs: never put off, a crash must be seen), then reads the history of the runs that moved: one
``HistoryPage`` a run, more after a long gap. Priority runs (``priority_tags``, ``hero`` by default) are
read first and wait for their place in the quota; the others are read oldest-read-first while places are
free *beyond* what the next poll's listing and priority reads will need, and never wait. A run put off
keeps its cursor: its new steps are read by a later poll, none lost, so under a tight quota the other
runs' reads are stretched, not dropped. ``Throttle`` says how many were put off and for how long.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from monitor.sources.base import Throttle
from monitor.sources.quota import Quota
from monitor.sources.wandb_config import WandbTarget
from monitor.sources.wandb_history import Plan, pages


@dataclass
class Pass:
    """The places one run's read took ahead (``left``), and how long it may wait for more."""

    left: int
    wait: float

    def use(self) -> bool:
        if self.left > 0:
            self.left -= 1
            return True
        return False


def is_priority(cfg: WandbTarget, tags: Iterable[str]) -> bool:
    return bool(set(cfg.priority_tags) & set(tags))


def cost(p: Plan, page_size: int) -> int:
    """Requests the read will likely take: its pages (a rewind starts with one)."""
    return 1 if p.mode == "rewind" else max(1, len(pages(p.lo, p.hi, page_size)))


def admit(
    plans: list[Plan],
    cfg: WandbTarget,
    quota: Quota,
    read_at: Mapping[str, float],
    listing: int,
) -> tuple[list[tuple[Plan, Pass]], list[Plan]]:
    """(the reads this poll makes, each with the places it took; the reads put off). ``listing``: the
    ``Runs`` pages this poll took, kept free for the next poll with the priority reads."""
    first = [p for p in plans if is_priority(cfg, p.run.tags)]
    rest = sorted(
        (p for p in plans if not is_priority(cfg, p.run.tags)),
        key=lambda p: read_at.get(p.run.id, float("-inf")),
    )
    keep = listing + sum(cost(p, cfg.history_page_size) for p in first)
    admitted: list[tuple[Plan, Pass]] = []
    deferred: list[Plan] = []
    for p in first:  # on time: wait for the places, up to a request's time-out
        n = cost(p, cfg.history_page_size)
        if quota.take(n, wait=cfg.timeout):
            admitted.append((p, Pass(n, cfg.timeout)))
        else:
            deferred.append(p)
    for i, p in enumerate(rest):  # what is left, never waiting, the next poll's share kept free
        n = cost(p, cfg.history_page_size)
        if not quota.take(n, wait=0.0, keep=keep):
            deferred.extend(rest[i:])
            break
        admitted.append((p, Pass(n, 0.0)))
    return admitted, deferred


def throttle(
    cfg: WandbTarget, deferred: list[Plan], read_at: Mapping[str, float], now: float
) -> Throttle | None:
    """What a poll that put reads off says (None: every run that moved was read)."""
    if not deferred:
        return None
    waited = max((now - read_at[p.run.id] for p in deferred if p.run.id in read_at), default=0.0)
    return Throttle(
        deferred=len(deferred),
        priority_deferred=sum(1 for p in deferred if is_priority(cfg, p.run.tags)),
        waiting=waited,
        quota=f"{cfg.rate_limit} requests per {cfg.rate_limit_window:g}s",
    )
