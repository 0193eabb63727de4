"""Real logs as runs for ``bench/detection_quality.py``: the PAI job's workers (one of them the real
straggler) and the BLOOM-176B excerpts without incidents, each block a run of its own."""

from __future__ import annotations

import csv
import math
import statistics

from monitor.samples import Sample
from tests.rules.helpers_rules import T0, real_file


def pai_runs(straggler: bool) -> tuple[list[Sample], float, None]:
    """The PAI job's workers as runs: one row per sampled iteration (every 10), 6 s an iteration at the
    median batch time, tokens/s from the batch time. With ``straggler`` only worker 6, whose real
    slowdown (about 1.27x from iteration 1750) is the incident."""
    by_worker: dict[int, list[tuple[int, float]]] = {}
    with open(real_file("pai_job_1_minibatch_norm.csv"), newline="") as fh:
        for row in csv.DictReader(fh):
            by_worker.setdefault(int(row["worker"]), []).append(
                (int(row["time"]), float(row["batch_time_norm"]))
            )
    out, onset = [], math.inf
    for worker, rows in by_worker.items():
        if (worker == 6) != straggler:
            continue
        rows.sort()
        mid = statistics.median(b for _, b in rows)
        t = T0
        for (it, batch), (nxt, _) in zip(rows, rows[1:] + [(rows[-1][0] + 10, 0.0)], strict=True):
            tokens = {"throughput/tokens_per_second": 1e6 * mid / batch}  # a 1M-token batch at the median
            out.append(Sample(t, f"pai-worker-{worker}", it, tokens, "running", "wandb"))
            if it >= 1750:
                onset = min(onset, t)
            t += (nxt - it) * 6.0 * batch / mid
    return sorted(out, key=lambda s: s.t), onset, None


def bloom_blocks() -> list[Sample]:
    """The BLOOM-176B excerpts without incidents, each block a run of its own (months apart, they are
    no continuous log): all but the loss spike (#7) and the slow-GPU block (#13)."""
    out = []
    with open(real_file("bigscience_megatron_iterations.csv"), newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["run"] == "tr11-176B-ml"]
    for block in sorted({r["block_id"] for r in rows} - {"tr11-176B-ml#7", "tr11-176B-ml#13"}):
        t = T0
        for r in (r for r in rows if r["block_id"] == block):
            metrics = {"train/loss": float(r["lm_loss"]), "grad/norm/total": float(r["grad_norm"])}
            out.append(Sample(t, block, int(r["iteration"]), metrics, "running", "wandb"))
            t += float(r["elapsed_s_per_iter"])
    return sorted(out, key=lambda s: s.t)
