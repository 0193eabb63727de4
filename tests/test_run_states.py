"""A run's state is a ``RunState`` from where a source's data enters herowatch: the sources' words
(W&B's, MLflow's, a pushed run's) are turned into one once, the stored text stays what it was."""

from __future__ import annotations

import json

from monitor.rules.stall import StallDetector
from monitor.samples import RunInfo, RunState, Sample
from monitor.sources.base import PollResult
from tests.rules.helpers_rules import T0, feed, rule


def test_a_sources_words_become_run_states_at_the_boundary() -> None:
    raw = PollResult(
        samples=[
            Sample(T0, "r", state=" Crashed "),
            Sample(T0 + 1, "r", state="PREEMPTED"),
            Sample(T0 + 2, "r"),
        ],
        runs=[RunInfo(run="r", source="push", state="killed"), RunInfo(run="q", source="push")],
    ).validated()
    assert [s.state for s in raw.samples] == [RunState.CRASHED, RunState.PREEMPTED, None]
    assert all(type(s.state) is RunState for s in raw.samples[:2])
    assert [(r.run, r.state) for r in raw.runs] == [("r", RunState.KILLED), ("q", None)]
    assert type(raw.runs[0].state) is RunState
    # the values are the strings stored, written in traces and shown by the API before
    assert json.dumps({"state": raw.samples[0].state}) == '{"state": "crashed"}'


def test_a_state_herowatch_does_not_know_is_no_news_the_stall_still_watches() -> None:
    (odd,) = PollResult(samples=[Sample(T0 + 100, "r", state="stopping")]).validated().samples
    assert odd.state is RunState.UNKNOWN
    det = StallDetector(rule(kind="stall"), "r")
    feed(det, [Sample(T0 + 10 * i, "r", i, {"train/loss": 2.0}, RunState.RUNNING) for i in range(10)] + [odd])
    assert det.evaluate(T0 + 3600).active  # an hour without a step: stalled, whatever the word was


def test_a_detectors_snapshot_keeps_the_state_as_its_text() -> None:
    det = StallDetector(rule(kind="stall"), "r")
    feed(det, [Sample(T0 + 10 * i, "r", i, {"train/loss": 2.0}, RunState.CRASHED) for i in range(3)])
    saved = det.export_state()
    assert saved["state"]["state"] == "crashed"
    again = StallDetector(rule(kind="stall"), "r")
    assert again.import_state(json.loads(json.dumps(saved)))
    assert again.state == RunState.CRASHED and not again.evaluate(T0 + 10 * 3600).active
