"""The "Capture stacks" button, live: ``herowatch serve`` as a real process, two ``herowatch emit run``
wrappers around a plain-Python job (rank 2 of 8 hangs in ``read_chunk``, the rest wait in ``barrier``),
the Slack stand-in, and a click signed by slack-sdk's own ``SignatureVerifier`` posted to herowatch's
interactivity endpoint as Slack posts it.

The hang's message carries the button; a click on it asks the wrappers again (the ``/herowatch stacks``
path, in the audit trail as the Slack user), answers the person at once, and posts the capture's groups
as a quiet reply in the alert's thread when the nodes have answered: no new page. A crafted click on a
message that is not herowatch's for that group acts on nothing (403); a click on a run whose wrappers
are gone says why there is no capture.
"""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import closing

import httpx

from tests.live.sources_support import source_stack
from tests.live.support import CHANNEL, wait_for
from tests.live.test_stacks_live import PUSH, RULES, nodes, stop
from tests.test_slack_interactions import SECRET, body_of, click, signed

STACKS = "herowatch_stacks"


def _button(root) -> dict | None:
    for block in root.blocks or ():
        for element in block.get("elements") or ():
            if element.get("action_id") == STACKS:
                return element
    return None


def _recorded(tmp_path, ref: str) -> bool:
    with closing(sqlite3.connect(str(tmp_path / "hw.db"))) as db:
        return bool(list(db.execute("select 1 from alert_groups where root_ref = ?", (ref,))))


def _click_on(root, value: str) -> bytes:
    payload = click(STACKS, value)
    payload["user"] = {"id": "U0AMY1234", "username": "amy", "name": "amy", "team_id": "T0HERO"}
    payload["container"].update({"channel_id": CHANNEL, "message_ts": root.ts})
    payload["channel"] = {"id": CHANNEL}
    payload["message"] = {"type": "message", "ts": root.ts, "text": root.text}
    payload["trigger_id"] = f"trigger-{time.monotonic_ns()}"
    return body_of(payload)


def test_capture_stacks_from_the_slack_message_answers_in_the_thread(tmp_path):
    with source_stack(tmp_path) as stack:
        stack.extra_env["SLACK_SIGNING_SECRET"] = SECRET
        hw = stack.serve(stack.write_config(PUSH, RULES))
        env = stack.env()
        procs = []
        try:
            procs += nodes(hw.url, "job-btn", 2, 4, 2, env)
            first = wait_for(lambda: stack.pages("job-btn"), 90, "the hang page", seen=stack.pages)[0]
            assert "rank 2 on node-0 is in `read_chunk`" in first, first
            [root] = [m for m in stack.slack.roots(CHANNEL) if "job-btn" in m.text]
            button = wait_for(lambda: _button(stack.slack.message(CHANNEL, root.ts)), 10, "the button")
            assert button["text"]["text"].endswith("Capture stacks"), button
            # herowatch records the message as its group's once the send (with its plot) is done
            wait_for(lambda: _recorded(tmp_path, f"{CHANNEL}:{root.ts}"), 30, "the message recorded")

            # a click that is not on herowatch's message for that group acts on nothing
            other = click(STACKS, button["value"])
            other["user"] = {"id": "U0EVE", "username": "eve", "team_id": "T0HERO"}
            other["container"].update({"channel_id": CHANNEL, "message_ts": "1.000001"})
            other["message"] = {"type": "message", "ts": "1.000001"}
            forged = body_of(other)
            r = httpx.post(
                f"{hw.url}/api/slack/interactions", content=forged, headers=signed(forged, time.time())
            )
            assert r.status_code == 403, r.text
            unsigned = httpx.post(
                f"{hw.url}/api/slack/interactions",
                content=_click_on(root, button["value"]),
                headers=signed(b"other body", time.time()),
            )
            assert unsigned.status_code == 401, unsigned.text

            pages_before = len(stack.slack.pages(CHANNEL))
            body = _click_on(root, button["value"])
            t0 = time.monotonic()
            r = httpx.post(
                f"{hw.url}/api/slack/interactions",
                content=body,
                headers=signed(body, time.time()),
                timeout=30,
            )
            assert r.status_code == 200, r.text
            said = r.json()
            assert said["response_type"] == "ephemeral", said
            assert "Asked 2 nodes" in said["text"] and "in this thread" in said["text"], said["text"]

            def answer():
                return [
                    m for m in stack.slack.thread(CHANNEL, root.ts) if m.text.startswith("Stacks asked by")
                ]

            [reply] = wait_for(
                answer,
                60,
                "the capture's answer in the thread",
                seen=lambda: [m.text for m in stack.slack.thread(CHANNEL, root.ts)],
            )
            print(f"thread reply {time.monotonic() - t0:.1f}s after the click:\n{reply.text}")
            assert "amy (Slack U0AMY1234)" in reply.text, reply.text
            assert "7 of 8 ranks wait in `barrier`" in reply.text, reply.text
            assert "rank 2 on node-0 is in `read_chunk`" in reply.text, reply.text
            blocks = json.dumps(reply.blocks)
            assert (
                "<@U0AMY1234>" in blocks
                and "*odd*" in blocks
                and "read_chunk (tests/live/stacks_job.py:" in blocks
            )
            assert not reply.broadcast, "the answer is a quiet reply, not a page"
            assert len(stack.slack.pages(CHANNEL)) == pages_before

            trail = hw.api("/api/audit?action=stacks_capture")
            mine = [e for e in trail if e["door"] == "slack"]
            assert mine and mine[0]["actor"] == "amy (Slack U0AMY1234)", trail
            assert mine[0]["run"] == "push:live/job-btn" and mine[0]["outcome"] != "refused", mine

            # the wrappers are gone: the click says why there is no capture, and that is audited too
            stop(procs)
            time.sleep(1)

            def refused():
                again = _click_on(root, button["value"])
                got = httpx.post(
                    f"{hw.url}/api/slack/interactions", content=again, headers=signed(again, time.time())
                )
                return got.status_code == 200 and "No capture" in got.json()["text"] and got.json()["text"]

            text = wait_for(refused, 90, "a click once no wrapper polls")
            assert "no `herowatch emit run` wrapper" in text, text
            assert any(e["outcome"] == "refused" for e in hw.api("/api/audit?action=stacks_capture"))
            assert hw.errors() == ""
        finally:
            stop(procs)
