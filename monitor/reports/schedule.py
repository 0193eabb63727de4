"""Scheduled reports (``reports:`` in the watch config): each schedule's due period is sent once across
replicas and restarts.

Every ``CHECK_EVERY`` seconds each replica looks at every schedule: the period of its latest send time
(``cadence``) is claimed in ``reports_sent`` (one replica wins), built, sent, and marked sent. A period
without any goodput data (before herowatch watched anything) is not sent. A send that failed, or a
replica that died while sending, leaves the claim unmarked: another try takes it over after ``STALE``.

Receivers (``REPORT_RECEIVER_KINDS``, checked when the config is read): Slack posts the summary as a
message (``slack_post``) and uploads the pictures (PNG) in its thread; a webhook gets the report's JSON;
console has the Markdown logged.
"""

from __future__ import annotations

import logging
import os
import socket
from typing import TYPE_CHECKING, Any

import httpx
from sqlalchemy.orm import Session, sessionmaker

from alerts.clock import Clock
from monitor.config.cadence import parse_every
from monitor.config.schema import ReportSchedule, WatchConfig
from monitor.reports import markdown, png, slack_post
from monitor.reports.cadence import latest_fire, period_of
from monitor.reports.make import make
from monitor.reports.model import Report
from monitor.reports.period import zone
from monitor.storage import goodput_repo, report_repo, reports_sent

if TYPE_CHECKING:
    from apscheduler.schedulers.base import BaseScheduler

log = logging.getLogger(__name__)
CHECK_EVERY = 30.0  # seconds (of the service's clock)
STALE = 600.0  # a claim not marked sent for this long is tried again


class ReportJob:
    def __init__(
        self, cfg: WatchConfig, sessions: sessionmaker[Session], clock: Clock, env: dict[str, str]
    ) -> None:
        self.cfg = cfg
        self.sessions = sessions
        self.clock = clock
        self.env = env
        self.worker = f"{socket.gethostname()}:{os.getpid()}"
        self.receivers = {r.name: r for r in cfg.receivers}

    def run_once(self) -> int:
        """Send what is due; returns how many reports went out."""
        sent = 0
        for sched in self.cfg.reports:
            try:
                sent += self._one(sched)
            except Exception:  # one schedule's trouble (the database, a receiver) must not stop the others
                log.exception("scheduled report %s failed", sched.key())
        return sent

    def _one(self, sched: ReportSchedule) -> int:
        now = self.clock.time()
        tz = zone(sched.timezone)
        every = parse_every(sched.every)
        period = period_of(every, tz, latest_fire(every, tz, now))
        key = sched.key()
        with self.sessions() as s:
            ids = [r.id for r in report_repo.runs(s, sched.watch, None)]
            first = goodput_repo.first_slot(s, ids)
        if first is None or first >= period.end:
            return 0  # nothing was watched then: no report to send
        with self.sessions.begin() as s:
            if not reports_sent.claim(s, key, period.start, self.worker, now, STALE):
                return 0
        try:
            with self.sessions() as s:
                report = make(s, self.cfg, period, now=now, tz=tz.key, watch=sched.watch)
            self._send(sched, report)
        except Exception as exc:
            with self.sessions.begin() as s:
                reports_sent.mark_failed(s, key, period.start, f"{type(exc).__name__}: {exc}")
            raise
        with self.sessions.begin() as s:
            reports_sent.mark_sent(s, key, period.start, self.worker, self.clock.time())
        log.info("scheduled report %s: %s sent to %s", key, period.label, sched.receiver)
        return 1

    def _send(self, sched: ReportSchedule, r: Report) -> None:
        receiver = self.receivers[sched.receiver]
        kind = receiver.kind
        if kind == "slack":
            self._slack(receiver, r)
        elif kind == "webhook":
            resp = httpx.post(
                str(receiver.url),
                content=r.model_dump_json(),
                timeout=float(receiver.timeout),
                headers={"content-type": "application/json"},
            )
            resp.raise_for_status()
        elif kind == "console":
            log.info("herowatch report for %s:\n%s", sched.receiver, markdown.render(r))
        else:  # the config check refuses these (``REPORT_RECEIVER_KINDS``); an error leaves it unsent
            raise ValueError(f"receiver {sched.receiver!r} ({kind}) cannot take a report")

    def _slack(self, receiver: Any, r: Report) -> None:
        from slack_sdk import WebClient
        from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler, ServerErrorRetryHandler

        client = WebClient(
            token=self.env.get("SLACK_BOT_TOKEN", ""),
            base_url=receiver.base_url or WebClient.BASE_URL,
            timeout=int(receiver.timeout),
            retry_handlers=[
                RateLimitErrorRetryHandler(max_retry_count=2),
                ServerErrorRetryHandler(max_retry_count=2),
            ],
        )
        link = self.cfg.server.external_url
        message = slack_post.post(
            r,
            f"herowatch report: {r.period.label}",
            f"{link.rstrip('/')}/reports" if link else None,
            "The whole report: the dashboard's /reports page, or `herowatch report`",
        )
        answer = client.chat_postMessage(channel=receiver.channel, text=message.text, blocks=message.blocks)
        ts = answer["ts"]
        pictures = (
            ("goodput.png", "Where the hours went", png.goodput_png(r)),
            ("incidents.png", "Incident timeline", png.timeline_png(r)),
        )
        for filename, title, data in pictures:
            client.files_upload_v2(
                channel=receiver.channel,
                thread_ts=ts,
                file=data,
                filename=filename,
                title=title,
                alt_txt=f"{title}, {r.period.label}",
            )


def install(scheduler: BaseScheduler, job: ReportJob, speed: float = 1.0) -> None:
    """Add the scheduled reports' job to a started scheduler (when the config has schedules); ``speed``:
    how much faster than real time the service's clock runs."""
    from monitor.engine.scheduling import add_interval_job

    if not job.cfg.reports:
        return
    add_interval_job(scheduler, "reports", job.run_once, CHECK_EVERY / speed, first_in=1.0)
