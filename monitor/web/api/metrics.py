"""``/metrics``: herowatch's own health and per-run derived gauges, for Prometheus and Grafana.

A registry of its own (never the process-global one) with one collector that reads the engine's
state and the database at scrape time, so every scrape is current and nothing is double counted.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import datetime

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from monitor import __version__
from monitor.delivery.plan import DropReason
from monitor.runs.goodput import LOST
from monitor.storage import views
from monitor.web.context import STALE_POLLS, ApiContext
from monitor.web.gates import CredentialsFirst, require_read
from monitor.web.snapshot import SnapshotStore

log = logging.getLogger(__name__)
router = APIRouter(route_class=CredentialsFirst)

RUN = ["run", "watch"]
PER_RUN = {
    "step": ("herowatch_run_step", "Latest step of the run"),
    "steps_per_second": (
        "herowatch_run_steps_per_second",
        "Step rate over the last 64 steps (0 while stopped)",
    ),
    "eta_seconds": ("herowatch_run_eta_seconds", "Seconds to the target step at the current rate"),
    "loss": ("herowatch_run_loss", "Latest train/loss"),
    "tokens_per_second": ("herowatch_run_tokens_per_second", "Latest tokens per second"),
    "mfu": ("herowatch_run_mfu_percent", "Latest model FLOPs utilisation, percent"),
    "restarts": ("herowatch_run_restarts", "Restarts (step rewinds) seen"),
}


class HerowatchCollector(Collector):
    def __init__(self, ctx: ApiContext, snapshots: SnapshotStore) -> None:
        self.ctx = ctx
        self.snapshots = snapshots  # the runs' health as the API serves it (monitor.web.snapshot)

    def describe(self) -> list[Metric]:
        return []  # collected at scrape time only

    def collect(self) -> Iterator[Metric]:
        info = GaugeMetricFamily("herowatch_build_info", "herowatch's version", labels=["version"])
        info.add_metric([__version__], 1.0)
        yield info
        yield from self._own()
        yield from self._runs()

    def _own(self) -> Iterator[Metric]:
        ctx, engine = self.ctx, self.ctx.engine
        now = ctx.now()
        last = GaugeMetricFamily(
            "herowatch_source_last_success_timestamp_seconds",
            "Time of the last successful poll per source (herowatch's clock)",
            labels=["source"],
        )
        up = GaugeMetricFamily(
            "herowatch_source_up",
            f"1 when the source's last poll succeeded within {STALE_POLLS} poll intervals",
            labels=["source"],
        )
        for kind, interval in sorted(ctx.source_intervals().items()):
            t = engine.source_polls.last_ok(kind)
            if t is not None:
                last.add_metric([kind], t)
            fresh = (
                t is not None and now - t <= STALE_POLLS * interval and not engine.source_polls.error(kind)
            )
            up.add_metric([kind], 1.0 if fresh else 0.0)
        yield last
        yield up
        cycles = CounterMetricFamily(
            "herowatch_poll_cycles",
            "Poll cycles run by the scheduler, by watch and outcome",
            labels=["watch", "outcome"],
        )
        for (watch, outcome), n in sorted(ctx.polls.counts().items()):
            cycles.add_metric([watch, outcome], float(n))
        yield cycles
        delay = HistogramMetricFamily(
            "herowatch_poll_delay_seconds",
            "Wall seconds from a poll cycle's scheduled start to its end (on time: a few seconds)",
            labels=["watch"],
        )
        for watch, (buckets, total) in sorted(ctx.polls.delays().items()):
            delay.add_metric([watch], buckets, total)
        yield delay
        errors = CounterMetricFamily(
            "herowatch_source_errors", "Polls that came back with an error from the source", labels=["source"]
        )
        counted = ctx.polls.source_errors()
        for kind in sorted(set(ctx.source_intervals()) | set(counted)):
            errors.add_metric([kind], float(counted.get(kind, 0)))
        yield errors
        yield from self._throttled()
        yield from self._gc()
        yield from self._silences()
        yield from self._delivery(now)

    def _throttled(self) -> Iterator[Metric]:
        deferred = GaugeMetricFamily(
            "herowatch_source_runs_deferred",
            "Runs whose new steps the source's request quota put off to a later poll, at the last poll "
            "(W&B reads priority-tagged runs first; 0: every run that moved was read)",
            labels=["watch", "source"],
        )
        waiting = GaugeMetricFamily(
            "herowatch_source_read_wait_seconds",
            "At the watch's last poll, the longest a put-off run had waited since its history was last read",
            labels=["watch", "source"],
        )
        engine = self.ctx.engine  # None when no poller runs in this process (an API-only replica)
        for watch, kind, throttle in engine.source_polls.throttled() if engine else ():
            deferred.add_metric([watch, kind], float(throttle.deferred if throttle else 0))
            waiting.add_metric([watch, kind], throttle.waiting if throttle else 0.0)
        yield deferred
        yield waiting

    def _silences(self) -> Iterator[Metric]:
        kept = GaugeMetricFamily(
            "herowatch_silences_compiled", "Silences in force whose compiled matchers are kept in memory"
        )
        kept.add_metric([], float(len(self.ctx.silences)))
        yield kept
        made = CounterMetricFamily(
            "herowatch_silence_compilations",
            "Silences whose matchers were compiled: once each while in force (more is churn)",
        )
        made.add_metric([], float(self.ctx.silences.compiled))
        yield made

    def _gc(self) -> Iterator[Metric]:
        policy = self.ctx.gc_policy
        if policy is None:
            return
        pauses = CounterMetricFamily(
            "herowatch_gc_pause_seconds",
            "Seconds the garbage collector stopped the process, by generation (2: full collections)",
            labels=["generation"],
        )
        runs = CounterMetricFamily(
            "herowatch_gc_collections", "Garbage collections, by generation", labels=["generation"]
        )
        for gen in range(3):
            pauses.add_metric([str(gen)], policy.seconds[gen])
            runs.add_metric([str(gen)], float(policy.pauses[gen]))
        yield pauses
        yield runs

    def _delivery(self, now: float) -> Iterator[Metric]:
        ctx = self.ctx
        latency = HistogramMetricFamily(
            "herowatch_notification_send_duration_seconds",
            "Seconds one attempt to send a notification took, by receiver, its kind and the outcome",
            labels=["receiver", "kind", "outcome"],
        )
        stats = ctx.send_latency
        for (receiver, kind, outcome), h in sorted((stats.snapshot() if stats else {}).items()):
            latency.add_metric([receiver, kind, outcome], h.cumulative(), h.total)
        yield latency
        if ctx.outbox is None:
            return
        backlog = GaugeMetricFamily("herowatch_outbox_backlog", "Notifications waiting to be delivered")
        age = GaugeMetricFamily(
            "herowatch_outbox_oldest_age_seconds",
            "Age of the oldest notification waiting to be delivered (0: none waits)",
        )
        failed = GaugeMetricFamily(
            "herowatch_outbox_failed_notifications", "Notifications given up on after their last retry"
        )
        try:
            backlog.add_metric([], float(ctx.outbox.backlog()))
            oldest = ctx.outbox.oldest_waiting()
            age.add_metric([], max(0.0, now - oldest) if oldest is not None else 0.0)
            failed.add_metric([], float(ctx.outbox.failed()))
        except Exception:
            log.exception("metrics: outbox unreadable")
            return
        dropped = CounterMetricFamily(
            "herowatch_notifications_dropped",
            "Messages that had nothing to tell when they came due, by why (since this process started)",
            labels=["reason"],
        )
        for why in DropReason:
            dropped.add_metric([why.value], float(ctx.outbox.dropped[why]))
        yield from (backlog, age, failed, dropped)

    def _runs(self) -> Iterator[Metric]:
        err = GaugeMetricFamily(
            "herowatch_metrics_read_error", "1 when the database could not be read for this scrape"
        )
        try:
            with self.ctx.sessions() as s:
                runs = self.snapshots.get(self.ctx).runs
                by_rule = views.alert_counts(s, by="rule")
            err.add_metric([], 0.0)
        except Exception:
            log.exception("metrics: runs unreadable")
            err.add_metric([], 1.0)
            yield err
            return
        yield err
        active = GaugeMetricFamily(
            "herowatch_alerts",
            "Pending and firing alerts by rule and severity",
            labels=["rule", "severity", "state"],
        )
        for rule, state, severity, n in sorted(by_rule):
            active.add_metric([rule, severity, state], float(n))
        yield active
        families = {k: GaugeMetricFamily(name, doc, labels=RUN) for k, (name, doc) in PER_RUN.items()}
        goodput = GaugeMetricFamily(
            "herowatch_run_goodput_ratio",
            "Productive share of the wall time herowatch could see (ETTR)",
            labels=RUN,
        )
        lost = GaugeMetricFamily(
            "herowatch_run_lost_seconds",
            "Wall time not productive, by where it went (source_blind: herowatch could not see)",
            labels=[*RUN, "kind"],
        )
        alerts = GaugeMetricFamily(
            "herowatch_run_alerts",
            "Pending and firing alerts by severity",
            labels=[*RUN, "state", "severity"],
        )
        health = GaugeMetricFamily(
            "herowatch_run_health", "1 for the run's current health", labels=[*RUN, "health"]
        )
        seen = GaugeMetricFamily(
            "herowatch_run_last_seen_timestamp_seconds", "Newest sample of the run", labels=RUN
        )
        for r in runs:
            labels = [r.id, r.watch]
            for key, fam in families.items():
                v = getattr(r, key)
                if v is not None:
                    fam.add_metric(labels, float(v))
            if r.goodput is not None:
                if r.goodput.ratio is not None:
                    goodput.add_metric(labels, r.goodput.ratio)
                for kind in LOST:
                    lost.add_metric([*labels, kind], float(r.goodput.lost_seconds.get(kind, 0.0)))
            for state, counts in (("firing", r.active_alerts), ("pending", r.pending_alerts)):
                for sev in ("critical", "warning", "info"):
                    alerts.add_metric([*labels, state, sev], float(counts.get(sev, 0)))
            health.add_metric([*labels, r.health], 1.0)
            if r.last_seen_at:
                seen.add_metric(
                    labels, datetime.fromisoformat(r.last_seen_at.replace("Z", "+00:00")).timestamp()
                )
        yield from families.values()
        yield from (goodput, lost, alerts, health, seen)


def make_registry(ctx: ApiContext, snapshots: SnapshotStore) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(HerowatchCollector(ctx, snapshots))
    return registry


@router.get(
    "/metrics",
    tags=["health"],
    summary="Prometheus metrics: herowatch's own health and per-run gauges",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE_LATEST: {}}, "description": "Prometheus text format"}},
    dependencies=[Depends(require_read)],
)
def metrics(request: Request) -> Response:
    return Response(generate_latest(request.app.state.registry), media_type=CONTENT_TYPE_LATEST)
