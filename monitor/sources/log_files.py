"""Text log files read from a byte cursor: listing, identity, whole lines, rotation and truncation.

A file is listed with its size, modification time and identity (device and inode on a local or shared
file system; none on an object store). A poll reads only from the file's cursor on, at most ``limit``
bytes, and consumes whole lines only: a last line without its newline (the trainer is writing it) is
left for the next poll. A line longer than ``max_line`` is skipped (counted), never buffered: the read
stays bounded whatever a job prints.

The cursor of a file knows the file's identity and a digest of its first bytes, so a poll can tell:

- **rotated** (``logrotate``'s move-and-create; a job restarted with ``> stdout.log``): the identity
  changed. The rest of the old file, found by its identity among its siblings (``stdout.log.1``), is
  read first, then the new file from its start;
- **truncated** (``copytruncate``, ``: > stdout.log``): smaller than the cursor, or its first bytes
  changed: read from its start;
- **grown**: read from the cursor.
"""

from __future__ import annotations

import glob
import hashlib
import os
from dataclasses import dataclass
from typing import Any

HEAD = 64  # bytes whose digest tells a file replaced in place


@dataclass(frozen=True)
class LogFile:
    path: str  # a local path, or a URL on an object store
    size: int
    mtime: float
    ident: str | None = None  # "device:inode"; None on object stores


@dataclass
class Chunk:
    lines: list[str]
    offset: int  # after the last whole line consumed
    skipping: bool  # inside a line longer than max_line: the rest of it up to its newline is dropped
    long_lines: int = 0
    read: int = 0


def split_lines(data: bytes, start: int, max_line: int, skipping: bool, final: bool = False) -> Chunk:
    """The whole lines of ``data`` (read at byte ``start``); ``final``: the file ends with ``data`` and
    its writer is gone (a rotated file): a last line without a newline counts."""
    pos, long_lines = 0, 0
    if skipping:
        nl = data.find(b"\n")
        if nl < 0:
            return Chunk([], start + len(data), True, 0, len(data))
        pos, skipping = nl + 1, False
    lines: list[str] = []
    end = len(data)
    while pos < end:
        nl = data.find(b"\n", pos)
        if nl < 0:
            rest = end - pos
            if final and 0 < rest <= max_line:
                lines.append(data[pos:].decode("utf-8", "replace"))
                pos = end
            elif rest > max_line:
                long_lines, pos, skipping = long_lines + 1, end, True
            break
        if nl - pos > max_line:
            long_lines += 1
        else:
            lines.append(data[pos:nl].decode("utf-8", "replace"))
        pos = nl + 1
    return Chunk(lines, start + pos, skipping, long_lines, len(data))


def digest(head: bytes) -> str:
    return hashlib.sha1(head).hexdigest()[:16]


class Files:
    """The local disk (and shared file systems mounted there), or an fsspec object store by URL."""

    def __init__(self) -> None:
        self._fs: dict[str, Any] = {}

    def _store(self, url: str) -> tuple[Any, str]:
        protocol = url.split("://", 1)[0]
        if protocol not in self._fs:
            import fsspec

            self._fs[protocol] = fsspec.filesystem(protocol)
        return self._fs[protocol], protocol

    @staticmethod
    def remote(path: str) -> bool:
        return "://" in path and not path.startswith("file://")

    def list(self, pattern: str) -> list[LogFile]:
        """The files ``pattern`` matches, sorted. A pattern whose fixed part (the folder before the
        first wildcard) is not there is an error: a share that is not mounted is not "no logs"."""
        if self.remote(pattern):
            fs, protocol = self._store(pattern)
            found = []
            for path, info in sorted(fs.glob(pattern, detail=True).items()):
                if info.get("type") == "file":
                    mtime = (
                        info.get("mtime")
                        or info.get("LastModified")
                        or info.get("updated")
                        or info.get("created")
                    )
                    found.append(
                        LogFile(f"{protocol}://{path.split('://')[-1]}", int(info["size"]), _ts(mtime))
                    )
            return found
        pattern = pattern.removeprefix("file://")
        fixed = _fixed_dir(pattern)
        if not os.path.isdir(fixed):
            raise FileNotFoundError(f"folder {fixed} not found")
        out = []
        for path in sorted(glob.glob(pattern, recursive=True)):
            try:
                st = os.stat(path)
            except OSError:
                continue  # gone between the listing and the stat
            if os.path.isfile(path):
                out.append(LogFile(path, st.st_size, st.st_mtime, f"{st.st_dev}:{st.st_ino}"))
        return out

    def read(self, path: str, offset: int, limit: int) -> tuple[bytes, bytes]:
        """(the file's first ``HEAD`` bytes, up to ``limit`` bytes from ``offset``)."""
        if self.remote(path):
            fs, _ = self._store(path)
            with fs.open(path, "rb") as f:
                head = f.read(HEAD)
                f.seek(offset)
                return head, f.read(limit)
        with open(path.removeprefix("file://"), "rb") as f:
            head = f.read(HEAD)
            f.seek(offset)
            return head, f.read(limit)

    def rotated(self, path: str, ident: str) -> LogFile | None:
        """The file with identity ``ident`` in ``path``'s folder (where logrotate moved it), if any."""
        if self.remote(path):
            return None
        folder = os.path.dirname(path) or "."
        try:
            with os.scandir(folder) as entries:
                for e in entries:
                    st = e.stat(follow_symlinks=False)
                    if f"{st.st_dev}:{st.st_ino}" == ident and e.is_file():
                        return LogFile(e.path, st.st_size, st.st_mtime, ident)
        except OSError:
            return None
        return None


def _fixed_dir(pattern: str) -> str:
    parts = pattern.split(os.sep)
    fixed = []
    for p in parts[:-1]:
        if glob.has_magic(p):
            break
        fixed.append(p)
    return os.sep.join(fixed) or (os.sep if pattern.startswith(os.sep) else ".")


def _ts(value: Any) -> float:
    if isinstance(value, int | float):
        return float(value)
    stamp = getattr(value, "timestamp", None)
    return float(stamp()) if callable(stamp) else 0.0
