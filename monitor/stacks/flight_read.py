"""The wrapper's side of PyTorch's NCCL flight recorder: on a capture, the JSON dump files at the job's
dump prefix (``--flight-recorder``, else ``TORCH_FR_DUMP_TEMP_FILE`` / ``TORCH_NCCL_DEBUG_INFO_TEMP_FILE``
from the environment: ``<prefix><rank>``), each digested to its process groups' latest collectives
(``flight_model.FrDump``).

The dump format is c10d's ``FlightRecorder::dump_json`` (``torch/csrc/distributed/c10d/FlightRecorder*``,
format version 2.x): ``version``, ``pg_config`` ({name: {name, desc, ranks: "[0, 1]"}}), ``pg_status``
({pg_id: {last_enqueued_collective, last_started_collective, last_completed_collective}}, numbers as
strings), ``entries`` ([{pg_id, process_group: [name, desc], collective_seq_id, profiling_name, state,
input_sizes, is_p2p, ...}]).

Never unpickled: PyTorch's own dump-on-timeout file is a pickle, and a pickle runs code when loaded. A
file that starts like one is named and skipped. Bounded: at most ``MAX_DUMPS`` files (the newest),
``MAX_BYTES`` read of each, a file larger is refused with its size, JSON that does not parse or does
not hold the fields above is named with what is wrong.
"""

from __future__ import annotations

import glob
import json
import os
import re
from collections import defaultdict
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from monitor.stacks.flight_model import (
    MAX_DUMPS,
    MAX_ENTRIES,
    MAX_GROUPS,
    MAX_RANGES,
    FrDump,
    FrEntry,
    FrGroup,
    State,
)

PREFIX_ENV = ("TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE")
MAX_BYTES = 16 << 20  # read of one dump: 20,000 entries are ~10 MB of JSON
MAX_ROWS = 200_000  # entries read from one dump (PyTorch's buffer: TORCH_FR_BUFFER_SIZE, 2000 by default)
PICKLE = (
    "flight recorder dump is pickle (PyTorch's own dump file); herowatch never unpickles: write it as "
    "JSON with torch._C._distributed_c10d._dump_nccl_trace_json() (docs/stacks.md)"
)


class _RawEntry(BaseModel):
    model_config = ConfigDict(extra="ignore")
    pg_id: int = Field(ge=0, le=2**31)
    process_group: Annotated[list[str], Field(max_length=2)] = Field(default_factory=list)
    collective_seq_id: int = Field(ge=0, le=2**62)
    profiling_name: str = Field(max_length=200)
    state: State
    input_sizes: list[list[int]] = Field(default_factory=list, max_length=4096)
    is_p2p: bool = False


class _RawDump(BaseModel):
    model_config = ConfigDict(extra="ignore")
    version: str = Field(max_length=20)
    pg_config: dict[str, dict[str, str]] = Field(default_factory=dict, max_length=10_000)
    pg_status: dict[str, dict[str, str | int]] = Field(default_factory=dict, max_length=10_000)
    entries: list[_RawEntry] = Field(default_factory=list, max_length=MAX_ROWS)


def prefix_of(given: str | None, env: dict[str, str]) -> str | None:
    """Where the job's dumps are: ``given``, else the job's environment's dump prefix."""
    if given:
        return given
    return next((env[k] for k in PREFIX_ENV if env.get(k)), None)


def dump_files(prefix: str) -> list[Path]:
    """The newest ``MAX_DUMPS`` regular files named ``<prefix>...`` (or in ``prefix``, a directory)."""
    p = Path(prefix)
    found = p.iterdir() if p.is_dir() else (Path(f) for f in glob.glob(glob.escape(prefix) + "*"))
    files = []
    for f in found:
        try:
            st = f.lstat()
        except OSError:
            continue
        if f.is_file() and not f.is_symlink():
            files.append((st.st_mtime, f))
    return [f for _, f in sorted(files, key=lambda x: -x[0])[:MAX_DUMPS]]


def rank_in(name: str, prefix: str) -> int | None:
    """``<prefix><rank>[.json]`` -> rank; in a directory, the last number of the name's stem."""
    if Path(prefix).is_dir():
        numbers = re.findall(r"\d{1,7}", name.split(".", 1)[0])
        return int(numbers[-1]) if numbers else None
    stem = Path(prefix).name
    m = re.match(r"(\d{1,7})(?:\D|$)", name[len(stem) :]) if name.startswith(stem) else None
    return int(m.group(1)) if m else None


def read_dump(path: Path, prefix: str) -> FrDump:
    name = path.name[:200]
    rank = rank_in(path.name, prefix)
    try:
        st = path.stat()
        if st.st_size > MAX_BYTES:
            return FrDump(
                file=name,
                rank=rank,
                error=f"dump is {st.st_size >> 20} MiB, over the {MAX_BYTES >> 20} MiB read",
            )
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except OSError as exc:
        return FrDump(file=name, rank=rank, error=f"cannot read the dump: {exc.strerror or exc}"[:200])
    if len(raw) > MAX_BYTES:
        return FrDump(file=name, rank=rank, error=f"dump is over the {MAX_BYTES >> 20} MiB read")
    return digest(raw, name, rank, st.st_mtime)


def digest(raw: bytes, name: str, rank: int | None, written_at: float | None) -> FrDump:
    """A JSON dump's process groups, each with its latest collectives; or what is wrong with it. A
    pickle is named, never loaded."""
    if raw[:1] == b"\x80":  # pickle protocol 2+ opens with PROTO
        return FrDump(file=name, rank=rank, written_at=written_at, error=PICKLE)
    try:
        doc = _RawDump.model_validate(json.loads(raw))
    except (ValueError, RecursionError) as exc:
        if isinstance(exc, ValidationError):
            e = exc.errors()[0]
            where = ".".join(str(p) for p in e["loc"][:4])
            why = f"not a flight recorder dump: {where}: {e['msg']}"
        else:
            why = f"flight recorder dump is not JSON: {type(exc).__name__}"
        return FrDump(file=name, rank=rank, written_at=written_at, error=why[:200])
    if not doc.version.startswith("2."):
        return FrDump(
            file=name,
            rank=rank,
            written_at=written_at,
            error=f"dump format {doc.version[:20]}: herowatch reads 2.x",
        )
    by_pg: dict[int, list[_RawEntry]] = defaultdict(list)
    for e in doc.entries:
        if not e.is_p2p:
            by_pg[e.pg_id].append(e)
    groups = []
    for pg_id, entries in by_pg.items():
        entries.sort(key=lambda e: e.collective_seq_id)
        latest = entries[-MAX_ENTRIES:]
        pg_name, desc = (latest[-1].process_group + ["", ""])[:2]
        config = doc.pg_config.get(pg_name, {})
        ranks = [int(r) for r in re.findall(r"\d+", config.get("ranks", ""))[:10_000_000]]
        status = doc.pg_status.get(str(pg_id), {})
        groups.append(
            FrGroup(
                pg_id=pg_id,
                name=pg_name[:200],
                desc=(config.get("desc") or desc)[:200],
                size=len(ranks),
                ranks=_ranges(ranks)[:MAX_RANGES],
                last_enqueued=_int(status.get("last_enqueued_collective")),
                last_started=_int(status.get("last_started_collective")),
                last_completed=_int(status.get("last_completed_collective")),
                entries=[
                    FrEntry(
                        seq=e.collective_seq_id,
                        op=e.profiling_name,
                        state=e.state,
                        sizes=[s[:8] for s in e.input_sizes[:8]],
                    )
                    for e in latest
                ],
            )
        )
    groups.sort(key=lambda g: (all(e.state == "completed" for e in g.entries), g.pg_id))
    return FrDump(
        file=name, rank=rank, version=doc.version, written_at=written_at, groups=groups[:MAX_GROUPS]
    )


def read_all(prefix: str) -> list[FrDump]:
    return [read_dump(f, prefix) for f in dump_files(prefix)]


def _int(v: str | int | None) -> int | None:
    try:
        n = int(v) if v is not None else None
    except ValueError:
        return None
    return n if n is None or -1 <= n <= 2**62 else None


def _ranges(ranks: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for r in sorted(set(ranks)):
        if out and r == out[-1][1] + 1:
            out[-1] = (out[-1][0], r)
        else:
            out.append((r, r))
    return out
