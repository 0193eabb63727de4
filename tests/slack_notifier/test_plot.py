"""The Slack notifier's plot: uploaded into the thread in Slack's three steps, skipped without a series
or when plots are off, and never blocking the alert when it fails."""

from __future__ import annotations

import io
import logging

import pytest
from PIL import Image

from tests.slack_notifier.support import CH, loss_series, make, note, open_group, root_ts


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
