"""Alertmanager: herowatch's alerts posted to Alertmanager's v2 API (``POST /api/v2/alerts``), so teams
that page through Alertmanager route, group, silence and inhibit them there like any other alert.

What is posted, for every message of a group (the group's whole state, so any message heals a miss):
- each firing alert: its labels (with ``alertname`` and ``severity``; names made valid for Prometheus),
  annotations (summary, description, runbook_url, value, threshold, metric, step, acknowledged_by, the
  run's links), ``startsAt`` when it fired, ``endsAt`` = now + ``4 x resend_interval`` (the watchdog's
  heartbeat: until its next beat is due), and ``generatorURL`` = the run's page on herowatch's
  dashboard (``server.external_url``), else its W&B page;
- each resolved alert: the same with ``endsAt`` = when it resolved, so Alertmanager resolves it at once.

Firing alerts are re-posted every ``resend_interval`` (``refresh_every``): Alertmanager resolves an
alert when its ``endsAt`` passes (or ``resolve_timeout``, 5m by default, after it was last heard of when
no ``endsAt`` is given), so a herowatch that stops (or dies) lets its alerts end within
``4 x resend_interval``, as a Prometheus that stops does. The pipeline plans the re-sends
(``monitor.delivery.reminders``), not a timer in here. An alert silenced in herowatch after it was
posted is not re-posted: Alertmanager lets it end. An acknowledged alert still fires (with
``acknowledged_by``); Alertmanager has no acknowledgement of its own.

A cluster: every URL gets every post (Alertmanager instances share silences and what they notified,
not alerts, so each must hear of each alert, as Prometheus does it); the send succeeds when one of
them accepted it, and a member that was down catches up at the next re-send. It fails for good only
when every member refused the alerts (HTTP 4xx: they are malformed), else it is retried.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import httpx
from pydantic import Field, field_validator

from alerts.clock import isoformat
from alerts.durations import Duration
from alerts.model import AlertState
from alerts.notifiers.base import CheckProblem, CheckReport, SendResult, retry_after
from alerts.notifiers.http_check import http_look
from alerts.notifiers.registry import BuildContext, HttpUrl, ReceiverConfig, register
from alerts.views import AlertView, GroupView

log = logging.getLogger(__name__)

API = "/api/v2/alerts"
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_URI = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://\S+$")
VALID_FOR = 4  # endsAt of a firing alert: this many resend intervals after each post


def _status_fact(resp: httpx.Response) -> str | None:
    try:
        data = resp.json()
        version = data["versionInfo"]["version"]
        cluster = data.get("cluster", {}).get("status", "?")
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return f"{resp.request.url.host}:{resp.request.url.port}: Alertmanager {version} (cluster {cluster})"


def label_name(name: str) -> str:
    """A valid Prometheus label name for ``name`` (Alertmanager 0.25 accepts no other)."""
    clean = re.sub(r"[^a-zA-Z0-9_]", "_", str(name))
    return clean if _LABEL_NAME.match(clean) else f"_{clean}"


class AlertmanagerNotifier:
    refresh_every: float = 60.0

    def __init__(
        self,
        urls: Sequence[str],
        timeout: float = 10.0,
        resend_interval: float = 60.0,
        labels: Mapping[str, str] | None = None,
        client: httpx.Client | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not urls:
            raise ValueError("an Alertmanager receiver needs at least one URL")
        self.urls = [base_url(u) for u in urls]
        self.refresh_every = float(resend_interval)
        self.labels = {label_name(k): str(v) for k, v in (labels or {}).items()}
        self._client = client or httpx.Client(timeout=timeout)
        self._clock = clock  # Alertmanager's clock is the wall clock: endsAt is compared with it

    def __repr__(self) -> str:
        return f"AlertmanagerNotifier(urls={self.urls!r})"

    def check(self) -> CheckReport:
        """Does every Alertmanager answer ``GET /api/v2/status``? Nothing is posted."""
        rep = CheckReport()
        for url in self.urls:
            resp = http_look(self._client, f"{url}/api/v2/status", rep, fact=_status_fact)
            if resp is not None and resp.status_code >= 400:
                rep.problems.append(
                    CheckProblem(f"{url} answers HTTP {resp.status_code} to /api/v2/status", "check the URL")
                )
        return rep

    # ---- what is posted ----------------------------------------------------------------------------
    def alerts(self, view: GroupView, now: float) -> list[dict[str, Any]]:
        """The group's alerts as Alertmanager's postable alerts. Two alerts with the same labels are one
        alert to Alertmanager: a firing one wins over a resolved one."""
        out: dict[frozenset[tuple[str, str]], dict[str, Any]] = {}
        resolved = [a for a in view.alerts if a.state == AlertState.RESOLVED]
        firing = [a for a in view.alerts if a.state == AlertState.FIRING and not a.silenced]
        for a in [*resolved, *firing]:
            body = self._alert(a, view, now)
            out[frozenset(body["labels"].items())] = body
        return list(out.values())

    def _alert(self, a: AlertView, view: GroupView, now: float) -> dict[str, Any]:
        labels = {**self.labels, **{label_name(k): v for k, v in a.labels.items()}}
        labels.update(alertname=a.alertname, severity=a.severity.value)
        starts = min(a.started_at, now)  # a demo clock runs ahead of the wall clock: never in the future
        if a.state == AlertState.RESOLVED:  # it has ended by now, whatever herowatch's clock says
            ends = max(min(a.ended_at if a.ended_at is not None else now, now), starts)
        else:  # a heartbeat holds until its next beat is due; an alert until the next re-send or three
            ends = max(now, starts) + (a.holds_for or VALID_FOR * self.refresh_every)
        body: dict[str, Any] = {
            "labels": {k: str(v) for k, v in labels.items() if str(v) != ""},
            "annotations": _annotations(a, view),
            "startsAt": isoformat(starts),
            "endsAt": isoformat(ends),
        }
        generator = view.links.get("dashboard_url") or view.links.get("wandb_url") or ""
        if _URI.match(generator):  # Alertmanager refuses the whole post (422) for one that is no URI
            body["generatorURL"] = generator
        return body

    # ---- the Notifier protocol ---------------------------------------------------------------------
    def send(self, view: GroupView) -> SendResult:
        alerts = self.alerts(view, self._clock())
        if not alerts:
            return SendResult.sent()  # nothing Alertmanager should hear of (all silenced here)
        results = [self._post(url, alerts) for url in self.urls]
        if any(r.ok for r in results):
            for url, r in zip(self.urls, results, strict=True):
                if not r.ok:
                    log.warning(
                        "alertmanager %s missed %s (%s); the next re-send catches up", url, view.key, r.error
                    )
            return SendResult.sent()
        errors = "; ".join(r.error or "?" for r in results)
        if all(not r.retry for r in results):
            return SendResult.permanent(f"every Alertmanager refused the alerts: {errors}")
        waits = [r.retry_after for r in results if r.retry_after is not None]
        return SendResult.transient(
            f"no Alertmanager took the alerts: {errors}", min(waits) if waits else None
        )

    def _post(self, url: str, alerts: list[dict[str, Any]]) -> SendResult:
        try:
            r = self._client.post(f"{url}{API}", json=alerts)
        except httpx.TimeoutException:
            return SendResult.transient(f"{url}: timed out")
        except httpx.HTTPError as exc:
            return SendResult.transient(f"{url}: unreachable ({type(exc).__name__})")
        if r.status_code < 300:
            return SendResult.sent()
        text = f"{url}: HTTP {r.status_code} {r.text.strip()[:300]}".rstrip()
        if r.status_code in (408, 429) or r.status_code >= 500:
            return SendResult.transient(text, retry_after=retry_after(r.headers))
        return SendResult.permanent(text)


def _annotations(a: AlertView, view: GroupView) -> dict[str, str]:
    values: dict[str, Any] = {
        "summary": a.summary,
        "description": a.description,
        "runbook_url": a.runbook_url,
        "metric": a.metric,
        "value": None if a.value is None else f"{a.value:.6g}",
        "threshold": None if a.threshold is None else f"{a.threshold:.6g}",
        "step": a.step,
        "acknowledged_by": a.acked_by,
        "dashboard_url": view.links.get("dashboard_url"),
        "wandb_url": view.links.get("wandb_url"),
        "herowatch_alert_id": a.id,
        "stacks": None if a.stacks is None else a.stacks.summary,  # a hang: who the others wait for
    }
    return {k: str(v) for k, v in values.items() if v is not None and str(v) != ""}


def base_url(url: str) -> str:
    """``http://am:9093/`` or ``http://am:9093/api/v2/alerts`` -> ``http://am:9093``."""
    url = str(url).strip().rstrip("/")
    return url[: -len(API)] if url.endswith(API) else url


class AlertmanagerReceiver(ReceiverConfig):
    """Posts alerts to Alertmanager's v2 API; every URL of a cluster gets every alert."""

    kind: Literal["alertmanager"]
    urls: list[HttpUrl] = Field(
        min_length=1, description="each Alertmanager of the cluster, e.g. http://alertmanager-0:9093"
    )
    timeout: Duration = 10.0
    resend_interval: Duration = Field(
        default=60.0,
        description="re-post firing alerts this often; each post keeps an alert firing 4x this long",
    )
    labels: dict[str, str] = Field(default_factory=dict, description="added to every alert, e.g. {team: ml}")

    @field_validator("resend_interval")
    @classmethod
    def _resend(cls, v: float) -> float:
        if v < 1:
            raise ValueError("resend_interval must be at least 1s")
        return v

    @field_validator("labels")
    @classmethod
    def _labels(cls, v: dict[str, str]) -> dict[str, str]:
        bad = [k for k in v if not _LABEL_NAME.match(k)]
        if bad:
            raise ValueError(f"label names are letters, digits and '_', not starting with a digit: {bad}")
        return v


def _build(config: AlertmanagerReceiver, context: BuildContext) -> AlertmanagerNotifier:
    return AlertmanagerNotifier(
        config.urls, timeout=config.timeout, resend_interval=config.resend_interval, labels=config.labels
    )


register("alertmanager", AlertmanagerReceiver, _build)
