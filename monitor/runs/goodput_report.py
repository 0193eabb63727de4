"""A run's goodput as the API and the pages read it: its report from the stored ``runs.stats``, and the
alerts named on each of its incidents."""

from __future__ import annotations

from typing import Any

from monitor.runs.goodput import Goodput


def report_of(stats: dict[str, Any] | None, now: float) -> dict[str, Any] | None:
    """The goodput report of a run from its stored ``runs.stats``, or None before any data."""
    data = (stats or {}).get("goodput")
    if not data:
        return None
    g = Goodput.from_dict(data)
    return g.report(now) if g.start is not None else None


def attach_alerts(incidents: list[dict[str, Any]], spans: list[tuple[str, float, float | None]]) -> None:
    """Name on each incident the alerts that were firing during it (``spans``: rule, fired, resolved).

    The incident timeline then reads "stalled 32m, progress_stalled fired", and an incident that no
    alert saw stands out.
    """
    for inc in incidents:
        start, end = inc["start"], inc["end"] if inc["end"] is not None else float("inf")
        inc["alerts"] = sorted({rule for rule, a, b in spans if a <= end and (b is None or b >= start)})
