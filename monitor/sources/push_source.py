"""Source kind ``push``: what jobs pushed through ``POST /api/ingest`` (``herowatch emit``), read back from
the spool (monitor.sources.push_spool) incrementally.

A poll lists the watch's run files and reads only those that grew past their cursor (the byte offset
after the last whole line read). A run is ``push:<watch>/<run>``; its state is the last one it pushed
(``started`` is running, an exit is finished, failed or killed), unknown (as good as running) before.
A custom alert the job sent rides on its sample (``Sample.alert``) to the ``job_alert`` rules.
A job that stops pushing gets no state change from here: its steps stop (``progress_stalled``) and its
telemetry stops (``telemetry_gone``), as with any tracker that goes quiet.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from monitor.run_ids import qualify
from monitor.samples import JobAlert, RunInfo, Sample, alert_from_dict
from monitor.settings import Settings
from monitor.sources.base import Cursor, PollResult, Target
from monitor.sources.push_config import PushTarget
from monitor.sources.push_spool import read_from, read_marks, run_files, write_marks

log = logging.getLogger(__name__)
SOURCE = "push"


def _sample(row: Mapping[str, object], key: str) -> Sample | None:
    t = row.get("t")
    if not isinstance(t, int | float):
        return None
    step = row.get("step")
    metrics = row.get("metrics")
    state = row.get("state")
    return Sample(
        t=float(t),
        run=key,
        step=step if isinstance(step, int) else None,
        metrics=metrics if isinstance(metrics, dict) else {},
        state=state if isinstance(state, str) else None,
        source=SOURCE,
        alert=_alert(row.get("alert")),
    )


def _alert(raw: object) -> JobAlert | None:
    """A custom alert the job sent (``herowatch emit alert``), as the door wrote it."""
    if raw is None:
        return None
    try:
        return alert_from_dict(raw)
    except ValueError:
        return None  # never written by the door


class PushSource:
    kind: ClassVar[str] = "push"

    def __init__(self, settings: Settings | None = None) -> None:
        self.root: Path = (settings or Settings()).ingest_dir

    def poll(self, target: Target, cursors: Mapping[str, Cursor], now: float) -> PollResult:
        cfg: PushTarget = target.config
        watch = target.watch
        prefix = qualify(SOURCE, watch, "")
        by_file = {
            c["file"]: (k, c)
            for k, c in cursors.items()
            if "file" in c and (k.startswith(prefix) or k == qualify(SOURCE, watch, str(c.get("name"))))
        }
        out = PollResult()
        marks: dict[str, int] = {}
        try:
            files = list(run_files(self.root, watch))
        except OSError as exc:
            return PollResult(error=f"cannot list the ingest folder {self.root / watch}: {exc}")
        for name, path, size in files:
            key, cursor = by_file.get(name, (None, {"file": name, "offset": 0}))
            cursor = dict(cursor)
            if size > int(cursor.get("offset", 0)):
                try:
                    chunk = read_from(path, int(cursor.get("offset", 0)), cfg.read_bytes)
                except OSError as exc:  # this run's file only: the other runs are read
                    log.warning("watch %s: cannot read the push spool file %s: %s", watch, path, exc)
                    if key is not None:
                        out.unreadable[key] = f"cannot read its push spool file {path}: {exc}"
                        out.cursors[key] = cursor
                    continue
                for row in chunk.rows:
                    run = row.get("run")
                    if key is None and isinstance(run, str) and run:
                        key, cursor["name"] = qualify(SOURCE, watch, run), run
                    if key is None or (s := _sample(row, key)) is None:
                        continue
                    out.samples.append(s)
                    cursor["t"] = s.t
                    if s.state is not None:
                        cursor["state"] = s.state
                    if s.step is not None:
                        cursor["step"] = s.step
                    out.logged.setdefault(key, [])
                    out.logged[key] = sorted({*out.logged[key], *s.metrics})
                cursor["offset"] = chunk.offset
            marks[name] = int(cursor.get("offset", 0))
            if key is None:
                continue  # nothing whole in it yet
            out.cursors[key] = cursor
            out.runs.append(
                RunInfo(
                    run=key,
                    source=SOURCE,
                    display_name=cursor.get("name"),
                    state=cursor.get("state"),
                    labels={"source": SOURCE, **dict(target.labels)},
                    heartbeat_at=cursor.get("t"),
                    name=cursor.get("name"),
                    project=watch,
                )
            )
        out.requests = len(files)
        self._mark(watch, marks)
        return out

    def _mark(self, watch: str, marks: dict[str, int]) -> None:
        """Tell the door how far this poll read (its spool budget counts what is not read yet)."""
        try:
            if marks != read_marks(self.root, watch):
                write_marks(self.root, watch, marks)
        except OSError as exc:
            log.warning("cannot record how far the push spool of %s was read: %s", watch, exc)

    def close(self) -> None:
        pass
