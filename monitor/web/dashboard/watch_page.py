"""A watch's own page: where the links of its own alerts (``source_unavailable``, ``source_down``,
``write_failing``, which carry the watch as their run) land. It says what each source's last poll
answered, whether the watch's writes fail, and lists its runs."""

from __future__ import annotations

from typing import Any

from monitor.durations import format_duration
from monitor.storage import runs_repo, views
from monitor.web.context import ApiContext


def watch_values(ctx: ApiContext, name: str) -> dict[str, Any] | None:
    """What the watch page shows, or None if no watch has that name."""
    engine = ctx.engine
    if engine is None or name not in engine.watches:
        return None
    now = ctx.now()
    sources = []
    for kind in sorted(engine.watches[name].targets()):
        last = engine.source_polls.of(name, kind)
        if last is None:
            said = "not polled yet"
        elif last.error is None:
            said = f"answered {format_duration(max(0.0, now - last.at))} ago"
        elif last.ok_at is None:
            said = f"never read: {last.error}"
        else:
            said = f"failing (last answer {format_duration(max(0.0, now - last.ok_at))} ago): {last.error}"
        sources.append({"kind": kind, "said": said, "ok": last is not None and last.error is None})
    with ctx.sessions() as s:
        runs = [
            {"id": r.id, "title": r.display_name or r.name or r.id, "state": r.state}
            for r in runs_repo.runs_of_watch(s, name)
        ]
        alerts = views.active_alerts(s, name)
    return {
        "watch": name,
        "sources": sources,
        "writes": engine.write_health.error(name),
        "runs": runs,
        "alerts": [{"rule": a.rule, "severity": a.severity, "state": a.state} for a in alerts],
    }
