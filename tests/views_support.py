"""Builders of the typed views notifiers are given (alerts.views), for notifier tests."""

from __future__ import annotations

from typing import Any

from alerts.model import Severity
from alerts.views import AlertView, GroupView

NOW = 1_780_000_000.0


def alert(id: int | str = 1, alertname: str = "progress_stalled", **kw: Any) -> AlertView:
    fields: dict[str, Any] = {
        "severity": Severity.CRITICAL,
        "state": "firing",
        "labels": {"run": "r1", "alertname": alertname},
        "summary": f"{alertname} on r1",
        "started_at": NOW,
    }
    fields.update(kw)
    if isinstance(fields["severity"], str):
        fields["severity"] = Severity(fields["severity"])
    return AlertView(id=str(id), alertname=alertname, **fields)


def group(*alerts: AlertView, kind: str = "open", key: str = "k1", **kw: Any) -> GroupView:
    alerts = alerts or (alert(),)
    fields: dict[str, Any] = {
        "receiver": "slack",
        "group_key": "slack:feedc0ffee",
        "group_labels": {"run": alerts[0].labels.get("run", "r1")},
        "changed": frozenset(a.id for a in alerts),
    }
    fields.update(kw)
    return GroupView(key=key, kind=kind, alerts=tuple(alerts), **fields)
