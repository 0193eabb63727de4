"""What a wrapper sends of PyTorch's NCCL flight recorder (``NodeStacks.flight``): per dump file (one
per rank), per process group, its latest collectives, digested on the node from the JSON dump
(``monitor.stacks.flight_read``) and validated again at herowatch's door. Every field is bounded."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

MAX_DUMPS = 16  # dump files per node (one per rank: 8 GPUs fit twice)
MAX_GROUPS = 8  # process groups per dump, those with a collective not completed first
MAX_ENTRIES = 6  # the latest collectives per process group
MAX_RANGES = 64  # a group's ranks, as ranges

Short = Annotated[str, StringConstraints(max_length=200)]
State = Literal["scheduled", "started", "completed"]  # FlightRecorder.hpp: scheduled_state, ...


class FrEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seq: int = Field(ge=0, le=2**62, description="collective_seq_id: the group's collective number")
    op: Short = Field(description='profiling_name, e.g. "nccl:all_reduce"')
    state: State
    sizes: list[Annotated[list[int], Field(max_length=8)]] = Field(default_factory=list, max_length=8)


class FrGroup(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pg_id: int = Field(ge=0, le=2**31)
    name: Short = ""  # the group's name (pg_config key, process_group[0])
    desc: Short = ""  # e.g. "default_pg"
    size: int = Field(default=0, ge=0, le=10_000_000, description="ranks in the group (0: not said)")
    ranks: list[tuple[int, int]] = Field(default_factory=list, max_length=MAX_RANGES)  # (first, last)
    last_enqueued: int | None = Field(default=None, ge=-1, le=2**62)  # pg_status
    last_started: int | None = Field(default=None, ge=-1, le=2**62)
    last_completed: int | None = Field(default=None, ge=-1, le=2**62)
    entries: list[FrEntry] = Field(default_factory=list, max_length=MAX_ENTRIES)  # by seq, oldest first

    def frontier(self) -> int:
        """The latest collective this rank enqueued on the group (-1: none)."""
        seqs = [e.seq for e in self.entries]
        if self.last_enqueued is not None:
            seqs.append(self.last_enqueued)
        return max(seqs, default=-1)


class FrDump(BaseModel):
    """One rank's dump file, digested; or why it could not be read."""

    model_config = ConfigDict(extra="forbid")
    file: Short  # its name (not the directory)
    rank: int | None = Field(default=None, ge=0, le=10_000_000)  # from the name: <prefix><rank>
    version: Short = ""  # the dump format's ("2.10")
    written_at: float | None = None  # epoch seconds (the file's mtime)
    groups: list[FrGroup] = Field(default_factory=list, max_length=MAX_GROUPS)
    error: Short | None = None
