"""Fleet queries of the ``prometheus`` source (settings: ``fleet_config``): one request per fleet metric
and run per poll, over the same window as the run's other queries, and its series turned into a
``FleetFrame`` (a row per member, a column per timestamp).

A fleet query that fails does not fail the poll: the run's other metrics still count, and that
metric's raster has a gap (logged when the failure first appears or changes).
"""

from __future__ import annotations

import logging
import math
import threading
from collections import defaultdict
from collections.abc import Mapping

from monitor.fleet.frame import FleetFrame, Member, host_name, natural_key
from monitor.sources.fleet_config import FleetQuery
from monitor.sources.prometheus_config import PrometheusTarget, render
from monitor.sources.prometheus_http import Series

log = logging.getLogger("monitor.sources.prometheus_source")

PREFIX = "fleet:"  # request aliases of fleet queries: "fleet:sm_active"


def fleet_texts(
    cfg: PrometheusTarget, values: Mapping[str, str], fragments: Mapping[str, str]
) -> dict[str, str]:
    """Alias -> rendered PromQL of every fleet metric (none when the target has no ``fleet``)."""
    if cfg.fleet is None:
        return {}
    return {PREFIX + name: render(q.expr, values, fragments) for name, q in cfg.fleet.all_metrics().items()}


def frame(
    run: str,
    name: str,
    q: FleetQuery,
    series: list[Series],
    after: float | None,
    step: float,
) -> tuple[FleetFrame | None, int]:
    """The frame of one fleet metric from its series (timestamps after ``after`` only), and how many
    series had no host label (they cannot be placed)."""
    cells: dict[tuple[Member, float], list[float]] = defaultdict(lambda: [0.0, 0])
    times: set[float] = set()
    nameless = 0
    for labels, values in series:
        host = host_name(labels.get(q.host, ""))
        if not host:
            nameless += 1
            continue
        member: Member = (host, labels.get(q.device) if q.device else None)
        if q.device and member[1] is None:
            nameless += 1
            continue
        for t, v in values:
            if (after is None or t > after) and math.isfinite(v):
                cell = cells[(member, t)]
                cell[0] += v
                cell[1] += 1
                times.add(t)
    if not cells:
        return None, nameless
    order = sorted({m for m, _ in cells}, key=natural_key)
    cols = sorted(times)
    col_of = {t: j for j, t in enumerate(cols)}
    rows = {m: [math.nan] * len(cols) for m in order}
    for (m, t), (total, n) in cells.items():
        rows[m][col_of[t]] = total / n  # several series for one member (containers): their mean
    return (
        FleetFrame(
            run=run,
            metric=name,
            label=q.label,
            unit=q.unit,
            device_word=q.device_word if q.device else None,
            step=step,
            members=tuple(order),
            times=tuple(cols),
            values=tuple(tuple(rows[m]) for m in order),
        ),
        nameless,
    )


class FleetNotes:
    """Logs a fleet metric's trouble (a failed query, series without a host label) when it appears or
    changes, not at every poll."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: dict[tuple[str, str, str], str] = {}

    def note(self, watch: str, run: str, metric: str, problem: str | None) -> None:
        key = (watch, run, metric)
        with self._lock:
            before = self._last.get(key)
            if problem is None:
                self._last.pop(key, None)
                return
            self._last[key] = problem
        level = logging.WARNING if problem != before else logging.DEBUG
        log.log(level, "prometheus watch %s, run %s: fleet metric %s: %s", watch, run, metric, problem)


def assemble(
    cfg: PrometheusTarget,
    watch: str,
    run: str,
    answers: Mapping[tuple[str, str], list[Series]],
    soft_errors: Mapping[tuple[str, str], str],
    after: float | None,
    notes: FleetNotes,
) -> list[FleetFrame]:
    """The run's fleet frames from this poll's answers."""
    if cfg.fleet is None:
        return []
    out = []
    for name, q in cfg.fleet.all_metrics().items():
        alias = PREFIX + name
        if (run, alias) in soft_errors:
            notes.note(watch, run, name, f"query failed: {soft_errors[(run, alias)]}")
            continue
        f, nameless = frame(run, name, q, answers.get((run, alias), []), after, cfg.step)
        notes.note(
            watch,
            run,
            name,
            f"{nameless} series without a {q.host!r} label are left out" if nameless else None,
        )
        if f is not None:
            out.append(f)
    return out
