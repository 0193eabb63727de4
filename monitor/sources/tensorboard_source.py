"""Source kind ``tensorboard``: the run directories of a log directory, their scalars read incrementally.

A poll lists the run directories (``runs`` glob under ``logdir``) and their event files with their
sizes: one directory listing per run, no file opened. Only files larger than their cursor are read, from
the cursor (monitor.sources.tensorboard_events), so a poll costs what is new, not what is there.

Per run the cursor holds, per event file, the byte offset after the last whole record. A trainer starts
a new event file per process: after a restart the new file's first steps are lower than the old file's
last (a rewind, which the rules read as a restart); after a herowatch restart files already read are
continued, never re-read. A file that shrank was replaced: it is read from its start.

TensorBoard has no run state and no heartbeat: a run is running while its files grow. A run that stops
writing looks like a hung one (``progress_stalled`` after its limit, ``telemetry_gone``): set the
watch's ``target_step`` so that a run stopping at its last step is finished, not stalled.
"""

from __future__ import annotations

import glob
import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from monitor.run_ids import qualify
from monitor.samples import RunInfo, Sample
from monitor.settings import Settings
from monitor.sources.base import Cursor, PollResult, Target
from monitor.sources.key_patterns import key_filter
from monitor.sources.tensorboard_config import TensorboardTarget
from monitor.sources.tensorboard_events import is_event_file, order_key, read_events, record_start

log = logging.getLogger(__name__)
SOURCE = "tensorboard"


@dataclass(frozen=True)
class EventFile:
    name: str
    path: str  # what TensorBoard's gfile opens: a local path or a URL
    size: int


class Storage:
    """Listing run directories and their event files: the local disk, or an fsspec object store."""

    def __init__(self, logdir: str) -> None:
        self.logdir = logdir
        self.fs: Any = None
        if "://" in logdir and not logdir.startswith("file://"):
            import fsspec

            self.fs, self.root = fsspec.core.url_to_fs(logdir)
        else:
            self.root = logdir.removeprefix("file://")

    def run_dirs(self, pattern: str) -> list[str]:
        """Run directories under the log directory, relative to it, sorted. A log directory that is not
        there (an unmounted share, a wrong bucket) is an error: its runs are unknown, not gone."""
        if self.fs is None:
            if not os.path.isdir(self.root):
                raise FileNotFoundError(f"log directory {self.root} not found")
            found = glob.glob(os.path.join(glob.escape(self.root), pattern))
            return sorted(os.path.relpath(p, self.root) for p in found if os.path.isdir(p))
        if not self.fs.isdir(self.root):
            raise FileNotFoundError(f"log directory {self.logdir} not found")
        found = self.fs.glob(f"{self.root.rstrip('/')}/{pattern}")
        root = self.root.strip("/")
        return sorted(p.strip("/")[len(root) :].strip("/") for p in found if self.fs.isdir(p))

    def event_files(self, run: str) -> list[EventFile]:
        if self.fs is None:
            folder = os.path.join(self.root, run)
            with os.scandir(folder) as entries:
                files = [
                    EventFile(e.name, e.path, e.stat().st_size)
                    for e in entries
                    if is_event_file(e.name) and e.is_file()
                ]
        else:
            folder = f"{self.root.rstrip('/')}/{run}"
            files = []
            for info in self.fs.ls(folder, detail=True):
                name = info["name"].rstrip("/").rsplit("/", 1)[-1]
                if info.get("type") == "file" and is_event_file(name):
                    files.append(EventFile(name, self.fs.unstrip_protocol(info["name"]), int(info["size"])))
        return sorted(files, key=lambda f: order_key(f.name))


class TensorboardSource:
    kind: ClassVar[str] = "tensorboard"

    def __init__(self, settings: Settings | None = None) -> None:
        self._storage: dict[str, Storage] = {}
        self._damaged: set[str] = set()
        self.bytes_read = 0  # for the bench: what polls read, in total

    def storage(self, logdir: str) -> Storage:
        if logdir not in self._storage:
            self._storage[logdir] = Storage(logdir)
        return self._storage[logdir]

    def poll(self, target: Target, cursors: Mapping[str, Cursor], now: float) -> PollResult:
        cfg: TensorboardTarget = target.config
        try:
            return self._poll(cfg, target, cursors)
        except (OSError, ValueError, ImportError) as exc:
            msg = f"cannot read the log directory {cfg.logdir}: {type(exc).__name__}: {exc}"
            log.warning("watch %s: %s", target.watch, msg)
            return PollResult(error=msg)

    def _poll(self, cfg: TensorboardTarget, target: Target, cursors: Mapping[str, Cursor]) -> PollResult:
        store = self.storage(cfg.logdir)
        wanted = key_filter(cfg.tags)
        out = PollResult()
        runs = store.run_dirs(cfg.runs)
        budget, deadline = cfg.poll_bytes, time.monotonic() + cfg.poll_time
        out.requests = 1
        for run in runs[: cfg.max_runs]:
            files = store.event_files(run)
            out.requests += 1
            if not files:
                continue  # not a run (yet): a directory without event files
            key = qualify(SOURCE, cfg.logdir, run)
            cursor: dict[str, Any] = {
                **(cursors.get(key) or {}),
                "files": dict((cursors.get(key) or {}).get("files", {})),
            }
            offsets: dict[str, int] = cursor["files"]
            tags: set[str] = set()
            for f in files:
                if budget <= 0 or time.monotonic() > deadline:
                    break  # the rest of the backlog next poll
                if f.name not in offsets and f.size > cfg.warmup_bytes:
                    # first sight of a long file: its last warmup_bytes, from a record boundary
                    offsets[f.name] = record_start(f.path, f.size - cfg.warmup_bytes) or 0
                at = int(offsets.get(f.name, 0))
                if f.size < at:
                    log.warning(
                        "event file %s shrank (%d < %d bytes): read again from its start", f.path, f.size, at
                    )
                    at = 0
                if f.size == at:
                    continue
                got = read_events(f.path, at, min(cfg.read_bytes, budget), wanted)
                budget -= got.read
                out.requests += 1
                self.bytes_read += got.read
                if got.damaged and got.damaged not in self._damaged:
                    self._damaged.add(got.damaged)
                    log.warning("watch %s: %s", target.watch, got.damaged)
                offsets[f.name] = got.offset
                tags |= got.tags
                for row in got.rows:
                    out.samples.append(
                        Sample(t=row.t, run=key, step=row.step, metrics=row.metrics, source=SOURCE)
                    )
                    cursor["step"], cursor["t"] = row.step, row.t
            if tags:
                out.logged[key] = sorted(tags)
            out.cursors[key] = cursor
            out.runs.append(
                RunInfo(
                    run=key,
                    source=SOURCE,
                    display_name=run,
                    labels={"source": SOURCE, "tensorboard_logdir": cfg.logdir, **dict(target.labels)},
                    heartbeat_at=cursor.get("t"),
                    name=run,
                    project=cfg.logdir,
                )
            )
        if len(runs) > cfg.max_runs:
            log.warning(
                "watch %s: %d run directories, only the first %d watched (max_runs)",
                target.watch,
                len(runs),
                cfg.max_runs,
            )
        return out

    def close(self) -> None:
        self._storage.clear()
