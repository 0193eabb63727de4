"""What a job sees at ``POST /api/ingest`` where it used to lose data or be refused forever: a run name
whose id would be too long, a batch larger than the watch's burst, the run limit under concurrent first
pushes. The door is served in process (its router, the house's error answers, a spool in tmp_path)."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from types import SimpleNamespace

from fastapi import FastAPI
from fastapi.testclient import TestClient

from monitor.cli.push_client import Pusher, Reply
from monitor.settings import Settings
from monitor.sources.base import Target
from monitor.sources.push_config import PushTarget
from monitor.sources.push_source import PushSource
from monitor.sources.push_spool import SpoolWriter
from monitor.web import errors
from monitor.web.api import ingest
from monitor.web.api.ingest import IngestDoor

TOKEN = "i" * 40
AUTH = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json"}


def door(tmp_path, watch: str = "w", **push) -> TestClient:
    app = FastAPI()
    app.state.ctx = SimpleNamespace(now=time.time)
    app.state.ingest = IngestDoor(SpoolWriter(tmp_path), {watch: PushTarget(**push)}, tokens={watch: TOKEN})
    errors.install(app)
    app.include_router(ingest.router)
    return TestClient(app)


def samples(n: int) -> list[dict]:
    return [{"step": i, "metrics": {"train/loss": 1.0}} for i in range(n)]


def read(tmp_path, watch: str = "w"):
    source = PushSource(Settings(ingest_dir=tmp_path))
    return source.poll(Target(watch, PushTarget()), {}, time.time()).validated()


def test_a_run_name_too_long_for_its_id_is_refused_with_the_limit_not_taken_and_lost(tmp_path):
    web = door(tmp_path, watch="team-a")
    longest = 200 - len("push:team-a/")
    too_long = web.post("/api/ingest", json={"run": "r" * (longest + 1), "samples": samples(1)}, headers=AUTH)
    assert too_long.status_code == 422, too_long.text
    error = too_long.json()["error"]
    assert f"run names of at most {longest}" in error and "push:team-a/<name>" in error, error
    fits = web.post("/api/ingest", json={"run": "r" * longest, "samples": samples(3)}, headers=AUTH)
    assert fits.status_code == 202, fits.text
    got = read(tmp_path, "team-a")
    assert [r.run for r in got.runs] == [f"push:team-a/{'r' * longest}"], "the run taken is read, not dropped"
    assert len(got.samples) == 3


def test_a_batch_over_the_burst_is_a_413_saying_what_fits_and_the_client_splits_to_it(tmp_path):
    web = door(tmp_path, burst=10, rate=1000.0)
    big = web.post("/api/ingest", json={"run": "job", "samples": samples(50)}, headers=AUTH)
    assert big.status_code == 413, f"not a 429 to retry forever: {big.status_code} {big.text}"
    assert "at most 10 samples" in big.json()["error"] and "push.burst" in big.json()["error"]
    assert "retry-after" not in big.headers

    def post(url: str, body: bytes, headers: Mapping[str, str]) -> Reply:  # to the door in process
        r = web.post(url.removeprefix("http://testserver"), content=body, headers=dict(headers))
        return Reply(r.status_code, {k.lower(): v for k, v in r.headers.items()}, r.text)

    pusher = Pusher("job", url="http://testserver", token=TOKEN, sleep=lambda s: None, post=post)
    now = time.time()
    for step in range(50):
        pusher.log(step, {"train/loss": 2.0 - step / 100}, t=now)
    pusher.flush()
    steps = sorted(s.step for s in read(tmp_path).samples)
    assert steps == list(range(50)), "all 50 samples delivered, in requests of at most 10"


def test_concurrent_first_pushes_never_make_more_runs_than_max_runs(tmp_path):
    web = door(tmp_path, max_runs=3)
    start = threading.Barrier(12)
    answers: list[tuple[int, str]] = []

    def push(i: int) -> None:
        start.wait()
        r = web.post("/api/ingest", json={"run": f"job-{i}", "samples": samples(1)}, headers=AUTH)
        answers.append((r.status_code, r.json().get("error", "")))

    threads = [threading.Thread(target=push, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(code for code, _ in answers) == [202] * 3 + [409] * 9, answers
    assert all("already has 3 pushed runs (push.max_runs)" in e for code, e in answers if code == 409)
    assert len(read(tmp_path).runs) == 3
