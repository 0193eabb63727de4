"""A job's own alert, live (as W&B's ``wandb.alert``): ``herowatch serve`` with a push watch, the alerts
sent through the real ``herowatch emit alert`` command, pages read from the Slack stand-in.

- ``--level error`` pages once, naming the job's title and text;
- ``--level info`` is recorded (the alerts API has it) and pages nobody;
- a repeat of the title within its ``--wait`` pages no second time, even after the first alert resolved
  on its own (``resolve_after``, shortened here);
- a title over 64 characters is refused at the door with a 422 that says why.
"""

from __future__ import annotations

import subprocess
import sys
import time

import httpx

from tests.conftest import REPO
from tests.live.sources_support import INGEST_TOKEN, source_stack
from tests.live.support import alerts_of, wait_for

PUSH = "    push: {token_env: HERO_INGEST_TOKEN}"
RULES = "        job_alert_error: {resolve_after: 3s}\n"
TITLE, TEXT = "Data shard corrupt", "shard 17 failed its checksum"


def emit_alert(url: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "monitor.cli", "emit", "alert", "--run", "job-a", "--url", url, *args],
        cwd=REPO,
        env={**env, "HEROWATCH_INGEST_TOKEN": INGEST_TOKEN},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done


def titled(hw, rule: str, title: str, state: str | None = None) -> list[dict]:
    return [a for a in alerts_of(hw, rule, state) if (a.get("labels") or {}).get("title") == title]


def test_a_jobs_error_alert_pages_once_info_never_and_a_repeat_within_its_wait_not_again(tmp_path):
    with source_stack(tmp_path) as stack:
        hw = stack.serve(stack.write_config(PUSH, RULES))
        env = stack.env()

        # ---- ERROR: one page with the title and the text ---------------------------------------------
        t0 = time.monotonic()
        emit_alert(hw.url, env, "--title", TITLE, "--text", TEXT, "--level", "error", "--wait", "600")
        page = wait_for(lambda: stack.pages(TITLE, TEXT), 20, "the job's alert page", seen=stack.pages)
        print(f"emit alert -> page in the channel: {time.monotonic() - t0:.1f}s")
        assert "job-a" in page[0], page

        # ---- INFO: recorded, never notified ------------------------------------------------------------
        emit_alert(hw.url, env, "--title", "Checkpoint saved", "--text", "step 3 on disk", "--level", "info")
        wait_for(lambda: titled(hw, "job_alert_info", "Checkpoint saved"), 20, "the info alert recorded")

        # ---- the ERROR resolves on its own; a repeat within its wait is dropped -------------------------
        wait_for(lambda: titled(hw, "job_alert_error", TITLE, "resolved"), 20, "the error alert to resolve")
        emit_alert(hw.url, env, "--title", TITLE, "--text", "shard 18 too", "--level", "error")
        # a later alert of the same run is read after the repeat: once it is recorded, so was the repeat
        emit_alert(hw.url, env, "--title", "Marker", "--level", "info")
        wait_for(lambda: titled(hw, "job_alert_info", "Marker"), 20, "the marker recorded")
        time.sleep(2)  # a page the repeat would have caused has had its group_wait (0s) and more
        assert len(stack.pages(TITLE)) == 1, stack.pages()
        assert not stack.pages("Checkpoint saved") and not stack.pages("Marker"), stack.pages()
        assert not stack.pages("shard 18"), stack.pages()
        assert len(titled(hw, "job_alert_error", TITLE)) == 1, "the repeat opened no second alert"

        # ---- the door refuses a title W&B would refuse, and says why -----------------------------------
        body = {"run": "job-a", "events": [{"kind": "alert", "title": "x" * 65, "level": "error"}]}
        ok = {"Authorization": f"Bearer {INGEST_TOKEN}"}
        bad = httpx.post(hw.url + "/api/ingest", json=body, headers=ok)
        assert bad.status_code == 422 and "title" in bad.text, bad.text
        bad = httpx.post(
            hw.url + "/api/ingest",
            json={"run": "job-a", "events": [{"kind": "exit", "exit_code": 0, "title": "x"}]},
            headers=ok,
        )
        assert bad.status_code == 422 and "not fields of a exit event" in bad.text, bad.text
        assert hw.errors() == ""
