"""What ``squeue --json`` says of a job, as herowatch needs it. Pure.

The fields are those of Slurm's JSON output (22.05: ``openapi/v0.0.38``; later ``data_parser``, where
``job_state`` is a list and numbers may be ``{"set": .., "number": ..}``): ``job_id``, ``name``,
``job_state``, ``state_reason``, ``exit_code`` (a wait status: the exit code times 256, or the signal),
``restart_cnt`` (requeues), ``standard_output`` (with its ``%j``-style patterns unexpanded), ``nodes``,
``partition``, ``user_name``, ``current_working_directory``, ``cluster``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from monitor.samples import RunState

STATES: dict[str, RunState] = {
    "PENDING": RunState.PENDING,
    "CONFIGURING": RunState.PENDING,
    "REQUEUED": RunState.PENDING,  # going back to the queue: a restart (restart_cnt counts it)
    "REQUEUE_HOLD": RunState.PENDING,
    "REQUEUE_FED": RunState.PENDING,
    "RESV_DEL_HOLD": RunState.PENDING,
    "RUNNING": RunState.RUNNING,
    "COMPLETING": RunState.RUNNING,
    "RESIZING": RunState.RUNNING,
    "STAGE_OUT": RunState.RUNNING,
    "SIGNALING": RunState.RUNNING,
    "COMPLETED": RunState.FINISHED,
    "FAILED": RunState.FAILED,
    "OUT_OF_MEMORY": RunState.FAILED,
    "NODE_FAIL": RunState.FAILED,
    "BOOT_FAIL": RunState.FAILED,
    "TIMEOUT": RunState.KILLED,
    "CANCELLED": RunState.KILLED,
    "DEADLINE": RunState.KILLED,
    "PREEMPTED": RunState.PREEMPTED,
    "SUSPENDED": RunState.PREEMPTED,
    "STOPPED": RunState.PREEMPTED,
}


@dataclass(frozen=True)
class Job:
    job_id: str
    name: str
    state: str  # Slurm's word, e.g. OUT_OF_MEMORY
    reason: str  # state_reason, e.g. NonZeroExitCode; "" for None
    exit_code: int | None  # as a shell reports it: the code, or 128+N for signal N; None while running
    restarts: int
    stdout: str | None  # the StdOut path, patterns expanded
    nodes: str
    partition: str
    user: str
    cluster: str

    @property
    def run_state(self) -> RunState:
        return STATES.get(self.state, RunState.UNKNOWN)

    @property
    def ended(self) -> bool:
        return self.run_state in (RunState.FINISHED, RunState.FAILED, RunState.KILLED)


def _num(value: Any) -> int | None:
    """A number as Slurm writes it: a plain int, or (data_parser) ``{"set": true, "number": n}``."""
    if isinstance(value, dict):
        return (
            int(value["number"]) if value.get("set", True) and isinstance(value.get("number"), int) else None
        )
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _state(value: Any) -> str:
    if isinstance(value, list):  # data_parser: ["FAILED"] or ["PENDING", "REQUEUED"]
        flags = [str(v).upper() for v in value]
        return next((f for f in flags if f in ("REQUEUED", "REQUEUE_HOLD")), flags[0] if flags else "UNKNOWN")
    return str(value or "UNKNOWN").upper()


def wait_status(status: int | None) -> int | None:
    """A wait status (what Slurm stores) as a shell's exit code: 768 -> 3, 9 (SIGKILL) -> 137."""
    if status is None:
        return None
    if status & 0x7F:
        return 128 + (status & 0x7F)
    return (status >> 8) & 0xFF


def job_of(raw: dict[str, Any]) -> Job | None:
    job_id = _num(raw.get("job_id"))
    if job_id is None:
        return None
    state = _state(raw.get("job_state"))
    exit_raw = raw.get("exit_code")
    if isinstance(exit_raw, dict) and "return_code" in exit_raw:  # sacct / data_parser style
        status = _num(exit_raw.get("return_code"))
        signal = (
            _num((exit_raw.get("signal") or {}).get("id"))
            if isinstance(exit_raw.get("signal"), dict)
            else None
        )
        code = 128 + signal if signal else status
    else:
        code = wait_status(_num(exit_raw))
    reason = str(raw.get("state_reason") or "")
    return Job(
        job_id=str(job_id),
        name=str(raw.get("name") or ""),
        state=state,
        reason="" if reason == "None" else reason,
        exit_code=code
        if STATES.get(state) in (RunState.FINISHED, RunState.FAILED, RunState.KILLED)
        else None,
        restarts=_num(raw.get("restart_cnt")) or 0,
        stdout=stdout_path(raw, str(job_id)),
        nodes=str(raw.get("nodes") or ""),
        partition=str(raw.get("partition") or ""),
        user=str(raw.get("user_name") or ""),
        cluster=str(raw.get("cluster") or "") or "slurm",
    )


_PATTERN = re.compile(r"%(%|[0-9]*[AaJjNnsux])")


def stdout_path(raw: dict[str, Any], job_id: str) -> str | None:
    """The job's StdOut file: ``standard_output`` with Slurm's filename patterns expanded (``%j`` job id,
    ``%A``/``%a`` array job and task, ``%x`` name, ``%u`` user, ``%N`` first node), relative to the job's
    working directory; empty means Slurm's default ``slurm-%j.out`` (``slurm-%A_%a.out`` in an array)."""
    cwd = str(raw.get("current_working_directory") or "")
    array_task = _num(raw.get("array_task_id"))
    template = str(raw.get("standard_output") or "")
    if not template:
        if not cwd:
            return None
        template = "slurm-%A_%a.out" if array_task is not None else "slurm-%j.out"
    values = {
        "j": job_id,
        "J": job_id,
        "A": str(_num(raw.get("array_job_id")) or job_id),
        "a": str(array_task) if array_task is not None else "4294967294",
        "x": str(raw.get("name") or ""),
        "u": str(raw.get("user_name") or ""),
        "N": str(raw.get("batch_host") or ""),
        "n": "0",
        "s": "batch",
    }

    def sub(m: re.Match[str]) -> str:
        token = m.group(1)
        if token == "%":
            return "%"
        width, key = token[:-1], token[-1]
        value = values.get(key, "")
        return value.zfill(int(width)) if width and value.isdigit() else value

    path = _PATTERN.sub(sub, template)
    return path if os.path.isabs(path) or "://" in path else os.path.join(cwd, path)
