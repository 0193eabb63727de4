"""Prints notifications to a stream: the demo's receiver, and a fallback anyone can read."""

from __future__ import annotations

import sys
import threading
from typing import Literal, TextIO

from alerts.clock import isoformat
from alerts.durations import format_duration
from alerts.model import AlertState
from alerts.notifiers.base import CheckProblem, CheckReport, SendResult
from alerts.notifiers.registry import BuildContext, ReceiverConfig, register
from alerts.views import AlertView, GroupView


class ConsoleNotifier:
    def __init__(self, stream: TextIO | None = None, time_note: str = "") -> None:
        """``time_note`` follows every time printed, e.g. the demo's "(simulated time, 30x)"."""
        self._stream = stream
        self._lock = threading.Lock()
        self._time_note = f" {time_note}" if time_note else ""

    def render(self, view: GroupView) -> str:
        """One block per alert the notification is about (a group's message may carry several)."""
        return "\n".join(self._one(a, view.kind) for a in view.changed_alerts)

    def _one(self, a: AlertView, kind: str) -> str:
        if kind == "update" and a.state == AlertState.FIRING and a.acked_by:
            return self._acked(a)
        if kind == "update" and a.state == AlertState.FIRING:
            return self._joined(a)
        word = "STILL FIRING" if kind == "repeat" else a.state.upper()
        t = a.ended_at if a.state == AlertState.RESOLVED and a.ended_at else a.started_at
        when = isoformat(float(int(t)))  # whole seconds: for people
        head = f"[herowatch] {word} {a.severity.value.upper()} {a.alertname}"
        parts = [f"{head} run={a.run_shown or '?'} at {when}{self._time_note}"]
        if a.state == AlertState.RESOLVED:
            parts += [f"  now: {a.resolved_reason or 'resolved'}", f"  was: {a.summary}"]
        else:
            parts.append(f"  {a.summary}")
        if a.state == AlertState.RESOLVED and a.ended_at is not None:
            parts.append(f"  lasted {format_duration(a.ended_at - a.started_at)}")
        if a.acked_by:
            parts.append(f"  acknowledged by {a.acked_by}")
        return "\n".join(parts)

    def _acked(self, a: AlertView) -> str:
        """An acknowledgement is news about a page already printed: one line that cannot be read as a
        second page (no FIRING, no severity in capitals)."""
        since = isoformat(float(int(a.started_at)))
        return (
            f"[herowatch] acknowledged by {a.acked_by}: {a.alertname} run={a.run_shown or '?'}"
            f" (firing since {since}{self._time_note}; no reminders while acknowledged)"
        )

    def _joined(self, a: AlertView) -> str:
        """A second rule that sees an incident already paged joins its message (alerts.symptoms): news,
        printed so that it cannot be read as a second page."""
        since = isoformat(float(int(a.started_at)))
        return (
            f"[herowatch] same incident, no new page: {a.alertname} ({a.severity.value})"
            f" run={a.run_shown or '?'} also fires since {since}{self._time_note}\n  {a.summary}"
        )

    def check(self) -> CheckReport:
        stream = self._stream or sys.stdout
        if getattr(stream, "closed", False):
            return CheckReport(
                problems=[CheckProblem("the output stream is closed", "run herowatch with a stdout")]
            )
        return CheckReport(facts=["prints to the process's standard output"])

    def send(self, view: GroupView) -> SendResult:
        stream = self._stream or sys.stdout
        with self._lock:
            try:
                stream.write(self.render(view) + "\n")
                stream.flush()
            except (OSError, ValueError) as exc:  # closed or broken stream
                return SendResult.transient(f"console write failed: {exc}")
        return SendResult.sent()


class ConsoleReceiver(ReceiverConfig):
    """Prints each notification to herowatch's standard output (the default receiver)."""

    kind: Literal["console"] = "console"


def _build(config: ConsoleReceiver, context: BuildContext) -> ConsoleNotifier:
    return ConsoleNotifier()


register("console", ConsoleReceiver, _build)
