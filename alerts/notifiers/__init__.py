"""Notifiers: they only send a rendered view of an alert group and say whether a failure is worth retrying.
Each receiver kind registers itself (``registry``): its config model and how to build its notifier."""

from alerts.notifiers.base import Notifier, SendResult
from alerts.notifiers.registry import BuildContext, ReceiverConfig, build_notifier, register

__all__ = ["BuildContext", "Notifier", "ReceiverConfig", "SendResult", "build_notifier", "register"]
