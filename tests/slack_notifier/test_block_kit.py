"""The Slack notifier's Block Kit: what the root says and links to, its buttons, user text escaped,
a multi-alert group, and plain text when Slack rejects the blocks."""

from __future__ import annotations

from alerts.notifiers.slack.interactions import ACK, SILENCE_1H, SILENCE_4H, decode_button_value
from tests.slack_notifier.support import (
    CH,
    DASH,
    RUNBOOK,
    WANDB,
    alert,
    make,
    note,
    open_group,
    root_ts,
    texts,
)


def test_the_root_says_what_is_wrong_where_and_links_to_the_evidence(slack, notifier):
    ref = open_group(notifier)
    root = slack.message(CH, root_ts(ref))
    blocks = root.blocks
    assert [b["type"] for b in blocks] == ["header", "section", "section", "context", "actions"]
    assert blocks[0]["text"]["text"] == ":red_circle: CRITICAL · LossSpike · run llama-70b"
    assert blocks[1]["text"]["text"] == "*Training loss jumped to 5.1*\ntrain/loss rose 150% within 20 steps."
    fields = [f["text"] for f in blocks[2]["fields"]]
    assert fields[:3] == ["*Run*\nllama-70b", "*Value*\n`5.1` vs threshold `4`", "*Step*\n1,201"]
    assert fields[3] == "*Firing since*\n<!date^1780000000^{date_short_pretty} {time}|2026-05-28T20:26:40Z>"
    context = texts(blocks[3])
    for url in (WANDB, DASH, RUNBOOK):
        assert f"<{url}|" in context
    assert "W&amp;B run" in context
    buttons = blocks[4]["elements"]
    assert [b["action_id"] for b in buttons] == [ACK, SILENCE_1H, SILENCE_4H]
    assert [b["text"]["text"] for b in buttons] == [
        ":eyes: Acknowledge",
        ":mute: Silence 1 h",
        ":mute: Silence 4 h",
    ]
    assert {decode_button_value(b["value"]) for b in buttons} == {("slack:0123456789abcdef", ("7",))}
    assert root.text == (
        "CRITICAL: LossSpike on run llama-70b — Training loss jumped to 5.1 "
        "(value 5.1, threshold 4, step 1,201)"
    )


def test_no_buttons_when_actions_are_off(slack):
    open_group(make(slack), "n1", actions=False)
    open_group(make(slack, actions=False), "n2")
    for root in slack.roots(CH):
        assert all(b["type"] != "actions" for b in root.blocks)


def test_the_dashboard_link_falls_back_to_the_receiver_option(slack):
    notifier = make(slack, dashboard_url="https://hw.example/")
    ref = open_group(notifier, links={})
    assert "<https://hw.example/runs/llama-70b|" in texts(slack.message(CH, root_ts(ref)).blocks)


def test_user_text_cannot_ping_the_channel_or_break_links(slack, notifier):
    evil = alert(summary="<!channel> loss & <https://evil.example|click>", alertname="Loss<Spike>")
    ref = open_group(notifier, alerts=[evil])
    root = slack.message(CH, root_ts(ref))
    everything = root.text + texts(root.blocks)
    assert "<!channel>" not in everything and "<https://evil.example" not in everything
    assert "&lt;!channel&gt; loss &amp; &lt;https://evil.example|click&gt;" in everything


def test_a_multi_alert_group_lists_its_alerts(slack, notifier):
    alerts = [alert(), alert(8, alertname="GradNormHigh", severity="warning", summary="grad norm 80")]
    ref = open_group(notifier, alerts=alerts)
    root = slack.message(CH, root_ts(ref))
    assert root.blocks[0]["text"]["text"].startswith(":red_circle: CRITICAL · LossSpike +1")
    assert "*GradNormHigh* firing — grad norm 80" in texts(root.blocks)
    actions = [b for b in root.blocks if b["type"] == "actions"][0]
    assert decode_button_value(actions["elements"][0]["value"])[1] == ("7", "8")


def test_rejected_blocks_fall_back_to_plain_text(slack, notifier):
    slack.error("invalid_blocks", methods=["chat.postMessage"])
    result = notifier.send(note("n-open"))
    assert result.ok
    [root] = slack.roots(CH)
    assert root.blocks is None and root.text.startswith("CRITICAL: LossSpike")
    assert [("blocks" in c.body) for c in slack.calls_to("chat.postMessage")] == [True, False]
