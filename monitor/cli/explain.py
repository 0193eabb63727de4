"""``herowatch check-config --explain``: what each watch will do with its runs' metric names.

Per watch: the metrics profile (set, auto or off) and, for a set profile, the names it maps and the
rules whose metric it cannot provide. With a database (``--database-url`` or HEROWATCH_DATABASE_URL,
or the default SQLite file when it exists), the profile detected for each run already watched.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from monitor.config.schema import Watch, WatchConfig
from monitor.profiles import AUTO, CANONICAL, NONE, PROFILES
from monitor.profiles.profile import overlays, trainer_profiles
from monitor.rules.spec import RuleSpec

SHOWN = 12  # mapped names listed per watch before "..."


def _provided(profile: str) -> set[str]:
    """The canonical names a run of this trainer can have: its own, and the overlays' (system metrics)."""
    out: set[str] = set()
    for p in (PROFILES[profile], *overlays()):
        out |= set(p.keys.values()) | {x.canonical for x in p.patterns}
    return out


def watch_lines(watch: Watch, rules: Sequence[RuleSpec]) -> list[str]:
    choice = watch.metrics_profile
    lines = []
    if choice == NONE:
        lines.append("  metric names: used as logged (metrics_profile: none)")
        return lines
    if choice == AUTO:
        names = ", ".join(p.name for p in trainer_profiles())
        lines.append(f"  metric names: detected per run from its history keys (auto; one of {names})")
        return lines
    p = PROFILES[choice]
    lines.append(f"  metric names: {p.trainer} (metrics_profile: {choice})")
    renames = [f"{k!r} -> {v}" for k, v in p.keys.items() if k != v]
    if renames:
        more = f" ... (+{len(renames) - SHOWN})" if len(renames) > SHOWN else ""
        lines.append("    maps " + ", ".join(renames[:SHOWN]) + more)
    provided = _provided(choice)
    blind = sorted(
        f"{r.name} ({r.metric})" for r in rules if r.metric in CANONICAL and r.metric not in provided
    )
    if blind:
        lines.append("    rules this trainer logs nothing for: " + ", ".join(blind))
    for source in p.sources[:2]:
        lines.append(f"    key names from {source}")
    return lines


def run_lines(runs: Iterable[tuple[str, dict[str, Any] | None]]) -> list[str]:
    lines = []
    for run_id, described in runs:
        if not described:
            lines.append(f"    run {run_id}: no sample yet")
        elif described.get("how") == "detected":
            lines.append(f"    run {run_id}: detected {described.get('explain') or 'nothing'}")
        else:
            lines.append(f"    run {run_id}: {described.get('explain')}")
    return lines


def stored_profiles(database_url: str, watches: Iterable[str]) -> dict[str, list[tuple[str, Any]]] | str:
    """watch -> [(run, stored metrics_profile)], or why the database could not be read."""
    from sqlalchemy import select

    from monitor.storage.db import is_sqlite, make_read_only_engine
    from monitor.storage.models import Run

    if is_sqlite(database_url):
        path = database_url.split("///", 1)[-1]
        if path not in ("", ":memory:") and not Path(path).exists():
            return "no database yet"
    engine = make_read_only_engine(database_url)  # it only reads: never creates or changes a database
    out: dict[str, list[tuple[str, Any]]] = {w: [] for w in watches}
    try:
        with engine.connect() as conn:
            rows = conn.execute(select(Run.id, Run.watch, Run.stats).order_by(Run.id)).all()
    except Exception as exc:  # noqa: BLE001 - an explanation, not a failure
        return f"database not readable ({type(exc).__name__})"
    finally:
        engine.dispose()
    for run_id, watch, stats in rows:
        if watch in out:
            out[watch].append((run_id, (stats or {}).get("metrics_profile")))
    return out


def explain(cfg: WatchConfig, rules: Sequence[RuleSpec], database_url: str | None) -> list[str]:
    stored = stored_profiles(database_url, [w.name for w in cfg.watch]) if database_url else None
    lines = []
    for w in cfg.watch:
        lines.append(f"{w.name}:")
        lines.extend(watch_lines(w, rules))
        if isinstance(stored, dict):
            runs = stored.get(w.name) or []
            lines.extend(run_lines(runs) if runs else ["    no run of this watch in the database yet"])
    if isinstance(stored, str):
        lines.append(f"(runs' detected profiles: {stored})")
    return lines
