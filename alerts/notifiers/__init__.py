"""Notifiers: they only send a rendered notification and say whether a failure is worth retrying."""

from alerts.notifiers.base import Notification, Notifier, SendResult
from alerts.notifiers.registry import NOTIFIER_KINDS, make_notifier

__all__ = ["NOTIFIER_KINDS", "Notification", "Notifier", "SendResult", "make_notifier"]
