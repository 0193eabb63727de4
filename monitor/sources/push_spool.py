"""The spool between the ingest door and the push source: one append-only JSON Lines file per run.

``POST /api/ingest`` appends what a job pushed (already validated, in the trace format's line shape:
``t``, ``run``, ``step``, ``metrics``, ``state``, ``alert``) and returns only once the lines are on
disk; the push source reads each file from its byte cursor, whole lines only. A push is never lost
between the two: not when herowatch restarts (the cursor is stored with the run), not when the poller
is behind.

Layout: ``<ingest_dir>/<watch>/<sha256(run)[:32]>.jsonl``: the file name never depends on what a job
may send (a run name with ``/`` or 200 characters), the run's own name is in every line.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from monitor.samples import JobAlert, alert_to_dict

SUFFIX = ".jsonl"


def run_file(root: Path, watch: str, run: str) -> Path:
    digest = hashlib.sha256(run.encode()).hexdigest()[:32]
    return root / watch / f"{digest}{SUFFIX}"


def _number(v: float) -> float | str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return v


def line(
    t: float,
    run: str,
    step: int | None,
    metrics: Mapping[str, float],
    state: str | None,
    alert: JobAlert | None = None,
) -> bytes:
    """One spool line: strict JSON (non-finite values spelled as the trace format does)."""
    row: dict[str, Any] = {"t": t, "run": run}
    if step is not None:
        row["step"] = step
    if metrics:
        row["metrics"] = {k: _number(v) for k, v in metrics.items()}
    if state is not None:
        row["state"] = state
    if alert is not None:
        row["alert"] = alert_to_dict(alert)
    return json.dumps(row, separators=(",", ":"), allow_nan=False).encode() + b"\n"


class TooManyRuns(Exception):
    """The watch already has as many run files as it may have: a new run is refused."""


class SpoolWriter:
    """Appends lines to run files; one writer per process (a lock per watch keeps lines whole). It
    counts each watch's run files (listed once, then kept as it creates them), so that a new run is
    checked against the watch's limit and created under the same lock: concurrent first pushes of
    distinct runs never make more than the limit."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._locks: dict[str, threading.Lock] = {}
        self._counts: dict[str, int] = {}  # watch -> its run files; read and changed under its lock
        self._guard = threading.Lock()

    def _lock(self, watch: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(watch, threading.Lock())

    def _count(self, watch: str) -> int:
        """The watch's run files (its lock held): the folder is listed the first time only."""
        if watch not in self._counts:
            folder = self.root / watch
            self._counts[watch] = (
                sum(1 for p in folder.iterdir() if p.suffix == SUFFIX) if folder.is_dir() else 0
            )
        return self._counts[watch]

    def runs(self, watch: str) -> int:
        with self._lock(watch):
            return self._count(watch)

    def known(self, watch: str, run: str) -> bool:
        return run_file(self.root, watch, run).exists()

    def append(self, watch: str, run: str, lines: Iterable[bytes], max_runs: int | None = None) -> None:
        """Write ``lines`` at the end of the run's file and sync them to disk before returning. A run
        without a file yet is refused with :class:`TooManyRuns` when the watch has ``max_runs``."""
        path = run_file(self.root, watch, run)
        data = b"".join(lines)
        with self._lock(watch):
            count = self._count(watch)
            new = not path.exists()
            if new and max_runs is not None and count >= max_runs:
                raise TooManyRuns(f"watch {watch} already has {count} pushed runs")
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            if new:
                self._counts[watch] = count + 1


@dataclass(frozen=True)
class Chunk:
    """Whole lines read from one run file: the parsed rows and the offset after the last of them."""

    rows: list[dict[str, Any]]
    offset: int
    more: bool  # the file holds more than was read this time


def run_files(root: Path, watch: str) -> Iterator[tuple[str, Path, int]]:
    """(file name, path, size) of every run file of the watch."""
    folder = root / watch
    if not folder.is_dir():
        return
    with os.scandir(folder) as entries:
        for e in entries:
            if e.name.endswith(SUFFIX) and e.is_file():
                yield e.name, Path(e.path), e.stat().st_size


def read_from(path: Path, offset: int, limit: int) -> Chunk:
    """Whole lines from ``offset``, at most ``limit`` bytes (a longer first line is read whole)."""
    with path.open("rb") as f:
        f.seek(offset)
        data = f.read(limit)
        end = data.rfind(b"\n")
        while end < 0 and data:
            extra = f.read(limit)  # a line longer than the limit: read on to its end
            if not extra:
                break
            data += extra
            end = data.rfind(b"\n")
        more = bool(f.read(1))
    if end < 0:
        return Chunk([], offset, False)  # a line still being written: wait for its end
    rows = []
    for raw in data[: end + 1].splitlines():
        try:
            row = json.loads(raw)
        except ValueError:
            continue  # never written by the door: skip, never stop reading the run
        if isinstance(row, dict):
            rows.append(row)
    return Chunk(rows, offset + end + 1, more or end + 1 < len(data))


MARKS = ".read.json"  # per watch: {run file: bytes of it the push source has read}, for the door's budget


def write_marks(root: Path, watch: str, marks: Mapping[str, int]) -> None:
    """Record how far the push source has read each run file (atomically: a reader sees the old or the
    new marks). The door's spool budget is what was accepted and not read yet (:func:`backlog`)."""
    folder = root / watch
    if not folder.is_dir():
        return
    tmp = folder / f"{MARKS}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(dict(marks), separators=(",", ":")))
    os.replace(tmp, folder / MARKS)


def read_marks(root: Path, watch: str) -> dict[str, int]:
    try:
        raw = json.loads((root / watch / MARKS).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict):
        return {}
    return {k: v for k, v in raw.items() if isinstance(k, str) and isinstance(v, int)}


def backlog(root: Path, watch: str) -> int:
    """Bytes of the watch's spool accepted by the door and not yet read by its push source."""
    marks = read_marks(root, watch)
    return sum(max(0, size - marks.get(name, 0)) for name, _, size in run_files(root, watch))
