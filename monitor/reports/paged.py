"""Pages folded into incidents, and which pages were likely noise.

**Likely noise** (docs/reports.md): a page that resolved within ``NOISE`` (10 min) of firing without
any acknowledgement, or one a person marked as noise: acknowledged with a comment, or muted by a silence
(in force while it fired, matching it) with a comment, that starts with "noise" or "false alarm".

**One row per incident**: pages of one run are one incident when their spans overlap: a page's span runs
from its symptom to its resolution (the period's end while open), stretched over the goodput incidents
it overlaps (a stall, and the restart that follows the kill). The hang's ``progress_stalled``, the
``telemetry_gone`` beside it and a repeat of either are one row; so are an RL run's reward collapse,
KL blow-up and entropy collapse firing together. Each row has the number of pages, the first and last.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping

from alerts.silences import SilenceSpec
from monitor.reports.model import Page, PagedIncident, Period
from monitor.storage.models import Alert, GoodputEvent, Silence

H = 3600.0
TOUCH = 60.0  # seconds: goodput incidents this close follow one another (the kill, then the restart)
NOISE_WORDS = re.compile(r"\s*(noise|false alarm|false positive)\b", re.IGNORECASE)


def is_noise_note(text: str) -> bool:
    """Does a person's comment mark what it is about as noise?"""
    return NOISE_WORDS.match(text or "") is not None


def marked_noise(
    alerts: list[Alert], notes: Mapping[int, list[str]], silences: list[Silence], p: Period
) -> frozenset[int]:
    """The alerts people marked as noise: an ack comment or the comment of a silence that muted them."""
    marked = {a.id for a in alerts if any(is_noise_note(n) for n in notes.get(a.id, ()))}
    specs = []
    for x in silences:
        if not is_noise_note(x.comment):
            continue
        try:
            specs.append(
                SilenceSpec.parse(x.id, (x.matchers or {}).get("matchers", []), x.starts_at, x.ends_at)
            )
        except ValueError:
            continue  # a stored silence that no longer parses mutes nothing
    for a in alerts:
        fired = float(a.fired_at or a.active_at)
        until = a.resolved_at if a.resolved_at is not None else p.end
        labels = {k: str(v) for k, v in (a.labels or {}).items()}
        if any(x.starts_at < until and x.ends_at > fired and x.matches(labels) for x in specs):
            marked.add(a.id)
    return frozenset(marked)


def fold(
    pages: list[Page], events: list[GoodputEvent], p: Period, gpus: Mapping[str, int]
) -> list[PagedIncident]:
    """One row per incident, in the order their first pages fired."""
    out: list[PagedIncident] = []
    for run in sorted({pg.run for pg in pages}):
        mine = sorted((pg for pg in pages if pg.run == run), key=lambda pg: (pg.symptom_at, pg.fired_at))
        spans = sorted((e for e in events if e.run_id == run), key=lambda e: e.start)
        group: list[Page] = []
        end = float("-inf")
        for pg in mine:
            a, b = _span(pg, spans, p)
            if group and a > end:
                out.append(_row(group, spans, gpus))
                group, end = [], float("-inf")
            group.append(pg)
            end = max(end, b)
        if group:
            out.append(_row(group, spans, gpus))
    return sorted(out, key=lambda r: (r.first_fired, r.run))


def _span(pg: Page, events: list[GoodputEvent], p: Period) -> tuple[float, float]:
    """A page's span (symptom to resolution, or the period's end while open), stretched to the end of
    the goodput incidents it overlaps, and of those that follow them without a gap (a hang, then the
    restart after the kill)."""
    a = pg.symptom_at
    b = pg.resolved_at if pg.resolved_at is not None else p.end
    for e in events:  # in order of their start
        if e.start <= b + TOUCH and e.end >= a:
            b = max(b, e.end)
    return a, b


def _row(group: list[Page], events: list[GoodputEvent], gpus: Mapping[str, int]) -> PagedIncident:
    start = min(pg.symptom_at for pg in group)
    open_ = any(pg.resolved_at is None for pg in group)
    end = None if open_ else max(pg.resolved_at or 0.0 for pg in group)
    fired = sorted(group, key=lambda pg: (pg.fired_at, pg.alert_id))
    acks = sorted((pg for pg in group if pg.acked_at is not None), key=lambda pg: pg.acked_at or 0.0)
    last = max(pg.resolved_at if pg.resolved_at is not None else float("inf") for pg in group)
    hit = [e for e in events if e.start <= last and e.end >= start]
    lost = sum(e.seconds_lost for e in hit)
    n = gpus.get(group[0].run)
    kinds = Counter(e.kind for e in hit)
    return PagedIncident(
        run=group[0].run,
        start=start,
        end=end,
        kind=max(kinds, key=lambda k: (sum(e.seconds_lost for e in hit if e.kind == k), k))
        if kinds
        else None,
        rules=[r for r, _ in Counter(pg.rule for pg in fired).most_common()],
        count=len(group),
        first_fired=fired[0].fired_at,
        last_fired=fired[-1].fired_at,
        detect_seconds=fired[0].fired_at - start,
        ack_seconds=(acks[0].acked_at or 0.0) - fired[0].fired_at if acks else None,
        acked_by=acks[0].acked_by if acks else None,
        badput_hours=lost / H,
        badput_gpu_hours=lost / H * n if n else None,
        noise=all(pg.noise for pg in group),
        pages=[pg.alert_id for pg in fired],
        culprit=next((pg.culprit for pg in fired if pg.culprit), None),
    )
