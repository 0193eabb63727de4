"""POSTs each notification as JSON to a URL (shaped like Alertmanager's webhook payload)."""

from __future__ import annotations

import httpx

from alerts.notifiers.base import Notification, SendResult

PERMANENT = {400, 401, 403, 404, 405, 410, 413, 422}


class WebhookNotifier:
    def __init__(self, url: str, timeout: float = 10.0, client: httpx.Client | None = None) -> None:
        self.url = url
        self._client = client or httpx.Client(timeout=timeout)

    def payload(self, n: Notification) -> dict:
        alerts = n.extra.get("alerts") or [
            {
                "alertname": n.alertname,
                "severity": n.severity,
                "state": n.status,
                "labels": dict(n.labels),
                "summary": n.summary,
                "started_at": n.started_at,
                "ended_at": n.ended_at,
                "value": n.value,
                "step": n.step,
            }
        ]
        return {
            "version": "1",
            "receiver": n.receiver,
            "status": n.status,
            "idempotencyKey": n.idempotency_key,
            "groupKey": n.extra.get("group_key"),
            "kind": n.extra.get("kind"),
            "groupLabels": n.extra.get("group_labels") or {},
            "alerts": alerts,
        }

    def send(self, notification: Notification) -> SendResult:
        try:
            r = self._client.post(
                self.url,
                json=self.payload(notification),
                headers={"Idempotency-Key": notification.idempotency_key},
            )
        except httpx.TimeoutException:
            return SendResult.transient("webhook timed out")
        except httpx.HTTPError as exc:
            return SendResult.transient(f"webhook unreachable: {type(exc).__name__}")
        if r.status_code < 300:
            return SendResult.sent()
        if r.status_code == 429:
            return SendResult.transient("webhook rate limited (429)", retry_after=_retry_after(r))
        if r.status_code in PERMANENT:
            return SendResult.permanent(f"webhook refused: HTTP {r.status_code}")
        return SendResult.transient(f"webhook failed: HTTP {r.status_code}")


def _retry_after(r: httpx.Response) -> float | None:
    try:
        return float(r.headers.get("Retry-After", ""))
    except ValueError:
        return None
