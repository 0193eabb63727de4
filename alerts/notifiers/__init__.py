"""Notifiers: they only send a rendered view of an alert group and say whether a failure is worth retrying."""

from alerts.notifiers.base import Notifier, SendResult
from alerts.notifiers.registry import NOTIFIER_KINDS, make_notifier

__all__ = ["NOTIFIER_KINDS", "Notifier", "SendResult", "make_notifier"]
