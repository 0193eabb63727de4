"""Quiet about what does not matter, live (issue 26, point 1): ``herowatch serve`` as a real process
against the W&B and Slack stand-ins and a real Prometheus, read through what the Slack channel received.

- a healthy run that logs no grad norm (as many trainers do by default) gets no Slack message in its
  first 10 minutes: 350 steps, what a 1.7 s/step run logs in 10 minutes, logged here every 0.1 s;
- a run that logs its loss under an unknown name (and no grad norm either) gets exactly one message,
  naming the missing loss and the keys the run does log; the grad norm is named nowhere;
- the healthy run's optional inputs are shown: its coverage says ``unused``, the API lists them,
  ``herowatch doctor`` names them as not logged (and fails the run with the unknown loss name).
"""

from __future__ import annotations

import time

from tests.live.support import Stack, dump, live_stack, wait_for
from tests.live.test_blind_live import doctor

OK, NAMES = "hero-no-gnorm", "hero-objective"
TEN_MINUTES = 350  # steps of a 1.7 s/step run


def pages_about(stack: Stack, run: str) -> list[str]:
    return [p for p in stack.pages() if f"on run {run} " in p]


def test_no_grad_norm_pages_nobody_and_an_unknown_loss_name_is_one_message(tmp_path):
    started = time.monotonic()
    names = {OK: ("train/loss", None), NAMES: ("objective", None)}
    with live_stack(
        tmp_path, [OK, NAMES], f"sqlite:///{tmp_path / 'hw.db'}", names=names, every=0.1
    ) as stack:
        cfg = stack.write_config("        progress_stalled: {floor: 6s, startup: 30s}\n")
        # as for a run watched in production, Prometheus has the pods' series when herowatch first looks
        # (here it has just started: a fresh scrape is queryable only after a few seconds)
        for metric in ("container_oom_events_total", "kube_pod_container_status_restarts_total"):
            wait_for(lambda m=metric: len(stack.prometheus.query(m)) >= 2, 60, f"{metric} in Prometheus")
        hw = stack.serve(cfg)
        wait_for(lambda: pages_about(stack, NAMES), 90, f"the watching_blind message of {NAMES}")
        wait_for(lambda: stack.trainer.step[OK] >= TEN_MINUTES, 120, f"{TEN_MINUTES} steps of {OK}")
        time.sleep(
            3
        )  # the polls of the last steps judged and delivered (poll_interval 1s, group_interval 1s)

        pages = stack.pages()
        assert pages_about(stack, OK) == [], dump(stack)
        assert len(pages) == 1, dump(stack)
        flat = " ".join(pages[0].split())
        assert "watching_blind" in flat and "no value of train/loss" in flat, flat
        assert "the run logs 'objective'" in flat and "{objective: train/loss}" in flat, flat
        assert "grad/norm/total" not in flat and "restarts_total" not in flat, flat

        cov = hw.api(f"/api/runs/{OK}/coverage")
        by_rule = {r["rule"]: r["state"] for r in cov["rules"]}
        assert cov["state"] == "covered" and by_rule["grad_norm_high"] == "unused", cov
        runs = {r["title"] if "title" in r else r["id"]: r for r in hw.api("/api/runs")}
        ok = next(r for r in runs.values() if r.get("name") == OK or r.get("display_name") == OK)
        assert "grad/norm/total" in ok["unlogged_inputs"] and ok["problem"] == "Healthy", ok
        report = doctor(stack, cfg).stdout
        flat = " ".join(report.split())
        assert f"ok   run {OK}:" in report, report
        assert "not logged (optional: shown, never paged):" in flat and "grad/norm/total" in flat, report
        assert f"FAIL run {NAMES}:" in report and "no value of train/loss" in flat, report
        hw.stop()
        for proc in stack.procs:
            assert proc.errors() == "", proc.errors()
    print(f"wall time of this test: {time.monotonic() - started:.1f}s")
