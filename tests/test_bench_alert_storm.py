"""The storm bench's "none twice" is a real check: it counts posted messages per alert and fails when
one alert is delivered twice (a notifier that posts a group twice, on purpose here)."""

from __future__ import annotations

from typing import Any

from bench.alert_storm import run_storm, verdict


class PostsFirstGroupTwice:
    """A faulty sender: after the first group message is posted, it posts that message once more
    (the notifier itself refuses to post a group twice, so the copy goes around it, through the same
    Slack client, as a sender without that check would)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.doubled = inner, False

    def send(self, view: Any) -> Any:
        result = self.inner.send(view)
        if result.ok and not self.doubled:
            self.doubled = True
            channel, ts = result.ref.split(":")
            client = self.inner._client
            posted = client.conversations_history(channel=channel, latest=ts, inclusive=True, limit=1)
            message = posted["messages"][0]
            client.chat_postMessage(channel=channel, text=message["text"], blocks=message.get("blocks"))
        return result


def test_every_alert_of_a_storm_reaches_slack_exactly_once() -> None:
    storm = run_storm(alerts=60, runs=6)
    assert storm.reached == set(range(60))
    assert storm.twice == [] and set(storm.deliveries.values()) == {1}
    assert verdict(storm) is None


def test_an_alert_delivered_twice_fails_the_storm() -> None:
    storm = run_storm(alerts=60, runs=6, wrap=PostsFirstGroupTwice)
    assert storm.twice, "the doubled post was not counted"
    assert storm.lost == []
    problem = verdict(storm)
    assert problem is not None and "DUPLICATED" in problem
