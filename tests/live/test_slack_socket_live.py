"""On-call from Slack with no inbound port: ``herowatch serve`` as a process, Slack over Socket Mode only
(the real slack-sdk client in herowatch, the Slack stand-in's Socket Mode server), simulated runs whose
losses turn NaN and page.

- A click on the Acknowledge button and every ``/herowatch`` command, end to end: each envelope
  acknowledged within Slack's 3 seconds, the answer shown to the person, the action named after the
  Slack user on the alert's timeline and in its Slack thread.
- Slack's ``disconnect`` (a refresh), a dropped socket, an acknowledgement lost with its socket (Slack
  re-delivers the envelope on the next connection) and an envelope in flight when the socket drops:
  each acted on exactly once.
"""

from __future__ import annotations

import time

from alerts.notifiers.slack.interactions import ACK
from tests.live.slack_support import CHANNEL, DASHBOARD, config, slack_stack, timeline
from tests.live.support import wait_for
from tests.standins.slack import AMY, BOB

AMY_NAME = "amy (Slack U07AMY1234)"
BOB_NAME = "bob (Slack U07BOB5678)"


def firing(hw, run: str) -> list[dict]:
    return [a for a in hw.api("/api/alerts?state=firing") if a["run"] == f"sim:{run}/{run}"]


def test_a_click_and_every_command_over_socket_mode(tmp_path):
    with slack_stack(tmp_path, f"sqlite:///{tmp_path / 'hw.db'}") as it:
        cfg = tmp_path / "hw.yaml"
        cfg.write_text(config(it.slack, ["hero-a", "hero-b", "hero-c"], ["hero-d"]))
        [hw] = it.serve(cfg)
        it.slack.socket.wait_open(1, 30)
        root = it.root_of("hero-a")

        # the Acknowledge button: acknowledged, answered to amy, her name on the timeline and in Slack
        click = it.slack.click(root, ACK, AMY)
        assert it.slack.socket.wait_acked(click).payload is None  # a click's answer goes to response_url
        [answer] = it.responses(click)
        assert answer["response_type"] == "ephemeral" and f"Acknowledged by {AMY_NAME}" in answer["text"]
        [alert] = firing(hw, "hero-a")
        assert alert["acked_by"] == AMY_NAME
        assert f"acknowledged by {AMY_NAME}: from Slack" in timeline(hw, alert["run"])
        wait_for(lambda: "<@U07AMY1234>" in str(it.slack.message(CHANNEL, root.ts).blocks), 30, "the edit")
        replies = [m.text for m in it.slack.thread(CHANNEL, root.ts)]
        assert any(t.startswith(f"Acknowledged by {AMY_NAME}") for t in replies), replies

        # /herowatch status: every run, the failing first, with the alert ids /herowatch ack takes
        wait_for(lambda: firing(hw, "hero-b") and firing(hw, "hero-c"), 60, "hero-b and hero-c firing")
        status = it.answer(it.slack.command("status"))
        assert status["response_type"] == "ephemeral" and status["blocks"]
        text = status["text"]
        assert "4 runs, 3 need attention" in text, text
        assert text.index("hero-c") < text.index("hero-d") and "Healthy" in text
        for run in ("hero-a", "hero-b", "hero-c"):
            assert f"`#{firing(hw, run)[0]['id']}` critical *loss_nonfinite*" in text
        assert f"acked by {AMY_NAME}" in text and "step " in text and "ETA " in text
        link = f"<{DASHBOARD}/runs/sim%3Ahero-a%2Fhero-a|hero-a>"  # each run links to its page
        assert link in str(status["blocks"]), status["blocks"]

        # /herowatch status <run>: one run, in detail
        one = it.answer(it.slack.command("status hero-d"))["text"]
        assert "hero-d" in one and "hero-a" not in one and "Healthy" in one and "goodput" in one

        # /herowatch ack <alert id>, by bob
        b = firing(hw, "hero-b")[0]
        said = it.answer(it.slack.command(f"ack {b['id']}", BOB))["text"]
        assert said.startswith(f"Acknowledged alert #{b['id']} (loss_nonfinite on hero-b) as {BOB_NAME}")
        assert firing(hw, "hero-b")[0]["acked_by"] == BOB_NAME
        assert f"acknowledged by {BOB_NAME}: from Slack (/herowatch)" in timeline(hw, b["run"])

        # /herowatch ack <run>, then silence it
        said = it.answer(it.slack.command("ack hero-c"))["text"]
        assert said.startswith(f"Acknowledged 1 alert on hero-c as {AMY_NAME}"), said
        said = it.answer(it.slack.command("silence hero-c 2h restoring from the step 400 checkpoint"))["text"]
        assert said.startswith("Silenced hero-c for 2h (until ") and "restoring from the step 400" in said
        [silence] = hw.api("/api/silences")
        assert silence["matchers"] == ['run="sim:hero-c/hero-c"'] and silence["created_by"] == AMY_NAME
        assert silence["comment"] == "restoring from the step 400 checkpoint" and silence["muting"] == 1
        c = firing(hw, "hero-c")[0]
        assert c["silenced"] and (
            f"silenced by {AMY_NAME} for 2h (silence {silence['id']}): restoring from the step 400 checkpoint"
            in timeline(hw, c["run"])
        )

        # /herowatch report (the last 7 days in brief), help, and nonsense
        report = it.answer(it.slack.command("report"))["text"]
        assert report.startswith("herowatch report: the last 7 days") and "over 4 run(s)" in report, report
        assert "/herowatch silence <run> <duration> <reason>" in it.answer(it.slack.command("help"))["text"]
        huh = it.answer(it.slack.command("reboot hero-a"))["text"]
        assert huh.startswith("`reboot` is not a /herowatch command") and "/herowatch status" in huh

        # every envelope acknowledged once, on its first delivery, within Slack's 3 seconds
        envs = list(it.slack.socket.envelopes.values())
        latencies = [e.acks[0].at - e.last_sent for e in envs]
        assert all(len(e.acks) == 1 and len(e.deliveries) == 1 for e in envs), it.slack.socket.describe()
        print(f"\n{len(envs)} envelopes, acknowledged after {max(latencies) * 1000:.0f} ms at most")
        assert max(latencies) < 3.0
        assert len(it.slack.socket.connections) == 1 and not hw.errors(), hw.errors()


def test_refresh_drop_and_lost_acks_act_exactly_once(tmp_path):
    with slack_stack(tmp_path, f"sqlite:///{tmp_path / 'hw.db'}") as it:
        cfg = tmp_path / "hw.yaml"
        cfg.write_text(config(it.slack, ["hero-a", "hero-b"]))
        [hw] = it.serve(cfg)
        sock = it.slack.socket
        [first] = sock.wait_open(1, 30)
        root = it.root_of("hero-a")

        # Slack's refresh: a new connection (a new URL), the old one closed; commands go on working
        urls = sock.urls_issued
        sock.disconnect(first.number)
        wait_for(lambda: [c for c in sock.open_connections() if c.number > first.number], 30, "a new one")
        wait_for(lambda: not first.open, 30, "the old connection closed")
        assert sock.urls_issued > urls, "a new connection comes from a new URL (apps.connections.open)"
        assert "2 runs" in it.answer(it.slack.command("status"))["text"]

        # a dropped socket: herowatch connects again by itself
        [second] = sock.open_connections()
        dropped_at = time.monotonic()
        sock.drop(second.number)
        [third] = wait_for(
            lambda: [c for c in sock.open_connections() if c.number > second.number], 60, "reconnect"
        )
        print(f"\nreconnected {third.opened_at - dropped_at:.2f}s after the socket dropped")
        assert "2 runs" in it.answer(it.slack.command("status"))["text"]

        # an acknowledgement lost with its socket: Slack delivers the envelope again on the next
        # connection; herowatch answers it with the same reply and does not act twice
        env = it.slack.command("silence hero-a 2h restoring", to=third.number)
        sock.lose_ack(env.envelope_id)
        answer = it.answer(env, timeout=60)
        assert len(env.deliveries) == 2 and env.deliveries[1] > third.number, sock.describe()
        assert env.acks[0].connection == env.deliveries[1]
        assert answer["text"].startswith("Silenced hero-a for 2h")
        assert len(hw.api("/api/silences")) == 1

        # the same for a click: one acknowledgement, one answer to the person
        [fourth] = sock.open_connections()
        click = it.slack.click(root, ACK, AMY, to=fourth.number)
        sock.lose_ack(click.envelope_id)
        sock.wait_acked(click, timeout=60)
        assert len(click.deliveries) == 2
        time.sleep(1)
        assert len(it.slack.responses_to(click.payload)) == 1
        [alert] = firing(hw, "hero-a")
        acks = [r for r in timeline(hw, alert["run"]) if r.startswith("acknowledged")]
        assert acks == [f"acknowledged by {AMY_NAME}: from Slack"]

        # an envelope in flight when the socket drops: acted on once, whenever it arrives
        [fifth] = sock.open_connections()
        env = it.slack.command("silence hero-b 1h exporter restarting", to=fifth.number)
        sock.drop(fifth.number)
        assert it.answer(env, timeout=60)["text"].startswith("Silenced hero-b for 1h")
        time.sleep(4)  # past Slack's re-delivery time: nothing more comes of it
        assert sorted(s["matchers"][0] for s in hw.api("/api/silences")) == [
            'run="sim:hero-a/hero-a"',
            'run="sim:hero-b/hero-b"',
        ]
        assert all(
            len(e.acks) <= 1 or e.acks[0].payload == e.acks[1].payload for e in sock.envelopes.values()
        )
        print(sock.describe())


def test_two_replicas_connected_act_once(tmp_path, pg_url):
    """Two replicas on one PostgreSQL, each with its own Socket Mode connection. Slack delivers an
    envelope to either; here the same envelope reaches both at once (as a re-delivery can): one acts,
    the other finds it done and answers the same, and both acknowledge."""
    with slack_stack(tmp_path, pg_url) as it:
        cfg = tmp_path / "hw.yaml"
        cfg.write_text(config(it.slack, ["hero-a", "hero-b"]))
        one, two = it.serve(cfg, replicas=2)
        sock = it.slack.socket
        conns = sock.wait_open(2, 30)
        root = it.root_of("hero-a")

        env = it.slack.command("silence hero-b 2h exporter restarting", to=conns[0].number)
        sock.deliver(env, to=conns[1].number)
        sock.wait(lambda: len(env.acks) == 2, 30, "both replicas' acknowledgements")
        assert {a.connection for a in env.acks} == {c.number for c in conns}
        texts = {a.payload["text"] for a in env.acks}
        assert len(texts) == 1 and texts.pop().startswith("Silenced hero-b for 2h"), env.acks
        assert len(one.api("/api/silences")) == 1

        click = it.slack.click(root, ACK, AMY, to=conns[0].number)
        sock.deliver(click, to=conns[1].number)
        sock.wait(lambda: len(click.acks) == 2, 30, "both replicas' acknowledgements of the click")
        answers = it.responses(click)
        time.sleep(1)
        assert len(it.slack.responses_to(click.payload)) == 1, "one answer to amy"
        assert f"Acknowledged by {AMY_NAME}" in answers[0]["text"]
        [alert] = firing(two, "hero-a")
        acks = [r for r in timeline(two, alert["run"]) if r.startswith("acknowledged")]
        assert acks == [f"acknowledged by {AMY_NAME}: from Slack"]
        wait_for(lambda: "<@U07AMY1234>" in str(it.slack.message(CHANNEL, root.ts).blocks), 30, "the edit")
        replies = [m.text for m in it.slack.thread(CHANNEL, root.ts) if m.text.startswith("Acknowledged")]
        time.sleep(2)  # no second update may follow from the other replica
        assert len([m for m in it.slack.thread(CHANNEL, root.ts) if m.text.startswith("Acknowledged")]) == 1
        assert len(replies) == 1

        # the envelopes Slack spreads over both connections are answered by whichever gets them
        for _ in range(4):
            assert "2 runs" in it.answer(it.slack.command("status"))["text"]
        answered_on = {
            e.acks[0].connection for e in sock.envelopes.values() if e.payload.get("text") == "status"
        }
        assert answered_on == {c.number for c in conns}
        assert not one.errors() and not two.errors(), (one.errors(), two.errors())
