"""One log file read since its cursor: its progress rows (with times) and crash lines. Shared by the
``logs`` source and the ``slurm`` source (which reads each job's ``StdOut`` with it).

A file's cursor (JSON, stored with the run) holds: ``offset`` (after the last whole line), ``id`` (its
identity), ``head`` (digest of its first bytes), ``skipping`` (inside an over-long line), ``fmt`` (the
format ``auto`` detected), ``n`` (progress lines without a step, counted), ``tb`` (lines left in which an
exception line ends a traceback), ``m`` (the file's modification time at the last read).

Times: a line's own timestamp when it prints one; otherwise the lines read in one poll are spread
evenly between the previous read's modification time and this one's (the file was written in between),
and on first sight they end at its modification time, spaced by the steps' own durations if printed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from monitor.sources.log_crashes import TRACEBACK_LINES, Crash, crash_of, starts_traceback
from monitor.sources.log_files import HEAD, Chunk, Files, LogFile, digest, split_lines
from monitor.sources.log_formats import LineFormat, Progress, detect, format_of, line_time
from monitor.sources.logs_config import LogsTarget

log = logging.getLogger(__name__)
DETECT_LINES = 200  # lines kept to detect a format from (auto)


@dataclass
class Row:
    step: int
    t: float
    metrics: dict[str, float]
    total: int | None = None


@dataclass
class FileRead:
    rows: list[Row] = field(default_factory=list)
    crashes: list[Crash] = field(default_factory=list)
    cursor: dict[str, Any] = field(default_factory=dict)
    read: int = 0
    format: str | None = None  # the format the lines were read with (auto: once detected)
    notes: list[str] = field(default_factory=list)  # what a person should know (rotation, long lines)


def read_file(
    files: Files, f: LogFile, cursor: dict[str, Any] | None, cfg: LogsTarget, budget: int
) -> FileRead:
    """What is new in ``f`` since ``cursor``, at most ``min(cfg.read_bytes, budget)`` bytes."""
    cur = dict(cursor or {})
    out = FileRead()
    limit = max(0, min(cfg.read_bytes, budget))
    chunks: list[tuple[Chunk, float]] = []
    if cur and cur.get("id") and f.ident and cur["id"] != f.ident:
        old = files.rotated(f.path, cur["id"])  # the rest of the file before it was rotated
        if old is not None and old.size > int(cur.get("offset", 0)):
            _, data = files.read(old.path, int(cur["offset"]), min(limit, old.size - int(cur["offset"])))
            chunk = split_lines(data, int(cur["offset"]), cfg.max_line, bool(cur.get("skipping")), final=True)
            chunks.append((chunk, old.mtime))
            limit -= chunk.read
        out.notes.append(f"{f.path} was rotated" + (f" (the rest read from {old.path})" if old else ""))
        cur = _fresh(cur)
    elif cur and f.size < int(cur.get("offset", 0)):
        out.notes.append(f"{f.path} was truncated ({f.size} < {cur['offset']} bytes): read from its start")
        cur = _fresh(cur)
    if not cur:
        cur = {"offset": 0}
        if f.size > cfg.warmup_bytes:  # first sight of a long file: its end only, from a line start
            cur.update(offset=f.size - cfg.warmup_bytes, skipping=True)
    cur["id"] = f.ident
    offset = int(cur["offset"])
    if f.size > offset and limit > 0:
        head, data = files.read(f.path, offset, min(limit, f.size - offset))  # what the listing saw
        if cur.get("head") and len(head) >= HEAD and digest(head) != cur["head"] and offset:
            out.notes.append(f"{f.path} was replaced (its first bytes changed): read from its start")
            cur = {**_fresh(cur), "id": f.ident}
            head, data = files.read(f.path, 0, min(limit, f.size))
            offset = 0
        if len(head) >= HEAD:
            cur["head"] = digest(head)
        chunk = split_lines(data, offset, cfg.max_line, bool(cur.get("skipping")))
        chunks.append((chunk, f.mtime))
        cur["offset"], cur["skipping"] = chunk.offset, chunk.skipping
    for chunk, mtime in chunks:
        out.read += chunk.read
        if chunk.long_lines:
            out.notes.append(f"{f.path}: {chunk.long_lines} line(s) over {cfg.max_line} bytes skipped")
        _parse(chunk.lines, cur, cfg, out, mtime)
        cur["m"] = mtime  # the next chunk's lines were written after this one's
    cur["m"] = f.mtime
    out.cursor = cur
    return out


def _fresh(cur: dict[str, Any]) -> dict[str, Any]:
    """A cursor for a file read from its start (what was detected of its format is kept)."""
    return {"offset": 0, **{k: cur[k] for k in ("fmt", "m") if k in cur}}


def _format(cfg: LogsTarget, cur: dict[str, Any], lines: list[str], out: FileRead) -> LineFormat | None:
    if cfg.format != "auto":
        return format_of(cfg.format)
    if cur.get("fmt"):
        return format_of(cur["fmt"])
    found, hits = detect(lines[:DETECT_LINES])
    if found is not None and hits >= 2:  # settled; one line alone decides for its own chunk only
        cur["fmt"] = found.name
        out.notes.append(f"format detected: {found.name}")
    return found


def _parse(lines: list[str], cur: dict[str, Any], cfg: LogsTarget, out: FileRead, mtime: float) -> None:
    fmt = _format(cfg, cur, lines, out)
    out.format = fmt.name if fmt else None
    pending: list[tuple[Progress, int]] = []  # progress without a time of its own, with its step
    tb = int(cur.get("tb", 0))
    for line in lines:
        if cfg.crashes:
            if starts_traceback(line):
                tb = TRACEBACK_LINES
                continue
            crash = crash_of(line, tb > 0) if _maybe_crash(line, tb) else None
            if crash is not None:
                out.crashes.append(crash)
                tb = 0
                continue
            tb = max(0, tb - 1)
        if fmt is None:
            continue
        p = fmt.read(line)
        if p is None or not p.metrics:
            continue
        step = p.step
        if step is None:
            cur["n"] = int(cur.get("n", 0)) + 1
            step = cur["n"] * cfg.steps_per_line
        t = line_time(line[:120], cfg.timestamps == "utc") if cfg.timestamps != "off" else None
        if t is not None:
            out.rows.append(Row(step, t, p.metrics, p.total))
        else:
            pending.append((p, step))
    cur["tb"] = tb
    if pending:
        times = _spread(
            len(pending), cur.get("m"), mtime, [p.metrics.get("throughput/duration") for p, _ in pending]
        )
        out.rows.extend(Row(s, t, p.metrics, p.total) for (p, s), t in zip(pending, times, strict=True))


_CRASH_WORDS = (
    "Error",
    "Exception",
    "out of memory",
    "atchdog",
    "Killed",
    "oom",
    "exitcode",
    "exit",
    "CANCELLED",
)


def _maybe_crash(line: str, tb: int) -> bool:
    """A cheap test before the crash patterns run: the line names one of their words."""
    return any(w in line for w in _CRASH_WORDS) or tb > 0 and "Interrupt" in line


def _spread(n: int, prev: float | None, end: float, durations: list[float | None]) -> list[float]:
    """Times of ``n`` lines written between ``prev`` and ``end``; on first sight (no ``prev``) they end
    at ``end``, spaced by the durations the lines print (else all at ``end``)."""
    if prev is not None and prev < end:
        return [prev + (end - prev) * (i + 1) / n for i in range(n)]
    times, t = [end] * n, end
    for i in range(n - 1, 0, -1):
        d = durations[i]
        t -= d if d is not None and 0 < d < 86400 else 0.0
        times[i - 1] = t
    return times
