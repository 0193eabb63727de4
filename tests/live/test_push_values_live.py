"""Issue 37, live: ``herowatch serve`` with a push watch and the Slack stand-in. A job pushes a step of
2^63 (before: 202, then every poll of the watch failed to write and another run's OOM exit never reached
Slack). Now the door answers 422 naming the step, a run name with U+202E is a 422 too, and an OOM exit
pushed afterwards for another run pages in the channel. (That a write failing for one run leaves the
others written is forced in tests/faults/test_write_isolation.py: through the door, no such value gets in.)"""

from __future__ import annotations

import time

import httpx

from tests.live.sources_support import INGEST_TOKEN, source_stack
from tests.live.support import wait_for

PUSH = "    push: {token_env: HERO_INGEST_TOKEN}"


def test_a_2_63_step_is_refused_and_another_runs_oom_exit_still_pages(tmp_path):
    with source_stack(tmp_path) as stack:
        hw = stack.serve(stack.write_config(PUSH, "        progress_stalled: {floor: 6s, startup: 30s}\n"))
        url, auth = hw.url + "/api/ingest", {"Authorization": f"Bearer {INGEST_TOKEN}"}
        for step in (2**63, 10**30):
            big = httpx.post(
                url,
                json={"run": "big", "samples": [{"step": step, "metrics": {"train/loss": 1}}]},
                headers=auth,
            )
            assert big.status_code == 422 and "step" in big.json()["error"], big.text
        bidi = httpx.post(url, json={"run": "evil\u202egnp", "samples": [{"step": 1}]}, headers=auth)
        assert bidi.status_code == 422 and "U+202E" in bidi.json()["error"], bidi.text
        ok = httpx.post(
            url, json={"run": "jobs2", "samples": [{"step": 10, "metrics": {"train/loss": 2}}]}, headers=auth
        )
        assert ok.status_code == 202, ok.text
        t0 = time.monotonic()
        oom = {"run": "jobs2", "events": [{"kind": "exit", "exit_code": 137, "cause": "oom-killed"}]}
        assert httpx.post(url, json=oom, headers=auth).status_code == 202
        page = wait_for(lambda: stack.pages("run_crashed", "jobs2"), 30, "the OOM page")
        print(f"OOM exit -> page in the channel: {time.monotonic() - t0:.1f}s")
        assert "exit code 137" in page[0], page
        ready = httpx.get(hw.url + "/readyz")
        assert ready.status_code == 200, ready.text
