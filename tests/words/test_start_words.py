"""What `serve` says at start: one line for the schema migration (not Alembic's line per migration)
before its real error, and no warning about a job that merely overlapped its next turn."""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
import time
from pathlib import Path

from apscheduler.events import EVENT_JOB_MAX_INSTANCES, JobSubmissionEvent

from monitor.engine import scheduling

EXAMPLE_WATCH = "watch:\n  - name: a\n    poll_interval: 30s\n    sim: {step_time: 10s}\n"


def test_serve_says_one_line_for_the_migration_then_its_real_error(tmp_path: Path):
    (tmp_path / "hw.yaml").write_text(EXAMPLE_WATCH)
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    port = busy.getsockname()[1]
    try:
        r = subprocess.run(
            [sys.executable, "-m", "monitor.cli", "serve", "--config", str(tmp_path / "hw.yaml")]
            + ["--listen", f"127.0.0.1:{port}", "--database-url", f"sqlite:///{tmp_path / 'hw.db'}"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        busy.close()
    said = r.stderr.splitlines()
    assert r.returncode != 0, r.stderr
    assert not [line for line in said if "alembic" in line], said
    assert sum("database schema migrated from empty to" in line for line in said) == 1, said
    assert any("address already in use" in line for line in said), said


def _skip(job: str) -> JobSubmissionEvent:
    return JobSubmissionEvent(EVENT_JOB_MAX_INSTANCES, job, None, [])


def test_a_job_that_overlaps_its_next_turn_briefly_is_not_a_warning(caplog):
    skips = scheduling._Skips()
    caplog.set_level(logging.WARNING, logger=scheduling.__name__)
    skips.running["poll a"] = time.monotonic()  # started a moment ago
    skips.on_skip(_skip("poll a"))
    assert not caplog.records, [r.getMessage() for r in caplog.records]
    skips.running["poll a"] = time.monotonic() - 60  # a poll stuck for a minute is worth saying
    skips.on_skip(_skip("poll a"))
    [record] = caplog.records
    assert "job poll a has been running for 60s; skipped 2 turn(s)" in record.getMessage()
