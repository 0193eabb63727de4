"""A hang's page and the job's stacks (``monitor.stacks``): what compose reads of the runs' latest
captures, once per claim.

- ``hold``: the first page of a hang alert (``ASKING_KINDS``) waits while the capture its start asked for
  is still being answered by the nodes asked, up to the capture's ``hold_until``: the page then carries
  the answer, or says which nodes did not give it. Never longer: a page is late by seconds at most.
- ``view``: such an alert's stacks, as of the latest capture taken since it started (the groups, the odd
  ranks, how long the run has been stuck, the stacks' age).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import quote

from sqlalchemy.orm import Session

from alerts.model import AlertState
from alerts.views import StackView
from monitor.stacks.model import NodeStacks
from monitor.stacks.page import ASKING_KINDS, report_of, view_of
from monitor.storage import stacks_repo
from monitor.storage.models import Alert

SLACK = 5.0  # a capture asked this little before the alert's start is still its own
RECHECK = 1.0  # seconds between looks while a page waits


@dataclass(frozen=True)
class Hold:
    """The page waits until ``until`` (or until the answers are in, looked at every ``RECHECK``)."""

    until: float
    why: str


@dataclass(frozen=True)
class StackNews:
    latest: dict[str, stacks_repo.Latest]
    now: float
    external_url: str | None = None

    @classmethod
    def load(cls, s: Session, alerts: Sequence[Alert], now: float, external_url: str | None) -> StackNews:
        runs = {a.run_id for a in alerts if a.kind in ASKING_KINDS}
        return cls(stacks_repo.latest(s, runs) if runs else {}, now, external_url)

    def _for(self, a: Alert) -> stacks_repo.Latest | None:
        if a.kind not in ASKING_KINDS:
            return None
        got = self.latest.get(a.run_id)
        if got is None or got.capture.requested_at < a.active_at - SLACK:
            return None
        return got

    def hold(self, kind: str, new: Sequence[Alert]) -> Hold | None:
        if kind not in ("open", "notify"):
            return None
        for a in new:
            got = self._for(a)
            if got is not None and got.waiting(self.now):
                until = min(got.capture.hold_until, self.now + RECHECK)
                return Hold(until, f"waiting for the stacks of {a.run_id} (capture {got.capture.capture_id})")
        return None

    def view(self, a: Alert) -> StackView | None:
        got = self._for(a)
        if got is None or a.state != AlertState.FIRING:
            return None
        pushes = [NodeStacks.model_validate(d.body) for d in got.dumps]
        report = report_of(pushes, got.capture.expected or (), got.capture.requested_at, self.now)
        start = a.onset_at or a.active_at
        base = (self.external_url or "").rstrip("/")
        url = f"{base}/runs/{quote(a.run_id, safe='')}#stacks" if base else ""
        return view_of(report, self.now, max(0.0, self.now - start), url)
