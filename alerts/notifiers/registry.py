"""From a receiver's ``kind`` in the config to the notifier class that serves it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from alerts.notifiers.base import Notifier
from alerts.notifiers.console import ConsoleNotifier
from alerts.notifiers.slack import SlackNotifier
from alerts.notifiers.webhook import WebhookNotifier

NOTIFIER_KINDS: dict[str, Callable[..., Notifier]] = {
    "console": ConsoleNotifier,
    "slack": SlackNotifier,
    "webhook": WebhookNotifier,
}


def make_notifier(kind: str, options: Mapping[str, Any] | None = None) -> Notifier:
    try:
        factory = NOTIFIER_KINDS[kind]
    except KeyError:
        raise ValueError(
            f"unknown receiver kind {kind!r}; known: {', '.join(sorted(NOTIFIER_KINDS))}"
        ) from None
    return factory(**dict(options or {}))
