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


def in_process(web: TestClient):  # noqa: ANN201 - the client's own requests, to the door in process
    def post(url: str, body: bytes, headers: Mapping[str, str]) -> Reply:
        r = web.post(url.removeprefix("http://testserver"), content=body, headers=dict(headers))
        return Reply(r.status_code, {k.lower(): v for k, v in r.headers.items()}, r.text)

    return post


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

    pusher = Pusher("job", url="http://testserver", token=TOKEN, sleep=lambda s: None, post=in_process(web))
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


def flood_body(i: int, names: int = 2000, chars: int = 195) -> dict:
    """The flood of issue 37: one sample of ``names`` metric names of ``chars`` characters each."""
    metrics = {f"m{i}-{k:05d}-".ljust(chars, "x"): 1.0 for k in range(names)}
    return {"run": f"flood-{i % 3}", "samples": [{"step": i, "metrics": metrics}]}


def spool_size(root) -> int:
    return sum(p.stat().st_size for p in root.rglob("*.jsonl"))


def test_the_flood_is_refused_and_the_spool_stays_under_its_budget(tmp_path):
    """3 clients, each request one sample of 2,000 names of 195 characters (413 KB): once 1,338 x 202 and
    547 MB of spool in 20 s. Now: 413 saying how many names a sample may hold; split to fit and with names
    too long, 422 naming the field; names that fit are taken until the byte budget, then 429 Retry-After."""
    web = door(tmp_path)  # the defaults
    answers: list = []

    def client(c: int) -> None:
        for i in range(c, 60, 3):
            answers.append(web.post("/api/ingest", json=flood_body(i), headers=AUTH))

    threads = [threading.Thread(target=client, args=(c,)) for c in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {r.status_code for r in answers} == {413}, [r.status_code for r in answers]
    assert answers[0].headers["X-Herowatch-Max-Metrics"] == "1000"
    assert "push.max_metrics" in answers[0].json()["error"]
    half = flood_body(0, names=1000)
    named = web.post("/api/ingest", json=half, headers=AUTH)
    assert named.status_code == 422 and "samples[0].metrics" in named.json()["error"], named.text
    assert "push.max_name" in named.json()["error"]
    assert spool_size(tmp_path) == 0, "nothing refused is written"


def test_a_flood_within_the_name_limits_meets_the_byte_budget_with_429_and_retry_after(tmp_path):
    """The spool is bounded by bytes, not samples: 1,000 names of 120 characters (125 KB a request)
    pushed by 3 clients: what the budget takes is on disk whole, the rest is 429 with Retry-After, and
    the spool never holds more than its budget unread."""
    budget = 2 << 20
    web = door(tmp_path, rate_bytes=64 << 10, burst_bytes=1 << 20, spool_bytes=budget)
    answers: list = []

    def client(c: int) -> None:
        for i in range(c, 90, 3):
            answers.append(web.post("/api/ingest", json=flood_body(i, 1000, 120), headers=AUTH))

    threads = [threading.Thread(target=client, args=(c,)) for c in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    codes = [r.status_code for r in answers]
    assert set(codes) == {202, 429}, codes
    taken = codes.count(202)
    assert 5 <= taken <= 12, f"1 MiB of burst (+64 KiB/s) takes about 8 of 125 KB: {taken}"
    refused = next(r for r in answers if r.status_code == 429)
    assert int(refused.headers["Retry-After"]) >= 1 and "push.rate_bytes" in refused.json()["error"]
    assert spool_size(tmp_path) <= budget
    got = read(tmp_path)
    assert len(got.samples) == taken, "everything answered 202 is read back, whole"
    assert all(len(s.metrics) == 1000 for s in got.samples)


def test_the_unread_spool_is_a_budget_the_poller_frees(tmp_path):
    web = door(tmp_path, rate_bytes=1 << 30, burst_bytes=1 << 20, spool_bytes=1 << 20)
    body = flood_body(0, 1000, 100)
    codes = [web.post("/api/ingest", json=body, headers=AUTH).status_code for _ in range(12)]
    assert codes.count(202) == 9 and codes[-1] == 429, codes  # 9 x 108 KB fit 1 MiB unread
    web.app.state.ingest.budgets.budgets["w"].counted = -1e9  # the door's listing is a second old
    full = web.post("/api/ingest", json=body, headers=AUTH)
    assert full.status_code == 429 and "not read yet (push.spool_bytes" in full.json()["error"]
    assert full.headers["Retry-After"]
    assert len(read(tmp_path).samples) == 9  # the poller reads it all: the budget is free again
    web.app.state.ingest.budgets.budgets["w"].counted = -1e9
    assert web.post("/api/ingest", json=body, headers=AUTH).status_code == 202


def test_the_client_splits_a_sample_with_too_many_metrics_and_waits_out_429(tmp_path):
    web = door(tmp_path, max_metrics=300, rate_bytes=100 << 10, burst_bytes=1 << 20)
    slept: list[float] = []
    clock = [time.monotonic()]
    web.app.state.ingest.budgets.clock = lambda: clock[0]

    def sleep(s: float) -> None:  # the client's wait moves the door's clock: no real sleep
        slept.append(s)
        clock[0] += s

    pusher = Pusher("job", url="http://testserver", token=TOKEN, sleep=sleep, batch=4, post=in_process(web))
    now = time.time()
    for step in range(200):  # 200 x 1,000 metrics: 3 MB, over the 1 MiB burst
        pusher.log(step, {f"gpu{g}/util": float(g) for g in range(1000)}, t=now)
    pusher.flush()
    samples = read(tmp_path).samples
    assert sorted({s.step for s in samples}) == list(range(200))
    per_step = {}
    for s in samples:
        per_step.setdefault(s.step, {}).update(s.metrics)
    assert all(len(m) == 1000 for m in per_step.values()), "every metric of every step arrived"
    assert max(len(s.metrics) for s in samples) <= 300
    assert slept and all(s >= 1 for s in slept), f"it waited as Retry-After said: {slept}"
