"""Writing real TensorBoard event files with TensorBoard's own writer (``EventFileWriter``), as a
trainer does: one file per process start, one event per scalar."""

from __future__ import annotations

import time
from pathlib import Path

from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter


class TbRun:
    """One process of a trainer writing one run directory (a restart is a new ``TbRun``)."""

    def __init__(self, logdir: Path, run: str, suffix: str = "") -> None:
        self.dir = logdir / run
        self.writer = EventFileWriter(str(self.dir), flush_secs=3600, filename_suffix=suffix)

    def log(self, step: int, metrics: dict[str, float], t: float | None = None) -> None:
        wall = time.time() if t is None else t
        for tag, value in metrics.items():  # as Megatron and torch's SummaryWriter do: one event per scalar
            summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)])
            self.writer.add_event(event_pb2.Event(wall_time=wall, step=step, summary=summary))

    def flush(self) -> None:
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()

    def files(self) -> list[Path]:
        return sorted(p for p in self.dir.iterdir() if "tfevents" in p.name)
