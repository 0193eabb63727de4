"""Prints notifications to a stream: the demo's receiver, and a fallback anyone can read."""

from __future__ import annotations

import sys
import threading
from typing import TextIO

from alerts.clock import isoformat
from alerts.notifiers.base import Notification, SendResult

_ICON = {"firing": "FIRING", "resolved": "RESOLVED"}


class ConsoleNotifier:
    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def render(self, n: Notification) -> str:
        run = n.labels.get("run", "?")
        when = isoformat(n.ended_at if n.status == "resolved" else n.started_at)
        head = f"[herowatch] {_ICON.get(n.status, n.status.upper())} {n.severity.upper()} {n.alertname}"
        parts = [f"{head} run={run} at {when}", f"  {n.summary}"]
        if n.status == "resolved" and n.ended_at is not None:
            parts.append(f"  lasted {int(n.ended_at - n.started_at)}s")
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
