"""The "Capture stacks" button and its answer, as Slack is given them (pure Block Kit): the button is
on a hang's message only where the run's wrappers answered (its alert carries stacks), never on a
resolved one; the click parses back to the ``stacks`` action; the thread reply lists every group with
its ranks and frames, the odd ones marked, and notifies as plain text."""

from __future__ import annotations

from alerts.notifiers.slack.blocks import root_message
from alerts.notifiers.slack.interactions import STACKS, parse_block_actions
from alerts.notifiers.slack.stack_blocks import capture_reply
from alerts.views import StackGroupView, StackView
from tests.test_slack_interactions import click
from tests.views_support import alert, group

VIEW = StackView(
    "7 of 8 ranks wait in `barrier` (job.py:22); rank 2 on node-0 is in `read_chunk` (io.py:26).",
    (
        StackGroupView(
            7, "ranks 0-1, 3-7 on node-0, node-1", "barrier (job.py:22)", ("barrier (job.py:22)",)
        ),
        StackGroupView(
            1, "rank 2 on node-0", "read_chunk (io.py:26)", ("read_chunk (io.py:26)", "main (job.py:9)"), True
        ),
    ),
    1_780_000_000.0,
    "https://hw.example/runs/r1#stacks",
)


def _buttons(msg) -> list[dict]:
    return [e for b in msg.blocks if b["type"] == "actions" for e in b["elements"]]


def test_the_button_is_on_a_hang_with_stacks_only():
    with_stacks = root_message(group(alert(stacks=VIEW)))
    [button] = [b for b in _buttons(with_stacks) if b["action_id"] == STACKS]
    assert "Capture stacks" in button["text"]["text"]
    assert [b["action_id"] for b in _buttons(root_message(group(alert())))] == [
        "herowatch_ack",
        "herowatch_silence_1h",
        "herowatch_silence_4h",
    ]
    resolved = root_message(group(alert(stacks=VIEW, state="resolved", ended_at=1_780_000_600.0)))
    assert _buttons(resolved) == []
    payload = click(STACKS, button["value"])
    got = parse_block_actions(payload)
    assert got.action == "stacks" and got.group_key == "slack:feedc0ffee"


def test_the_answer_lists_every_group_and_marks_the_odd_one():
    msg = capture_reply(VIEW, "amy (Slack U0AMY1234)")
    assert msg.text.startswith("Stacks asked by amy (Slack U0AMY1234): 7 of 8 ranks wait in `barrier`")
    text = "\n".join(b["text"]["text"] for b in msg.blocks if b["type"] == "section")
    assert "<@U0AMY1234>" in text
    assert "*7* · ranks 0-1, 3-7 on node-0, node-1\n```barrier (job.py:22)```" in text
    assert (
        "*1* · rank 2 on node-0 — *odd*: the others wait for it\n```read_chunk (io.py:26)\nmain (job.py:9)```"
        in text
    )
    assert "https://hw.example/runs/r1#stacks" in str(msg.blocks[-1])
    assert (
        "<!channel>" not in capture_reply(StackView("<!channel> x"), "eve").text
    )  # the job's words, escaped
