"""One bad TensorBoard run never blinds its watch, live (issue 37): ``herowatch serve`` watching a log
directory where a trainer writes two healthy runs, while a third run's event file gets a record whose
length prefix is 2^63-1 with a valid header checksum (``MemoryError`` on every poll before, every run of
the watch blind), and a fourth run's directory is named with bytes that are not UTF-8.

The damaged run gets its own ``source_unavailable`` naming the file and byte, and it reaches Slack;
the healthy runs keep being read and nothing pages them; the oddly named run is read under an escaped
name; nothing is logged as an error. (The two runs nobody writes to may page as stalled: they are.)"""

from __future__ import annotations

import os
import struct

from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

from tests.live.sources_support import source_stack
from tests.live.support import alerts_of, wait_for
from tests.live.test_tensorboard_live import Trainer
from tests.tb_support import TbRun


def test_a_corrupt_record_and_a_non_utf8_run_name_blind_only_their_own_runs(tmp_path):
    logdir = tmp_path / "tb"
    logdir.mkdir()
    bad = TbRun(logdir, "hero-bad")
    for s in range(3):
        bad.log(s, {"lm loss": 2.0})
    bad.flush()
    odd = TbRun(logdir, "odd")
    for s in range(4):
        odd.log(s, {"lm loss": 2.0})
    odd.close()
    os.rename(os.path.join(os.fsencode(logdir), b"odd"), os.path.join(os.fsencode(logdir), b"hero-\xff\xfe"))
    trainer = Trainer(logdir, ["hero-a", "hero-b"])
    trainer.start()
    try:
        with source_stack(tmp_path) as stack:
            source = (
                "    unavailable_after: 3s\n    unavailable_page_after: 6s\n"
                f"    tensorboard: {{logdir: '{logdir}', runs: 'hero-*'}}"
            )
            hw = stack.serve(
                stack.write_config(source, "        progress_stalled: {floor: 6s, startup: 30s}\n")
            )
            run_a, run_b = (f"tensorboard:{logdir}/hero-{r}" for r in "ab")
            run_bad = f"tensorboard:{logdir}/hero-bad"

            def step_of(run: str) -> int:
                return next((r.get("step") or 0 for r in hw.api("/api/runs") if r["id"] == run), -1)

            wait_for(lambda: step_of(run_a) > 5 and step_of(run_b) > 5, 60, "the healthy runs to be read")
            assert step_of(run_bad) == 2
            assert step_of(f"tensorboard:{logdir}/hero-\\xff\\xfe") == 3, [
                r["id"] for r in hw.api("/api/runs")
            ]

            path = bad.files()[0]
            at = path.stat().st_size
            head = struct.pack("<Q", 2**63 - 1)
            with path.open("ab") as f:
                f.write(head + struct.pack("<I", masked_crc32c(head)) + b"\0" * 64)
            firing = wait_for(
                lambda: [a for a in alerts_of(hw, "source_unavailable", "firing") if a["run"] == run_bad],
                60,
                "the bad run's own source_unavailable",
                seen=lambda: alerts_of(hw, "source_unavailable"),
            )
            text = str(firing[0])
            assert f"record at byte {at}" in text and "max_record_bytes" in text, text
            page = wait_for(lambda: stack.pages("hero-bad", f"byte {at}"), 30, "the page in Slack")
            assert "source_unavailable" in page[0] or "cannot read" in page[0], page
            down = wait_for(  # a damaged file does not heal: after the page grace it is critical
                lambda: [a for a in alerts_of(hw, "source_down", "firing") if a["run"] == run_bad],
                30,
                "the bad run's source_down",
                seen=lambda: alerts_of(hw, "source_down"),
            )
            assert down[0]["severity"] == "critical", down
            before = step_of(run_a), step_of(run_b)
            wait_for(
                lambda: step_of(run_a) > before[0] + 4 and step_of(run_b) > before[1] + 4, 30, "reading on"
            )
            others = [
                a
                for a in alerts_of(hw, "source_unavailable") + alerts_of(hw, "source_down")
                if a["run"] != run_bad
            ]
            assert not others, others
            healthy_pages = stack.pages("run hero-a ") + stack.pages("run hero-b ")
            assert not healthy_pages, stack.slack.pages("C0ONCALL")
            assert not hw.errors(), hw.errors()
    finally:
        trainer.stop.set()
        trainer.join(5)
