"""Drive the delivery pipeline (Enqueuer -> Pipeline -> Dispatcher -> real notifiers) on a migrated
database with time from a manual clock, for receiver tests. Reminders and refreshes are planned at
every step, as the service's planner does."""

from __future__ import annotations

from collections.abc import Mapping

from alerts.grouping import GroupTiming
from alerts.notifiers.base import Notifier, refresh_every
from alerts.outbox import Dispatcher
from alerts.routing import Route
from monitor.delivery import oncall, reminders
from monitor.delivery.actor import Actor
from monitor.delivery.compose import Composer
from monitor.delivery.enqueue import Enqueuer
from monitor.delivery.pipeline import Pipeline
from monitor.storage.db import make_engine, make_sessionmaker
from monitor.storage.models import Alert, AlertGroup, Notification, Run, Silence

TIMING = GroupTiming(group_wait=30, group_interval=300, repeat_interval=4 * 3600)
EXTERNAL_URL = "https://herowatch.example.com"


class Delivery:
    def __init__(
        self,
        url: str,
        notifiers: Mapping[str, Notifier],
        t0: float,
        route: Route | None = None,
        timing: GroupTiming = TIMING,
    ) -> None:
        self.engine = make_engine(url)
        self.sessions = make_sessionmaker(self.engine)
        self.t0 = self.now = t0
        receiver = next(iter(notifiers))
        self.enqueuer = Enqueuer(route or Route(receiver, timing=timing), {n: n for n in notifiers})
        self.store = Pipeline(self.sessions, Composer(EXTERNAL_URL))
        self.dispatcher = Dispatcher(self.store, dict(notifiers), lambda: self.now)
        self.refresh = {n: every for n, x in notifiers.items() if (every := refresh_every(x)) is not None}
        self.n = 0

    def run(self, run_id: str, url: str | None = None) -> None:
        with self.sessions.begin() as s:
            s.add(Run(id=run_id, watch="w", source="wandb", url=url, first_seen_at=self.now))

    def alert(self, rule: str, run: str = "hero-1", severity: str = "critical", **labels: str) -> int:
        self.n += 1
        with self.sessions.begin() as s:
            a = Alert(
                fingerprint=f"{rule}-{run}-{self.n}",
                rule=rule,
                kind="x",
                run_id=run,
                severity=severity,
                labels={"alertname": rule, "run": run, "severity": severity, **labels},
                annotations={"summary": f"{run}: {rule}", "runbook_url": f"https://runbooks.example/{rule}"},
                state="firing",
                value=3.5,
                threshold=2.0,
                metric="train/loss",
                step=1200,
                active_at=self.now,
                fired_at=self.now,
                updated_at=self.now,
            )
            s.add(a)
            s.flush()
            self.enqueuer.on_transition(s, a, "firing", self.now)
            return a.id

    def resolve(self, alert_id: int) -> None:
        with self.sessions.begin() as s:
            a = s.get(Alert, alert_id)
            a.state, a.resolved_at = "resolved", self.now
            self.enqueuer.on_transition(s, a, "resolved", self.now)

    def ack(self, alert_id: int, by: str = "amy") -> None:
        with self.sessions.begin() as s:
            oncall.ack_alert(s, alert_id, Actor.slack_user(by), "on it", self.now)

    def silence(self, matcher: str, seconds: float) -> None:
        with self.sessions.begin() as s:
            s.add(
                Silence(
                    matchers={"matchers": [matcher]},
                    starts_at=self.now,
                    ends_at=self.now + seconds,
                    created_by="amy",
                    created_at=self.now,
                )
            )

    def at(self, seconds: float) -> int:
        """Move the clock to t0 + seconds, plan reminders and refreshes, deliver what is due."""
        self.now = self.t0 + seconds
        with self.sessions.begin() as s:
            reminders.plan(s, self.now, (), self.store.silences, self.refresh)
        return self.dispatcher.run_once()

    def rows(self, kind: str | None = None) -> list[tuple[str, str]]:
        """(kind, status) of the outbox rows, oldest first."""
        with self.sessions() as s:
            q = s.query(Notification).order_by(Notification.id)
            return [(n.kind, n.status) for n in q if kind is None or n.kind == kind]

    def group(self) -> AlertGroup:
        with self.sessions() as s:
            return s.query(AlertGroup).order_by(AlertGroup.id.desc()).first()

    def close(self) -> None:
        self.engine.dispose()
