"""The Slack notifier's idempotency: a resent open or update (the outbox lost the outcome, or Slack
answered too late) posts nothing twice, and the thread check reads every page."""

from __future__ import annotations

from alerts.notifiers.base import SendResult
from alerts.notifiers.slack.notifier import format_ref
from tests.slack_notifier.support import CH, T0, alert, loss_series, make, note, open_group, root_ts


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
