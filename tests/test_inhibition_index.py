"""The indexed inhibition check (what delivery uses for every alert of a claim) answers as the plain
scan over the firing alerts does."""

import itertools

from alerts.inhibition import InhibitIndex, InhibitRule, inhibited

RULES = [
    InhibitRule.parse(['alertname="run_crashed"'], ['alertname=~"progress_stalled|telemetry_gone"']),
    InhibitRule.parse(['alertname="source_unavailable"'], ['severity!="info"'], equal=("watch",)),
    InhibitRule.parse(['alertname="node_down"'], ['alertname="slow_node"'], equal=("run", "node")),
]
NAMES = ["run_crashed", "progress_stalled", "telemetry_gone", "source_unavailable", "node_down", "slow_node"]


def _labels(name: str, run: str, watch: str, node: str | None, severity: str) -> dict[str, str]:
    out = {"alertname": name, "run": run, "watch": watch, "severity": severity}
    if node is not None:
        out["node"] = node
    return out


def test_the_index_answers_as_the_scan_for_every_alert():
    every = [
        _labels(*combo)
        for combo in itertools.product(NAMES, ["r1", "r2"], ["w1", "w2"], [None, "n1"], ["info", "page"])
    ]
    firing = every[::3]  # some of them fire
    index = InhibitIndex(firing, RULES)
    answers = [index.inhibited(labels) for labels in every]
    assert answers == [inhibited(labels, firing, RULES) for labels in every]
    assert any(answers) and not all(answers)  # both answers occur


def test_an_alert_does_not_inhibit_itself_and_labels_must_be_equal():
    crashed = {"alertname": "run_crashed", "run": "r1"}
    stalled = {"alertname": "progress_stalled", "run": "r1"}
    index = InhibitIndex([crashed, stalled], RULES[:1])
    assert index.inhibited(stalled)
    assert not index.inhibited({"alertname": "progress_stalled", "run": "r2"})
    assert not index.inhibited(crashed)
    assert not InhibitIndex([stalled], RULES[:1]).inhibited(stalled)
