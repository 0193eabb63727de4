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
move MLflow's latest value: those steps are found by their times (monitor.sources.mlflow_rewind), by a
probe of running runs whose steps have not moved (every ``rewind_probe``) and from the read of what
moved, and they enter in time order, as a step rewind.

Anything unreadable makes the whole poll an error: the engine sees "source unavailable", never
"no new steps"; except one run's history answer (an error for that run, over ``max_answer_bytes``, not
JSON): that run alone is unreadable, its cursor kept, and every other run is read
(monitor.sources.mlflow_isolation).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from monitor.run_ids import qualify
from monitor.samples import RunInfo, RunState, Sample
from monitor.settings import Settings
from monitor.sources.base import Cursor, PollResult, Target
from monitor.sources.key_patterns import key_filter
from monitor.sources.mlflow_client import MAX_VALUES, MlflowApi, MlflowUnavailable
from monitor.sources.mlflow_config import STATES, MlflowTarget
from monitor.sources.mlflow_history import Read, batches
from monitor.sources.mlflow_isolation import IsolatedHistory
from monitor.sources.mlflow_rewind import lead_key, plan, relogged

log = logging.getLogger(__name__)
SOURCE = "mlflow"
SYSTEM = "system/"
_IDS_PER_SEARCH = 100
Values = dict[str, dict[tuple[str, int, int], dict[str, Any]]]  # run -> (key, step, time) -> value


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


@dataclass
class Past:
    """What a run's cursor says of the reads before: per key the latest (step, timestamp) seen and the
    (timestamp, step) of the newest value read (its horizon); the highest step logged again read while
    the run is below its old top (``rework``); when it was last probed for steps logged again."""

    keys: dict[str, list[int]]
    horizon: dict[str, tuple[int, int]]
    rework: int | None
    probed: float | None

    @classmethod
    def of(cls, cursor: Mapping[str, Any]) -> Past:
        keys = {str(k): [int(v[0]), int(v[1])] for k, v in (cursor.get("keys") or {}).items()}
        stored = cursor.get("horizon") or {}
        horizon = {  # a cursor from before horizons: the latest value was the newest read
            k: (int(stored[k][0]), int(stored[k][1])) if k in stored else (v[1], v[0])
            for k, v in keys.items()
        }
        rework, probed = cursor.get("rework"), cursor.get("probed")
        return cls(
            keys, horizon, None if rework is None else int(rework), None if probed is None else float(probed)
        )

    def cursor(self) -> dict[str, Any]:
        return {
            "keys": self.keys,
            "horizon": {k: list(v) for k, v in self.horizon.items()},
            "rework": self.rework,
            "probed": self.probed,
        }


def _again(read: Read | None, step: int, timestamp: int) -> bool:
    """A new value read for what moved at or below the key's latest step before: logged again."""
    return read is not None and read.before is not None and step <= read.before[0]


class MlflowSource:
    kind: ClassVar[str] = "mlflow"

    def __init__(self, settings: Settings | None = None) -> None:
        self._experiments: dict[tuple[str, str], str] = {}

    def poll(self, target: Target, cursors: Mapping[str, Cursor], now: float) -> PollResult:
        cfg: MlflowTarget = target.config
        api = MlflowApi(cfg.tracking_uri, cfg.timeout, cfg.retries, max_answer=cfg.max_answer_bytes)
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
        states = {r: STATES.get(str(run["info"].get("status")), RunState.UNKNOWN) for r, run in runs.items()}
        past = {run_id: Past.of(mine.get(run_id) or {}) for run_id in runs}
        seen = {run_id: dict(p.keys) for run_id, p in past.items()}
        reads = []
        for run_id, keys in latest.items():
            for name, (step, ts) in keys.items():
                before = tuple(seen[run_id][name]) if name in seen[run_id] else None
                if not wanted(name) or (before is not None and before >= (step, ts)):
                    continue
                lo = before[0] if before is not None else max(0, step - cfg.warmup_steps + 1)
                reads.append(Read(run_id, name, lo, step, before, past[run_id].horizon.get(name)))
                seen[run_id][name] = [step, ts]
        isolated = IsolatedHistory(api)
        values = self._read(isolated, reads, cfg.page_steps)
        self._rework(isolated, cfg, wanted, latest, states, past, reads, values, now)
        if (outage := isolated.outage()) is not None:
            raise MlflowUnavailable(outage)
        out = PollResult()
        for run_id, run in runs.items():
            key = qualify(SOURCE, cfg.experiment, run_id)
            if run_id in isolated.unreadable:  # its own answer was bad: read again next poll
                self._unreadable(cfg, target, experiment, run, mine, states[run_id], isolated, out, now)
                continue
            rows: dict[int, dict[str, float]] = {}
            times: dict[int, float] = {}
            for (name, _, _), m in sorted(
                values.get(run_id, {}).items(), key=lambda kv: (kv[0][2], kv[0][1])
            ):
                t = int(m.get("timestamp") or 0) / 1000
                if name.startswith(SYSTEM):  # their own sampling counter, not the training step
                    out.samples.append(Sample(t=t, run=key, metrics={name: m["value"]}, source=SOURCE))
                    continue
                s = int(m.get("step") or 0)
                rows.setdefault(s, {})[name] = m["value"]
                times[s] = max(times.get(s, 0.0), t)
            for s in sorted(rows, key=lambda s: (times[s], s)):  # in time: a step logged again is a rewind
                out.samples.append(Sample(t=times[s], run=key, step=s, metrics=rows[s], source=SOURCE))
            state = states[run_id]
            out.samples.append(Sample(t=now, run=key, state=state, source=SOURCE))
            if latest[run_id]:
                out.logged[key] = sorted(latest[run_id])
            p = past[run_id]
            p.keys = seen[run_id]
            for (name, s, ts), _ in values.get(run_id, {}).items():
                p.horizon[name] = max(p.horizon.get(name, (ts, s)), (ts, s))
            for name, (s, ts) in latest[run_id].items():
                p.horizon[name] = max(p.horizon.get(name, (ts, s)), (ts, s))
            last = max((ts for ts, _ in p.horizon.values()), default=None)  # steps logged again count
            cursor = {**(mine.get(run_id) or {}), **p.cursor(), "state": state, "experiment": experiment}
            cursor["run_id"] = run_id  # the id may be shortened (run_ids.fit): the run is found by this
            cursor.pop("deleted", None)
            out.cursors[key] = cursor
            out.runs.append(self._info(cfg, target, experiment, run, state, last))
        for run_id in followed:
            if run_id not in runs:
                log.warning("run %s is no longer in MLflow experiment %s (deleted?)", run_id, cfg.experiment)
                key = qualify(SOURCE, cfg.experiment, run_id)
                out.samples.append(Sample(t=now, run=key, state=RunState.DELETED, source=SOURCE))
                out.runs.append(
                    RunInfo(
                        run=key, source=SOURCE, state=RunState.DELETED, name=run_id, project=cfg.experiment
                    )
                )
                out.cursors[key] = {**mine[run_id], "deleted": True, "state": RunState.DELETED.value}
        return out

    @staticmethod
    def _read(api: IsolatedHistory, reads: list[Read], page_steps: int, out: Values | None = None) -> Values:
        """Every value the reads want, in as few requests as fit, added to ``out``."""
        wanted = {(r.run_id, r.key): r for r in reads}
        out = {} if out is None else out
        for batch in batches(reads, page_steps):
            for m in api.history(batch.run_ids, batch.key, batch.lo, batch.hi):
                r = wanted.get((str(m.get("run_id")), batch.key))
                step, ts = int(m.get("step") or 0), int(m.get("timestamp") or 0)
                if r is not None and r.wants(step, ts):
                    out.setdefault(r.run_id, {})[(batch.key, step, ts)] = m
        return out

    def _rework(
        self,
        api: IsolatedHistory,
        cfg: MlflowTarget,
        wanted: Callable[[str], bool],
        latest: Mapping[str, Mapping[str, tuple[int, int]]],
        states: Mapping[str, RunState],
        past: Mapping[str, Past],
        reads: list[Read],
        values: Values,
        now: float,
    ) -> None:
        """Adds to ``values`` the steps runs logged again below their latest (resumed from a checkpoint
        into the same run: monitor.sources.mlflow_rewind) and moves the runs' rework cursors."""
        moved = {(r.run_id, r.key): r for r in reads}
        window = min(cfg.page_steps, MAX_VALUES // 2)  # a step logged twice: two values
        scans = []
        for run_id, keys in latest.items():
            p = past[run_id]
            training = {
                k: v for k, v in keys.items() if wanted(k) and not k.startswith(SYSTEM) and k in p.keys
            }
            lead = lead_key(training)
            if lead is None:
                if p.probed is None:
                    p.probed = now
                continue
            r = moved.get((run_id, lead))
            moved_from = r.before[0] if r is not None and r.before is not None else None
            again = any(
                _again(moved.get((run_id, name)), s, ts)
                for (name, s, ts) in values.get(run_id, {})
                if not name.startswith(SYSTEM)  # their own counter
            )
            due = (
                states[run_id] == RunState.RUNNING
                and moved_from is None
                and (p.rework is not None or p.probed is None or now - p.probed >= cfg.rewind_probe)
            )
            if due and p.rework is None:
                p.probed = now
            scan = plan(
                run_id,
                lead,
                keys[lead][0],
                p.horizon[lead],
                moved_from=moved_from,
                relogged_in_read=again,
                rework=p.rework,
                due=due,
                window=window,
            )
            if scan is not None:
                scans.append(scan)
            if moved_from is not None:
                p.rework = None  # past its old top again
        found = relogged(api.history, scans, window)
        others = []
        for scan in scans:
            got = found.get(scan.run_id)
            if not got:
                continue
            steps = [int(m.get("step") or 0) for m in got]
            for m, s in zip(got, steps, strict=True):
                values.setdefault(scan.run_id, {})[(scan.key, s, int(m.get("timestamp") or 0))] = m
            top = latest[scan.run_id][scan.key][0]
            if max(steps) < top and (scan.run_id, scan.key) not in moved:
                past[scan.run_id].rework = max(steps)
            p = past[scan.run_id]
            for name, (s, ts) in latest[scan.run_id].items():
                if name != scan.key and name in p.horizon and not name.startswith(SYSTEM) and wanted(name):
                    others.append(Read(scan.run_id, name, min(steps), max(steps), (s, ts), p.horizon[name]))
        self._read(api, others, cfg.page_steps, values)

    def _unreadable(
        self,
        cfg: MlflowTarget,
        target: Target,
        experiment: str,
        run: Mapping[str, Any],
        mine: Mapping[str, Cursor],
        state: RunState,
        isolated: IsolatedHistory,
        out: PollResult,
        now: float,
    ) -> None:
        """A run whose history answer was bad: its state (the search read it), its own reason, its cursor
        as it was (what it logged is read next poll); nothing of its history."""
        run_id = run["info"]["run_id"]
        key = qualify(SOURCE, cfg.experiment, run_id)
        why = f"MLflow at {cfg.tracking_uri}, run {run_id}: {isolated.unreadable[run_id]}"
        log.warning("watch %s: %s", target.watch, why[:500])
        out.unreadable[key] = why
        out.samples.append(Sample(t=now, run=key, state=state, source=SOURCE))
        before = dict(mine.get(run_id) or {})
        before.pop("deleted", None)
        out.cursors[key] = {**before, "run_id": run_id, "experiment": experiment, "state": state}
        last = max((ts for ts, _ in Past.of(before).horizon.values()), default=None)
        out.runs.append(self._info(cfg, target, experiment, run, state, last))

    @staticmethod
    def _info(
        cfg: MlflowTarget,
        target: Target,
        experiment: str,
        run: Mapping[str, Any],
        state: RunState,
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
