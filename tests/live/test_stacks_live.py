"""Why a job hangs, live: ``herowatch serve`` as a real process, ``herowatch emit run`` wrappers around
plain-Python jobs (``stacks_job.py``: ranks with RANK/LOCAL_RANK in their environments), real py-spy.

- 64 ranks on 8 "nodes" (8 wrappers): rank 0 steps, then every rank hangs, 61 in ``barrier``, rank 17
  in ``read_chunk``, ranks 40 and 41 in ``load_shard``. The hang's FIRST page names both odd groups,
  with their ranks, nodes and calls, and the majority they hold up; the API and ``herowatch stacks``
  say the same; a responder's capture is in the audit trail.
- A wrapper whose py-spy may not read the processes (run as ``nobody``): the page says stacks were
  not available, and why.
- A py-spy that hangs is cut at ``--stack-timeout`` and the capture says so.
- A wrapper that cannot reach herowatch: the job runs, its output and exit code are the job's own.
- The door: a huge push is a 413, a hostile one a 422, an unasked capture a 409, no token a 401.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.conftest import REPO
from tests.live.sources_support import INGEST_TOKEN, source_stack
from tests.live.support import API_TOKEN, wait_for
from tests.prometheus_server import free_port

JOB = str(Path(__file__).with_name("stacks_job.py"))
PUSH = "    push: {token_env: HERO_INGEST_TOKEN}"
RULES = "        progress_stalled: {floor: 6s, startup: 60s}\n"
PY_SPY = shutil.which("py-spy", path=os.path.dirname(sys.executable))


def wrapper(url: str, run: str, node: str, *job: str, env: dict, extra: tuple = ()) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "monitor.cli",
            "emit",
            "run",
            "--run",
            run,
            "--url",
            url,
            "--node",
            node,
            *extra,
            "--",
            sys.executable,
            JOB,
            *job,
        ],
        cwd=REPO,
        env={**env, "HEROWATCH_INGEST_TOKEN": INGEST_TOKEN, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def nodes(
    url: str, run: str, count: int, ranks: int, read: int, env: dict, *more: str
) -> list[subprocess.Popen]:
    """``count`` nodes of ``ranks`` ranks each, under a wrapper each, whose rank ``read`` hangs in a read;
    node 0's rank 0 logs the steps (25 of them) to herowatch as run ``run``."""
    procs = []
    for n in range(count):
        job = ["--ranks", str(ranks), "--base", str(ranks * n), "--read", str(read), *more]
        if n == 0:
            job += ["--steps", "25", "--run", run, "--url", url]
        procs.append(wrapper(url, run, f"node-{n}", *job, env=env))
    return procs


def stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            p.kill()


def test_64_ranks_on_8_nodes_the_first_hang_page_names_both_odd_groups(tmp_path):
    with source_stack(tmp_path) as stack:
        hw = stack.serve(stack.write_config(PUSH, RULES))
        env = stack.env()
        procs = []
        try:
            procs += nodes(hw.url, "job-64", 8, 8, 17, env, "--load", "40,41")
            # ---- a wrapper without the permission to read its processes (py-spy as nobody) -------------
            nobody = f"runuser -u nobody -- {PY_SPY}"
            procs.append(
                wrapper(
                    hw.url,
                    "job-noperm",
                    "node-x",
                    "--ranks",
                    "2",
                    "--steps",
                    "25",
                    "--run",
                    "job-noperm",
                    "--url",
                    hw.url,
                    env=env,
                    extra=("--py-spy", nobody),
                )
            )
            t0 = time.monotonic()
            page = wait_for(lambda: stack.pages("job-64"), 60, "the hang page of job-64", seen=stack.pages)
            first = page[0]
            print(f"first page after {time.monotonic() - t0:.1f}s:\n{first}")
            assert "progress_stalled" in first or "no new step" in first, first
            assert "61 of 64 ranks wait in `barrier`" in first, first
            assert "rank 17 on node-2 is in `read_chunk`" in first, first
            assert "ranks 40-41 on node-5 are in `read_chunk_of_shard`" in first, first
            assert " since " in first, first  # how long the run has been stuck

            denied = wait_for(lambda: stack.pages("job-noperm"), 60, "the hang page of job-noperm")
            assert "stacks not available" in denied[0] and "no permission" in denied[0], denied[0]
            assert "CAP_SYS_PTRACE" in denied[0], denied[0]

            # ---- the API: every group with its counts and stacks -----------------------------------------
            got = hw.api("/api/runs/push:live%2Fjob-64/stacks")
            groups = got["report"]["groups"]
            assert [g["count"] for g in groups] == [61, 1, 2], groups
            assert [g["odd"] for g in groups] == [False, True, True]
            assert groups[1]["frames"][0].startswith("read_chunk (tests/live/stacks_job.py:"), groups[1]
            assert sorted(got["answered"]) == [f"node-{n}" for n in range(8)]

            # ---- on demand, through the CLI: a responder's capture, in the audit trail ----------------
            done = subprocess.run(
                [sys.executable, "-m", "monitor.cli", "stacks", "push:live/job-64", "--url", hw.url],
                cwd=REPO,
                env={**env, "HEROWATCH_API_TOKEN": API_TOKEN},
                capture_output=True,
                text=True,
                timeout=90,
            )
            assert done.returncode == 0, done.stderr
            assert "rank 17 on node-2 is in `read_chunk`" in done.stdout, done.stdout
            audit = hw.api("/api/audit?action=stacks_capture")
            assert audit and audit[0]["run"] == "push:live/job-64" and audit[0]["door"] == "cli", audit
            assert hw.errors() == ""
        finally:
            stop(procs)


def test_a_py_spy_that_hangs_is_cut_and_said(tmp_path):
    hanging = tmp_path / "py-spy-hangs"
    hanging.write_text("#!/bin/sh\nsleep 30\n")
    hanging.chmod(hanging.stat().st_mode | stat.S_IEXEC)
    with source_stack(tmp_path) as stack:
        hw = stack.serve(stack.write_config(PUSH, RULES))
        env = stack.env()
        w = wrapper(
            hw.url,
            "job-slow",
            "node-s",
            "--ranks",
            "2",
            "--steps",
            "3",
            "--run",
            "job-slow",
            "--url",
            hw.url,
            env=env,
            extra=("--py-spy", str(hanging), "--stack-timeout", "1"),
        )
        try:
            wait_for(lambda: hw.api("/api/runs").__len__() and _run(hw, "push:live/job-slow"), 30, "the run")
            auth = {"Authorization": f"Bearer {API_TOKEN}"}
            url = hw.url + "/api/runs/push:live%2Fjob-slow/stacks"
            asked = wait_for(lambda: _post_ok(url, auth), 30, "a wrapper to connect")
            assert asked["nodes"] == ["node-s"]
            got = wait_for(
                lambda: (g := hw.api("/api/runs/push:live%2Fjob-slow/stacks"))["report"] and g,
                30,
                "the capture",
            )
            assert "timed out after 1s" in got["report"]["summary"], got["report"]
        finally:
            stop([w])


def _run(hw, run_id: str) -> bool:
    return any(r["id"] == run_id for r in hw.api("/api/runs"))


def _post_ok(url: str, headers: dict) -> dict | None:
    r = httpx.post(url, headers=headers, timeout=10)
    return r.json() if r.status_code == 202 else None


def test_a_wrapper_that_cannot_reach_herowatch_leaves_the_job_alone(tmp_path):
    closed = f"http://127.0.0.1:{free_port()}"
    t0 = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "monitor.cli",
            "emit",
            "run",
            "--run",
            "job-x",
            "--url",
            closed,
            "--",
            sys.executable,
            "-c",
            "import time; time.sleep(1); print('trained 10 steps'); raise SystemExit(3)",
        ],
        cwd=REPO,
        env={**os.environ, "HEROWATCH_INGEST_TOKEN": INGEST_TOKEN},
        capture_output=True,
        text=True,
        timeout=120,
    )
    took = time.monotonic() - t0
    assert done.returncode == 3, done.stderr
    assert done.stdout == "trained 10 steps\n"
    assert "cannot reach herowatch" in done.stderr or "could not report" in done.stderr, done.stderr
    assert took < 20, f"the wrapper held the job's end {took:.0f}s"


def test_the_stacks_door_bounds_and_refuses(tmp_path):
    with source_stack(tmp_path) as stack:
        hw = stack.serve(stack.write_config(PUSH, RULES))
        ok = {"Authorization": f"Bearer {INGEST_TOKEN}"}
        url = hw.url + "/api/ingest/stacks"
        body = {"run": "job-a", "capture": "c1", "node": "n1", "t": time.time(), "processes": []}
        assert httpx.post(url, json=body).status_code == 401
        api = {"Authorization": f"Bearer {API_TOKEN}"}
        assert httpx.post(url, json=body, headers=api).status_code == 401
        huge = {**body, "processes": [{"pid": 1, "command": "x" * 300}] * 2000}
        r = httpx.post(url, json=huge, headers=ok)
        assert r.status_code == 413 and "at most" in r.text, r.text
        for bad in (
            {**body, "node": "a\nb"},
            {**body, "processes": [{"pid": -1}]},
            {**body, "processes": [{"pid": 1, "threads": [{"frames": [{"name": "f", "locals": {"x": 1}}]}]}]},
            {**body, "processes": [{"pid": 1}] * 300},
        ):
            r = httpx.post(url, json=bad, headers=ok)
            assert r.status_code == 422, (bad, r.text)
        r = httpx.post(url, content=b"{not json", headers=ok)
        assert r.status_code == 422, r.text
        r = httpx.post(url, json=body, headers=ok)
        assert r.status_code == 409 and "did not ask" in r.text, r.text
        poll = httpx.post(
            hw.url + "/api/ingest/stacks/poll", json={"run": "job-a", "node": "n1", "wait": 0}, headers=ok
        )
        assert poll.status_code == 204, poll.text
        r = httpx.post(hw.url + "/api/runs/push:live%2Fnope/stacks", headers=api)
        assert r.status_code == 404, r.text
        assert hw.errors() == ""


def test_a_node_that_never_answers_is_named_on_the_page_after_the_hold_setting(tmp_path):
    """HEROWATCH_STACKS_HOLD=3s: a hang's first page waits 3 s (not 30) for the nodes, then goes out
    with the answers it has and names the node whose wrapper polled and then went silent (a node
    that died); the run page says the same."""
    with source_stack(tmp_path) as stack:
        stack.extra_env["HEROWATCH_STACKS_HOLD"] = "3s"
        hw = stack.serve(stack.write_config(PUSH, RULES))
        env = stack.env()
        job = ["--ranks", "3", "--read", "1", "--steps", "25", "--run", "job-ghost", "--url", hw.url]
        w = wrapper(hw.url, "job-ghost", "node-0", *job, env=env)
        try:
            ghost = httpx.post(  # node-1's wrapper polls once, then its node is gone
                hw.url + "/api/ingest/stacks/poll",
                json={"run": "job-ghost", "node": "node-1", "wait": 0},
                headers={"Authorization": f"Bearer {INGEST_TOKEN}"},
                timeout=10,
            )
            assert ghost.status_code == 204, ghost.text
            page = wait_for(lambda: stack.pages("job-ghost"), 60, "the hang page", seen=stack.pages)[0]
            print(page)
            # the page went out after the 3 s hold (and the next delivery pass), not after 30 s
            assert re.search(r"stacks not available: node-1: no answer within [3-6]s\.", page), page
            assert "rank 1 on node-0 is in `read_chunk`" in page, page  # node-0's answer is on it
            html = httpx.get(hw.url + "/runs/push:live%2Fjob-ghost", timeout=10).text
            assert "node-1: no answer within" in html and "1 of 2 nodes answered" in html, html[-3000:]
            assert hw.errors() == ""
        finally:
            stop([w])
