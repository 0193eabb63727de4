"""The job itself reports, live: ``herowatch serve`` with a push watch, jobs pushing through the real
``herowatch emit`` command and the importable client, pages read from the Slack stand-in.

- a job that exits non-zero under ``herowatch emit run`` pages ``run_crashed`` with its exit code at
  once, and the wrapper exits with the job's code (a crash is never swallowed);
- a job killed by a signal pages with the signal; the scheduler's SIGTERM to the wrapper reaches the job
  and is reported the same way;
- a burst of 10,000 samples is taken without loss or a 5xx, and every sample reaches the run;
- the door refuses what it must: no token, the API token, a wrong token, a bad body, a huge body.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import httpx

from monitor.cli.push_client import Pusher, Reply, http_post
from tests.conftest import REPO
from tests.live.sources_support import INGEST_TOKEN, source_stack
from tests.live.support import API_TOKEN, wait_for

PUSH = "    push: {token_env: HERO_INGEST_TOKEN, burst: 12000, rate: 2000}"
RULES = "        progress_stalled: {floor: 6s, startup: 30s}\n"


def emit(hw_url: str, run: str, *command: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "monitor.cli", "emit", "run", "--run", run, "--url", hw_url, "--", *command],
        cwd=REPO,
        env={**env, "HEROWATCH_INGEST_TOKEN": INGEST_TOKEN},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_crash_under_emit_pages_at_once_and_a_burst_is_taken_whole(tmp_path):
    with source_stack(tmp_path) as stack:
        hw = stack.serve(stack.write_config(PUSH, RULES))
        env = stack.env()

        # ---- a job exiting 3 under the wrapper: the wrapper exits 3, run_crashed pages with the code -----
        t0 = time.monotonic()
        done = emit(
            hw.url, "job-crash", sys.executable, "-c", "import sys; print('training'); sys.exit(3)", env=env
        )
        assert done.returncode == 3, done.stderr
        page = wait_for(lambda: stack.pages("run_crashed", "job-crash"), 20, "the crash page")
        print(f"exit -> page in the channel: {time.monotonic() - t0:.1f}s")
        assert "exit code 3" in page[0], page

        # ---- killed by a signal: the wrapper exits 128+9, the page names the signal ---------------------
        done = emit(hw.url, "job-killed", sys.executable, "-c", "import os; os.kill(os.getpid(), 9)", env=env)
        assert done.returncode == 137, done.stderr
        page = wait_for(lambda: stack.pages("run_crashed", "job-killed"), 20, "the kill page")
        assert "exit code 137" in page[0] and "SIGKILL" in page[0], page

        # ---- the scheduler's SIGTERM reaches the job through the wrapper, and is reported -------------
        wrapper = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "monitor.cli",
                "emit",
                "run",
                "--run",
                "job-term",
                "--url",
                hw.url,
                "--",
                sys.executable,
                "-c",
                "import time; print('up', flush=True); time.sleep(60)",
            ],
            cwd=REPO,
            env={**env, "HEROWATCH_INGEST_TOKEN": INGEST_TOKEN},
            stdout=subprocess.PIPE,
            text=True,
        )
        assert wrapper.stdout.readline().strip() == "up"
        wrapper.send_signal(signal.SIGTERM)
        assert wrapper.wait(30) == 143, "128 + SIGTERM, as a shell reports it"
        page = wait_for(lambda: stack.pages("run_crashed", "job-term"), 20, "the SIGTERM page")
        assert "exit code 143" in page[0] and "SIGTERM" in page[0], page

        # ---- a clean exit pages nobody --------------------------------------------------------------------
        assert emit(hw.url, "job-ok", sys.executable, "-c", "pass", env=env).returncode == 0

        # ---- 10,000 samples at once: all 2xx, all read -----------------------------------------------------
        statuses: list[int] = []
        real_post = http_post(30.0)

        def counted(url: str, body: bytes, headers: dict[str, str]) -> Reply:
            reply = real_post(url, body, headers)
            statuses.append(reply.status)
            return reply

        pusher = Pusher("job-burst", url=hw.url, token=INGEST_TOKEN, batch=1000, post=counted)
        now = time.time()
        for step in range(10_000):
            pusher.log(step, {"train/loss": 3.0 - step * 1e-4}, t=now - 1 + step / 10_000)
        pusher.flush()
        assert statuses and all(s < 500 for s in statuses), statuses
        assert statuses.count(202) == 10, statuses

        def burst_read() -> bool:
            runs = {r["id"]: r for r in hw.api("/api/runs")}
            return (runs.get("push:live/job-burst") or {}).get("step") == 9999

        wait_for(burst_read, 30, "the burst's last step to be read")
        assert not stack.pages("job-ok"), stack.pages()
        assert not stack.pages("job-burst"), stack.pages()

        # ---- the door refuses what it must --------------------------------------------------------------
        body = {"run": "x", "samples": [{"step": 1, "metrics": {"loss": 1.0}}]}
        url = hw.url + "/api/ingest"
        assert httpx.post(url, json=body).status_code == 401
        api = {"Authorization": f"Bearer {API_TOKEN}"}
        assert httpx.post(url, json=body, headers=api).status_code == 401, (
            "the API token is not an ingest token"
        )
        ok = {"Authorization": f"Bearer {INGEST_TOKEN}"}
        bad = httpx.post(url, json={"run": "x", "samples": [{"metrics": {"loss": "high"}}]}, headers=ok)
        assert bad.status_code == 422 and "loss" in bad.text
        huge = httpx.post(url, content=b"{" + b" " * (2 << 20) + b"}", headers=ok)
        assert huge.status_code == 413
        assert hw.errors() == ""
