"""Every page reaches a human and stays true, live: ``herowatch serve`` as a real process against the W&B
and Slack stand-ins and a real Prometheus, read through what the Slack channel received.

- a hang pages in the channel, resolves, and a second hang of the same run pages in the channel again;
- two OOM kills page;
- a SIGTERM and restart while ``oom_kills`` fires leaves it firing, with no Slack message about it;
- a W&B outage (longer than the stall limit and the outage wait) while Prometheus answers yields no
  stall page and at most one outage message for the watch;
- the goodput of a healthy run that never restarted stays above 95%;
- a one-step loss blip of the healthy run is recorded as ``loss_jump`` (info) and pages nobody.
"""

from __future__ import annotations

import time

from tests.live.support import Stack, alerts_of, dump, live_stack, wait_for

RUNS = ["hero-a", "hero-b", "hero-c"]
RULES = """\
        progress_stalled: {floor: 6s, startup: 30s}
        loss_jump: {baseline: 60s, floor_window: 10s}
"""  # the live test's minutes stand for hours: the stall limit and the blip's baseline scaled down


def paged(stack: Stack, *words: str) -> list[str]:
    return [p for p in stack.pages() if all(w in p for w in words)]


def test_pages_reach_the_channel_and_stay_true_through_a_restart_and_an_outage(tmp_path):
    with live_stack(tmp_path, RUNS, f"sqlite:///{tmp_path / 'hw.db'}") as stack:
        cfg = stack.write_config(RULES)
        hw = stack.serve(cfg)
        wait_for(lambda: all((r.get("step") or 0) > 30 for r in hw.api("/api/runs")), 60, "runs to be read")

        # ---- a hang pages, resolves, and the second hang of the same run pages again ----------
        stack.trainer.hung.add("hero-a")
        t0 = time.monotonic()
        stalled = lambda: paged(stack, "progress_stalled", "hero-a")  # noqa: E731
        wait_for(stalled, 60, "the stall page", seen=lambda: dump(stack))
        print(f"hang -> page in the channel: {time.monotonic() - t0:.1f}s")
        stack.trainer.hung.discard("hero-a")
        wait_for(
            lambda: alerts_of(hw, "progress_stalled", "resolved"),
            60,
            "the stall to resolve",
            seen=lambda: alerts_of(hw, "progress_stalled"),
        )
        wait_for(lambda: _outbox_empty(hw), 60, "the resolution to be sent", seen=lambda: _outbox(hw))
        stack.trainer.hung.add("hero-a")
        two = lambda: len(paged(stack, "progress_stalled", "hero-a")) == 2  # noqa: E731
        wait_for(two, 60, "a second stall page", seen=lambda: dump(stack))
        stack.trainer.hung.discard("hero-a")
        wait_for(
            lambda: len(alerts_of(hw, "progress_stalled", "resolved")) == 2,
            60,
            "the second resolution",
            seen=lambda: alerts_of(hw, "progress_stalled"),
        )

        # ---- a one-step loss blip of the healthy run: recorded (info), never a page ---------------
        stack.trainer.blip["hero-c"] = 4.0
        blipped = lambda: [a for a in alerts_of(hw, "loss_jump") if "hero-c" in str(a)]  # noqa: E731
        # (a poll that reads the blip and the steps after it records it too: test_one_poll_many_rows.py)
        wait_for(blipped, 90, "the blip's info", every=2.0, seen=lambda: _spike_stats(hw, "hero-c"))

        # ---- two OOM kills page ------------------------------------------------------------------
        stack.exporter.oom("hero-b")
        stack.exporter.oom("hero-b")
        wait_for(lambda: paged(stack, "oom_kills", "hero-b"), 60, "the OOM page", seen=lambda: dump(stack))
        assert alerts_of(hw, "oom_kills", "firing")

        # ---- SIGTERM and restart while oom_kills fires: it keeps firing, Slack hears nothing -------
        assert hw.stop() in (0, -15), "a clean shutdown (uvicorn re-raises the SIGTERM it handled)"
        assert "rule state of 3 runs saved" in hw.log.read_text()
        calls_before = len(stack.slack.calls)
        hw = stack.serve(cfg)
        restarted = time.time()
        polled = lambda: _polled_since(hw, restarted)  # noqa: E731
        wait_for(polled, 60, "polls after the restart", seen=lambda: hw.api("/api/runs"))
        time.sleep(5)  # several poll cycles of the restarted process
        assert alerts_of(hw, "oom_kills", "firing"), "the restart resolved a firing alert"
        after = [c for c in stack.slack.calls[calls_before:] if c.method.startswith("chat.")]
        assert [c for c in after if "oom" in str(c.body)] == [], "Slack heard about oom_kills after a restart"

        # ---- a W&B outage while Prometheus answers: no stall page, at most one outage message --------
        outage_pages = len(stack.pages())
        stack.wandb.fail(502, times=-1)
        time.sleep(20)  # 3x the stall limit, 2.5x the outage wait
        stack.wandb.clear_faults()
        # the outage ends after clean answers for as long as it failed (hysteresis): about 20 s here
        wait_for(
            lambda: alerts_of(hw, "source_unavailable", "resolved"),
            90,
            "the outage to resolve",
            seen=lambda: alerts_of(hw, "source_unavailable"),
        )
        new = stack.pages()[outage_pages:]
        assert not [p for p in new if "progress_stalled" in p], dump(stack)
        assert len([p for p in new if "source_unavailable" in p]) <= 1, dump(stack)
        assert [a["state"] for a in alerts_of(hw, "progress_stalled")].count("firing") == 0

        # ---- every page notified, none is false, and the healthy run's goodput is honest -----------
        pages = stack.pages()
        print("what notified the channel:", dump(stack))
        assert len(paged(stack, "progress_stalled", "hero-a")) == 2, dump(stack)
        assert not [p for p in pages if "run hero-c" in p], "the healthy run paged"
        assert not [p for p in pages if "loss_jump" in p or "loss_spike" in p], "a one-step blip paged"
        assert not [p for p in pages if p.startswith("RESOLVED")], "a resolution was posted as a page"
        [healthy] = [r for r in hw.api("/api/runs") if r["name"] == "hero-c"]
        print(f"goodput of the healthy run: {healthy['goodput']}")
        assert healthy["goodput"]["ratio"] > 0.95, healthy
        hw.stop()
        for proc in stack.procs:
            assert proc.errors() == "", proc.errors()


def _outbox_empty(hw) -> bool:
    return "herowatch_outbox_backlog 0.0" in hw.text("/metrics")


def _outbox(hw) -> list[str]:
    return [line for line in hw.text("/metrics").splitlines() if line.startswith("herowatch_outbox")]


def _spike_stats(hw, run: str) -> object:
    """What the spike rule of ``run`` says (its latest score, spikes seen), and the loss_jump alerts."""
    runs = {r["name"]: r for r in hw.api("/api/runs")}
    return {"run": runs.get(run, {}).get("step"), "loss_jump": alerts_of(hw, "loss_jump")}


def _polled_since(hw, t: float) -> bool:
    from datetime import datetime

    for run in hw.api("/api/runs"):
        seen = run.get("last_polled_at")
        if not seen or datetime.fromisoformat(seen.replace("Z", "+00:00")).timestamp() < t:
            return False
    return True
