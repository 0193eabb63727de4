"""Source kind ``slurm``: jobs as the scheduler sees them (``squeue --json``), and what they print.

A poll runs ``squeue --json --states=all`` (with ``--user`` / ``--partition`` when set) once, keeps the jobs
whose names match ``jobs``, and for each:

- **state**: Slurm's word made a run state (``slurm_jobs.STATES``): PENDING and REQUEUED are pending,
  RUNNING running, COMPLETED finished, FAILED / OUT_OF_MEMORY / NODE_FAIL failed, TIMEOUT / CANCELLED
  killed, PREEMPTED preempted. A state sample is sent when the state, the exit code or the requeue count
  changes (and on first sight), carrying ``exit_code`` (the shell's: 137 for SIGKILL), ``restarts_total``
  (Slurm's ``restart_cnt``: a requeue is a restart) and ``oom_kills_total`` (ends in OUT_OF_MEMORY): the
  ``run_crashed`` rule's causes and the restart rules' counter. A job Slurm says failed is failed,
  whatever it printed.
- **progress**: its ``StdOut`` file (patterns expanded, ``slurm_jobs.stdout_path``) is read from its
  cursor as the ``logs`` source reads a file: progress lines are its steps, crash lines job alerts.
- **hosts**: its node list is the run's ``hosts`` label.

Slurm keeps a finished job in ``squeue`` for ``MinJobAge`` (300 s by default): a job that ended while
herowatch was down longer than that is not seen to end (``sacct`` needs slurmdbd; not read yet). An
``squeue`` that fails or hangs is a source outage (``source_unavailable``), never "no jobs".
"""

from __future__ import annotations

import fnmatch
import glob
import json
import logging
import subprocess
from collections.abc import Mapping
from typing import Any, ClassVar

from monitor.run_ids import qualify
from monitor.samples import RunInfo, RunState, Sample
from monitor.settings import Settings
from monitor.sources.base import Cursor, PollResult, Target
from monitor.sources.log_files import Files
from monitor.sources.log_reader import read_file
from monitor.sources.logs_source import emit
from monitor.sources.slurm_config import SlurmTarget
from monitor.sources.slurm_jobs import Job, job_of

log = logging.getLogger(__name__)
SOURCE = "slurm"
MAX_OUTPUT = 256 << 20  # bytes of squeue output read at most


class SlurmSource:
    kind: ClassVar[str] = "slurm"

    def __init__(self, settings: Settings | None = None) -> None:
        self.files = Files()
        self._noted: set[str] = set()

    def squeue(self, cfg: SlurmTarget) -> list[dict[str, Any]]:
        cmd = [cfg.squeue, "--json", "--states=all"]
        if cfg.user:
            cmd += ["--user", cfg.user]
        if cfg.partition:
            cmd += ["--partition", cfg.partition]
        done = subprocess.run(cmd, capture_output=True, timeout=cfg.timeout, check=False)
        if done.returncode != 0:
            err = done.stderr.decode(errors="replace").strip().splitlines()
            raise OSError(f"squeue exited {done.returncode}: {err[-1] if err else 'no message'}")
        if len(done.stdout) > MAX_OUTPUT:
            raise OSError(f"squeue answered {len(done.stdout)} bytes (at most {MAX_OUTPUT})")
        data = json.loads(done.stdout)
        errors = [e for e in data.get("errors") or [] if e]
        if errors:
            raise OSError(f"squeue: {errors[0]}")
        return [j for j in data.get("jobs") or [] if isinstance(j, dict)]

    def poll(self, target: Target, cursors: Mapping[str, Cursor], now: float) -> PollResult:
        cfg: SlurmTarget = target.config
        try:
            raw = self.squeue(cfg)
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            msg = f"cannot read Slurm's jobs: {type(exc).__name__}: {exc}"
            log.warning("watch %s: %s", target.watch, msg)
            return PollResult(error=msg)
        jobs = [j for r in raw if (j := job_of(r)) is not None and fnmatch.fnmatchcase(j.name, cfg.jobs)]
        out = PollResult(requests=1)
        for job in jobs[: cfg.max_jobs]:
            key = qualify(SOURCE, job.cluster, job.job_id)
            cursor = dict(cursors.get(key) or {})
            self._state(out, key, job, cursor, now)
            if cfg.read_logs and job.stdout and job.run_state != RunState.PENDING:
                self._read_log(out, key, job, cursor, cfg, target.watch)
            out.cursors[key] = cursor
            labels = {
                "source": SOURCE,
                "slurm_job": job.job_id,
                "slurm_state": job.state,
                **({"slurm_reason": job.reason} if job.reason else {}),
                **({"hosts": job.nodes} if job.nodes else {}),
                **({"partition": job.partition} if job.partition else {}),
                **dict(target.labels),
            }
            out.runs.append(
                RunInfo(
                    run=key,
                    source=SOURCE,
                    display_name=f"{job.name} ({job.job_id})",
                    state=job.run_state,
                    labels=labels,
                    heartbeat_at=cursor.get("t"),
                    name=job.name,
                    project=job.cluster,
                )
            )
        if len(jobs) > cfg.max_jobs:
            self._note(target.watch, f"{len(jobs)} jobs match, only the first {cfg.max_jobs} watched")
        return out

    def _state(self, out: PollResult, key: str, job: Job, cursor: dict[str, Any], now: float) -> None:
        """A state sample when Slurm's word, the exit code or the requeue count changed."""
        seen = (job.state, job.exit_code, job.restarts)
        if cursor.get("slurm") == list(seen):
            return
        if job.state == "OUT_OF_MEMORY" and cursor.get("slurm", [None])[0] != "OUT_OF_MEMORY":
            cursor["ooms"] = int(cursor.get("ooms", 0)) + 1
        cursor["slurm"] = list(seen)
        metrics = {"restarts_total": float(job.restarts), "oom_kills_total": float(cursor.get("ooms", 0))}
        if job.exit_code is not None:
            metrics["exit_code"] = float(job.exit_code)
        t = max(now, float(cursor.get("t") or 0.0))
        out.samples.append(Sample(t=t, run=key, state=job.run_state, metrics=metrics, source=SOURCE))

    def _read_log(
        self, out: PollResult, key: str, job: Job, cursor: dict[str, Any], cfg: SlurmTarget, watch: str
    ) -> None:
        path = job.stdout or ""
        try:
            found = self.files.list(glob.escape(path))
        except OSError as exc:
            self._note(watch, f"job {job.job_id}: cannot list its StdOut {path}: {exc}")
            return
        if not found:
            return  # not written yet
        try:
            got = read_file(self.files, found[0], cursor.get("log"), cfg.logs(path), cfg.read_bytes)
        except OSError as exc:
            self._note(watch, f"job {job.job_id}: cannot read its StdOut {path}: {exc}")
            return
        cursor["log"], cursor["stdout"] = got.cursor, path
        emit(out, key, got, SOURCE, cursor)
        for note in got.notes:
            self._note(watch, f"job {job.job_id}: {note}")

    def _note(self, watch: str, note: str) -> None:
        if note not in self._noted and len(self._noted) < 10_000:
            self._noted.add(note)
            log.warning("watch %s: %s", watch, note)

    def close(self) -> None:
        pass
