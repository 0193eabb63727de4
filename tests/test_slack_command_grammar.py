"""What ``/herowatch <text>`` asks for (monitor/web/slack/grammar.py): a table over the text, no I/O.
Anything not understood is help with the reason, never an action."""

from __future__ import annotations

import pytest

from monitor.web.slack.grammar import USAGE, Ack, Help, Report, Silence, Stacks, Status, parse

CASES = [
    ("", Help()),
    ("   ", Help()),
    ("help", Help()),
    ("HELP", Help()),
    ("status", Status(None)),
    ("status hero-70b", Status("hero-70b")),
    ('status "my run 3"', Status("my run 3")),
    ("status \u201cmy run 3\u201d", Status("my run 3")),  # Slack's curly quotes
    ("status wandb:team/llm/abc123", Status("wandb:team/llm/abc123")),
    ("ack 42", Ack(alert_id=42, run=None)),
    ("ack #42", Ack(alert_id=42, run=None)),
    ("acknowledge 42", Ack(alert_id=42, run=None)),
    ("ack hero-70b", Ack(alert_id=None, run="hero-70b")),
    ("ack 42b", Ack(alert_id=None, run="42b")),
    (
        "silence hero-70b 2h restoring from step 41000",
        Silence("hero-70b", 7200.0, "restoring from step 41000"),
    ),
    ("silence hero-70b 1h30m flaky exporter", Silence("hero-70b", 5400.0, "flaky exporter")),
    ('silence "my run" 45m "known slow eval"', Silence("my run", 2700.0, "known slow eval")),
    ("report", Report()),
    ("report please", Report()),
    ("stacks hero-70b", Stacks("hero-70b")),
    ('stacks "my run 3"', Stacks("my run 3")),
]


@pytest.mark.parametrize("text, expected", CASES)
def test_understood(text, expected):
    assert parse(text) == expected


REFUSED = [
    ("ack", "say what to acknowledge"),
    ("stacks", "say which run"),
    ("silence hero-70b 2h", "say which run, for how long and why"),
    ("silence hero-70b", "say which run, for how long and why"),
    ("silence hero-70b soon because", "`soon` is not a duration"),
    ("silence hero-70b 2 because", "`2` needs its unit"),
    ("silence hero-70b 0s because", "longer than 0s"),
    ("restart hero-70b", "`restart` is not a /herowatch command"),
    ('status "unclosed', "could not read"),
]


@pytest.mark.parametrize("text, says", REFUSED)
def test_not_understood_is_help_with_the_reason(text, says):
    got = parse(text)
    assert isinstance(got, Help) and got.problem is not None and says in got.problem, got


def test_the_usage_names_every_command():
    for word in ("status", "ack", "silence", "stacks", "report", "help"):
        assert f"/herowatch {word}" in USAGE
