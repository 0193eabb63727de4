"""The slurm source on ``squeue --json`` output recorded from a real Slurm 22.05.8
(squeue_22_05.json: jobs 1 and 4 scancel'd, 2 exited 3, 3 completed, 5 cancelled while pending), and on
that output changed the way Slurm changes it (an OUT_OF_MEMORY end, a requeue), served by a stand-in
``squeue`` script."""

from __future__ import annotations

import copy
import json
import stat
import time
from pathlib import Path

from monitor.samples import RunState
from monitor.sources.base import Target
from monitor.sources.slurm_config import SlurmTarget
from monitor.sources.slurm_jobs import job_of, stdout_path, wait_status
from monitor.sources.slurm_source import SlurmSource

RECORDED = json.loads((Path(__file__).parent / "squeue_22_05.json").read_text())


def by_id(data=RECORDED):
    return {j["job_id"]: j for j in data["jobs"]}


def test_recorded_jobs_read_as_slurm_says():
    jobs = {j.job_id: j for j in map(job_of, RECORDED["jobs"])}
    assert (jobs["1"].state, jobs["1"].run_state, jobs["1"].exit_code) == ("CANCELLED", RunState.KILLED, 143)
    assert (jobs["2"].state, jobs["2"].run_state, jobs["2"].exit_code) == ("FAILED", RunState.FAILED, 3)
    assert jobs["2"].reason == "NonZeroExitCode" and jobs["1"].reason == ""
    assert (jobs["3"].run_state, jobs["3"].exit_code) == (RunState.FINISHED, 0)
    assert (jobs["5"].run_state, jobs["5"].reason) == (RunState.KILLED, "Resources"), (
        "cancelled while pending"
    )
    assert jobs["1"].stdout == "/tmp/i43slurm/hero-a-1.out", "%j expanded"
    assert jobs["3"].stdout == "/tmp/i43slurm/slurm-3.out", "Slurm's default name in the working directory"
    assert jobs["4"].stdout == "/tmp/i43slurm/oom-hero-oom-4.out", "%x and %j"
    assert jobs["1"].nodes == "vm"


def test_wait_status_and_patterns():
    assert [wait_status(s) for s in (0, 768, 9, 15, 35072)] == [0, 3, 137, 143, 137]
    raw = {"standard_output": "logs/%x_%A_%4a.%%.out", "name": "hero", "array_job_id": 7, "array_task_id": 3,
           "current_working_directory": "/w"}  # fmt: skip
    assert stdout_path(raw, "9") == "/w/logs/hero_7_0003.%.out"


def test_data_parser_style_fields():
    job = job_of(
        {"job_id": {"set": True, "number": 12}, "name": "hero", "job_state": ["PENDING", "REQUEUED"],
         "exit_code": {"status": ["SIGNALED"], "return_code": {"set": True, "number": 0},
                       "signal": {"id": {"set": True, "number": 9}, "name": "KILL"}}}
    )  # fmt: skip
    assert job.job_id == "12" and job.state == "REQUEUED" and job.run_state == RunState.PENDING


class Squeue:
    """A stand-in ``squeue`` command answering the JSON it is given (or failing as Slurm does when down)."""

    def __init__(self, tmp: Path) -> None:
        self.data, self.script = tmp / "squeue.json", tmp / "squeue"
        down = "echo 'slurm_load_jobs error: Unable to contact slurm controller' >&2; exit 1"
        self.script.write_text(f"#!/bin/sh\n[ -e {tmp}/down ] && {{ {down}; }}\ncat {self.data}\n")
        self.script.chmod(self.script.stat().st_mode | stat.S_IEXEC)
        self.tmp = tmp

    def answer(self, jobs: list[dict]) -> None:
        self.data.write_text(json.dumps({**RECORDED, "jobs": jobs}))

    def down(self, down: bool = True) -> None:
        (self.tmp / "down").touch() if down else (self.tmp / "down").unlink()


def poll(src, sq, cursors, **cfg):
    res = src.poll(
        Target("w", SlurmTarget(jobs="hero-*", squeue=str(sq.script), **cfg)), cursors, time.time()
    )
    res = res.validated()
    cursors.update(res.cursors)
    return res


def test_states_exit_codes_requeues_ooms_and_the_stdout_progress(tmp_path):
    sq, src, cursors = Squeue(tmp_path), SlurmSource(), {}
    job = copy.deepcopy(by_id()[4])
    out = tmp_path / "hero-4.out"
    job.update(job_state="RUNNING", standard_output=str(tmp_path / "hero-%j.out"))
    out.write_text(
        "".join(f" iteration {s:8d}/ 100 | lm loss: 2.5E+00 | grad norm: 0.3 |\n" for s in range(1, 6))
    )
    sq.answer([job, by_id()[5]])
    res = poll(src, sq, cursors)
    run = "slurm:hw/4" if job.get("cluster") == "hw" else f"slurm:{job.get('cluster') or 'slurm'}/4"
    assert {r.run for r in res.runs} >= {run}
    info = next(r for r in res.runs if r.run == run)
    assert info.state == RunState.RUNNING and info.labels["hosts"] == "vm" and info.labels["slurm_job"] == "4"
    assert [s.step for s in res.samples if s.run == run and s.step is not None] == [1, 2, 3, 4, 5]
    assert [s.state for s in res.samples if s.run == run and s.state] == [RunState.RUNNING]
    assert not [s for s in poll(src, sq, cursors).samples if s.run == run], "no news, no sample"

    # a requeue: back to the queue, restart_cnt counts it, the StdOut is written again from the start
    job.update(job_state="PENDING", restart_cnt=1, state_reason="BeginTime")
    sq.answer([job])
    res = poll(src, sq, cursors)
    (st,) = [s for s in res.samples if s.run == run]
    assert st.state == RunState.PENDING and st.metrics["restarts_total"] == 1
    job.update(job_state="RUNNING")
    out.write_text(" iteration        4/ 100 | lm loss: 2.4E+00 |\n")
    sq.answer([job])
    assert [s.step for s in poll(src, sq, cursors).samples if s.step is not None] == [4], (
        "a rewind: a restart"
    )

    # the job ends OUT_OF_MEMORY: failed, with the OOM counter and the exit code as the ended rule reads them
    job.update(job_state="OUT_OF_MEMORY", exit_code=9, state_reason="OutOfMemory")
    sq.answer([job])
    (end,) = [s for s in poll(src, sq, cursors).samples if s.run == run]
    assert end.state == RunState.FAILED
    assert end.metrics == {"restarts_total": 1.0, "oom_kills_total": 1.0, "exit_code": 137.0}


def test_a_crash_line_in_the_stdout_is_a_job_alert(tmp_path):
    sq, src = Squeue(tmp_path), SlurmSource()
    job = copy.deepcopy(by_id()[4])
    job.update(job_state="RUNNING", standard_output=str(tmp_path / "o-%j.out"))
    (tmp_path / "o-4.out").write_text("slurmstepd: error: Detected 1 oom_kill event in StepId=4.batch.\n")
    sq.answer([job])
    alerts = [s.alert for s in poll(src, sq, {}).samples if s.alert]
    assert [a.title for a in alerts] == ["Killed (SIGKILL, often the OOM killer)"]


def test_an_unreachable_slurm_is_an_outage_not_no_jobs(tmp_path):
    sq = Squeue(tmp_path)
    sq.answer(RECORDED["jobs"])
    sq.down()
    res = SlurmSource().poll(Target("w", SlurmTarget(squeue=str(sq.script))), {}, time.time())
    assert res.error and "Unable to contact slurm controller" in res.error
    missing = SlurmSource().poll(Target("w", SlurmTarget(squeue=str(tmp_path / "nope"))), {}, time.time())
    assert missing.error
