"""The Slack notifier built from the receiver config and the env token, the error without a token,
and the token staying out of logs, errors and reprs."""

from __future__ import annotations

import logging

import pytest

from alerts.notifiers.registry import BuildContext, build_notifier, kinds
from tests.slack_notifier.support import CH, TOKEN, loss_series, make, note


def test_the_registry_builds_it_from_the_receiver_config_and_the_env_token(slack, monkeypatch):
    from monitor.config import parse_config

    assert "slack" in kinds()
    monkeypatch.delenv("SLACK_BOT_TOKEN", raising=False)
    cfg = parse_config(
        "route: {receiver: oncall}\nreceivers:\n"
        f"  - {{name: oncall, kind: slack, channel: {CH}, base_url: '{slack.api_url}', timeout: 2s}}\n"
    )
    notifier = build_notifier(cfg.receivers[0], BuildContext(env={"SLACK_BOT_TOKEN": TOKEN}))
    assert notifier._client.timeout == 2.0
    assert notifier.send(note("n-open")).ok and len(slack.roots(CH)) == 1


def test_no_token_is_a_clear_configuration_error(monkeypatch):
    from monitor.config import parse_config

    monkeypatch.delenv("SLACK_BOT_TOKEN", raising=False)
    cfg = parse_config(
        f"route: {{receiver: oncall}}\nreceivers: [{{name: oncall, kind: slack, channel: {CH}}}]\n"
    )
    with pytest.raises(ValueError, match="SLACK_BOT_TOKEN"):
        build_notifier(cfg.receivers[0], BuildContext(env={}))


def test_the_token_never_appears_in_logs_errors_or_repr(slack, caplog):
    caplog.set_level(logging.DEBUG)  # every logger, slack_sdk's request logging included
    wrong = "xoxb-test-wrong-1111"
    good, bad = make(slack, timeout=1.0), make(slack, token=wrong)
    results = [good.send(note("n-1", series=loss_series())), bad.send(note("n-2"))]
    slack.fail(500, methods=["chat.postMessage"])
    results.append(good.send(note("n-3")))
    slack.slow(4.0, methods=["chat.postMessage"])
    results.append(good.send(note("n-4")))
    slack.fail(500, methods=["files.getUploadURLExternal"])
    results.append(good.send(note("n-5", series=loss_series())))
    assert [r.ok for r in results] == [True, False, False, False, True]
    seen = caplog.text + " ".join(str(r) for r in results) + repr(good) + repr(bad)
    assert "Failed to send a request" in caplog.text or "plot for group" in caplog.text  # logs were captured
    for token in (TOKEN, wrong):
        assert token not in seen
