"""Delivery's compose stage, at claim time: a group's due rows become one message (a ``GroupView``)
that shows the group's current state, or a named reason why there is nothing to tell. What is worth
telling is planned in ``plan`` (pure); this stage reads what the plan needs for all groups of a claim
at once (their runs' titles and links) and builds the views, with a plot for a new lead alert."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import quote

from sqlalchemy import select
from sqlalchemy.orm import Session

from alerts.model import AlertState, Severity
from alerts.views import AlertView, GroupView, Hint, StackView
from monitor.delivery.claim import GroupBatch
from monitor.delivery.plan import DropReason, Plan, plan
from monitor.delivery.plots import plot_for
from monitor.delivery.stacks_hold import Hold, StackNews
from monitor.delivery.told import Told
from monitor.storage import runs_repo
from monitor.storage.models import Alert, AlertGroup, Run


@dataclass(frozen=True)
class Composed:
    view: GroupView
    told: Told  # what it tells of which alerts (recorded once it is sent)


@dataclass(frozen=True)
class Composer:
    external_url: str | None = None
    actions: Mapping[str, bool] | None = None  # receiver -> show buttons
    runbooks: str = "/runbooks"  # what ``{runbooks}`` in a runbook link stands for (service.runbooks_base)

    def compose_many(
        self, s: Session, batch: Sequence[GroupBatch], muted: Sequence[Mapping[int, str]], now: float
    ) -> list[Composed | DropReason | Hold]:
        """Each group's message (``muted``: each group's muted members, from the ``mute`` stage), with a
        few queries for all of them: the titles of the runs shown, the runs linked to; then a plot per
        new lead alert."""
        plans = [plan(b.group, b.rows, b.members, m) for b, m in zip(batch, muted, strict=True)]
        shown = [p for p in plans if isinstance(p, Plan)]
        titles = runs_repo.titles(s, (a.run_id for p in shown for a in p.shown))
        linked = {
            _linked_run(b.group, p.shown) for b, p in zip(batch, plans, strict=True) if isinstance(p, Plan)
        }
        linked.discard(None)
        runs = {r.id: r for r in s.scalars(select(Run).where(Run.id.in_(linked)))} if linked else {}
        stacks = StackNews.load(s, [a for p in shown for a in p.shown], now, self.external_url)
        out: list[Composed | DropReason | Hold] = []
        for b, p, m in zip(batch, plans, muted, strict=True):
            if not isinstance(p, Plan):
                out.append(p)
            elif (held := stacks.hold(p.kind, p.new)) is not None:
                out.append(held)  # a hang's first page waits (briefly) for the job's stacks
            else:
                out.append(self._compose(s, b, p, m, now, titles, runs, stacks))
        return out

    def _compose(
        self,
        s: Session,
        batch: GroupBatch,
        p: Plan,
        muted: Mapping[int, str],
        now: float,
        titles: Mapping[str, str],
        runs: Mapping[str, Run],
        stacks: StackNews,
    ) -> Composed:
        group = batch.group
        shown = [
            _view(a, muted.get(a.id), self.runbooks, titles.get(a.run_id), stacks.view(a)) for a in p.shown
        ]
        lead_new = _lead(p.new) if p.new else None
        plot = plot_for(s, lead_new, now, titles.get(lead_new.run_id)) if lead_new is not None else None
        run_id = _linked_run(group, p.shown)
        view = GroupView(
            key=batch.carrier.idempotency_key,
            receiver=group.receiver,
            kind=p.kind,
            group_key=group.group_key,
            group_labels=dict(group.labels or {}),
            alerts=tuple(shown),
            changed=frozenset(str(a.id) for a, _ in p.told),
            root_ref=group.root_ref,
            links=self._links(runs.get(run_id) if run_id else None, lead_new if plot is not None else None),
            actions=bool((self.actions or {}).get(group.receiver, False)),
            plot=plot,
            episode=group.id,
        )
        told = Told(
            p.kind,
            announced=tuple(a.id for a, _ in p.told if a.state == AlertState.FIRING),
            resolved=tuple(a.id for a, _ in p.told if a.state == AlertState.RESOLVED),
        )
        return Composed(view, told)

    def _links(self, run: Run | None, plotted: Alert | None) -> dict[str, str]:
        links = {}
        base = (self.external_url or "").rstrip("/")
        if run is not None and run.url:
            links["wandb_url"] = run.url
        if run is not None and base:
            links["dashboard_url"] = f"{base}/runs/{quote(run.id, safe='')}"
        if plotted is not None and base:  # the picture, served by the API (for receivers that link images)
            links["plot_url"] = f"{base}/api/alerts/{plotted.id}/plot.png"
        return links


def _linked_run(group: AlertGroup, shown: Sequence[Alert]) -> str | None:
    """The run a message links to: its group's, else its first shown alert's ``run`` label."""
    first = (shown[0].labels or {}).get("run") if shown else None
    return (group.labels or {}).get("run") or (None if first is None else str(first))


def _lead(alerts: Sequence[Alert]) -> Alert:
    return min(alerts, key=lambda a: (Severity(a.severity).rank, a.fired_at or a.active_at))


def _hints(a: Alert) -> tuple[tuple[Hint, ...], float | None]:
    stored = a.hints or {}
    items = tuple(Hint.from_dict(h) for h in stored.get("items") or () if isinstance(h, dict))
    window = stored.get("window") or ()
    seconds = float(window[1]) - float(window[0]) if len(window) == 2 else None
    return items, seconds


def _view(
    a: Alert,
    muted: str | None,
    runbooks: str = "/runbooks",
    run_title: str | None = None,
    stacks: StackView | None = None,
) -> AlertView:
    ann = a.annotations or {}
    hints, window = _hints(a)
    return AlertView(
        id=str(a.id),
        alertname=a.rule,
        severity=Severity(a.severity),
        state=a.state,
        labels={k: str(v) for k, v in (a.labels or {}).items()},
        summary=str(ann.get("summary") or a.rule),
        description=str(ann.get("description") or ""),
        runbook_url=str(ann.get("runbook_url") or "").replace("{runbooks}", runbooks),
        value=a.value,
        threshold=a.threshold,
        step=a.step,
        metric=a.metric,
        started_at=a.fired_at or a.active_at,
        ended_at=a.resolved_at,
        acked_by=a.acked_by,
        silenced=muted,
        hints=hints,
        hints_window=window,
        run_title=run_title,
        resolved_reason=str(ann.get("resolved_reason") or "") if a.state == AlertState.RESOLVED else "",
        stacks=stacks,
    )
