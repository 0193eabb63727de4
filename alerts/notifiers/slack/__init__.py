"""Slack, all of it: the notifier (threads, updates, plots; ``notifier``), its Block Kit (``blocks``),
its error classes (``errors``), the doctor's checks (``check``) and the buttons' signed clicks
(``interactions``). The HTTP endpoint that receives the clicks is ``monitor/web/api/slack.py``."""

from alerts.notifiers.slack.notifier import SlackNotifier

__all__ = ["SlackNotifier"]
