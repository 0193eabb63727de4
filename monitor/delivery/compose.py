"""Stage 3 of delivery, at claim time: a group's due rows become one message (a ``GroupView``) that
shows the group's current state, or nothing.

What is worth telling, per alert the rows are about:

- a firing alert that is not muted: announced (a new one makes the message notify: ``open`` for the
  episode's first message, ``notify`` for a later one);
- a resolution: only of an alert that was announced (never "RESOLVED" for something nobody was told);
- an acknowledgement of an announced alert: an ``update`` (the root shows who took it);
- a reminder: the announced alerts that still fire, are not acknowledged and not muted.

Nothing worth telling: None (the rows are recorded as dropped, with the reason).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy.orm import Session

from alerts.model import Severity
from alerts.views import AlertView, GroupView, Hint, Kind
from monitor.delivery.mute import Mutes
from monitor.delivery.plots import plot_for
from monitor.storage import groups_repo
from monitor.storage.models import Alert, AlertGroup, GroupMember, Notification, Run


@dataclass(frozen=True)
class Composed:
    view: GroupView
    announced: list[int]  # firing alerts this message tells of
    resolved: list[int]  # resolutions it tells of


@dataclass(frozen=True)
class Composer:
    external_url: str | None = None
    actions: Mapping[str, bool] | None = None  # receiver -> show buttons

    def compose(
        self, s: Session, group: AlertGroup, rows: Sequence[Notification], mutes: Mutes, now: float
    ) -> Composed | None:
        members = groups_repo.members(s, group.id)
        carrier = rows[-1]
        about = {r.alert_id for r in rows if r.alert_id is not None}
        told: list[tuple[Alert, GroupMember]] = []
        for alert, member in members:
            if mutes.reason(alert.labels) is not None:
                continue
            announced = member.announced_at is not None
            if carrier.kind == "repeat":
                if alert.state == "firing" and announced and not alert.acked_at:
                    told.append((alert, member))
            elif alert.id in about and (alert.state == "firing" or announced):
                told.append((alert, member))
        if not told:
            return None
        new = [a for a, m in told if a.state == "firing" and m.announced_at is None]
        kind: Kind
        if carrier.kind == "repeat":
            kind = "repeat"
        elif group.root_ref is None and not any(m.announced_at for _, m in members):
            kind = "open"
        elif new:
            kind = "notify"
        else:
            kind = "update"
        told_ids = {a.id for a, _ in told}
        shown = [
            _view(a, mutes.reason(a.labels))
            for a, m in members
            if a.state in ("firing", "resolved") and (m.announced_at is not None or a.id in told_ids)
        ]
        view = GroupView(
            key=carrier.idempotency_key,
            receiver=group.receiver,
            kind=kind,
            group_key=group.group_key,
            group_labels=dict(group.labels or {}),
            alerts=tuple(shown),
            changed=frozenset(str(i) for i in told_ids),
            root_ref=group.root_ref,
            links=self._links(s, group, shown),
            actions=bool((self.actions or {}).get(group.receiver, False)),
            plot=plot_for(s, _lead(new), now) if new else None,
        )
        return Composed(
            view,
            announced=[a.id for a, _ in told if a.state == "firing"],
            resolved=[a.id for a, _ in told if a.state == "resolved"],
        )

    def _links(self, s: Session, group: AlertGroup, shown: Sequence[AlertView]) -> dict[str, str]:
        run_id = (group.labels or {}).get("run") or (shown[0].run if shown else None)
        run = s.get(Run, run_id) if run_id else None
        links = {}
        if run is not None and run.url:
            links["wandb_url"] = run.url
        if run is not None and self.external_url:
            links["dashboard_url"] = f"{self.external_url.rstrip('/')}/runs/{run.id}"
        return links


def _lead(alerts: Sequence[Alert]) -> Alert:
    return min(alerts, key=lambda a: (Severity(a.severity).rank, a.fired_at or a.active_at))


def _hints(a: Alert) -> tuple[tuple[Hint, ...], float | None]:
    stored = a.hints or {}
    items = tuple(Hint.from_dict(h) for h in stored.get("items") or () if isinstance(h, dict))
    window = stored.get("window") or ()
    seconds = float(window[1]) - float(window[0]) if len(window) == 2 else None
    return items, seconds


def _view(a: Alert, muted: str | None) -> AlertView:
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
        runbook_url=str(ann.get("runbook_url") or ""),
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
    )
