"""What a ``/herowatch`` command asks for, from the text after the command: a typed request, or help
with the reason the text was not understood. Pure: no I/O, table-tested (tests/test_slack_command_grammar.py).

    /herowatch status [run]
    /herowatch ack <alert id | run>
    /herowatch silence <run> <duration> <reason>
    /herowatch stacks <run>
    /herowatch report
    /herowatch help

A run with spaces in its name is quoted (``"my run"``); Slack's curly quotes count as quotes.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from alerts.durations import parse_duration

COMMAND = "/herowatch"


@dataclass(frozen=True)
class Status:
    run: str | None  # None: every run


@dataclass(frozen=True)
class Ack:
    alert_id: int | None  # one alert, by the id the status and the dashboard show...
    run: str | None  # ...or every firing alert of a run


@dataclass(frozen=True)
class Silence:
    run: str
    seconds: float
    reason: str


@dataclass(frozen=True)
class Stacks:
    run: str  # capture this run's stacks now


@dataclass(frozen=True)
class Report:
    pass


@dataclass(frozen=True)
class Help:
    problem: str | None = None  # why the text was not understood (None: help was asked for)


Request = Status | Ack | Silence | Stacks | Report | Help

_ALERT_ID = re.compile(r"#?(\d{1,12})")
_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'"})

USAGE = (
    f"*{COMMAND}* asks herowatch about the training runs it watches, and acts on their alerts:\n"
    f"• `{COMMAND} status`: every run's health, step, ETA, goodput and firing alerts\n"
    f"• `{COMMAND} status <run>`: one run in detail, with its alerts' ids\n"
    f"• `{COMMAND} ack <alert id>` or `{COMMAND} ack <run>`: take an alert (or every alert firing on a "
    "run): no more reminders until it resolves or fires again\n"
    f"• `{COMMAND} silence <run> <duration> <reason>`: mute a run's alerts for a while, e.g. "
    f"`{COMMAND} silence hero-70b 2h restoring from the step 41000 checkpoint`\n"
    f"• `{COMMAND} stacks <run>`: capture where every rank of a run is now (its `herowatch emit run` "
    "wrappers' py-spy), grouped, the odd ranks named\n"
    f"• `{COMMAND} report`: this week's summary\n"
    f"• `{COMMAND} help`: this\n"
    "Answers are shown to you only. What you acknowledge or silence is named after you on the alert's "
    "timeline and in its Slack thread."
)


def words_of(text: str) -> list[str]:
    """The words of a command line; raises ValueError for an unclosed quote."""
    return shlex.split(text.translate(_QUOTES))


def parse(text: str) -> Request:
    try:
        words = words_of(text)
    except ValueError as exc:
        return Help(f"could not read `{text[:100]}`: {exc}")
    if not words:
        return Help()
    verb, args = words[0].lower(), words[1:]
    if verb in ("help", "-h", "--help", "?"):
        return Help()
    if verb == "status":
        return Status(" ".join(args) or None)
    if verb in ("ack", "acknowledge"):
        return _ack(args)
    if verb == "silence":
        return _silence(args)
    if verb == "stacks":
        if not args:
            return Help(f"say which run: `{COMMAND} stacks hero-70b`")
        return Stacks(" ".join(args))
    if verb == "report":
        return Report()
    return Help(f"`{verb[:40]}` is not a {COMMAND} command")


def _ack(args: list[str]) -> Request:
    if not args:
        return Help(f"say what to acknowledge: an alert's id (`{COMMAND} ack 123`) or a run")
    target = " ".join(args)
    number = _ALERT_ID.fullmatch(target)
    if number:
        return Ack(alert_id=int(number.group(1)), run=None)
    return Ack(alert_id=None, run=target)


def _silence(args: list[str]) -> Request:
    if len(args) < 3:
        return Help(
            f"say which run, for how long and why: `{COMMAND} silence hero-70b 2h restoring a checkpoint`"
        )
    run, duration, reason = args[0], args[1], " ".join(args[2:])
    if duration.replace(".", "", 1).isdigit():  # "2": hours? minutes? say it
        return Help(f"`{duration}` needs its unit: e.g. 30m, 2h or 1d")
    try:
        seconds = parse_duration(duration)
    except (ValueError, TypeError):
        return Help(f"`{duration[:40]}` is not a duration: use e.g. 30m, 2h or 1d")
    if seconds <= 0:
        return Help("a silence lasts longer than 0s")
    return Silence(run=run, seconds=seconds, reason=reason)
