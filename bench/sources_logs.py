# ruff: noqa: E501
"""What a poll of the logs source costs on a 1 GB job log, in proportion to the new bytes
(run from ``bench/sources.py``, or alone: ``.venv/bin/python bench/sources_logs.py [--log-gb 1]``).

A Megatron-style log of ``--log-gb`` (progress lines among the job's other output, 1 in 2 lines) is
written once. Side by side, in one process:

- reading the whole file as a backfill does (``read_bytes`` unbounded) against ``cat``-speed reading of
  the same bytes (the floor);
- the first poll (its last ``warmup_bytes``);
- polls after the file grew by ``--new-kb`` (10 times) and after nothing grew: their time as a ratio to
  reading the new bytes once, and the bytes they read against the bytes that were new.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from monitor.sources.base import Target  # noqa: E402
from monitor.sources.logs_config import WHOLE, LogsTarget  # noqa: E402
from monitor.sources.logs_source import LogsSource  # noqa: E402


def line(step: int) -> str:
    return (
        f"[default7]: iteration {step:8d}/  115311 | consumed samples: {step * 2048:12d} | elapsed time per "
        f"iteration (s): 106.36 | learning rate: 5.279E-05 | global batch size:  2048 | lm loss: 2.345279E+00 | "
        f"grad norm: 0.261 | number of skipped iterations:   0 | number of nan iterations:   0 |\n"
        "[default7]: [2024-05-01 10:00:00] INFO data loader: prefetched shard 00017 (2048 samples)\n"
    )


def write_log(path: Path, gigabytes: float) -> int:
    target, step = int(gigabytes * (1 << 30)), 0
    with path.open("w") as f:
        size = 0
        while size < target:
            block = "".join(line(step + i) for i in range(1, 2001))
            step += 2000
            f.write(block)
            size += len(block)
    return step


def poll(src: LogsSource, cfg: LogsTarget, cursors: dict) -> tuple[float, int, int]:
    before = src.bytes_read
    t0 = time.perf_counter()
    res = src.poll(Target("bench", cfg), cursors, time.time())
    dt = time.perf_counter() - t0
    assert res.error is None, res.error
    cursors.update(res.cursors)
    return dt, src.bytes_read - before, len(res.samples)


def cat(path: Path, offset: int = 0) -> float:
    t0 = time.perf_counter()
    with path.open("rb") as f:
        f.seek(offset)
        while f.read(8 << 20):
            pass
    return time.perf_counter() - t0


def logs_bench(gigabytes: float = 1.0, new_kb: int = 256) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "stdout.log"
        t0 = time.perf_counter()
        step = write_log(path, gigabytes)
        size = path.stat().st_size
        print(f"logs: one Megatron log of {size / (1 << 30):.2f} GiB ({step} steps) written in "
              f"{time.perf_counter() - t0:.0f}s")  # fmt: skip
        whole = LogsTarget(paths=[str(path)], read_bytes=WHOLE, warmup_bytes=WHOLE, poll_bytes=WHOLE)
        floor = cat(path)
        dt, read, samples = poll(LogsSource(), whole, {})
        print(f"  backfill (whole file): {dt:.1f}s, {read / dt / 1e6:.0f} MB/s, {samples} samples; "
              f"cat: {floor:.2f}s -> {dt / floor:.1f}x the floor of reading the bytes")  # fmt: skip
        cfg, cursors, src = LogsTarget(paths=[str(path)]), {}, LogsSource()
        dt, read, samples = poll(src, cfg, cursors)
        print(
            f"  first poll: {dt * 1e3:.1f} ms, read {read} bytes (warmup_bytes {cfg.warmup_bytes}), {samples} samples"
        )
        times, reads, news, ms = [], [], [], []
        for _ in range(10):
            start = path.stat().st_size
            with path.open("a") as f:
                chunk = ""
                while len(chunk) < new_kb * 1024:
                    step += 1
                    chunk += line(step)
                f.write(chunk)
            new = path.stat().st_size - start
            floor = cat(path, start)
            dt, read, _ = poll(src, cfg, cursors)
            times.append(dt / max(floor, 1e-9))
            ms.append(dt * 1e3)
            reads.append(read)
            news.append(new)
        idle, read_idle, _ = poll(src, cfg, cursors)
        print(f"  poll after +{new_kb} KiB (10 polls): read {sum(reads)} of {sum(news)} new bytes "
              f"({sum(reads) / sum(news):.3f}); {min(ms):.0f}..{max(ms):.0f} ms a poll, "
              f"{min(times):.0f}x..{max(times):.0f}x reading the new bytes once (the parse is the cost)")  # fmt: skip
        print(f"  poll with nothing new: {idle * 1e3:.2f} ms, {read_idle} bytes read (limit: 0)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--log-gb", type=float, default=1.0)
    ap.add_argument("--new-kb", type=int, default=256)
    a = ap.parse_args()
    logs_bench(a.log_gb, a.new_kb)
