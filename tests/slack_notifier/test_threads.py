"""The Slack notifier through the real slack-sdk against the Slack stand-in: one root message per
group, updates edit the root and reply in its thread, reminders reply (broadcast or not), a missing or
deleted root gets a new one."""

from __future__ import annotations

import pytest

from alerts.notifiers.base import SendResult
from alerts.notifiers.slack.notifier import format_ref, parse_ref
from alerts.views import AlertView, GroupView
from tests.slack_notifier.support import CH, T0, TOKEN, alert, make, note, open_group, root_ts, texts


def test_open_posts_one_root_and_returns_its_ref(slack, notifier):
    ref = open_group(notifier)
    assert parse_ref(ref) == (CH, root_ts(ref)) and format_ref(CH, root_ts(ref)) == ref
    [root] = slack.roots(CH)
    assert root.ts == root_ts(ref) and root.thread_ts is None
    assert root.metadata == {
        "event_type": "herowatch_notification",
        "event_payload": {"key": "n-open", "group_key": "slack:0123456789abcdef"},
    }
    [post] = slack.calls_to("chat.postMessage")
    assert post.thread_ts is None
    assert post.headers["Authorization"] == f"Bearer {TOKEN}"
    assert post.headers["Content-Type"].startswith("application/json")


def test_update_replies_in_the_thread_and_updates_the_root(slack, notifier):
    ref = open_group(notifier)
    slack.reset_calls()
    joined = [
        alert(),
        alert(
            8,
            alertname="GradNormHigh",
            severity="warning",
            summary="Gradient norm at 80",
            value=80.0,
            threshold=50.0,
            step=1210,
            metric="train/grad_norm",
        ),
    ]
    result = notifier.send(note("n-upd", "update", joined, root_ref=ref, changed=[8]))
    assert result == SendResult.sent(ref)
    assert slack.methods() == ["chat.update", "conversations.replies", "chat.postMessage"]
    [update] = slack.calls_to("chat.update")
    assert update.body["ts"] == root_ts(ref) and update.body["channel"] == CH
    [reply_call] = slack.calls_to("chat.postMessage")
    assert reply_call.thread_ts == root_ts(ref) and not reply_call.body.get("reply_broadcast")

    assert len(slack.roots(CH)) == 1
    root = slack.message(CH, root_ts(ref))
    assert len(root.edits) == 1
    assert "LossSpike +1" in root.blocks[0]["text"]["text"]
    assert "GradNormHigh" in texts(root.blocks)  # the group's alert list on the root
    [reply] = slack.thread(CH, root_ts(ref))
    assert "GradNormHigh" in reply.text and "GradNormHigh" in texts(reply.blocks)
    assert "Gradient norm at 80" in texts(reply.blocks)
    assert reply.metadata["event_payload"]["key"] == "n-upd"


def test_resolved_is_shown_on_the_root_without_buttons(slack, notifier):
    ref = open_group(notifier)
    done = alert(state="resolved", ended_at=T0 + 3700, acked_by="U0ALICE")
    assert notifier.send(note("n-res", "update", [done], root_ref=ref, changed=[7])).ok
    root = slack.message(CH, root_ts(ref))
    header = root.blocks[0]["text"]["text"]
    assert header.startswith(":large_green_circle: RESOLVED") and "LossSpike" in header
    assert root.text.startswith("RESOLVED: LossSpike on run llama-70b")
    assert not [b for b in root.blocks if b["type"] == "actions"]
    assert "Acknowledged by <@U0ALICE>" in texts(root.blocks)
    assert "after 1h1m" in texts(root.blocks)
    [reply] = slack.thread(CH, root_ts(ref))
    assert "Resolved" in texts(reply.blocks)
    assert len(slack.roots(CH)) == 1


def test_repeat_replies_in_the_thread_only(slack, notifier):
    ref = open_group(notifier)
    before = slack.message(CH, root_ts(ref)).blocks
    slack.reset_calls()
    assert notifier.send(note("n-rep", "repeat", root_ref=ref)) == SendResult.sent(ref)
    assert "chat.update" not in slack.methods()
    [post] = slack.calls_to("chat.postMessage")
    assert post.thread_ts == root_ts(ref)
    assert post.body["reply_broadcast"] is True  # a reminder nobody sees is no reminder
    assert slack.message(CH, root_ts(ref)).blocks == before
    [reply] = slack.thread(CH, root_ts(ref))
    assert reply.text.startswith("Reminder: LossSpike still firing on run llama-70b")
    assert len([m for m in slack.roots(CH)]) == 1


def test_reminders_can_stay_in_the_thread(slack):
    notifier = make(slack, broadcast_reminders=False)
    ref = open_group(notifier)
    assert notifier.send(note("n-rep", "repeat", root_ref=ref)).ok
    [_, post] = slack.calls_to("chat.postMessage")
    assert post.thread_ts == root_ts(ref) and "reply_broadcast" not in post.body


@pytest.mark.parametrize("root_ref", [None, "", "garbage"])
def test_an_update_without_a_root_posts_a_new_root(slack, notifier, root_ref):
    result = notifier.send(note("n-upd", "update", root_ref=root_ref))
    assert result.ok
    [root] = slack.roots(CH)
    assert result.ref == format_ref(CH, root.ts)
    assert [c.thread_ts for c in slack.calls_to("chat.postMessage")] == [None]


def test_an_update_whose_root_was_deleted_posts_a_new_root(slack, notifier):
    gone = format_ref(CH, "1700000000.000100")
    result = notifier.send(note("n-upd", "update", root_ref=gone))
    assert result.ok and result.ref != gone
    [root] = slack.roots(CH)
    assert result.ref == format_ref(CH, root.ts)


def test_a_plain_notification_without_group_data_posts_a_root(slack, notifier):
    n = GroupView.single(
        "wd-1",
        "slack",
        AlertView.from_dict(
            {
                "alertname": "Watchdog",
                "severity": "info",
                "labels": {"alertname": "Watchdog"},
                "summary": "herowatch is alive (dead man's switch)",
                "started_at": T0,
            }
        ),
    )
    assert notifier.send(n).ok
    [root] = slack.roots(CH)
    assert "Watchdog" in root.blocks[0]["text"]["text"] and "INFO" in root.blocks[0]["text"]["text"]
    assert "herowatch is alive" in root.text
