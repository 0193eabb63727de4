"""What a node's wrapper pushes (``POST /api/ingest/stacks``): the Python stacks of the processes in its
tree, validated once at the door. Every field is bounded: a push can neither grow herowatch nor carry a
process's memory (no locals, ever)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from monitor.stacks.flight_model import MAX_DUMPS, FrDump

MAX_PROCESSES = 256  # per node: 8 ranks with their data-loader workers fit many times over
MAX_THREADS = 16  # Python threads kept per process (the main thread first)
MAX_FRAMES = 128  # per thread, innermost first (the wrapper keeps the innermost when it cuts)
MAX_TEXT = 300

Text = Annotated[str, StringConstraints(max_length=MAX_TEXT)]
NodeName = Annotated[str, StringConstraints(min_length=1, max_length=128, pattern=r"^[^\x00-\x1f\x7f]+$")]
Role = Literal["rank", "worker", "launcher", "process"]


class Frame(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Text
    file: Text = ""  # as py-spy shortens it (the package part), never a full path
    line: int = Field(default=0, ge=0, le=10_000_000)


class ThreadStack(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Text = ""
    active: bool = False
    frames: list[Frame] = Field(default_factory=list, max_length=MAX_FRAMES)  # innermost first
    cut: int = Field(default=0, ge=0, description="outer frames left out (the bound)")


class ProcessStack(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pid: int = Field(ge=1, le=2**31)
    ppid: int = Field(default=0, ge=0, le=2**31)
    rank: int | None = Field(default=None, ge=0, le=10_000_000)
    local_rank: int | None = Field(default=None, ge=0, le=100_000)
    role: Role = "process"
    command: Text = ""
    threads: list[ThreadStack] = Field(default_factory=list, max_length=MAX_THREADS)
    error: Text | None = None  # why this process's stack could not be had (permission, timeout, ...)
    seconds: float = Field(default=0.0, ge=0, le=3600)  # what the capture took

    @property
    def main(self) -> ThreadStack | None:
        """The main thread (the first, as the wrapper orders them), whose frames say where it waits."""
        return self.threads[0] if self.threads else None


class NodeStacks(BaseModel):
    """One node's answer to one capture request."""

    model_config = ConfigDict(extra="forbid")
    run: Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f]+$")]
    capture: Annotated[str, StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")]
    node: NodeName
    t: float = Field(description="epoch seconds the capture started on the node")
    processes: list[ProcessStack] = Field(default_factory=list, max_length=MAX_PROCESSES)
    error: Text | None = None  # why the node could capture nothing (py-spy missing, no permission)
    # PyTorch's NCCL flight recorder, where the job writes JSON dumps (``monitor.stacks.flight_read``)
    flight: list[FrDump] = Field(default_factory=list, max_length=MAX_DUMPS)
