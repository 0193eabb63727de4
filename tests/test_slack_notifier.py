"""The Slack notifier (alerts/notifiers/slack/notifier.py) through the real slack-sdk against the Slack
stand-in (tests/standins/slack_server.py): threading, updates, plots, Block Kit, error classes, idempotency,
and the token staying out of logs and errors."""

from __future__ import annotations

import io
import json
import logging
import math
import time
from collections.abc import Iterator, Sequence

import pytest
from PIL import Image

from alerts.notifiers.base import SendResult
from alerts.notifiers.registry import BuildContext, build_notifier, kinds
from alerts.notifiers.slack.interactions import ACK, SILENCE_1H, SILENCE_4H, decode_button_value
from alerts.notifiers.slack.notifier import SlackNotifier, format_ref, parse_ref
from alerts.outbox import ClaimedNotification, Dispatcher
from alerts.views import AlertView, GroupView, Plot
from tests.standins.slack_server import SlackStandin

TOKEN = "xoxb-test-0000-notifier"  # fake
CH = "C0ALERTS"
T0 = 1_780_000_000.0
RUN = "llama-70b"
WANDB = "https://wandb.example/hero/llama/runs/abc123"
DASH = "https://herowatch.example/runs/llama-70b"
RUNBOOK = "https://runbooks.example/loss-spike"


@pytest.fixture
def slack() -> Iterator[SlackStandin]:
    with SlackStandin(token=TOKEN, channels=[CH]) as s:
        yield s


def make(slack: SlackStandin, **options) -> SlackNotifier:
    opts = {"channel": CH, "token": TOKEN, "base_url": slack.api_url, "timeout": 2.0}
    opts.update(options)
    return SlackNotifier(**opts)


@pytest.fixture
def notifier(slack: SlackStandin) -> SlackNotifier:
    return make(slack)


def alert(id: int = 7, **over) -> dict:
    a = {
        "id": id,
        "alertname": "LossSpike",
        "severity": "critical",
        "state": "firing",
        "labels": {"alertname": "LossSpike", "run": RUN},
        "summary": "Training loss jumped to 5.1",
        "description": "train/loss rose 150% within 20 steps.",
        "runbook_url": RUNBOOK,
        "value": 5.1,
        "threshold": 4.0,
        "step": 1201,
        "started_at": T0,
        "ended_at": None,
        "acked_by": None,
        "silenced": None,
        "metric": "train/loss",
    }
    a.update(over)
    return a


def loss_series() -> Plot:
    xs = list(range(1000, 1300))
    ys = [2.0 + 0.1 * math.sin(i / 5) + (3.0 if i > 1200 else 0.0) for i in xs]
    return Plot(
        kind="metric",
        title=f"train/loss · run {RUN}",
        caption="train/loss by step around step 1201; the threshold 4 as a dashed red line",
        x=xs,
        y=ys,
        y_label="train/loss",
        event_x=1201,
        threshold=4.0,
    )


def note(
    key: str,
    kind: str = "open",
    alerts: Sequence[dict] | None = None,
    root_ref: str | None = None,
    series: Plot | None = None,
    links: dict | None = None,
    actions: bool = True,
    changed: Sequence[int] | None = None,
) -> GroupView:
    alerts = list(alerts) if alerts is not None else [alert()]
    views = tuple(AlertView.from_dict(a) for a in alerts)
    return GroupView(
        key=key,
        receiver="slack",
        kind=kind,
        group_key="slack:0123456789abcdef",
        group_labels={"run": RUN},
        alerts=views,
        changed=frozenset(str(c) for c in (changed if changed is not None else [a["id"] for a in alerts])),
        root_ref=root_ref,
        links={"wandb_url": WANDB, "dashboard_url": DASH} if links is None else links,
        actions=actions,
        plot=series,
    )


def open_group(notifier: SlackNotifier, key: str = "n-open", **kw) -> str:
    result = notifier.send(note(key, **kw))
    assert result.ok, result
    return result.ref


def root_ts(ref: str) -> str:
    return ref.split(":", 1)[1]


def texts(blocks) -> str:
    return json.dumps(blocks, ensure_ascii=False)


# ---- threading and updates ------------------------------------------------------------------------
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


# ---- the plot -------------------------------------------------------------------------------------
def test_the_plot_is_uploaded_into_the_thread_in_three_steps(slack, notifier):
    ref = open_group(notifier, series=loss_series())
    steps = [m for m in slack.methods() if m.startswith("files.") or m == "upload"]
    assert steps == ["files.getUploadURLExternal", "upload", "files.completeUploadExternal"]
    [get_url] = slack.calls_to("files.getUploadURLExternal")
    [complete] = slack.calls_to("files.completeUploadExternal")
    assert complete.body["channel_id"] == CH and complete.thread_ts == root_ts(ref)
    assert "train/loss" in get_url.body["alt_txt"] and "threshold 4" in get_url.body["alt_txt"]
    [upload] = slack.uploads.values()
    assert upload.filename == "train_loss.png" and upload.thread_ts == root_ts(ref)
    assert int(get_url.body["length"]) == len(upload.data) < 100_000
    img = Image.open(io.BytesIO(upload.data))
    img.verify()
    assert (img.format, img.size) == ("PNG", (720, 320))
    [shared] = slack.thread(CH, root_ts(ref))
    assert shared.files[0]["id"] == upload.file_id
    assert slack.methods().index("chat.postMessage") < slack.methods().index("files.getUploadURLExternal")


def test_no_plot_without_series_or_when_plots_are_off(slack):
    open_group(make(slack), "n1")
    open_group(make(slack, plots=False), "n2", series=loss_series())
    assert not slack.calls_to("files.getUploadURLExternal") and not slack.uploads


def _broken_plotter(*args, **kwargs) -> bytes:
    raise RuntimeError("matplotlib exploded")


@pytest.mark.parametrize("how", ["plotter-raises", "upload-url-500", "upload-post-500", "complete-error"])
def test_a_failing_plot_never_blocks_the_alert(slack, how, caplog):
    notifier = make(slack, plotter=_broken_plotter if how == "plotter-raises" else None)
    if how == "upload-url-500":
        slack.fail(500, methods=["files.getUploadURLExternal"])
    elif how == "upload-post-500":
        slack.fail(500, methods=["upload"])
    elif how == "complete-error":
        slack.error("internal_error", methods=["files.completeUploadExternal"])
    caplog.set_level(logging.WARNING, logger="alerts.notifiers.slack")
    result = notifier.send(note("n-open", series=loss_series()))
    assert result.ok and len(slack.roots(CH)) == 1
    assert slack.thread(CH, root_ts(result.ref)) == []
    assert "plot for group" in caplog.text


# ---- Block Kit ------------------------------------------------------------------------------------
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


# ---- errors ---------------------------------------------------------------------------------------
def test_429_is_transient_with_retry_after_and_not_retried_in_the_client(slack, notifier):
    slack.rate_limit(retry_after=7, methods=["chat.postMessage"])
    result = notifier.send(note("n-open"))
    assert (result.ok, result.retry, result.retry_after) == (False, True, 7.0)
    assert "rate limited" in result.error
    assert len(slack.calls_to("chat.postMessage")) == 1 and slack.roots(CH) == []
    assert notifier.send(note("n-open")).ok  # the outbox's retry
    assert len(slack.roots(CH)) == 1


class _OneRowStore:
    def __init__(self, n: GroupView) -> None:
        self.rows = [ClaimedNotification(1, 0, n)]
        self.outcome: tuple | None = None

    def claim_due(self, now, limit, worker, lease_seconds):
        rows, self.rows = self.rows, []
        return rows

    def mark_sent(self, id, now, ref):
        self.outcome = ("sent", ref)

    def mark_retry(self, id, now, next_attempt_at, error):
        self.outcome = ("retry", next_attempt_at - now, error)

    def mark_failed(self, id, now, error):
        self.outcome = ("failed", error)


def test_the_outbox_waits_as_long_as_slack_said(slack, notifier):
    slack.rate_limit(retry_after=42, methods=["chat.postMessage"])
    store = _OneRowStore(note("n-open"))
    Dispatcher(store, {"slack": notifier}, clock=lambda: T0).run_once()
    assert store.outcome[:2] == ("retry", 42.0)


def test_5xx_is_transient(slack, notifier):
    slack.fail(503, methods=["chat.postMessage"])
    result = notifier.send(note("n-open"))
    assert (result.ok, result.retry, result.retry_after) == (False, True, None)
    assert "HTTP 503" in result.error


def test_a_timeout_is_transient_and_not_retried_in_the_client(slack):
    notifier = make(slack, timeout=1.0)
    slack.slow(4.0, methods=["chat.postMessage"])
    started = time.monotonic()
    result = notifier.send(note("n-open"))
    assert (result.ok, result.retry) == (False, True)
    assert "timed out" in result.error.lower()
    assert time.monotonic() - started < 1.9  # one attempt: an in-client retry would take 2 timeouts
    assert len(slack.calls_to("chat.postMessage")) == 1


def test_a_connection_refused_is_transient(slack):
    notifier = make(slack, timeout=0.5)
    slack.stop()
    result = notifier.send(note("n-open"))
    assert (result.ok, result.retry) == (False, True)


def test_an_invalid_token_is_permanent_and_the_error_says_why(slack):
    secret = "xoxb-test-wrong-9999"
    result = make(slack, token=secret).send(note("n-open"))
    assert (result.ok, result.retry) == (False, False)
    assert "invalid_auth" in result.error and "SLACK_BOT_TOKEN" in result.error
    assert secret not in result.error
    assert slack.roots(CH) == []


def test_an_unknown_channel_is_permanent(slack):
    result = make(slack, channel="C0NOSUCH").send(note("n-open"))
    assert (result.ok, result.retry) == (False, False)
    assert "channel_not_found" in result.error and "C0NOSUCH" in result.error


@pytest.mark.parametrize(
    "code, permanent",
    [
        ("not_in_channel", True),
        ("account_inactive", True),
        ("token_revoked", True),
        ("is_archived", True),
        ("channel_not_found", True),
        ("internal_error", False),
        ("fatal_error", False),
        ("some_code_slack_adds_next_year", False),
    ],
)
def test_slack_error_codes_are_classified(slack, notifier, code, permanent):
    slack.error(code, methods=["chat.postMessage"])
    result = notifier.send(note("n-open"))
    assert result.ok is False and result.retry is (not permanent)
    assert code in result.error


# ---- idempotency ----------------------------------------------------------------------------------
def test_resending_an_open_does_not_post_twice(slack, notifier):
    first = notifier.send(note("n-open", series=loss_series()))
    second = notifier.send(note("n-open", series=loss_series()))  # the outbox lost the first outcome
    assert first.ok and second == first
    assert len(slack.roots(CH)) == 1
    assert len(slack.calls_to("chat.postMessage")) == 1
    assert len(slack.uploads) == 1  # the plot is not uploaded twice either
    history = slack.calls_to("conversations.history")
    assert len(history) == 2 and history[-1].body["include_all_metadata"] in ("1", "true", True)
    assert len(slack.roots(CH)) == 1


def test_a_different_key_is_a_new_root(slack, notifier):
    open_group(notifier, "n-a")
    open_group(notifier, "n-b")
    assert len(slack.roots(CH)) == 2


def test_a_post_accepted_but_answered_too_late_is_not_posted_again(slack):
    notifier = make(slack, timeout=1.0)
    slack.slow(4.0, methods=["chat.postMessage"], after_effect=True)
    lost = notifier.send(note("n-open"))
    assert (lost.ok, lost.retry) == (False, True)
    [accepted] = slack.roots(CH)  # Slack has it although the client gave up
    again = notifier.send(note("n-open"))
    assert again == SendResult.sent(format_ref(CH, accepted.ts))
    assert len(slack.roots(CH)) == 1


def test_a_resent_open_whose_plot_never_went_out_gets_its_plot(slack):
    open_group(make(slack, plots=False), "n-open")  # crashed before the plot
    ref = open_group(make(slack), "n-open", series=loss_series())
    assert len(slack.roots(CH)) == 1 and len(slack.uploads) == 1
    assert slack.thread(CH, root_ts(ref))[0].files


def test_resending_an_update_does_not_reply_twice(slack, notifier):
    ref = open_group(notifier)
    done = note("n-res", "update", [alert(state="resolved", ended_at=T0 + 60)], root_ref=ref)
    assert notifier.send(done).ok and notifier.send(done).ok
    assert len(slack.thread(CH, root_ts(ref))) == 1
    assert len(slack.calls_to("chat.update")) == 2  # editing again is harmless


def test_the_thread_check_reads_every_page(slack, notifier):
    ref = open_group(notifier)
    for i in range(5):
        assert notifier.send(note(f"n-rep-{i}", "repeat", root_ref=ref)).ok
    slack.reset_calls()
    notifier.replies_page_size = 2  # root + 5 replies: the last reply is on the third page
    assert notifier.send(note("n-rep-4", "repeat", root_ref=ref)).ok
    assert len(slack.thread(CH, root_ts(ref))) == 5
    assert [c.body.get("cursor") for c in slack.calls_to("conversations.replies")] == [None, "2", "4"]
    assert not slack.calls_to("chat.postMessage")


# ---- configuration and the token --------------------------------------------------------------------
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
