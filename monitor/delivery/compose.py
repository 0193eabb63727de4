"""Stage 3 of delivery, at claim time: a group's due rows become one message (a ``GroupView``) that
shows the group's current state, or nothing.

What is worth telling is decided from what each member alert is and what its receiver was already
told (after Alertmanager's notification log), not from which rows are due: rows only say "look now".
So a message that failed and is retried, or rows merged into it, can never lose an alert:

- a firing alert that is not muted and was not announced yet: news (it makes the message notify:
  ``open`` for the episode's first message, ``notify`` for a later one);
- a resolution: only of an alert that was announced, and only once (never "RESOLVED" for something
  nobody was told);
- an acknowledgement of an announced alert: an ``update`` (the root shows who took it);
- a reminder: the announced alerts that still fire, are not acknowledged and not muted;
- a refresh (for a receiver that forgets what it is not re-told, e.g. Alertmanager): the announced
  alerts that still fire and are not muted, acknowledged or not. It changes nothing and notifies nobody.

Nothing worth telling: None (the rows are recorded as dropped, with the reason).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import quote

from sqlalchemy import select
from sqlalchemy.orm import Session

from alerts.model import AlertState, Severity
from alerts.views import AlertView, GroupView, Hint, Kind
from monitor.delivery.mute import Mutes
from monitor.delivery.plots import plot_for
from monitor.storage import groups_repo, runs_repo
from monitor.storage.models import Alert, AlertGroup, GroupMember, Notification, Run
from monitor.storage.statuses import NotificationKind


@dataclass(frozen=True)
class Composed:
    view: GroupView
    announced: list[int]  # firing alerts this message tells of
    resolved: list[int]  # resolutions it tells of


@dataclass(frozen=True)
class Composer:
    external_url: str | None = None
    actions: Mapping[str, bool] | None = None  # receiver -> show buttons
    runbooks: str = "/runbooks"  # what ``{runbooks}`` in a runbook link stands for (service.runbooks_base)

    def compose(
        self, s: Session, group: AlertGroup, rows: Sequence[Notification], mutes: Mutes, now: float
    ) -> Composed | None:
        return self.compose_many(s, [(group, rows)], mutes, now)[0]

    def compose_many(
        self,
        s: Session,
        batch: Sequence[tuple[AlertGroup, Sequence[Notification]]],
        mutes: Mutes,
        now: float,
    ) -> list[Composed | None]:
        """``compose`` for several groups (each with its due rows) with a few queries for all of them:
        their members, the titles of the runs shown, the runs linked to; then a plot per new lead alert."""
        members = groups_repo.members_of(s, [g.id for g, _ in batch])
        plans = [_plan(group, rows, members[group.id], mutes) for group, rows in batch]
        titles = runs_repo.titles(s, (a.run_id for p in plans if p is not None for a in p.shown))
        linked = {_linked_run(g, p.shown) for (g, _), p in zip(batch, plans, strict=True) if p is not None}
        linked.discard(None)
        runs = {r.id: r for r in s.scalars(select(Run).where(Run.id.in_(linked)))} if linked else {}
        return [
            None if p is None else self._compose(s, group, rows[-1], p, mutes, now, titles, runs)
            for (group, rows), p in zip(batch, plans, strict=True)
        ]

    def _compose(
        self,
        s: Session,
        group: AlertGroup,
        carrier: Notification,
        p: _Plan,
        mutes: Mutes,
        now: float,
        titles: Mapping[str, str],
        runs: Mapping[str, Run],
    ) -> Composed:
        shown = [_view(a, mutes.reason(a.labels), self.runbooks, titles.get(a.run_id)) for a in p.shown]
        lead_new = _lead(p.new) if p.new else None
        plot = plot_for(s, lead_new, now, titles.get(lead_new.run_id)) if lead_new is not None else None
        run_id = _linked_run(group, p.shown)
        view = GroupView(
            key=carrier.idempotency_key,
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
        return Composed(
            view,
            announced=[a.id for a, _ in p.told if a.state == AlertState.FIRING],
            resolved=[a.id for a, _ in p.told if a.state == AlertState.RESOLVED],
        )

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


@dataclass(frozen=True)
class _Plan:
    """What a group's message tells (decided from its members and rows alone, no I/O)."""

    kind: Kind
    told: list[tuple[Alert, GroupMember]]  # what is news
    new: list[Alert]  # firing alerts never announced
    shown: list[Alert]  # what the message shows: the announced and the told, firing or resolved


def _plan(
    group: AlertGroup,
    rows: Sequence[Notification],
    members: Sequence[tuple[Alert, GroupMember]],
    mutes: Mutes,
) -> _Plan | None:
    repeat = all(r.kind == NotificationKind.REPEAT for r in rows)  # a reminder alone; with news it is news
    refresh = not repeat and all(r.kind in (NotificationKind.REFRESH, NotificationKind.REPEAT) for r in rows)
    acked = {r.alert_id for r in rows if r.kind == NotificationKind.ACK and r.alert_id is not None}
    send_resolved = bool((group.timing or {}).get("send_resolved", True))
    told: list[tuple[Alert, GroupMember]] = []
    for alert, member in members:
        if mutes.reason(alert.labels) is not None:
            continue
        announced = member.announced_at is not None
        if repeat:
            news = alert.state == AlertState.FIRING and announced and not alert.acked_at
        elif refresh:
            news = alert.state == AlertState.FIRING and announced
        elif alert.state == AlertState.FIRING:  # news until a sent message told of it
            news = not announced or alert.id in acked
        else:  # a resolution is news only for what was announced, once
            news = (
                alert.state == AlertState.RESOLVED
                and announced
                and member.resolved_sent_at is None
                and send_resolved
            )
        if news:
            told.append((alert, member))
    if not told:
        return None
    new = [a for a, m in told if a.state == AlertState.FIRING and m.announced_at is None]
    kind: Kind
    if repeat:
        kind = "repeat"
    elif refresh:
        kind = "refresh"
    elif group.root_ref is None and not any(m.announced_at for _, m in members):
        kind = "open"
    elif new:
        kind = "notify"
    else:
        kind = "update"
    told_ids = {a.id for a, _ in told}
    shown = [
        a
        for a, m in members
        if a.state in (AlertState.FIRING, AlertState.RESOLVED)
        and (m.announced_at is not None or a.id in told_ids)
    ]
    return _Plan(kind, told, new, shown)


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
    a: Alert, muted: str | None, runbooks: str = "/runbooks", run_title: str | None = None
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
    )
