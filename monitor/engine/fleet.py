"""The fleet in the engine cycle, in the cycle's transaction:

- ``ingest``: a poll's fleet frames into the run's raster (``storage.raster``), and for every
  ``straggler`` rule of the run its fleet metric's drift at each new timestamp, as samples for the
  evaluator (``fleet/<rule name>``, the member named in the labels). A straggler track is rebuilt from
  the stored raster when the run is first polled after a (re)start;
- ``hints``: when a stall, telemetry-gone, drop or straggler alert fires, every fleet metric of the
  run over the alert's window, compared member by member with the fleet (``fleet.hints``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from sqlalchemy.orm import Session

from monitor.config.schema import Watch
from monitor.engine.evaluator import AlertEvent
from monitor.fleet.frame import FleetFrame
from monitor.fleet.hints import HINTED_KINDS, MetricWindow, fleet_hints, window_for
from monitor.fleet.straggler import StragglerTrack
from monitor.fleet.units import fmt, resolution
from monitor.rules.spec import RuleSpec
from monitor.rules.straggler import StragglerSpec, derived_metric
from monitor.samples import Sample
from monitor.storage import raster, raster_read

log = logging.getLogger(__name__)


def limits_of(watch: Watch | None) -> raster.RasterLimits:
    fleet = getattr(getattr(watch, "prometheus", None), "fleet", None)
    if fleet is None:
        return raster.RasterLimits()
    return raster.RasterLimits(fleet.recent, fleet.columns, fleet.max_members)


class FleetStep:
    def __init__(
        self, rules_for_run: Callable[[str], Iterable[RuleSpec]], source: str = "prometheus"
    ) -> None:
        self._rules_for_run = rules_for_run
        self._source = source
        self._tracks: dict[tuple[str, str], tuple[StragglerSpec, StragglerTrack]] = {}
        self._limits: dict[str, raster.RasterLimits] = {}  # run -> its watch's raster bounds

    def forget(self, run: str) -> None:
        for key in [k for k in self._tracks if k[0] == run]:
            del self._tracks[key]
        self._limits.pop(run, None)

    def _stragglers(self, run: str) -> list[StragglerSpec]:
        return [r for r in self._rules_for_run(run) if isinstance(r, StragglerSpec)]

    def ingest(self, s: Session, watch: Watch, run: str, frames: Sequence[FleetFrame]) -> list[Sample]:
        """Store the frames; return the straggler rules' drift samples."""
        if not frames:
            return []
        limits = self._limits[run] = limits_of(watch)
        by_metric = {f.metric: f for f in frames}
        tracks = []
        for rule in self._stragglers(run):
            f = by_metric.get(rule.metric)
            if f is None:
                continue
            key = (run, rule.name)
            if key not in self._tracks or self._tracks[key][0] != rule:
                self._tracks[key] = (rule, self._seed(s, run, rule, f))
            tracks.append((rule, f, self._tracks[key][1]))
        raster.ingest(s, run, frames, limits)
        out = []
        for rule, f, track in tracks:
            columns = list(zip(*f.values, strict=True))
            for t, values in zip(f.times, columns, strict=True):
                drift = track.add(t, f.members, values)
                if drift is None:
                    continue
                labels = {"label": f.label}
                if drift.member:
                    labels.update(
                        member=drift.member, value=fmt(drift.value, f.unit), median=fmt(drift.median, f.unit)
                    )
                out.append(
                    Sample(
                        t=t,
                        run=run,
                        metrics={derived_metric(rule): drift.score},
                        source=self._source,
                        labels=labels,
                    )
                )
        return out

    def _seed(self, s: Session, run: str, rule: StragglerSpec, f: FleetFrame) -> StragglerTrack:
        """A new track, caught up on the raster's stored columns before this poll's."""
        track = StragglerTrack(
            rule.window,
            rule.baseline,
            f.step,
            rule.direction,
            rule.z,
            rule.most,
            f.device_word,
            resolution(f.unit),
        )
        since = f.times[0] - rule.window - rule.baseline
        members, columns = raster_read.fine_columns(s, run, rule.metric, since)
        for t, values in columns:
            if t < f.times[0]:
                track.add(t, members, values)
        return track

    def hints(self, s: Session, event: AlertEvent, now: float) -> dict[str, Any] | None:
        """The culprit hints of an alert that fires now (None: not a hinted kind, or no fleet data)."""
        rule = event.key.rule
        if rule.kind not in HINTED_KINDS:
            return None
        run = event.key.run
        recent = self._limits.get(run, raster.RasterLimits()).recent
        t0, t1 = window_for(rule.kind, event.finding.value, rule, now, recent)
        try:
            views = raster_read.window(s, run, t0, t1 + 1e-6)
        except Exception:  # a hint is a courtesy: never let it stop an alert from being recorded
            log.exception("fleet hints for %s on run %s", rule.name, run)
            return None
        windows = [
            MetricWindow(
                v.metric,
                v.label,
                v.unit,
                v.device_word,
                v.members,
                v.columns[0].means(len(v.members)),
                v.level,
            )
            for v in views
            if v.columns
        ]
        return fleet_hints(windows, t0, t1)
