"""Source kind ``mlflow``: runs of an MLflow experiment, read incrementally per metric key.

One poll costs one ``runs/search`` request per 1000 runs: it answers every run's status and, per
metric key, the latest value with its step and time. Only the keys whose latest (step, time) moved past
the run's cursor are read, from the cursor's step on (``MlflowApi.history``), so a poll of 200 runs of
which 10 advanced costs 1 + (the keys that moved) requests when the runs log in step with each other
(monitor.sources.mlflow_history groups them).

States map as MLflow names them (RUNNING, SCHEDULED, FINISHED, FAILED, KILLED). Runs already followed
that no longer match the filter (it selected ``attributes.status = 'RUNNING'`` and the run failed) are
looked up by id; a followed run that is not found any more was deleted, and says so once.

MLflow's system metrics (``system/gpu_0_utilization_percentage``, ...) are sampled on their own step
counter, not the training step: they enter as step-less samples at their own times, as a Prometheus
series would. A run resumed from a checkpoint that logs steps below its highest step again does not
move MLflow's latest value: its steps show again once they pass the old highest step.

Anything unreadable makes the whole poll an error: the engine sees "source unavailable", never
"no new steps".
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, ClassVar

from monitor.run_ids import qualify
from monitor.samples import RunInfo, Sample
from monitor.settings import Settings
from monitor.sources.base import Cursor, PollResult, Target
from monitor.sources.key_patterns import key_filter
from monitor.sources.mlflow_client import MlflowApi, MlflowUnavailable
from monitor.sources.mlflow_config import STATES, MlflowTarget
from monitor.sources.mlflow_history import Read, batches

log = logging.getLogger(__name__)
SOURCE = "mlflow"
SYSTEM = "system/"
_IDS_PER_SEARCH = 100


def _latest(run: Mapping[str, Any]) -> dict[str, tuple[int, int]]:
    """Metric key -> (step, timestamp in ms) of its latest value."""
    out = {}
    for m in (run.get("data") or {}).get("metrics") or []:
        out[str(m["key"])] = (int(m.get("step") or 0), int(m.get("timestamp") or 0))
    return out


def _followed(cursors: Mapping[str, Cursor], experiment: str) -> dict[str, Cursor]:
    """MLflow run id -> its cursor, for the runs of ``experiment`` among ``cursors``. A cursor names its
    run id (older ones only in their key, ``mlflow:<experiment>/<run id>``)."""
    prefix = qualify(SOURCE, experiment, "")
    mine: dict[str, Cursor] = {}
    for key, cursor in cursors.items():
        run_id = cursor.get("run_id") or (key[len(prefix) :] if key.startswith(prefix) else None)
        if isinstance(run_id, str) and run_id and qualify(SOURCE, experiment, run_id) == key:
            mine[run_id] = cursor
    return mine


class MlflowSource:
    kind: ClassVar[str] = "mlflow"

    def __init__(self, settings: Settings | None = None) -> None:
        self._experiments: dict[tuple[str, str], str] = {}

    def poll(self, target: Target, cursors: Mapping[str, Cursor], now: float) -> PollResult:
        cfg: MlflowTarget = target.config
        api = MlflowApi(cfg.tracking_uri, cfg.timeout, cfg.retries)
        try:
            result = self._poll(api, cfg, target, cursors, now)
        except MlflowUnavailable as exc:
            log.warning("watch %s: MLflow at %s unreadable: %s", target.watch, cfg.tracking_uri, exc)
            result = PollResult(error=f"MLflow at {cfg.tracking_uri}: {exc}")
        except (KeyError, TypeError, ValueError) as exc:
            msg = f"unexpected answer from MLflow at {cfg.tracking_uri}: {type(exc).__name__}: {exc}"
            log.warning("watch %s: %s", target.watch, msg)
            result = PollResult(error=msg)
        result.requests = api.requests
        return result

    def _experiment(self, api: MlflowApi, cfg: MlflowTarget) -> str:
        key = (cfg.tracking_uri, cfg.experiment)
        if key not in self._experiments:
            found = api.experiment_id(cfg.experiment)
            if found is None:
                raise MlflowUnavailable(f"no experiment named {cfg.experiment!r}")
            self._experiments[key] = found
        return self._experiments[key]

    def _poll(
        self, api: MlflowApi, cfg: MlflowTarget, target: Target, cursors: Mapping[str, Cursor], now: float
    ) -> PollResult:
        experiment = self._experiment(api, cfg)
        mine = _followed(cursors, cfg.experiment)
        runs = {r["info"]["run_id"]: r for r in api.search(experiment, cfg.filter, cfg.max_runs)}
        followed = [r for r, c in mine.items() if not c.get("deleted") and r not in runs]
        for i in range(0, len(followed), _IDS_PER_SEARCH):
            ids = ", ".join(f"'{r}'" for r in followed[i : i + _IDS_PER_SEARCH])
            for r in api.search(experiment, f"attributes.run_id IN ({ids})", _IDS_PER_SEARCH):
                runs[r["info"]["run_id"]] = r
        wanted = key_filter(cfg.keys)
        latest = {run_id: _latest(run) for run_id, run in runs.items()}
        seen = {run_id: dict((mine.get(run_id) or {}).get("keys") or {}) for run_id in runs}
        reads = []
        for run_id, keys in latest.items():
            for name, (step, ts) in keys.items():
                before = tuple(seen[run_id][name]) if name in seen[run_id] else None
                if not wanted(name) or (before is not None and before >= (step, ts)):
                    continue
                lo = before[0] if before is not None else max(0, step - cfg.warmup_steps + 1)
                reads.append(Read(run_id, name, lo, step, before))
                seen[run_id][name] = [step, ts]
        values = self._read(api, reads, cfg.page_steps)
        out = PollResult()
        for run_id, run in runs.items():
            key = qualify(SOURCE, cfg.experiment, run_id)
            rows: dict[int, dict[str, float]] = {}
            times: dict[int, float] = {}
            for name, m in values.get(run_id, ()):
                t = int(m.get("timestamp") or 0) / 1000
                if name.startswith(SYSTEM):  # their own sampling counter, not the training step
                    out.samples.append(Sample(t=t, run=key, metrics={name: m["value"]}, source=SOURCE))
                    continue
                s = int(m.get("step") or 0)
                rows.setdefault(s, {})[name] = m["value"]
                times[s] = max(times.get(s, 0.0), t)
            for s in sorted(rows):
                out.samples.append(Sample(t=times[s], run=key, step=s, metrics=rows[s], source=SOURCE))
            state = STATES.get(str(run["info"].get("status")), "unknown")
            out.samples.append(Sample(t=now, run=key, state=state, source=SOURCE))
            if latest[run_id]:
                out.logged[key] = sorted(latest[run_id])
            last = max((ts for _, ts in latest[run_id].values()), default=None)
            cursor = {
                **(mine.get(run_id) or {}),
                "keys": seen[run_id],
                "state": state,
                "experiment": experiment,
                "run_id": run_id,  # the id may be shortened (run_ids.fit): the run is found by this
            }
            cursor.pop("deleted", None)
            out.cursors[key] = cursor
            out.runs.append(self._info(cfg, target, experiment, run, state, last))
        for run_id in followed:
            if run_id not in runs:
                log.warning("run %s is no longer in MLflow experiment %s (deleted?)", run_id, cfg.experiment)
                key = qualify(SOURCE, cfg.experiment, run_id)
                out.samples.append(Sample(t=now, run=key, state="deleted", source=SOURCE))
                out.runs.append(
                    RunInfo(run=key, source=SOURCE, state="deleted", name=run_id, project=cfg.experiment)
                )
                out.cursors[key] = {**mine[run_id], "deleted": True, "state": "deleted"}
        return out

    @staticmethod
    def _read(
        api: MlflowApi, reads: list[Read], page_steps: int
    ) -> dict[str, list[tuple[str, dict[str, Any]]]]:
        """Run id -> (key, value) of every value the reads want, in as few requests as fit."""
        wanted = {(r.run_id, r.key): r for r in reads}
        out: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        for batch in batches(reads, page_steps):
            for m in api.history(batch.run_ids, batch.key, batch.lo, batch.hi):
                r = wanted.get((str(m.get("run_id")), batch.key))
                if r is not None and r.wants(int(m.get("step") or 0), int(m.get("timestamp") or 0)):
                    out.setdefault(r.run_id, []).append((batch.key, m))
        return out

    @staticmethod
    def _info(
        cfg: MlflowTarget,
        target: Target,
        experiment: str,
        run: Mapping[str, Any],
        state: str,
        last: int | None,
    ) -> RunInfo:
        info = run["info"]
        tags = {str(t["key"]): str(t.get("value", "")) for t in (run.get("data") or {}).get("tags") or []}
        labels = {
            "source": SOURCE,
            "mlflow_experiment": cfg.experiment,
            **{f"tag.{k}": v[:200] for k, v in tags.items() if not k.startswith("mlflow.")},
            **dict(target.labels),
        }
        return RunInfo(
            run=qualify(SOURCE, cfg.experiment, info["run_id"]),
            source=SOURCE,
            display_name=info.get("run_name") or tags.get("mlflow.runName"),
            state=state,
            labels=labels,
            url=cfg.run_url(experiment, info["run_id"]),
            heartbeat_at=last / 1000 if last else None,
            name=info["run_id"],
            project=cfg.experiment,
        )

    def close(self) -> None:
        self._experiments.clear()
