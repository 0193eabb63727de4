"""No blind page at start-up, live (issue 39, point 3): ``herowatch serve`` starts beside a Prometheus that
has just started and has not scraped yet, for a healthy run with a long W&B history. Prometheus has no
series for the OOM and restart counters until its first scrape, seconds later: that is no blindness
(the grace counts from herowatch's first look at those inputs, not from the run's history), so the
Slack channel receives nothing, and once the scrapes come the inputs are covered."""

from __future__ import annotations

import time

from tests.live.support import dump, live_stack, wait_for

RUN = "hero-healthy"
QUERIED = ("oom_kills_total", "restarts_total")


def queried_inputs(hw, run: str) -> dict[str, tuple[str, str]]:  # noqa: ANN001
    if not any(r.get("name") == run or r.get("display_name") == run for r in hw.api("/api/runs")):
        return {}  # herowatch has not found the run yet
    cov = hw.api(f"/api/runs/{run}/coverage")
    inputs = [i for r in cov["rules"] for i in r["inputs"]]
    return {i["name"]: (i["state"], i["why"]) for i in inputs if i["name"] in QUERIED}


def test_herowatch_started_with_a_fresh_prometheus_pages_nothing_for_a_healthy_run(tmp_path):
    started = time.monotonic()
    with live_stack(tmp_path, [RUN], f"sqlite:///{tmp_path / 'hw.db'}", every=0.1, scrape=False) as stack:
        cfg = stack.write_config("        progress_stalled: {floor: 6s, startup: 30s}\n")
        wait_for(lambda: stack.trainer.step[RUN] >= 200, 60, "a history of 200 steps in W&B")
        hw = stack.serve(cfg)
        # herowatch has looked at Prometheus for some polls and found no series: not blind, young
        wait_for(
            lambda: (got := queried_inputs(hw, RUN)) and all("first looked" in w for _, w in got.values()),
            60,
            "the queried inputs judged young (first looked for, none yet)",
        )
        looked = time.monotonic()
        wait_for(lambda: time.monotonic() - looked > 8, 20, "8 more polls without the series")
        assert stack.pages() == [], dump(stack)
        stack.scrape()  # Prometheus's first scrape
        for metric in ("container_oom_events_total", "kube_pod_container_status_restarts_total"):
            wait_for(lambda m=metric: stack.prometheus.query(m), 60, f"{metric} in Prometheus")
        wait_for(
            lambda: (got := queried_inputs(hw, RUN)) and all(st == "covered" for st, _ in got.values()),
            60,
            "the queried inputs covered once scraped",
        )
        time.sleep(3)  # the last polls judged and delivered (poll_interval 1s, group_interval 1s)
        assert stack.pages() == [], dump(stack)
        hw.stop()
        for proc in stack.procs:
            assert proc.errors() == "", proc.errors()
    print(f"wall time of this test: {time.monotonic() - started:.1f}s")
