"""Source kind ``logs``: the text training jobs print, read incrementally for progress and crashes.

A poll lists the files the watch's globs match (names, sizes, identities: no file opened) and reads only
those that grew past their cursor (``monitor.sources.log_reader``), at most ``read_bytes`` per file and
``poll_bytes`` per poll: a poll costs what is new, not what is there (``bench/sources.py``).

A run is a file (``logs:<folder>/<file>``) or, with ``run_key``, the files of one key
(``logs:<watch>/<key>``). Its steps are its progress lines' (a step that goes back is a restart, as the
rules read any rewind); a crash line becomes a job alert (``Sample.alert``, level error: the hero pack's
``job_alert_error`` pages, its summary naming the line). A log has no run state: a file that stops
growing stops the steps (``progress_stalled``) like a hung job; the ``slurm`` source gives the state.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, ClassVar

from monitor.run_ids import qualify
from monitor.samples import JobAlert, RunInfo, Sample
from monitor.settings import Settings
from monitor.sources.base import Cursor, PollResult, Target
from monitor.sources.log_files import Files, LogFile
from monitor.sources.log_reader import FileRead, read_file
from monitor.sources.logs_config import LogsTarget

log = logging.getLogger(__name__)
SOURCE = "logs"
CRASH_WAIT = 300.0  # seconds: the same crash printed by many ranks is one alert


class LogsSource:
    kind: ClassVar[str] = "logs"

    def __init__(self, settings: Settings | None = None) -> None:
        self.files = Files()
        self.bytes_read = 0  # for the bench
        self._noted: set[str] = set()

    def poll(self, target: Target, cursors: Mapping[str, Cursor], now: float) -> PollResult:
        cfg: LogsTarget = target.config
        try:
            found: list[LogFile] = []
            for pattern in cfg.paths:
                found.extend(self.files.list(pattern))
        except (OSError, ValueError, ImportError) as exc:
            msg = f"cannot list the log files: {type(exc).__name__}: {exc}"
            log.warning("watch %s: %s", target.watch, msg)
            return PollResult(error=msg)
        # a store that gives no modification time (0): the file is taken as written up to now
        found = list({f.path: (f if f.mtime > 0 else replace(f, mtime=now)) for f in found}.values())
        if len(found) > cfg.max_files:
            self._note(
                target.watch, f"{len(found)} log files, only the first {cfg.max_files} watched (max_files)"
            )
        runs: dict[str, list[LogFile]] = {}
        for f in found[: cfg.max_files]:
            key = run_of(cfg, target.watch, f.path)
            if key is not None:
                runs.setdefault(key[0], []).append(f)
        out = PollResult(requests=len(cfg.paths))
        budget = cfg.poll_bytes
        for key, files in runs.items():
            cursor = dict(cursors.get(key) or {})
            per_file = dict(cursor.get("files") or {})
            for f in files:
                try:
                    got = read_file(self.files, f, per_file.get(f.path), cfg, budget)
                except OSError as exc:  # one unreadable file blinds its run only
                    self._note(target.watch, f"cannot read {f.path}: {exc}")
                    continue
                budget -= got.read
                self.bytes_read += got.read
                out.requests += 1 if got.read else 0
                per_file[f.path] = got.cursor
                emit(out, key, got, SOURCE, cursor)
                for note in got.notes:
                    self._note(target.watch, note)
            cursor["files"] = per_file
            out.cursors[key] = cursor
            name = run_of(cfg, target.watch, files[0].path)
            shown = name[1] if name else key
            formats = sorted({c.get("fmt") or cfg.format for c in per_file.values()} - {"auto"})
            out.runs.append(
                RunInfo(
                    run=key,
                    source=SOURCE,
                    display_name=shown,
                    labels={
                        "source": SOURCE,
                        **({"log_format": formats[0]} if formats else {}),
                        **dict(target.labels),
                    },
                    heartbeat_at=cursor.get("t"),
                    name=shown,
                    project=target.watch if cfg.run_key else os.path.dirname(files[0].path),
                )
            )
        return out

    def _note(self, watch: str, note: str) -> None:
        if note not in self._noted and len(self._noted) < 10_000:
            self._noted.add(note)
            log.warning("watch %s: %s", watch, note)

    def close(self) -> None:
        pass


def run_of(cfg: LogsTarget, watch: str, path: str) -> tuple[str, str] | None:
    """(the run's id, its display name) for a file; None: ``run_key`` does not match it."""
    if cfg.run_key is None:
        folder, name = os.path.split(path)
        shown = "/".join(path.rstrip("/").split("/")[-2:])
        return qualify(SOURCE, folder, name), shown
    m = re.search(cfg.run_key, path)
    if m is None or not m.group("run"):
        return None
    return qualify(SOURCE, watch, m.group("run")), m.group("run")


def emit(out: PollResult, key: str, got: FileRead, source: str, cursor: dict[str, Any]) -> None:
    """A file's rows and crashes as samples of run ``key``; the run's cursor keeps its last step and time."""
    for row in got.rows:
        out.samples.append(Sample(t=row.t, run=key, step=row.step, metrics=row.metrics, source=source))
        cursor["step"], cursor["t"] = row.step, row.t
        if row.total:
            cursor["total"] = row.total
    if got.rows:
        keys = sorted({k for r in got.rows for k in r.metrics} | set(out.logged.get(key, [])))
        out.logged[key] = keys
    seen: set[str] = set()
    for crash in got.crashes:
        if crash.title in seen:
            continue  # many ranks print the same death: one alert per poll (and per wait)
        seen.add(crash.title)
        t = max(float(got.cursor.get("m") or 0.0), float(cursor.get("t") or 0.0))  # when it was printed
        alert = JobAlert(crash.title, crash.line, "error", CRASH_WAIT)
        out.samples.append(Sample(t=t, run=key, step=cursor.get("step"), source=source, alert=alert))
