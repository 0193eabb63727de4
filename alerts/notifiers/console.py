"""Prints notifications to a stream: the demo's receiver, and a fallback anyone can read."""

from __future__ import annotations

import sys
import threading
from typing import TextIO

from alerts.clock import isoformat
from alerts.notifiers.base import Notification, SendResult

_ICON = {"firing": "FIRING", "resolved": "RESOLVED", "repeat": "STILL FIRING"}


def _duration(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


class ConsoleNotifier:
    def __init__(self, stream: TextIO | None = None, time_note: str = "") -> None:
        """``time_note`` follows every time printed, e.g. the demo's "(simulated time, 30x)"."""
        self._stream = stream
        self._lock = threading.Lock()
        self._time_note = f" {time_note}" if time_note else ""

    def render(self, n: Notification) -> str:
        """One block per alert that changed (a group's message may carry several)."""
        alerts = n.extra.get("alerts")
        if not alerts:
            return self._one(n)
        changed = set(n.extra.get("changed") or [])
        blocks = []
        for a in alerts:
            if a.get("id") not in changed:
                continue
            status = "firing" if a["state"] == "firing" else "resolved"
            if n.extra.get("kind") == "repeat":
                status = "repeat"
            blocks.append(
                self._one(
                    Notification(
                        idempotency_key=n.idempotency_key,
                        receiver=n.receiver,
                        status=status,
                        alertname=a["alertname"],
                        severity=a["severity"],
                        labels=a["labels"],
                        annotations={"summary": a.get("summary") or ""},
                        started_at=a["started_at"],
                        ended_at=a.get("ended_at"),
                    )
                )
            )
        return "\n".join(blocks) or self._one(n)

    def _one(self, n: Notification) -> str:
        run = n.labels.get("run", "?")
        t = n.ended_at if n.status == "resolved" else n.started_at
        when = isoformat(float(int(t)) if t is not None else None)  # whole seconds: for people
        head = f"[herowatch] {_ICON.get(n.status, n.status.upper())} {n.severity.upper()} {n.alertname}"
        parts = [f"{head} run={run} at {when}{self._time_note}", f"  {n.summary}"]
        if n.status == "resolved" and n.ended_at is not None:
            parts.append(f"  lasted {_duration(n.ended_at - n.started_at)}")
        return "\n".join(parts)

    def send(self, notification: Notification) -> SendResult:
        stream = self._stream or sys.stdout
        with self._lock:
            try:
                stream.write(self.render(notification) + "\n")
                stream.flush()
            except (OSError, ValueError) as exc:  # closed or broken stream
                return SendResult.transient(f"console write failed: {exc}")
        return SendResult.sent()
