"""The ``dashboard`` receiver: alerts routed to it are recorded and shown on the dashboard, never sent
(route warnings there to keep them out of the pager). It has no notifier: routing skips it."""

from __future__ import annotations

from typing import Literal

from alerts.notifiers.registry import ReceiverConfig, register


class DashboardReceiver(ReceiverConfig):
    """Recorded and shown on the dashboard, never sent (e.g. route warnings here)."""

    kind: Literal["dashboard"]


register("dashboard", DashboardReceiver, None)
