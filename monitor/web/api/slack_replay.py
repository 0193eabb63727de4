"""Slack replay protection: each signed request is acted on once.

Slack's signature only proves who made a request and that it is less than five minutes old; within
those five minutes anyone who captured it (a proxy log, a TLS-terminating middlebox) could send it
again. So the signatures of accepted requests are remembered for the window: a second request with
the same signature is a replay. Only requests whose signature verified are remembered, so nobody
without the signing secret can fill the memory; it is bounded anyway (``max_entries``), and when full
new requests are refused (fail closed) rather than old signatures forgotten.

Per process: with several replicas behind one Slack URL, route Slack to one of them
(docs/security.md). Time is passed in (``now``), never read here.
"""

from __future__ import annotations

from collections import OrderedDict

from alerts.notifiers.slack.interactions import MAX_AGE_SECONDS


class ReplayGuard:
    def __init__(self, window: float = MAX_AGE_SECONDS, max_entries: int = 20_000) -> None:
        self.window, self.max_entries = window, max_entries
        self._seen: OrderedDict[str, float] = OrderedDict()  # signature -> request timestamp

    def __len__(self) -> int:
        return len(self._seen)

    def _forget_old(self, now: float) -> None:
        # A request older than the window fails the signature check anyway: its signature may go.
        for signature, ts in list(self._seen.items()):
            if ts >= now - self.window:
                break
            del self._seen[signature]

    def check(self, signature: str, timestamp: float, now: float) -> tuple[int, str] | None:
        """Remember ``signature``; None if it is new, else the HTTP status and reason to refuse it."""
        self._forget_old(now)
        if signature in self._seen:
            return 409, "this signed request was already handled (a replay?)"
        if len(self._seen) >= self.max_entries:
            return 429, "too many Slack requests in the last five minutes; try again shortly"
        self._seen[signature] = timestamp
        return None
