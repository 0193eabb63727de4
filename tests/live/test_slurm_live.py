"""Slurm jobs, live: a real Slurm 22.05 (munged, slurmctld, slurmd started here: tests/slurm_support.py) and
``herowatch serve`` with a ``slurm:`` watch, pages read from the Slack stand-in.

- a job prints Megatron-LM lines to its StdOut (read with no logs config), then hangs: the stall pages;
- a job cancelled with ``scancel`` pages ``run_crashed`` with Slurm's truth (killed, SIGTERM);
- a job requeued with ``scontrol requeue`` is a restart, not a stall.
"""

from __future__ import annotations

import time

from tests.live.sources_support import source_stack
from tests.live.support import alerts_of, wait_for
from tests.slurm_support import slurm_cluster

RULES = "        progress_stalled: {floor: 6s, startup: 30s}\n"
JOB = """#!/bin/bash
i=0
while [ $i -lt {steps} ]; do
  i=$((i+1))
  echo " iteration $i/ 1000 | consumed samples: $((i*8)) | elapsed time per iteration (ms): 500.0 | lm loss: 2.5$i | grad norm: 0.3 |"
  echo "[INFO] prefetch ok"
  sleep 0.5
done
sleep 3600
"""  # noqa: E501


def test_slurm_jobs_page_a_hang_a_cancel_and_not_a_requeue(tmp_path):
    with slurm_cluster(tmp_path) as slurm, source_stack(tmp_path) as stack:
        script = tmp_path / "train.sh"
        script.write_text(JOB.format(steps=20))
        forever = tmp_path / "train-forever.sh"
        forever.write_text(JOB.format(steps=100000))
        out = f"--output={tmp_path}/%x-%j.out"
        hang = slurm.sbatch("--job-name=hero-hang", out, str(script))
        cancel = slurm.sbatch("--job-name=hero-cancel", out, str(forever))
        requeue = slurm.sbatch("--job-name=hero-requeue", "--requeue", out, str(forever))
        slurm.sbatch("--job-name=other", out, "--wrap=sleep 600")  # not a hero job: not watched

        stack.extra_env["SLURM_CONF"] = slurm.env["SLURM_CONF"]
        hw = stack.serve(stack.write_config("    slurm: {jobs: 'hero-*'}", RULES))

        def run(job: str) -> dict:
            return next((r for r in hw.api("/api/runs") if r["id"] == f"slurm:hw/{job}"), {})

        wait_for(
            lambda: all((run(j).get("step") or 0) > 3 for j in (hang, cancel, requeue)), 60, "three jobs read"
        )
        assert not [r for r in hw.api("/api/runs") if "other" in str(r.get("name"))]
        detail = hw.api(f"/api/runs/slurm:hw/{hang}")
        assert "hosts" in str(detail) and "hero-hang" in str(detail), detail

        # ---- scancel: Slurm's CANCELLED is killed, with its signal ---------------------------------------
        t0 = time.monotonic()
        slurm.run("scancel", cancel)
        page = wait_for(
            lambda: stack.pages("run_crashed", "hero-cancel"), 30, "the cancel page", seen=stack.pages
        )
        print(f"scancel -> page: {time.monotonic() - t0:.1f}s")
        assert "killed" in page[0] and "SIGTERM" in page[0] and "Slurm says CANCELLED" in page[0], page

        # ---- a requeue is a restart, not a stall -----------------------------------------------------------
        slurm.run("scontrol", "requeue", requeue)
        wait_for(lambda: alerts_of(hw, "run_restarted"), 60, "the requeue recorded as a restart")

        # ---- the short job stops printing: the stall pages -------------------------------------------------
        t0 = time.monotonic()
        wait_for(lambda: stack.pages("progress_stalled", "hero-hang"), 60, "the stall page")
        print(f"hang -> page: {time.monotonic() - t0:.1f}s")
        assert not stack.pages("progress_stalled", "hero-requeue"), stack.pages()
        assert not stack.pages("hero-requeue", "run_crashed"), stack.pages()
        assert hw.errors() == "", hw.errors()
