"""A flickering W&B outage, live (issue 26, point 4): ``herowatch serve`` as a real process against the
W&B and Slack stand-ins and a real Prometheus, read through what the Slack channel received.

For about 40 seconds (the live test's seconds stand for minutes) W&B fails with 502, but now and then
answers for a poll or two, with no new history: the trainer's client holds its rows meanwhile. Then it
answers again and the backlog arrives at once, with the rows' own timestamps. The channel gets at
most one ``source_unavailable`` message for the watch, and no stall page; once the source has
answered cleanly for a while the outage resolves, and a hang after it still pages.
"""

from __future__ import annotations

import threading
import time

from tests.live.support import alerts_of, dump, live_stack, wait_for

RUNS = ["hero-a", "hero-b"]
RULES = """\
        progress_stalled: {floor: 6s, startup: 30s}
"""  # the stall limit in seconds: the outage lasts several times longer
FAILS, ANSWERS, BOUTS = 5.0, 1.2, 7  # seconds failing, seconds answering, times: about 40 s


def flicker(stack, stop: threading.Event) -> None:
    for _ in range(BOUTS):
        stack.wandb.fail(502, times=-1)
        if stop.wait(FAILS):
            break
        stack.wandb.clear_faults()  # a poll or two answers: the run is running, no new history
        if stop.wait(ANSWERS):
            break
    stack.wandb.fail(502, times=-1)
    stop.wait(FAILS)


def test_a_flickering_wandb_outage_is_at_most_one_message_and_no_stall_page(tmp_path):
    with live_stack(tmp_path, RUNS, f"sqlite:///{tmp_path / 'hw.db'}") as stack:
        hw = stack.serve(stack.write_config(RULES))
        wait_for(
            lambda: all((r.get("step") or 0) > 30 for r in hw.api("/api/runs")),
            90,
            "runs to be read",
            seen=lambda: hw.api("/api/runs"),
        )
        before = len(stack.pages())
        stack.trainer.hold(RUNS)  # the client keeps its rows while the API fails
        stop = threading.Event()
        started = time.monotonic()
        flicker(stack, stop)
        stack.wandb.clear_faults()
        backlog = stack.trainer.release()  # the backlog, at once, with its own timestamps
        print(f"outage with flickers: {time.monotonic() - started:.0f}s, backlog of {backlog} rows")
        assert backlog > 2 * 40, backlog
        wait_for(
            lambda: alerts_of(hw, "source_unavailable", "resolved"),
            120,  # clean answers for as long as it failed (at most 5 x the 8 s outage wait), then a poll
            "the outage to resolve",
            seen=lambda: (alerts_of(hw, "source_unavailable"), stack.pages()[before:]),
        )
        new = stack.pages()[before:]
        print("what notified the channel:", dump(stack))
        assert len([p for p in new if "source_unavailable" in p]) <= 1, dump(stack)
        assert not [p for p in new if "progress_stalled" in p], dump(stack)
        # one outage, one alert that fired (on a loaded box a later poll may time out on its own: a new,
        # short failure that is pending, not this outage coming back)
        outages = alerts_of(hw, "source_unavailable")
        fired = [a for a in outages if a["fired_at"]]
        seen = [(a["state"], a["active_at"], a["fired_at"], a["summary"][:120]) for a in outages]
        assert len(fired) == 1, f"one outage, one alert that fired: {seen}"
        assert alerts_of(hw, "progress_stalled") == []

        # ---- the stall rule judges again: a hang after the outage pages -----------------------
        stack.trainer.hung.add("hero-a")
        stalled = lambda: [p for p in stack.pages()[before:] if "progress_stalled" in p and "hero-a" in p]  # noqa: E731
        wait_for(
            stalled, 60, "the stall page after the outage", seen=lambda: alerts_of(hw, "progress_stalled")
        )
        assert not [p for p in stack.pages() if "hero-b" in p and "progress_stalled" in p], dump(stack)
        hw.stop()
        for proc in stack.procs:
            assert proc.errors() == "", proc.errors()
