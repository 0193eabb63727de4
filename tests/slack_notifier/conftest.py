"""Fixtures of the Slack notifier tests: a Slack stand-in (tests/standins/slack/) with the test token
and channel, and a notifier pointed at it through the real slack-sdk."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from alerts.notifiers.slack.notifier import SlackNotifier
from tests.slack_notifier.support import CH, TOKEN, make
from tests.standins.slack import SlackStandin


@pytest.fixture
def slack() -> Iterator[SlackStandin]:
    with SlackStandin(token=TOKEN, channels=[CH]) as s:
        yield s


@pytest.fixture
def notifier(slack: SlackStandin) -> SlackNotifier:
    return make(slack)
