"""Reading TensorBoard event files from a byte cursor, with TensorBoard's own reader.

An event file is a sequence of TFRecord frames (length, CRC, ``Event`` proto, CRC). TensorBoard's record
reader (``PyRecordReader_New`` of its TensorFlow stub, what its ``event_file_loader`` uses without
TensorFlow) parses them over TensorBoard's ``gfile``, which reads local paths and, through fsspec, object
stores. We position it at the byte offset after the last whole record read before (its ``gfile`` takes
a continuation token of ``opaque_offset``, as when it continues a read itself), so a poll reads only
what was appended, and a restart of herowatch continues where the stored cursor says.

Its checksums are computed by ``google-crc32c`` (C) when installed, the same CRC32C as its own.

A record cut short (the trainer is writing it) raises ``DataLossError`` ("truncated record"): the
cursor stays before it and the next poll reads it whole. A record whose CRC does not match is damage,
not a write in progress: reported, and the file is not read past it.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from google.protobuf.message import DecodeError
from tensorboard.compat.proto import event_pb2
from tensorboard.compat.tensorflow_stub import errors, pywrap_tensorflow
from tensorboard.compat.tensorflow_stub.io import gfile
from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import PyRecordReader_New
from tensorboard.util import tensor_util

try:
    import google_crc32c
except ImportError:  # pragma: no cover - herowatch[tensorboard] installs it
    google_crc32c = None

if google_crc32c is not None and google_crc32c.implementation == "c":
    # The reader checks two CRC32C sums per record with a pure-Python table loop (about 1 MB/s); the
    # same sums computed in C make it read at the speed of parsing (bench/sources.py).
    pywrap_tensorflow.crc32c = google_crc32c.value

FRAME = 16  # bytes around each record: length (8), its CRC (4), the data's CRC (4)
_STAMP = re.compile(r"tfevents\.(\d+)")


def is_event_file(name: str) -> bool:
    return "tfevents" in name and not name.endswith((".tmp", ".lock"))


def order_key(name: str) -> tuple[int, str]:
    """Event files in the order their writers started (the name holds the start time)."""
    m = _STAMP.search(name)
    return (int(m.group(1)) if m else 0, name)


@dataclass
class Row:
    step: int
    t: float
    metrics: dict[str, float] = field(default_factory=dict)


@dataclass
class FileRead:
    rows: list[Row]
    offset: int  # after the last whole record read
    tags: set[str]  # every scalar tag seen, wanted or not
    read: int  # bytes consumed
    damaged: str | None = None  # a record that can never be read whole


def _scalar(value: event_pb2.summary_pb2.Summary.Value) -> float | None:
    kind = value.WhichOneof("value")
    if kind == "simple_value":  # tensorboardX, PyTorch's SummaryWriter, TF1
        return float(value.simple_value)
    if kind == "tensor":  # tf.summary.scalar in TF2: a rank-0 tensor
        array = tensor_util.make_ndarray(value.tensor)
        if array.size == 1 and array.dtype.kind in "fiub":
            return float(array.reshape(()))
    return None


MAX_RECORD = 256 << 20  # a longer length field is not a record's


@contextmanager
def readable(path: str) -> Iterator[str]:
    """A path TensorBoard's ``gfile`` can open (it encodes paths as UTF-8): a local file whose name holds
    bytes that are not UTF-8 (Python's surrogates) is opened here and read through ``/proc/self/fd``."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        fd = os.open(path, os.O_RDONLY)
        try:
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    yield path


def record_start(path: str, offset: int, window: int = 1 << 20) -> int | None:
    with readable(path) as usable:
        return _record_start(usable, offset, window)


def _record_start(path: str, offset: int, window: int) -> int | None:
    """The first record boundary at or after ``offset``: where an 8-byte length whose masked CRC
    follows it, and whose record's own CRC matches, begins (TensorBoard's ``masked_crc32c``). For the
    first sight of a long file: start near its end instead of its beginning. None: none found."""
    with gfile.GFile(path, "rb") as f:
        if offset:
            f.continuation_token = {"opaque_offset": offset}
        data = f.read(window)
    crc = pywrap_tensorflow.masked_crc32c
    for i in range(max(0, len(data) - 12)):
        (length,) = struct.unpack_from("<Q", data, i)
        if length > MAX_RECORD or crc(data[i : i + 8]) != struct.unpack_from("<I", data, i + 8)[0]:
            continue
        end = i + 12 + length
        if end + 4 <= len(data) and crc(data[i + 12 : end]) != struct.unpack_from("<I", data, end)[0]:
            continue
        return offset + i
    return None


class RecordTooLarge(Exception):
    def __init__(self, length: int) -> None:
        super().__init__(length)
        self.length = length


class BoundedRecordReader(PyRecordReader_New):
    """TensorBoard's record reader that refuses to read a record longer than ``limit`` bytes: the length
    is checked after its header's CRC and before a byte of the record is read (a corrupt length of
    2^63-1 with a valid CRC raised ``MemoryError`` on every poll)."""

    limit: int = MAX_RECORD

    def _read(self, n: int) -> bytes:
        if n > self.limit:
            raise RecordTooLarge(n)
        return super()._read(n)


def open_at(path: str, offset: int, limit: int = MAX_RECORD) -> PyRecordReader_New:
    """TensorBoard's record reader positioned at ``offset`` (0: the start), records up to ``limit``."""
    reader = BoundedRecordReader(path)
    reader.limit = limit
    if offset:
        reader.file_handle.continuation_token = {"opaque_offset": offset}
    return reader


def read_events(
    path: str, offset: int, limit: int, wanted: Callable[[str], bool], max_record: int = MAX_RECORD
) -> FileRead:
    """Whole records from ``offset`` on, until the end or ``limit`` bytes; consecutive events of one step
    are one row (a trainer writes one event per scalar). A record over ``max_record`` bytes, or one that
    cannot be parsed, is damage: reported with its file and byte, and the file is not read past it."""
    with readable(path) as usable:
        got = _read_events(usable, offset, limit, wanted, max_record)
    if got.damaged and usable != path:
        got.damaged = got.damaged.replace(usable, path)
    return got


def _read_events(
    path: str, offset: int, limit: int, wanted: Callable[[str], bool], max_record: int
) -> FileRead:
    reader = open_at(path, offset, max_record)
    rows: list[Row] = []
    tags: set[str] = set()
    start, damaged = offset, None
    try:
        while offset - start < limit:
            try:
                reader.GetNext()
            except errors.OutOfRangeError:
                break  # the end: every record read
            except errors.DataLossError as exc:
                if "truncated" not in str(exc):
                    damaged = f"{path}: damaged record at byte {offset}: {exc}"
                break  # truncated: being written; the next poll reads it whole
            except RecordTooLarge as exc:
                damaged = (
                    f"{path}: the record at byte {offset} says it is {exc.length} bytes, over the limit of "
                    f"{max_record} (max_record_bytes): not read"
                )
                break
            record = reader.record()
            try:
                event = event_pb2.Event.FromString(record)
            except DecodeError as exc:
                damaged = f"{path}: the record at byte {offset} is not an event: {exc}"
                break
            offset += len(record) + FRAME
            if not event.HasField("summary"):
                continue
            metrics = {}
            for value in event.summary.value:
                x = _scalar(value)
                if x is None:
                    continue
                tags.add(value.tag)
                if wanted(value.tag):
                    metrics[value.tag] = x
            if not metrics:
                continue
            if rows and rows[-1].step == event.step:
                rows[-1].metrics.update(metrics)
                rows[-1].t = max(rows[-1].t, event.wall_time)
            else:
                rows.append(Row(int(event.step), float(event.wall_time), metrics))
    finally:
        reader.file_handle.close()
    return FileRead(rows, offset, tags, offset - start, damaged)
