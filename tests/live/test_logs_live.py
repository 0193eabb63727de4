"""A job's printed log, live: ``herowatch serve`` watching a file a trainer thread appends
Megatron-LM lines to (BLOOM-176B's real line shape), pages read from the Slack stand-in.

- the file is rotated (moved to ``.1``, a new one created) while the run goes on: no page, no step lost;
- a hang (the file stops growing) pages ``progress_stalled``;
- a crash line (an NCCL watchdog timeout as PyTorch prints it) pages, naming the line.
"""

from __future__ import annotations

import os
import threading
import time

from tests.live.sources_support import source_stack
from tests.live.support import real_losses, wait_for
from tests.sources import log_lines as real

RULES = "        progress_stalled: {floor: 6s, startup: 30s}\n"
STEP = 0.5


class Trainer(threading.Thread):
    def __init__(self, path) -> None:
        super().__init__(daemon=True)
        self.path, self.stop, self.lock = path, threading.Event(), threading.Lock()
        self.step, self.hung, self.values = 0, False, real_losses()

    def print(self, text: str) -> None:
        with self.lock, self.path.open("a") as f:
            f.write(text)

    def run(self) -> None:
        while not self.stop.wait(STEP):
            if self.hung:
                continue
            self.step += 1
            loss, gnorm = self.values[self.step % len(self.values)]
            self.print(
                f"[default7]: iteration {self.step:8d}/  115311 | consumed samples: {self.step * 2048} | "
                f"elapsed time per iteration (s): {STEP:.2f} | learning rate: 5.279E-05 | "
                f"global batch size:  2048 | lm loss: {loss:E} | grad norm: {gnorm:.3f} |\n"
                "[default7]: [INFO] dataloader prefetch ok\n"
            )

    def rotate(self) -> None:
        with self.lock:
            os.rename(self.path, f"{self.path}.1")


def test_a_printed_log_pages_a_hang_and_a_crash_line_and_survives_rotation(tmp_path):
    log = tmp_path / "jobs" / "hero-7" / "stdout.log"
    log.parent.mkdir(parents=True)
    trainer = Trainer(log)
    trainer.start()
    try:
        with source_stack(tmp_path) as stack:
            source = f"    logs: {{paths: ['{tmp_path}/jobs/hero-*/stdout.log'], format: auto}}"
            hw = stack.serve(stack.write_config(source, RULES))
            run = f"logs:{log.parent}/stdout.log"

            def step_of() -> int:
                return next((r.get("step") or 0 for r in hw.api("/api/runs") if r["id"] == run), -1)

            wait_for(lambda: step_of() > 10, 60, "the log to be read")
            cov = hw.api(f"/api/runs/{run}/coverage")
            rules = {r["rule"]: r["state"] for r in cov["rules"]}
            assert rules["loss_nonfinite"] == "covered" and "train/loss" in cov["keys"], cov

            # ---- rotation: the run goes on, nothing pages ------------------------------------------------
            trainer.rotate()
            at = trainer.step
            wait_for(lambda: step_of() > at + 5, 30, "steps after the rotation")
            assert not stack.pages(), stack.pages()

            # ---- a hang: the file stops growing ----------------------------------------------------------
            trainer.hung = True
            t0 = time.monotonic()
            wait_for(lambda: stack.pages("progress_stalled", "hero-7"), 40, "the stall page")
            print(f"hang -> page: {time.monotonic() - t0:.1f}s")

            # ---- a crash line pages, naming the line -----------------------------------------------------
            t0 = time.monotonic()
            trainer.print(real.NCCL_TIMEOUT + "\n")
            page = wait_for(
                lambda: stack.pages("NCCL watchdog timeout"), 30, "the crash page", seen=stack.pages
            )
            print(f"crash line -> page: {time.monotonic() - t0:.1f}s")
            assert "Watchdog caught collective operation timeout" in page[0], page
            assert "hero-7" in page[0], page
            assert hw.errors() == "", hw.errors()
    finally:
        trainer.stop.set()
