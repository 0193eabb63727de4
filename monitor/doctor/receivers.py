"""Doctor's receivers: each one built as ``serve`` builds it and asked whether it could deliver
(``check()`` of its notifier), without sending anything. A secret that is not set, a service that
cannot be reached or credentials refused are "could not check" with their cause, never a traceback."""

from __future__ import annotations

import os

from alerts.notifiers.base import MissingSecret
from alerts.notifiers.registry import BuildContext, build_notifier
from alerts.reachability import Cause, fix_for
from monitor.config.schema import WatchConfig
from monitor.doctor.report import FAIL, OK, UNCHECKED, WARN, Report
from monitor.settings import Settings


def check_receivers(cfg: WatchConfig, settings: Settings, report: Report) -> None:
    context = BuildContext(env={**os.environ, **settings.secret_env()}, external_url=cfg.server.external_url)
    for r in cfg.receivers:
        subject = f"receiver {r.name} ({r.kind})"
        try:
            notifier = build_notifier(r, context)
        except MissingSecret as exc:
            report.add(
                UNCHECKED,
                subject,
                str(exc),
                fix_for(Cause.MISSING_SECRET, secret=exc.env),
                str(Cause.MISSING_SECRET),
            )
            continue
        except ValueError as exc:
            report.add(FAIL, subject, str(exc), "see docs/receivers.md for the receiver's settings")
            continue
        if notifier is None:
            report.add(OK, subject, "shown on the dashboard, never sent")
            continue
        check = getattr(notifier, "check", None)  # optional: alerts.notifiers.base.Checkable
        if check is None:
            report.add(
                UNCHECKED,
                subject,
                "this kind of receiver cannot be checked without sending",
                cause="no check without sending",
            )
            continue
        try:
            got = check()
        except Exception as exc:  # noqa: BLE001 - a check that breaks is reported
            report.add(FAIL, subject, f"the check failed: {type(exc).__name__}: {exc}")
            continue
        for p in got.problems:
            if p.cause is not None:
                report.add(UNCHECKED, subject, p.what, p.fix, str(p.cause))
            else:
                report.add(FAIL if p.fatal else WARN, subject, p.what, p.fix)
        if got.ok and not any(p.cause is not None for p in got.problems):
            report.add(OK, subject, "; ".join(got.facts) or "can deliver")
