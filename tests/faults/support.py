"""Shared by the fault tests: a whole Service on a ManualClock, and what the outbox and alerts say."""

from __future__ import annotations

import io
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import select

from alerts.clock import ManualClock
from alerts.notifiers.console import ConsoleNotifier
from monitor.config.loader import parse_config
from monitor.service import Service, build_service
from monitor.settings import Settings
from monitor.storage import runs_repo
from monitor.storage.models import Alert, Notification

DATA_RULES = ("progress_stalled", "telemetry_gone")


def service_for(config: str, db_url: str, clock: ManualClock, console: bool = True, **secrets: str):
    cfg = parse_config(config, "faults.yaml")
    settings = Settings(database_url=db_url, **secrets)
    service = build_service(cfg, settings, clock, base_dir=Path("."), auto_migrate=True)
    out = io.StringIO()
    if console:
        service.dispatcher.notifiers = {"console": ConsoleNotifier(stream=out)}
    return service, out


def deliver(service: Service) -> int:
    """Plan reminders and send what is due now, as the scheduler's jobs would."""
    service.plan_repeats()
    return service.dispatcher.run_once()


def cycle(service: Service) -> list:
    """One poll of every watch and one delivery round, as the scheduler jobs would; nothing may escape."""
    reports = [service.engine.poll(name) for name in service.engine.watches]
    deliver(service)
    return reports


def alerts(service: Service) -> list[Alert]:
    with service.sessions() as s:
        return list(s.scalars(select(Alert).order_by(Alert.id)))


def notifications(service: Service) -> list[tuple[str, str, str, str]]:
    """(rule, run, status in the payload, outbox status) of every change notification."""
    with service.sessions() as s:
        rows = s.execute(
            select(Alert.rule, Alert.run_id, Notification.payload, Notification.status, Notification.kind)
            .join(Alert, Alert.id == Notification.alert_id)
            .order_by(Notification.id)
        ).all()
    return [(r.rule, r.run_id, r.payload.get("status"), r.status) for r in rows if r.kind == "change"]


def rule_states(service: Service, rule: str) -> list[str]:
    return [a.state for a in alerts(service) if a.rule == rule]


def false_pages(service: Service) -> list[str]:
    return [f"{a.rule} {a.run_id} {a.state}" for a in alerts(service) if a.rule in DATA_RULES]


def assert_exactly_once(service: Service, out: io.StringIO | None = None) -> Counter:
    """Every change notification sent, none twice: one (alert, status) each, console printed each once."""
    rows = notifications(service)
    assert all(r[3] in ("sent", "merged") for r in rows), rows
    with service.sessions() as s:
        keys = [k for (k,) in s.execute(select(Notification.idempotency_key))]
    assert len(keys) == len(set(keys)), keys
    counts = Counter((r[0], r[1], r[2]) for r in rows)
    assert all(n == 1 for n in counts.values()), counts
    if out is not None:
        text = out.getvalue()
        with service.sessions() as s:
            shown = runs_repo.titles(s, (run for _, run, _ in counts))  # the console names runs so
        for (rule, run, status), _ in counts.items():
            icon = "FIRING" if status == "firing" else "RESOLVED"
            name = shown.get(run, run)
            printed = sum(
                1 for line in text.splitlines() if f"{icon} " in line and f" {rule} run={name} " in line
            )
            assert printed == 1, (rule, run, status, text)
    return counts


def wait_for(check: Callable[[], object], timeout: float, what: str, interval: float = 0.05) -> object:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = check()
            if value:
                return value
        except Exception as exc:  # noqa: BLE001 - keep trying until the deadline
            last = exc
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last error: {last!r})")
