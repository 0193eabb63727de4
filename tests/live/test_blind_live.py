"""Never watch blind, live: ``herowatch serve`` as a real process against the W&B and Slack stand-ins and
a real Prometheus, read through what the Slack channel received; then ``herowatch doctor`` against the
same set-up.

- a run whose loss is logged under a name no profile knows gets exactly one watching_blind message,
  naming the run, the missing loss input and the keys it logs, and no other page while it is healthy;
- a run whose pods are missing from the exporter gets the Prometheus variant with the label hint;
- a fully covered run gets nothing; when the exporter starts exposing the missing pods, that warning
  resolves;
- doctor: exit 1 with each problem and its fix (incl. a Slack not_in_channel and a missing scope);
  exit 0 once the set-up is right.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

from tests.conftest import REPO
from tests.live.support import CHANNEL, Stack, alerts_of, dump, live_stack, wait_for

OK, NAMES, PODS = "hero-ok", "hero-names", "hero-pods"
RUNS = [OK, NAMES, PODS]


def blind_pages(stack: Stack, run: str) -> list[str]:
    return [p for p in stack.pages() if f"watching_blind on run {run} " in p]


def doctor(stack: Stack, config, *args: str) -> subprocess.CompletedProcess:  # noqa: ANN001
    return subprocess.run(
        [sys.executable, "-m", "monitor.cli", "doctor", "--config", str(config), *args],
        cwd=REPO,
        env={**stack.env(), "COLUMNS": "80"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_blind_runs_warn_once_resolve_and_doctor_says_why(tmp_path):
    started = time.monotonic()
    names = {NAMES: ("objective", "gnorm")}
    with live_stack(
        tmp_path, RUNS, f"sqlite:///{tmp_path / 'hw.db'}", names=names, pods=[OK, NAMES]
    ) as stack:
        cfg = stack.write_config("        progress_stalled: {floor: 6s, startup: 30s}\n")
        hw = stack.serve(cfg)
        t0 = time.monotonic()
        # the pods' series: a queried input, blind a minute after herowatch first looked (a scrape's time)
        wait_for(lambda: blind_pages(stack, NAMES) and blind_pages(stack, PODS), 120, "the two warnings")
        print(f"run start -> watching_blind in the channel: {time.monotonic() - t0:.1f}s")

        [names_page] = blind_pages(stack, NAMES)
        flat = " ".join(names_page.split())
        assert "no value of train/loss" in flat and "loss_spike" in flat, flat
        assert "'objective'" in flat and "metrics: {objective: train/loss" in flat, flat
        [pods_page] = blind_pages(stack, PODS)
        flat = " ".join(pods_page.split())
        assert "oom_kills_total" in flat and 'container_oom_events_total{pod=~"hero\\\\-pods-.*"}' in flat, (
            flat
        )
        assert "container_oom_events_total exists for 2 pods (e.g. hero-names-0, hero-ok-0)" in flat, flat
        assert "matches none" in flat, flat

        # healthy meanwhile: nothing else pages, the covered run raises nothing
        time.sleep(6)
        pages = stack.pages()
        assert len(pages) == 2, dump(stack)
        assert not [p for p in pages if f"on run {OK} " in p], dump(stack)
        cov = hw.api(f"/api/runs/{OK}/coverage")
        assert cov["state"] == "covered", cov

        # doctor against the same set-up, with the bot also out of the channel and a scope missing
        stack.slack.outside.add(CHANNEL)
        stack.slack.scopes.remove("files:write")
        stack.slack.scopes.remove("channels:read")  # membership is then learnt from not_in_channel
        out = doctor(stack, cfg)
        report = out.stdout
        print(report)
        assert out.returncode == 1, out.stdout + out.stderr
        assert all(len(line) <= 80 for line in report.splitlines()), report
        flat = " ".join(report.split())
        assert f"FAIL run {NAMES}:" in report and "no value of train/loss" in flat
        assert "fix: add the mapping to the watch (metrics:" in flat
        assert f"FAIL run {PODS}:" in report and "exists for 2 pods" in flat
        assert "not_in_channel" in flat and f"invite it: type /invite @herowatch in {CHANNEL}" in flat
        assert "lacks files:write (to attach the plot (plots: true))" in flat
        assert (
            f"warn receiver oncall (slack): cannot read {CHANNEL}'s details: the token lacks channels:read"
            in flat
        )
        assert f"ok   run {OK}:" in report
        assert "doctor: " in out.stderr, "a progress line while it works"
        doc = json.loads(doctor(stack, cfg, "--json").stdout)
        assert doc["exit"] == 1 and by_title(doc, NAMES)["coverage"]["state"] == "blind"
        stack.slack.outside.clear()
        stack.slack.scopes.extend(["files:write", "channels:read"])

        # the exporter starts exposing the missing pods: that warning resolves
        stack.exporter.add_pod(PODS)
        wait_for(
            lambda: [a for a in alerts_of(hw, "watching_blind", "resolved") if a["run_title"] == PODS],
            40,
            "resolve",
        )
        assert [a["run_title"] for a in alerts_of(hw, "watching_blind", "firing")] == [NAMES]

        # a correct set-up: the unknown names mapped in the config, every pod exported
        fixed = stack.write_config(
            "        progress_stalled: {floor: 6s, startup: 30s}\n",
            extra="    metrics: {objective: train/loss, gnorm: grad/norm/total}\n",
        )
        good = doctor(stack, fixed)
        assert good.returncode == 0, good.stdout + good.stderr
        assert "0 problems" in good.stdout

        hw.stop()
        assert len(blind_pages(stack, NAMES)) == 1 and len(blind_pages(stack, PODS)) == 1, dump(stack)
        for proc in stack.procs:
            assert proc.errors() == "", proc.errors()
    print(f"wall time of this test: {time.monotonic() - started:.1f}s")


def by_title(doc: dict, title: str) -> dict:
    """The doctor's JSON for the run people call ``title`` (runs are keyed by herowatch's id)."""
    [run] = [r for r in doc["runs"].values() if r["title"] == title]
    return run
