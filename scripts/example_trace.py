#!/usr/bin/env python3
"""Writes monitor/traces/examples/llmc-gpt2-124m.jsonl, the example trace for `herowatch replay`
(docs/examples/README.md).

Steps 7200 to 7700 of a real run: llm.c GPT-2 124M as logged in KellerJordan/modded-nanogpt @
f411b3d3, records/track_1_short/2024-10-13_llmc/main.log (MIT), parsed into
/work/shared/data/real/llmc_gpt2_124m_steps.csv (loss, learning rate, grad norm; the real one-step
grad-norm spike at step 7435, 1.44 against ~0.27). The log has no wall clock: a steady 2 s a step is
assumed. Then a made-up hang, said so in every line's labels: the run keeps reporting `running` once
a minute for 40 minutes without a new step.

Usage: python3 scripts/example_trace.py [path to llmc_gpt2_124m_steps.csv]
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE = Path(sys.argv[1] if len(sys.argv) > 1 else "/work/shared/data/real/llmc_gpt2_124m_steps.csv")
OUT = REPO / "monitor/traces/examples/llmc-gpt2-124m.jsonl"
T0 = 1_728_820_800.0  # 2024-10-13T12:00:00Z, the day the log was recorded
STEP_SECONDS = 2.0
FIRST, LAST = 7200, 7700
RUN = "llmc-gpt2-124m"


def main() -> None:
    lines = []
    t = T0
    with SOURCE.open() as f:
        for row in csv.DictReader(f):
            step = int(row["step"])
            if row["kind"] != "train" or not FIRST <= step <= LAST:
                continue
            t = T0 + (step - FIRST) * STEP_SECONDS
            metrics = {
                "train/loss": float(row["loss"]),
                "optim/learning_rate": float(row["lr"]),
                "grad/norm/total": float(row["grad_norm"]),
            }
            lines.append({"t": t, "run": RUN, "step": step, "metrics": metrics, "state": "running"})
    for minute in range(1, 41):  # the made-up hang: alive, no step
        lines.append(
            {"t": t + 60 * minute, "run": RUN, "state": "running", "labels": {"example": "made-up hang"}}
        )
    OUT.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines))
    print(f"{OUT.relative_to(REPO)}: {len(lines)} lines")


if __name__ == "__main__":
    main()
