"""POSTs each notification as JSON to a URL (shaped like Alertmanager's webhook payload)."""

from __future__ import annotations

from typing import Any, Literal

import httpx
from pydantic import Field

from alerts.durations import Duration
from alerts.notifiers.base import CheckProblem, CheckReport, SendResult, retry_after
from alerts.notifiers.registry import BuildContext, HttpUrl, ReceiverConfig, register
from alerts.reachability import Cause, cause_of, fix_for
from alerts.views import GroupView

PERMANENT = {400, 401, 403, 404, 405, 410, 413, 422}


class WebhookNotifier:
    def __init__(self, url: str, timeout: float = 10.0, client: httpx.Client | None = None) -> None:
        self.url = url
        self._client = client or httpx.Client(timeout=timeout)

    @staticmethod
    def payload(view: GroupView) -> dict[str, Any]:
        return {
            "version": "2",
            "receiver": view.receiver,
            "status": view.status,
            "kind": view.kind,
            "notifies": view.notifies,
            "idempotencyKey": view.key,
            "groupKey": view.group_key,
            "groupLabels": dict(view.group_labels),
            "changed": sorted(view.changed),
            "links": dict(view.links),
            "alerts": [a.to_dict() for a in view.alerts],
        }

    def check(self) -> CheckReport:
        """Is the URL reachable? An OPTIONS request: no notification is posted, no incident opened.
        Any HTTP answer but 404/410 counts (many endpoints refuse OPTIONS with 405)."""
        rep = CheckReport()
        try:
            r = self._client.options(self.url)
        except httpx.TimeoutException:
            rep.problems.append(
                CheckProblem(
                    f"{self.url} does not answer in time",
                    fix_for(Cause.TIMEOUT, self.url),
                    cause=Cause.TIMEOUT,
                )
            )
            return rep
        except httpx.HTTPError as exc:
            cause = cause_of(exc) or Cause.UNREACHABLE
            rep.problems.append(
                CheckProblem(
                    f"{self.url} cannot be reached ({type(exc).__name__})",
                    fix_for(cause, self.url),
                    cause=cause,
                )
            )
            return rep
        if r.status_code in (404, 410):
            rep.problems.append(
                CheckProblem(f"{self.url} answers HTTP {r.status_code}", "check the URL's path")
            )
        else:
            rep.facts.append(f"{self.url} answers (HTTP {r.status_code} to OPTIONS)")
        return rep

    def send(self, view: GroupView) -> SendResult:
        try:
            r = self._client.post(self.url, json=self.payload(view), headers={"Idempotency-Key": view.key})
        except httpx.TimeoutException:
            return SendResult.transient("webhook timed out")
        except httpx.HTTPError as exc:
            return SendResult.transient(f"webhook unreachable: {type(exc).__name__}")
        if r.status_code < 300:
            return SendResult.sent()
        if r.status_code == 429:
            return SendResult.transient("webhook rate limited (429)", retry_after=retry_after(r.headers))
        if r.status_code in PERMANENT:
            return SendResult.permanent(f"webhook refused: HTTP {r.status_code}")
        return SendResult.transient(f"webhook failed: HTTP {r.status_code}")


class WebhookReceiver(ReceiverConfig):
    """POSTs a JSON document per notification (Alertmanager-webhook-like) to ``url``."""

    kind: Literal["webhook"]
    url: HttpUrl = Field(description="where to POST, e.g. https://hooks.example.com/herowatch")
    timeout: Duration = 10.0


def _build(config: WebhookReceiver, context: BuildContext) -> WebhookNotifier:
    return WebhookNotifier(config.url, timeout=config.timeout)


register("webhook", WebhookReceiver, _build)
