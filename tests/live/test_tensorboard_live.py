"""TensorBoard runs, live: ``herowatch serve`` watching a log directory that a trainer thread writes with
TensorBoard's own writer (Megatron-LM's tags: the profile is detected), pages read from the Slack stand-in.

- a hang pages ``progress_stalled``; a NaN loss pages ``loss_nonfinite``;
- a trainer restart (a new event file, resumed from an earlier step) is recorded as ``run_restarted``;
- a half-written last record is waited for and its step read once it is whole;
- a run directory added while serving is watched.
"""

from __future__ import annotations

import io
import math
import threading
import time

from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.summary.writer.record_writer import RecordWriter

from tests.live.sources_support import source_stack
from tests.live.support import alerts_of, real_losses, wait_for
from tests.tb_support import TbRun

RULES = "        progress_stalled: {floor: 6s, startup: 30s}\n"
STEP = 0.5


class Trainer(threading.Thread):
    """Megatron-style runs logging a step every ``STEP`` seconds into the log dir."""

    def __init__(self, logdir, runs) -> None:
        super().__init__(daemon=True)
        self.logdir, self.stop, self.lock = logdir, threading.Event(), threading.Lock()
        self.writers = {r: TbRun(logdir, r) for r in runs}
        self.step = dict.fromkeys(runs, 0)
        self.hung: set[str] = set()
        self.nan: set[str] = set()
        self.values = real_losses()

    def add(self, run: str) -> None:
        with self.lock:
            self.writers[run], self.step[run] = TbRun(self.logdir, run), 0

    def restart(self, run: str, back: int) -> None:
        """The process dies and a new one resumes ``back`` steps earlier, in a new event file."""
        with self.lock:
            self.writers[run].close()
            time.sleep(1.1)  # a new file name (its start time in seconds)
            self.writers[run] = TbRun(self.logdir, run)
            self.step[run] -= back

    def run(self) -> None:
        while not self.stop.wait(STEP):
            with self.lock:
                for r, w in self.writers.items():
                    if r in self.hung:
                        continue
                    self.step[r] += 1
                    loss, gnorm = self.values[self.step[r] % len(self.values)]
                    if r in self.nan:
                        loss = math.nan
                    w.log(
                        self.step[r],
                        {"lm loss": loss, "grad-norm": gnorm, "learning-rate": 3e-4, "iteration-time": STEP},
                    )
                    w.flush()


def record_bytes(step: int, loss: float) -> bytes:
    """One framed event record, as the writer would append it."""
    summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="lm loss", simple_value=loss)])
    buf = io.BytesIO()
    RecordWriter(buf).write(
        event_pb2.Event(wall_time=time.time(), step=step, summary=summary).SerializeToString()
    )
    return buf.getvalue()


def test_tensorboard_runs_page_live(tmp_path):
    logdir = tmp_path / "tb"
    logdir.mkdir()
    trainer = Trainer(logdir, ["hero-a", "hero-b"])
    trainer.start()
    try:
        with source_stack(tmp_path) as stack:
            source = f"    tensorboard: {{logdir: '{logdir}', runs: 'hero-*'}}"
            hw = stack.serve(stack.write_config(source, RULES))
            run_a, run_b = f"tensorboard:{logdir}/hero-a", f"tensorboard:{logdir}/hero-b"

            def step_of(run: str) -> int:
                return next((r.get("step") or 0 for r in hw.api("/api/runs") if r["id"] == run), -1)

            wait_for(lambda: step_of(run_a) > 20 and step_of(run_b) > 20, 60, "both runs to be read")
            detail = hw.api(f"/api/runs/{run_a}")
            assert "megatron" in str(detail), "the Megatron-LM profile is detected from the tags"
            cov = hw.api(f"/api/runs/{run_a}/coverage")
            rules = {r["rule"]: r["state"] for r in cov["rules"]}
            assert rules["loss_nonfinite"] == "covered" and "lm loss" in cov["keys"], cov

            # ---- a hang pages ---------------------------------------------------------------------------
            trainer.hung.add("hero-a")
            t0 = time.monotonic()
            wait_for(lambda: stack.pages("progress_stalled", "hero-a"), 30, "the stall page")
            print(f"hang -> page: {time.monotonic() - t0:.1f}s")
            trainer.hung.discard("hero-a")
            wait_for(lambda: alerts_of(hw, "progress_stalled", "resolved"), 20, "the stall to resolve")

            # ---- a NaN loss pages ----------------------------------------------------------------------
            trainer.nan.add("hero-b")
            t0 = time.monotonic()
            wait_for(lambda: stack.pages("loss_nonfinite", "hero-b"), 30, "the NaN page")
            print(f"NaN -> page: {time.monotonic() - t0:.1f}s")
            trainer.nan.discard("hero-b")

            # ---- a trainer restart: a new file, an earlier step: recorded as a restart -------------------
            trainer.restart("hero-a", back=15)
            wait_for(lambda: alerts_of(hw, "run_restarted"), 30, "the restart to be recorded")
            assert not stack.pages("progress_stalled", "hero-a")[1:], "the restart paged as a stall"

            # ---- a half-written record: waited for, then read once --------------------------------------
            trainer.hung.add("hero-b")
            time.sleep(2 * STEP)
            with trainer.lock:
                path = trainer.writers["hero-b"].files()[-1]
                last = trainer.step["hero-b"]
            wait_for(lambda: step_of(run_b) == last, 20, "hero-b's last whole step")
            record = record_bytes(last + 1, 2.5)
            with path.open("ab") as f:
                f.write(record[:11])
            time.sleep(3)  # three polls over the half record
            assert step_of(run_b) == last
            with path.open("ab") as f:
                f.write(record[11:])
            wait_for(lambda: step_of(run_b) == last + 1, 20, "the completed record's step")
            with trainer.lock:
                trainer.step["hero-b"] = last + 1
            trainer.hung.discard("hero-b")

            # ---- a run directory added while serving is watched -----------------------------------------
            trainer.add("hero-c")
            run_c = f"tensorboard:{logdir}/hero-c"
            wait_for(lambda: step_of(run_c) > 3, 30, "the new run directory to be read")
            assert hw.errors() == "", hw.errors()
            assert not stack.pages("hero-c")
    finally:
        trainer.stop.set()
