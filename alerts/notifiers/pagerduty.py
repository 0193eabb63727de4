"""PagerDuty: each alert group episode is one PagerDuty alert, driven through the Events API v2
(``POST {url}/v2/enqueue``) under one ``dedup_key`` per episode (``herowatch/<group key>/<episode>``):

- firing news, a reminder, a change while something still fires unacknowledged: ``trigger``, with the
  lead alert's summary (and how many more fire), severity mapped (critical, warning, info: the same
  names), the run as ``source``, the rule as ``class``, every alert of the group in ``custom_details``,
  links to the run page on herowatch's dashboard, the run in W&B, the runbook and the plot, and the plot
  as an image when it is served over HTTPS (PagerDuty shows only HTTPS images);
- every firing alert acknowledged in herowatch (API, dashboard, Slack or CLI): ``acknowledge``;
- all alerts resolved: ``resolve``.

PagerDuty deduplicates by ``dedup_key``: a trigger for an open alert is added to its log (and pages
nobody while it is acknowledged), so one episode pages once. A new episode (after all resolved) is a new
key, and a new page. PagerDuty has no heartbeat, so the watchdog cannot be routed here.

Answers: 202 sent (the ref is the dedup_key); 400 (an event PagerDuty finds invalid, a wrong routing
key) fails for good with PagerDuty's errors; 429 is retried after ``Retry-After`` or a minute
(PagerDuty asks for a backoff); 5xx, timeouts and network errors are retried. The routing key
(integration key) comes from the environment variable the config names (``routing_key_env``), never
from the config file, and never appears in errors or ``repr``.
"""

from __future__ import annotations

import re
from typing import Any, Literal

import httpx
from pydantic import Field, field_validator, model_validator

from alerts.clock import isoformat
from alerts.durations import Duration
from alerts.notifiers.base import CheckReport, MissingSecret, SendResult, retry_after
from alerts.notifiers.http_check import http_look
from alerts.notifiers.registry import BuildContext, HttpUrl, ReceiverConfig, register
from alerts.views import AlertView, GroupView, json_number

DEFAULT_URL = "https://events.pagerduty.com"
ENQUEUE = "/v2/enqueue"
SEVERITY = {"critical": "critical", "warning": "warning", "info": "info"}  # herowatch -> PagerDuty
RATE_LIMITED_WAIT = 60.0  # seconds, when a 429 names no Retry-After
MAX_SUMMARY = 1024


class PagerDutyNotifier:
    def __init__(
        self,
        routing_key: str,
        url: str = DEFAULT_URL,
        timeout: float = 10.0,
        client_url: str | None = None,
        client: httpx.Client | None = None,
    ) -> None:
        if not routing_key or not routing_key.strip():
            raise ValueError("a PagerDuty receiver needs the integration's routing key")
        self._key = routing_key.strip()
        self.url = url.rstrip("/")
        self.client_url = client_url
        self._client = client or httpx.Client(timeout=timeout)

    def __repr__(self) -> str:
        return f"PagerDutyNotifier(url={self.url!r})"

    def check(self) -> CheckReport:
        """Is the Events API reachable? A GET opens no incident; the routing key itself is only judged by
        PagerDuty when an event is sent."""
        rep = CheckReport()
        if http_look(self._client, self.url, rep) is not None:
            rep.facts.append("the routing key is judged by PagerDuty at the first event")
        return rep

    @staticmethod
    def dedup_key(view: GroupView) -> str:
        episode = f"/{view.episode}" if view.episode is not None else ""
        return f"herowatch/{view.group_key}{episode}"[:255]

    @staticmethod
    def action(view: GroupView) -> str:
        if view.resolved:
            return "resolve"
        firing = [a for a in view.firing if not a.silenced]  # a muted alert asks nothing of on-call
        if firing and all(a.acked_by for a in firing):
            return "acknowledge"
        return "trigger"

    def event(self, view: GroupView) -> dict[str, Any]:
        """The Events API v2 event for this message (the routing key is added when sending)."""
        action = self.action(view)
        event: dict[str, Any] = {"event_action": action, "dedup_key": self.dedup_key(view)}
        if action != "trigger":
            return event
        lead, firing = view.lead, view.firing
        more = len(firing) - 1 if lead in firing else len(firing)
        summary = lead.summary + (f" (+{more} more firing)" if more > 0 else "")
        payload = {
            "summary": summary[:MAX_SUMMARY],
            "source": view.run or "herowatch",
            "severity": SEVERITY[min((a.severity for a in firing or [lead]), key=lambda s: s.rank).value],
            "timestamp": isoformat(lead.started_at),
            "component": lead.metric,
            "group": lead.labels.get("watch"),
            "class": lead.alertname,
            "custom_details": {
                "alerts": [_details(a) for a in view.alerts],
                "group": dict(view.group_labels),
                "firing": len(firing),
                **({"stacks": lead.stacks.to_dict()} if lead.stacks is not None else {}),
            },
        }
        event["payload"] = {k: v for k, v in payload.items() if v not in (None, "")}
        event["client"] = "herowatch"
        client_url = view.links.get("dashboard_url") or self.client_url
        if client_url:
            event["client_url"] = client_url
        event["links"] = _links(view, lead)
        plot_url = view.links.get("plot_url")
        if plot_url and plot_url.startswith("https://") and view.plot is not None:
            image = {"src": plot_url, "alt": view.plot.caption[:500]}
            if view.links.get("dashboard_url"):
                image["href"] = view.links["dashboard_url"]
            event["images"] = [image]
        return event

    # ---- the Notifier protocol ---------------------------------------------------------------------
    def send(self, view: GroupView) -> SendResult:
        if view.kind == "single":
            return SendResult.permanent(
                "PagerDuty has no heartbeat: route the watchdog to a dead man's switch (a webhook)"
            )
        body = {"routing_key": self._key, **self.event(view)}
        try:
            r = self._client.post(f"{self.url}{ENQUEUE}", json=body)
        except httpx.TimeoutException:
            return SendResult.transient("pagerduty: timed out")
        except httpx.HTTPError as exc:
            return SendResult.transient(f"pagerduty: unreachable ({type(exc).__name__})")
        if r.status_code in (200, 201, 202):
            return SendResult.sent(body["dedup_key"])
        said = self._redact(_said(r))
        if r.status_code == 429:
            wait = retry_after(r.headers)
            return SendResult.transient(f"pagerduty: rate limited (429){said}", wait or RATE_LIMITED_WAIT)
        if r.status_code == 408 or r.status_code >= 500:
            return SendResult.transient(f"pagerduty: HTTP {r.status_code}{said}", retry_after(r.headers))
        return SendResult.permanent(
            f"pagerduty refused the {body['event_action']} event: HTTP {r.status_code}{said}"
        )

    def _redact(self, text: str) -> str:
        return text.replace(self._key, "***")


def _details(a: AlertView) -> dict[str, Any]:
    d = {
        "alertname": a.alertname,
        "severity": a.severity.value,
        "state": a.state,
        "summary": a.summary,
        "started_at": isoformat(a.started_at),
        "ended_at": isoformat(a.ended_at),
        "metric": a.metric,
        "value": json_number(a.value),
        "threshold": json_number(a.threshold),
        "step": a.step,
        "acknowledged_by": a.acked_by,
        "silenced": a.silenced,
        "runbook_url": a.runbook_url,
    }
    return {k: v for k, v in d.items() if v not in (None, "")}


def _links(view: GroupView, lead: AlertView) -> list[dict[str, str]]:
    where = view.where or "the run"
    wanted = [
        (view.links.get("dashboard_url"), f"{where} on herowatch"),
        (view.links.get("wandb_url"), f"{where} in W&B"),
        (lead.runbook_url, f"runbook: {lead.alertname}"),
        (view.links.get("plot_url"), f"plot: {view.plot.caption if view.plot else lead.alertname}"[:300]),
    ]
    return [{"href": href, "text": text} for href, text in wanted if href]


def _said(r: httpx.Response) -> str:
    """PagerDuty's own words: ``message`` and ``errors`` of its JSON answer."""
    try:
        data = r.json()
    except ValueError:
        return f": {r.text.strip()[:200]}" if r.text.strip() else ""
    if not isinstance(data, dict):
        return ""
    errors = data.get("errors") or []
    text = "; ".join(str(e) for e in errors) if isinstance(errors, list) else str(errors)
    return ": " + ": ".join(x for x in (str(data.get("message") or ""), text) if x)


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_LOOKS_LIKE_KEY = re.compile(r"^(?=.*\d)[a-zA-Z0-9]{32}$")  # an integration key: 32 letters and digits


class PagerDutyReceiver(ReceiverConfig):
    """A PagerDuty service, through an Events API v2 integration whose routing key is in the environment."""

    kind: Literal["pagerduty"]
    routing_key_env: str = Field(
        default="PAGERDUTY_ROUTING_KEY",
        description="the environment variable holding the integration's routing key (never the key here)",
    )
    url: HttpUrl = Field(
        default=DEFAULT_URL,
        description="Events API base URL (https://events.eu.pagerduty.com in the EU region)",
    )
    timeout: Duration = 10.0

    @model_validator(mode="before")
    @classmethod
    def _no_key_here(cls, data: Any) -> Any:
        if isinstance(data, dict) and {"routing_key", "integration_key", "service_key"} & set(data):
            raise ValueError(
                "never put the PagerDuty routing key in the config: put it in an environment variable "
                "and name that variable in routing_key_env (default PAGERDUTY_ROUTING_KEY)"
            )
        return data

    @field_validator("routing_key_env")
    @classmethod
    def _env_name(cls, v: str) -> str:
        if _LOOKS_LIKE_KEY.match(v):
            raise ValueError(
                "this looks like the routing key itself: put it in an environment variable and name that"
            )
        if not _ENV_NAME.match(v):
            raise ValueError(f"{v!r} is not an environment variable name (letters, digits, '_')")
        return v


def _build(config: PagerDutyReceiver, context: BuildContext) -> PagerDutyNotifier:
    key = context.secret(config.routing_key_env)
    if key is None:
        raise MissingSecret(
            config.routing_key_env,
            f"set the environment variable {config.routing_key_env} to the routing key of the PagerDuty "
            "integration (Events API v2); the key never goes in the config",
        )
    return PagerDutyNotifier(key, url=config.url, timeout=config.timeout, client_url=context.external_url)


register("pagerduty", PagerDutyReceiver, _build)
