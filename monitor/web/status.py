"""From stored rows to what on-call reads: each run's health and what is wrong in words, alerts with
their silenced and acknowledged status, goodput. Shared by the JSON API and the dashboard."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from alerts.clock import isoformat
from alerts.model import AlertState, Severity
from alerts.silences import SilenceSpec, silenced_by
from monitor import run_ids
from monitor.durations import format_duration
from monitor.engine.coverage_stored import expand
from monitor.rules.panels import OTHER, Layouts
from monitor.runs.goodput_report import attach_alerts
from monitor.runs.run_stats import stale_ages
from monitor.samples import DOWN_STATES, ENDED_STATES, TERMINAL_STATES
from monitor.storage import views
from monitor.storage.models import Alert, Run
from monitor.web.context import STALE_POLLS, ApiContext
from monitor.web.schemas import AlertOut, Goodput, GoodputSummary, HintOut, HintsOut, Incident, RunOut
from monitor.web.stats_cache import Derived

HEALTH_RANK = {"critical": 0, "warning": 1, "unknown": 2, "ok": 3, "ended": 4}
INCIDENT_WORDS = {"stall": "No new step", "restart": "Restarting", "down": "Down", "startup": "Starting"}


def num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and math.isfinite(v) else None


def epoch_of(iso: str | None) -> float | None:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() if iso else None


def ago(seconds: float | None) -> str:
    return "" if seconds is None else format_duration(max(0.0, round(seconds)))


# ---- alerts -------------------------------------------------------------------------------------
def silence_of(a: Alert, silences: Sequence[SilenceSpec], now: float) -> int | None:
    """The id of the active silence muting a pending or firing alert, else None."""
    if a.state not in views.ACTIVE_STATES:
        return None
    spec = silenced_by({k: str(v) for k, v in (a.labels or {}).items()}, silences, now)
    if spec is not None:
        return spec.id
    if a.silenced_by is not None and any(s.id == a.silenced_by for s in silences):
        return a.silenced_by
    return None


def alert_out(
    a: Alert, silences: Sequence[SilenceSpec], now: float, titles: Mapping[str, str] | None = None
) -> AlertOut:
    """``titles``: run id -> what people call the run (runs_repo.titles)."""
    ann = a.annotations or {}
    sid = silence_of(a, silences, now)
    return AlertOut(
        id=a.id,
        fingerprint=a.fingerprint,
        rule=a.rule,
        kind=a.kind,
        run=a.run_id,
        run_title=(titles or {}).get(a.run_id),
        metric=a.metric,
        severity=a.severity,
        state=a.state,
        labels={k: str(v) for k, v in (a.labels or {}).items()},
        summary=ann.get("summary") or a.rule,
        resolved_reason=(ann.get("resolved_reason") or None) if a.state == AlertState.RESOLVED else None,
        description=ann.get("description"),
        runbook_url=(ann.get("runbook_url") or "").replace("{runbooks}", "/runbooks") or None,
        value=num(a.value),
        threshold=num(a.threshold),
        step=a.step,
        active_at=isoformat(a.active_at) or "",
        fired_at=isoformat(a.fired_at),
        resolved_at=isoformat(a.resolved_at),
        silenced=sid is not None,
        silenced_by=sid,
        acknowledged=a.acked_at is not None,
        acked_by=a.acked_by,
        acked_at=isoformat(a.acked_at),
        hints=hints_out(a.hints),
    )


def hints_out(stored: dict[str, Any] | None) -> HintsOut | None:
    if not stored or not stored.get("items") or len(stored.get("window") or ()) != 2:
        return None
    t0, t1 = (float(t) for t in stored["window"])
    fields = HintOut.model_fields
    items = [HintOut(**{k: h.get(k) for k in fields}) for h in stored["items"] if isinstance(h, dict)]
    return HintsOut(
        window_start=isoformat(t0) or "", window_end=isoformat(t1) or "", window_seconds=t1 - t0, items=items
    )


def alert_order(a: AlertOut) -> tuple:
    """Firing before pending, critical first, then the longest-standing."""
    return (a.state != AlertState.FIRING, Severity.rank_of(a.severity), a.fired_at or a.active_at, a.id)


# ---- goodput ------------------------------------------------------------------------------------
def incident_out(i: dict[str, Any]) -> Incident:
    return Incident(
        kind=i["kind"],
        start=isoformat(i["start"]) or "",
        end=isoformat(i["end"]),
        ongoing=bool(i.get("ongoing")),
        seconds_lost=float(i["seconds_lost"]),
        step=i.get("step"),
        steps_redone=int(i.get("steps_redone") or 0),
        alerts=list(i.get("alerts") or ()),
    )


def goodput_fields(report: dict[str, Any]) -> dict[str, Any]:
    return {
        "ratio": report["ratio"],
        "wall_seconds": report["wall_seconds"],
        "productive_seconds": report["productive_seconds"],
        "lost_seconds": report["lost_seconds"],
        "steps_redone": report["steps_redone"],
        "median_step_seconds": report["median_step_seconds"],
        "incident_counts": report["incident_counts"],
        "since": isoformat(report["since"]),
    }


def goodput_detail(
    report: dict[str, Any] | None, spans: list[tuple[str, float, float | None]]
) -> Goodput | None:
    if report is None:
        return None
    incidents = report["incidents"]
    attach_alerts(incidents, spans)
    return Goodput(**goodput_fields(report), incidents=[incident_out(i) for i in incidents])


# ---- runs ---------------------------------------------------------------------------------------
@dataclass
class Verdict:
    health: str
    problem: str


def blind_rules(stats: dict[str, Any]) -> list[str]:
    """The rules the run's last poll found blind (``engine.coverage``, stored with the stats)."""
    cov = expand(stats.get("coverage")) if isinstance(stats, dict) else None
    if cov is None:
        return []
    return [
        str(r.get("rule"))
        for r in cov.get("rules") or ()
        if isinstance(r, dict) and r.get("state") == "blind"
    ]


def unlogged_inputs(stats: dict[str, Any]) -> list[str]:
    """The optional inputs the run has never logged (``unused`` in its stored coverage): shown, not paged."""
    cov = expand(stats.get("coverage")) if isinstance(stats, dict) else None
    if cov is None:
        return []
    names = {
        str(i.get("name"))
        for r in cov.get("rules") or ()
        if isinstance(r, dict)
        for i in r.get("inputs") or ()
        if isinstance(i, dict) and i.get("state") == "unused" and not str(i.get("name")).startswith("@")
    }
    return sorted(names)


def assess(
    run: Run,
    alerts: Sequence[AlertOut],
    report: dict[str, Any] | None,
    now: float,
    interval: float,
    stats: dict[str, Any] | None = None,
) -> Verdict:
    """The run's health colour and what is wrong, in words, most urgent first. A run whose rules
    cannot see is never Healthy: nothing would page if it were not."""
    firing = sorted((a for a in alerts if a.state == AlertState.FIRING), key=alert_order)
    loud = [a for a in firing if a.severity in ("critical", "warning")]
    if loud:
        # the headline is the worst alert nobody has yet: an acknowledged warning never hides a critical
        loud.sort(key=lambda a: (a.acknowledged or a.silenced, alert_order(a)))
        worst = loud[0]
        handled = sum(1 for a in loud[1:] if a.acknowledged or a.silenced)
        more = (
            f" (+{len(loud) - 1} more" + (f", {handled} handled" if handled else "") + ")"
            if len(loud) > 1
            else ""
        )
        muted = " — silenced" if all(a.silenced for a in loud) else ""
        if worst.acknowledged and not worst.silenced:
            muted += f" — acknowledged by {worst.acked_by}"
        since = epoch_of(worst.fired_at)
        age = f" (firing {ago(now - since)})" if since is not None else ""
        return Verdict(worst.severity, f"{worst.summary}{age}{more}{muted}")
    ongoing = next((i for i in (report or {}).get("incidents", ()) if i.get("ongoing")), None)
    if run.state in DOWN_STATES:
        down_for = f", down {ago(ongoing['seconds_lost'])}" if ongoing and ongoing["kind"] == "down" else ""
        return Verdict("critical", f"Run {run.state} at step {run.last_step}{down_for}")
    if run.source_error:
        return Verdict("warning", f"Source unreadable: {run.source_error}")
    ended = run.state in ENDED_STATES  # over: whether it is still polled no longer matters
    if not ended and run.last_polled_at is not None and now - run.last_polled_at > STALE_POLLS * interval:
        return Verdict("warning", f"Not polled for {ago(now - run.last_polled_at)} (every {ago(interval)})")
    pending = sorted((a for a in alerts if a.state == AlertState.PENDING), key=alert_order)
    if pending:
        return Verdict("warning", f"Pending: {pending[0].summary}")
    if ongoing is not None and ongoing["kind"] in INCIDENT_WORDS:
        words = INCIDENT_WORDS[ongoing["kind"]]
        return Verdict("warning", f"{words} for {ago(ongoing['seconds_lost'])} at step {run.last_step}")
    if run.state in ENDED_STATES:
        return Verdict("ended", f"Run {run.state} at step {run.last_step}")
    if run.last_seen_at is None:
        return Verdict("unknown", "No data yet")
    blind = blind_rules(stats or {}) if run.state not in ENDED_STATES else []
    if blind:
        said = ((stats or {}).get("coverage") or {}).get("summary") or ", ".join(blind)
        return Verdict("warning", f"Watching blind: {said}")
    if firing:
        return Verdict("ok", f"Info: {firing[0].summary}")
    return Verdict("ok", "Healthy")


def kind_fields(run: Run, stats: dict[str, Any], layouts: Layouts, shared: bool) -> dict[str, Any]:
    """What the run is and what people call it: its kind (and how that is known), its headline figure
    (the metric its kind puts first), its title (the project beside a display name another run has)."""
    kind = run.kind or OTHER
    metric, label = layouts.headline(kind)
    value = num((stats.get("latest") or {}).get(metric))
    return {
        "name": run.name,
        "project": run.project,
        "title": run_ids.title(run.display_name, run.name or run.id, run.project, shared),
        "kind": kind,
        "run_kind": stats.get("run_kind"),
        "headline": {"metric": metric, "label": label, "value": value},
    }


def run_fields(
    run: Run,
    stats: dict[str, Any],
    alerts: Sequence[AlertOut],
    report: dict[str, Any] | None,
    now: float,
    interval: float,
) -> dict[str, Any]:
    latest = stats.get("latest") or {}
    verdict = assess(run, alerts, report, now, interval, stats)
    stopped = run.state in TERMINAL_STATES or (  # over, or not moving now: no rate, no ETA
        report is not None
        and any(i.get("ongoing") and i["kind"] in ("stall", "down", "restart") for i in report["incidents"])
    )
    rate = 0.0 if stopped else num(stats.get("steps_per_second"))
    eta = None if stopped else num(stats.get("eta_seconds"))
    firing = Counter(a.severity for a in alerts if a.state == AlertState.FIRING)
    pending = Counter(a.severity for a in alerts if a.state == AlertState.PENDING)
    return {
        "id": run.id,
        "watch": run.watch,
        "source": run.source,
        "display_name": run.display_name,
        "url": run.url,
        "labels": {k: str(v) for k, v in (run.labels or {}).items()},
        "state": run.state,
        "health": verdict.health,
        "problem": verdict.problem,
        "step": run.last_step,
        "target_step": stats.get("target_step"),
        "steps_per_second": rate,
        "eta_seconds": eta,
        "eta_at": isoformat(run.last_polled_at + eta) if eta is not None and run.last_polled_at else None,
        "loss": num(latest.get("train/loss")),
        "tokens_per_second": num(latest.get("throughput/tokens_per_second")),
        "mfu": num(latest.get("throughput/mfu")),
        "last_step_at": isoformat(run.last_step_at),
        "last_seen_at": isoformat(run.last_seen_at),
        "last_polled_at": isoformat(run.last_polled_at),
        "source_error": run.source_error,
        "restarts": run.restarts or 0,
        "active_alerts": dict(firing),
        "pending_alerts": dict(pending),
        "silenced_alerts": sum(1 for a in alerts if a.silenced),
        "metrics_profile": stats.get("metrics_profile"),
        "blind_rules": blind_rules(stats),
        "unlogged_inputs": unlogged_inputs(stats),
        "stale": stale_ages(stats, now, 2 * interval),
    }


def run_out(
    ctx: ApiContext, run: Run, derived: Derived, alerts: Sequence[AlertOut], now: float, shared: bool
) -> RunOut:
    report = derived.report
    fields = run_fields(run, derived.stats, alerts, report, now, ctx.poll_interval(run.watch))
    summary = GoodputSummary(**goodput_fields(report)) if report else None
    return RunOut(**fields, **kind_fields(run, derived.stats, ctx.layouts, shared), goodput=summary)


def urgency(r: RunOut) -> tuple:
    """Overview order: what needs on-call first (unsilenced firing alerts, then the rest)."""
    muted = r.silenced_alerts > 0 and r.silenced_alerts >= sum(r.active_alerts.values())
    return (HEALTH_RANK.get(r.health, 9), muted, r.title, r.id)


FINISHED_AFTER = 24 * 3600.0  # over for this long, nothing open: the overview's "Finished" section


def finished(r: RunOut, now: float) -> bool:
    """A run that is over and done with: in a terminal state (finished, crashed, killed, failed, deleted),
    nothing firing or pending (an open incident stays among the live runs, silenced or not), and its
    last step (its last sample, if it never stepped) more than ``FINISHED_AFTER`` ago: a source keeps
    saying "finished" long after the end. The overview shows these apart from the live runs."""
    if r.state not in TERMINAL_STATES | ENDED_STATES or any(r.active_alerts.values()):
        return False
    if any(r.pending_alerts.values()):
        return False
    over = epoch_of(r.last_step_at or r.last_seen_at)
    return over is not None and now - over > FINISHED_AFTER


def counts_by(alerts: Iterable[AlertOut], key: str) -> dict[str, int]:
    return dict(Counter(getattr(a, key) for a in alerts))


def one_run(s: Session, run_id: str) -> Run:
    """The run an API path names: its id, or a display name or source id only one run has.
    404 when none, 409 (with the ids to choose from) when several."""
    from fastapi import HTTPException

    found = views.lookup_runs(s, run_id)
    if not found:
        raise HTTPException(404, f"no run with id {run_id!r}")
    if len(found) > 1:
        ids = ", ".join(r.id for r in found)
        raise HTTPException(409, f"{len(found)} runs are called {run_id!r}: {ids}; ask for one by its id")
    return found[0]
