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


@dataclass
class _Budget:
    """What one poll may still read: bytes, and until when."""

    left: int
    deadline: float

    def spent(self) -> bool:
        return self.left <= 0 or time.monotonic() > self.deadline


def shown(text: str) -> str:
    """A name as people and storage get it: bytes that are not UTF-8 in a file name (Python holds them
    as surrogates) spelled ``\\xff``, control characters escaped; the path itself is kept for reading."""
    if text.isprintable() and text.isascii():
        return text
    raw = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in raw)


class Storage:
    """Listing run directories and their event files: the local disk, or an fsspec object store."""

    def __init__(self, logdir: str) -> None:
        self.logdir = logdir
        self.fs: Any = None
        self._outside: set[str] = set()
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
            return sorted(os.path.relpath(p, self.root) for p in found if os.path.isdir(p) and self.within(p))
        if not self.fs.isdir(self.root):
            raise FileNotFoundError(f"log directory {self.logdir} not found")
        found = self.fs.glob(f"{self.root.rstrip('/')}/{pattern}")
        root = self.root.strip("/")
        return sorted(p.strip("/")[len(root) :].strip("/") for p in found if self.fs.isdir(p))

    def within(self, path: str) -> bool:
        """Whether ``path``, symbolic links followed, is inside the log directory: a link pointing out of
        it is not followed (logged once)."""
        real = os.path.realpath(path)
        if os.path.commonpath([real, os.path.realpath(self.root)]) == os.path.realpath(self.root):
            return True
        if path not in self._outside and len(self._outside) < 10_000:
            self._outside.add(path)
            log.warning(
                "%s points outside the log directory %s (to %s): not read", shown(path), self.root, real
            )
        return False

    def event_files(self, run: str) -> list[EventFile]:
        if self.fs is None:
            folder = os.path.join(self.root, run)
            with os.scandir(folder) as entries:
                files = [
                    EventFile(e.name, e.path, e.stat().st_size)
                    for e in entries
                    if is_event_file(e.name) and e.is_file() and (not e.is_symlink() or self.within(e.path))
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
        out = PollResult()
        runs = store.run_dirs(cfg.runs)
        budget = _Budget(cfg.poll_bytes, time.monotonic() + cfg.poll_time)
        out.requests = 1
        for run in runs[: cfg.max_runs]:
            name = shown(run)
            key = qualify(SOURCE, cfg.logdir, name)
            try:
                self._read_run(store, cfg, target, run, key, cursors, budget, out)
            except Exception as exc:  # noqa: BLE001 - one run's damage never blinds the others
                why = f"cannot read run {name!r}: {type(exc).__name__}: {str(exc)[:300]}"
                self._report(target.watch, why)
                out.unreadable[key] = why
        if len(runs) > cfg.max_runs:
            log.warning(
                "watch %s: %d run directories, only the first %d watched (max_runs)",
                target.watch,
                len(runs),
                cfg.max_runs,
            )
        return out

    def _report(self, watch: str, why: str) -> None:
        if why not in self._damaged and len(self._damaged) < 10_000:
            self._damaged.add(why)
            log.warning("watch %s: %s", watch, why)

    def _read_run(
        self,
        store: Storage,
        cfg: TensorboardTarget,
        target: Target,
        run: str,
        key: str,
        cursors: Mapping[str, Cursor],
        budget: _Budget,
        out: PollResult,
    ) -> None:
        files = store.event_files(run)
        out.requests += 1
        if not files:
            return  # not a run (yet): a directory without event files
        wanted = key_filter(cfg.tags)
        cursor: dict[str, Any] = {
            **(cursors.get(key) or {}),
            "files": dict((cursors.get(key) or {}).get("files", {})),
        }
        offsets: dict[str, int] = cursor["files"]
        tags: set[str] = set()
        damage: list[str] = []
        for f in files:
            if budget.spent():
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
            got = read_events(f.path, at, min(cfg.read_bytes, budget.left), wanted, cfg.max_record_bytes)
            budget.left -= got.read
            out.requests += 1
            self.bytes_read += got.read
            if got.damaged:
                self._report(target.watch, shown(got.damaged))
                damage.append(shown(got.damaged))
            offsets[f.name] = got.offset
            tags |= got.tags
            for row in got.rows:
                out.samples.append(
                    Sample(t=row.t, run=key, step=row.step, metrics=row.metrics, source=SOURCE)
                )
                cursor["step"], cursor["t"] = row.step, row.t
        if damage:
            out.unreadable[key] = "; ".join(damage)
        if tags:
            out.logged[key] = sorted(tags)
        out.cursors[key] = cursor
        out.runs.append(
            RunInfo(
                run=key,
                source=SOURCE,
                display_name=shown(run),
                labels={"source": SOURCE, "tensorboard_logdir": cfg.logdir, **dict(target.labels)},
                heartbeat_at=cursor.get("t"),
                name=shown(run),
                project=cfg.logdir,
            )
        )

    def close(self) -> None:
        self._storage.clear()
