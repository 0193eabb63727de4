"""The period's pages (detect, acknowledge, resolve, what each cost), its goodput incidents (the three
costliest first), recurring causes with their pattern, and alert quality per rule."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Mapping

from sqlalchemy.orm import Session

from alerts.model import Severity
from monitor.reports.model import Incident, Page, Period, Recurring, RuleQuality
from monitor.stacks.culprit import Culprit
from monitor.storage import goodput_repo
from monitor.storage.models import Alert, GoodputEvent

H = 3600.0
NOISE = 600.0  # a page resolved this soon after it fired without an ack was likely noise
LOOKBACK = 86400.0  # a symptom up to a day before its page (a hang found late)
SAVE_SLACK = 60.0  # seconds: a symptom this close to a checkpoint save counts as during it
RECURRING = 3  # pages of one rule on one run before they are a recurring cause
INCIDENT_KINDS = ("stall", "restart", "down", "startup")


def incidents(s: Session, run_ids: list[str], p: Period) -> list[GoodputEvent]:
    return goodput_repo.events(s, run_ids, p.start - LOOKBACK, p.end, INCIDENT_KINDS)


def lost_in(start: float, end: float, lost: float, p: Period) -> float:
    """The seconds of an incident's loss that fall inside ``p``, laid out as the goodput ledger lays
    them (``monitor.runs.goodput_ledger``): from the incident's start on (a stall from the last step),
    and what exceeds its length (work redone after a rewind) at its end. So an incident across the
    period's boundary counts in each period only its part there, as the goodput buckets do."""
    spread = max(0.0, min(lost, end - start))
    inside = max(0.0, min(start + spread, p.end) - max(start, p.start))
    if p.start <= end < p.end:
        inside += lost - spread
    return inside


def whole_hours(lost: float, inside: float) -> float | None:
    """An incident's whole loss in hours when only part of it fell inside the period, else None."""
    return lost / H if lost - inside >= 1 else None


def _overlapping(events: list[GoodputEvent], run: str, a: float, b: float) -> list[GoodputEvent]:
    return [e for e in events if e.run_id == run and e.start <= b and e.end >= a]


def pages(
    alerts: list[Alert],
    events: list[GoodputEvent],
    p: Period,
    gpus: Mapping[str, int],
    marked: frozenset[int] = frozenset(),
) -> list[Page]:
    """The period's pages; ``marked``: the ids of alerts people marked as noise."""
    by_run: dict[str, list[GoodputEvent]] = defaultdict(list)
    for e in events:
        by_run[e.run_id].append(e)
    out = []
    for a in alerts:
        if a.severity == Severity.INFO:
            continue  # info alerts notify nobody: not pages
        fired = float(a.fired_at or a.active_at)
        # The symptom: the start of a goodput incident under way when the rule began to hold (the
        # last step before a hang, the moment a job went down), else the onset of the evidence the
        # rule reported (the first sample at which its condition held), else when it first held.
        first = a.onset_at if a.onset_at is not None and a.onset_at <= fired else a.active_at
        near = [
            e
            for e in by_run[a.run_id]
            if e.start <= fired and e.end >= first - 1 and e.start >= fired - LOOKBACK
        ]
        symptom = min([first, *(e.start for e in near)])
        until = a.resolved_at if a.resolved_at is not None else p.end
        cost = sum(e.seconds_lost for e in _overlapping(by_run[a.run_id], a.run_id, symptom, until))
        n = gpus.get(a.run_id)
        quick = a.resolved_at is not None and a.acked_at is None and a.resolved_at - fired <= NOISE
        out.append(
            Page(
                alert_id=a.id,
                run=a.run_id,
                rule=a.rule,
                severity=a.severity,
                symptom_at=symptom,
                fired_at=fired,
                detect_seconds=fired - symptom,
                acked_at=a.acked_at,
                acked_by=a.acked_by,
                ack_seconds=(a.acked_at - fired) if a.acked_at is not None else None,
                resolved_at=a.resolved_at,
                resolve_seconds=(a.resolved_at - symptom) if a.resolved_at is not None else None,
                badput_hours=cost / H,
                badput_gpu_hours=cost / H * n if n else None,
                noise=quick or a.id in marked,
                marked_noise=a.id in marked,
                culprit=Culprit.from_dict(a.culprit).text() if a.culprit else None,
            )
        )
    return out


def incident_list(
    events: list[GoodputEvent],
    ongoing: list[Incident],
    page_list: list[Page],
    p: Period,
    gpus: Mapping[str, int],
) -> list[Incident]:
    out = list(ongoing)
    for e in events:
        inside = lost_in(e.start, e.end, e.seconds_lost, p)
        if e.end <= p.start or (e.start < p.start and inside < 1):
            continue  # over before the period, or all it lost was lost before it
        n = gpus.get(e.run_id)
        paged = [
            pg
            for pg in page_list
            if pg.run == e.run_id and pg.fired_at <= e.end + NOISE and (pg.resolved_at or p.end) >= e.start
        ]
        rules = sorted({pg.rule for pg in paged})
        out.append(
            Incident(
                run=e.run_id,
                kind=e.kind,
                start=e.start,
                end=e.end,
                step=e.step,
                steps_redone=e.steps_redone,
                lost_hours=inside / H,
                lost_gpu_hours=inside / H * n if n else None,
                whole_lost_hours=whole_hours(e.seconds_lost, inside),
                rules=rules,
                culprit=next(
                    (pg.culprit for pg in sorted(paged, key=lambda x: x.fired_at) if pg.culprit), None
                ),
            )
        )
    return sorted(out, key=lambda i: i.start)


def costliest(items: list[Incident], k: int = 3) -> list[Incident]:
    return sorted(items, key=lambda i: (-(i.lost_gpu_hours or 0.0), -i.lost_hours, i.start))[:k]


def _save_steps(pauses: list[GoodputEvent]) -> tuple[int, int] | None:
    """(every N steps, at residue r): the run's checkpoint cadence learned from its pauses, when most
    consecutive pauses are the same number of steps apart."""
    steps = sorted({e.step for e in pauses if e.step is not None})
    diffs = Counter(b - a for a, b in zip(steps, steps[1:], strict=False) if b > a)
    if not diffs:
        return None
    every, n = diffs.most_common(1)[0]
    if n < 2 or n < 0.6 * sum(diffs.values()):
        return None
    return every, Counter(x % every for x in steps).most_common(1)[0][0]


def _during_save(
    pg: Page, events: list[GoodputEvent], pauses: list[GoodputEvent], cadence: tuple[int, int] | None
) -> bool:
    if any(e.start - SAVE_SLACK <= pg.symptom_at <= e.end + SAVE_SLACK for e in pauses):
        return True
    if cadence is None:
        return False
    every, residue = cadence
    for e in events:
        if e.run_id == pg.run and abs(e.start - pg.symptom_at) < 1 and e.before_step is not None:
            return e.before_step % every == residue
    return False


def recurring(s: Session, page_list: list[Page], events: list[GoodputEvent], p: Period) -> list[Recurring]:
    groups: dict[tuple[str, str], list[Page]] = defaultdict(list)
    for pg in page_list:
        groups[(pg.run, pg.rule)].append(pg)
    out = []
    for (run, rule), items in sorted(groups.items()):
        if len(items) < RECURRING:
            continue
        times = sorted(pg.symptom_at for pg in items)
        gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
        every = statistics.median(gaps) if gaps else None
        pauses = goodput_repo.events(s, [run], p.start - LOOKBACK, p.end, ("pause",))
        cadence = _save_steps(pauses)
        saves = sum(_during_save(pg, events, pauses, cadence) for pg in items)
        text = f"{rule}: {len(items)} times"
        if every is not None:
            text += f", every ~{_about(every)}"
        if saves == len(items):
            text += ", each during a checkpoint save"
        elif saves * 2 >= len(items):
            text += f", {saves} of them during a checkpoint save"
        if all(pg.noise for pg in items):
            text += ", each likely noise (gone within 10 min without an ack, or marked as noise)"
        out.append(
            Recurring(
                rule=rule, run=run, count=len(items), every_seconds=every, during_saves=saves, summary=text
            )
        )
    return sorted(out, key=lambda r: -r.count)


def _about(seconds: float) -> str:
    """A rounded interval: ``~3 h``, ``~40 min``, ``~2 d``."""
    if seconds >= 2 * 86400:
        return f"{seconds / 86400:.0f} d"
    if seconds >= 2 * H:
        return f"{seconds / H:.0f} h"
    if seconds >= H:
        return f"{seconds / H:.1f} h"
    return f"{max(1, round(seconds / 60))} min"


def quality(page_list: list[Page]) -> list[RuleQuality]:
    by_rule: dict[str, list[Page]] = defaultdict(list)
    for pg in page_list:
        by_rule[pg.rule].append(pg)
    out = []
    for rule, items in by_rule.items():
        acked = sum(pg.acked_at is not None for pg in items)
        noise = sum(pg.noise for pg in items)
        out.append(
            RuleQuality(
                rule=rule,
                pages=len(items),
                acked=acked,
                acked_share=acked / len(items),
                noise=noise,
                noise_share=noise / len(items),
                median_detect_seconds=statistics.median(pg.detect_seconds for pg in items),
            )
        )
    return sorted(out, key=lambda q: (-q.pages, q.rule))
