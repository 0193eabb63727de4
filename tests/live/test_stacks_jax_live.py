"""The hang of the issue, live, with a real multi-process JAX job on CPU (``jax_job.py``): three JAX
processes under three ``herowatch emit run`` wrappers ("nodes"), gloo collectives over loopback, a
checkpoint saved and restored, then rank 1 blocks in a read while ranks 0 and 2 wait in
``sync_global_devices``. ``herowatch serve`` runs as a real process; the test reads the Slack stand-in:
the first hang page names rank 1, its node and its frame, within the stall limit plus 60 seconds."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import REPO
from tests.live.sources_support import INGEST_TOKEN, source_stack
from tests.live.support import wait_for
from tests.prometheus_server import free_port

JOB = str(Path(__file__).with_name("jax_job.py"))
PUSH = "    push: {token_env: HERO_INGEST_TOKEN}"
FLOOR = 6.0
RULES = f"        progress_stalled: {{floor: {FLOOR:g}s, startup: 90s}}\n"
PROCESSES = 3


def test_a_jax_job_hung_after_its_restore_is_paged_with_the_stuck_rank_and_its_frame(tmp_path):
    with source_stack(tmp_path) as stack:
        hw = stack.serve(stack.write_config(PUSH, RULES))
        env = stack.env()
        port = free_port()
        procs = []
        try:
            for i in range(PROCESSES):
                job = [
                    sys.executable,
                    JOB,
                    "--port",
                    str(port),
                    "--processes",
                    str(PROCESSES),
                    "--stuck",
                    "1",
                    "--dir",
                    str(tmp_path / "ckpt"),
                    "--run",
                    "jax-hero",
                    "--url",
                    hw.url,
                ]
                procs.append(
                    subprocess.Popen(
                        [
                            sys.executable,
                            "-m",
                            "monitor.cli",
                            "emit",
                            "run",
                            "--run",
                            "jax-hero",
                            "--url",
                            hw.url,
                            "--node",
                            f"node-{i}",
                            "--",
                            *job,
                        ],
                        cwd=REPO,
                        env={
                            **env,
                            "HEROWATCH_INGEST_TOKEN": INGEST_TOKEN,
                            "JAX_PROCESS_ID": str(i),
                            "JAX_PLATFORMS": "cpu",
                            "PYTHONPATH": str(REPO),
                        },
                        stdout=subprocess.DEVNULL,
                        stderr=(tmp_path / f"wrapper-{i}.log").open("w"),
                    )
                )
            restored = tmp_path / "ckpt" / "restored-0"
            wait_for(restored.exists, 180, "the job to save and restore its checkpoint")
            hung_at = time.monotonic()
            page = wait_for(lambda: stack.pages("jax-hero"), FLOOR + 90, "the hang page", seen=stack.pages)
            took = time.monotonic() - hung_at
            first = page[0]
            print(f"hang -> first page {took:.1f}s:\n{first}")
            assert "rank 1 on node-1 is in `read_chunk` (tests/live/jax_job.py:" in first, first
            assert "2 of 3 ranks wait in" in first, first
            assert "multihost_utils" in first or "sync_global_devices" in first, first
            limit = float(first.split("(limit ")[1].split("s)")[0])
            assert took <= limit + 60, f"{took:.0f}s from the hang to the page (limit {limit:g}s)"
            assert not (tmp_path / "ckpt" / "restored-1").exists()
            assert hw.errors() == ""
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                try:
                    p.wait(20)
                except subprocess.TimeoutExpired:
                    p.kill()
            # a hung JAX process may outlive its killed wrapper: its command line names this test's folder
            subprocess.run(["pkill", "-9", "-f", str(tmp_path / "ckpt")], check=False)
