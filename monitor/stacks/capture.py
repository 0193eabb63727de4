"""The job's side of a capture: the Python processes in a wrapper's tree and their stacks, read with
py-spy (``py-spy dump --pid PID --json``; never ``--locals``: a stack says where a process is, not what
it holds).

Bounded everywhere: a timeout per process (a wedged process cannot hold the wrapper), a number of
processes, threads and frames per stack (the innermost kept), bytes per stack. A process's rank comes
from its own environment (``/proc/PID/environ``: RANK, JAX_PROCESS_ID, SLURM_PROCID, ...). Reading
another process needs root or CAP_SYS_PTRACE: without it each stack says so, in words on-call can act
on, and the capture goes on with what it can read.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from monitor.stacks.flight_model import FrDump
from monitor.stacks.flight_read import prefix_of, read_all
from monitor.stacks.model import MAX_TEXT, Frame, NodeStacks, ProcessStack, ThreadStack

RANK_ENV = ("RANK", "JAX_PROCESS_ID", "JAX_PROCESS_INDEX", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK")
LOCAL_RANK_ENV = ("LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID")
_PYTHON = re.compile(r"^python[0-9.]*$")
NO_PERMISSION = (
    "no permission to read this process (py-spy needs root, or CAP_SYS_PTRACE: add it to the container, "
    "see docs/stacks.md)"
)
NO_PYSPY = "py-spy is not installed on this node (pip install 'herowatch[stacks]')"


@dataclass(frozen=True)
class Limits:
    timeout: float = 10.0  # seconds per process
    processes: int = 64  # Python processes per node
    threads: int = 8  # per process, the main thread first
    frames: int = 64  # per thread, the innermost kept
    stack_bytes: int = 16_384  # per process, outer frames cut beyond
    parallel: int = 8  # py-spy runs at once


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    comm: str


def _stat(pid: int) -> Proc | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    head, _, tail = text.rpartition(")")  # the command name may hold spaces and parentheses
    fields = tail.split()
    return Proc(pid, int(fields[1]), head.partition("(")[2]) if len(fields) > 1 else None


def descendants(root: int) -> list[Proc]:
    """Every process below ``root`` (not ``root`` itself), parents before children."""
    procs = [p for d in os.listdir("/proc") if d.isdigit() and (p := _stat(int(d))) is not None]
    children: dict[int, list[Proc]] = {}
    for p in procs:
        children.setdefault(p.ppid, []).append(p)
    out, todo = [], [root]
    while todo:
        for child in sorted(children.get(todo.pop(0), []), key=lambda p: p.pid):
            out.append(child)
            todo.append(child.pid)
    return out


def is_python(p: Proc) -> bool:
    try:
        return bool(_PYTHON.match(os.path.basename(os.readlink(f"/proc/{p.pid}/exe"))))
    except OSError:  # not ours to read: go by its name
        return bool(_PYTHON.match(p.comm))


def environ(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    out = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            out[key.decode(errors="replace")] = value.decode(errors="replace")
    return out


def _first_int(env: dict[str, str], names: tuple[str, ...]) -> int | None:
    for name in names:
        value = env.get(name, "").strip()
        if value.isdigit():
            return int(value)
    return None


def command_of(pid: int) -> str:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return ""
    return shlex.join(a.decode(errors="replace") for a in argv if a)[:MAX_TEXT]


def py_spy_command(given: str | None = None) -> list[str] | None:
    """How to run py-spy: ``given`` (split as a shell would), else ``py-spy`` on PATH or beside this
    Python (a virtualenv's bin/)."""
    if given:
        return shlex.split(given)
    found = shutil.which("py-spy") or shutil.which("py-spy", path=os.path.dirname(sys.executable))
    return [found] if found else None


def _error(stderr: str) -> str:
    low = stderr.lower()
    if "permission denied" in low or "operation not permitted" in low or "elevated permissions" in low:
        return NO_PERMISSION
    return ("py-spy: " + " ".join(stderr.split()))[:MAX_TEXT] or "py-spy failed"


def _threads(doc: list, pid: int, limits: Limits) -> list[ThreadStack]:
    threads = []
    for t in doc:
        frames = [
            Frame(
                name=str(f.get("name") or "?")[:MAX_TEXT],
                file=str(f.get("short_filename") or f.get("filename") or "")[:MAX_TEXT],
                line=max(0, int(f.get("line") or 0)),
            )
            for f in t.get("frames") or []
        ]
        kept = frames[: limits.frames]
        threads.append(
            ThreadStack(
                name=str(t.get("thread_name") or "")[:MAX_TEXT],
                active=bool(t.get("active")),
                frames=kept,
                cut=len(frames) - len(kept),
            )
        )
    # the main thread first: it says where the process is; then the busy ones
    threads.sort(key=lambda t: (t.name != "MainThread", not t.active))
    threads = threads[: limits.threads]
    while len(json.dumps([t.model_dump() for t in threads])) > limits.stack_bytes:
        longest = max(threads, key=lambda t: len(t.frames))
        if len(longest.frames) <= 1:
            threads.pop()
            continue
        longest.cut += 1
        longest.frames.pop()  # the outermost: where it is matters more than how it got there
    return threads


def dump(pid: int, py_spy: list[str], limits: Limits) -> tuple[list[ThreadStack], str | None, float]:
    """One process's threads, or why not; and the seconds it took."""
    t0 = time.monotonic()
    try:
        done = subprocess.run(
            [*py_spy, "dump", "--pid", str(pid), "--json"],
            capture_output=True,
            timeout=limits.timeout,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return [], f"py-spy timed out after {limits.timeout:g}s", time.monotonic() - t0
    except OSError as exc:
        return [], f"cannot run py-spy: {exc}"[:MAX_TEXT], time.monotonic() - t0
    took = time.monotonic() - t0
    if done.returncode != 0:
        return [], _error(done.stderr.decode(errors="replace")), took
    try:
        doc = json.loads(done.stdout[: 64 << 20])
        return _threads(doc if isinstance(doc, list) else [], pid, limits), None, took
    except (ValueError, TypeError, AttributeError) as exc:
        return [], f"py-spy answered something unreadable: {exc}"[:MAX_TEXT], took


def python_processes(root: int, limits: Limits) -> list[ProcessStack]:
    """The Python processes below ``root`` with their ranks and roles, not yet captured."""
    found = [p for p in descendants(root) if is_python(p)][: limits.processes]
    envs = {p.pid: environ(p.pid) for p in found}
    ranks = {p.pid: _first_int(envs[p.pid], RANK_ENV) for p in found}
    by_pid = {p.pid: p for p in found}
    out = []
    for p in found:
        rank = ranks[p.pid]
        parent = by_pid.get(p.ppid)
        if rank is not None and parent is not None and ranks.get(parent.pid) == rank:
            role = "worker"  # a data-loader worker inherits its rank's environment
        elif rank is not None:
            role = "rank"
        elif any(q.ppid == p.pid for q in found):
            role = "launcher"
        else:
            role = "process"
        out.append(
            ProcessStack(
                pid=p.pid,
                ppid=p.ppid,
                rank=rank,
                local_rank=_first_int(envs[p.pid], LOCAL_RANK_ENV),
                role=role,
                command=command_of(p.pid),
            )
        )
    return out


def flight_dumps(given: str | None, procs: list[ProcessStack]) -> list[FrDump]:
    """The job's flight recorder JSON dumps: at ``given``, else at the dump prefix in the wrapper's
    environment or a rank's (``TORCH_FR_DUMP_TEMP_FILE``); none where no prefix is set."""
    prefix = prefix_of(given, dict(os.environ))
    for p in procs:
        if prefix:
            break
        if p.role == "rank":
            prefix = prefix_of(None, environ(p.pid))
    return read_all(prefix) if prefix else []


def capture(
    root: int,
    *,
    run: str,
    capture_id: str,
    node: str,
    py_spy: list[str] | None,
    limits: Limits,
    flight: str | None = None,
) -> NodeStacks:
    """The stacks of every Python process below ``root``, at most ``limits.parallel`` read at once, and
    the job's flight recorder dumps (``flight``: their prefix or directory, if not in the environment)."""
    t = time.time()
    procs = python_processes(root, limits)
    dumps = flight_dumps(flight, procs)
    if py_spy is None:
        return NodeStacks(
            run=run, capture=capture_id, node=node, t=t, processes=procs, error=NO_PYSPY, flight=dumps
        )

    def one(p: ProcessStack) -> ProcessStack:
        threads, error, took = dump(p.pid, py_spy, limits)
        return p.model_copy(update={"threads": threads, "error": error, "seconds": round(took, 3)})

    with ThreadPoolExecutor(max_workers=max(1, limits.parallel)) as pool:
        done = list(pool.map(one, procs))
    errors = {p.error for p in done if p.error}
    node_error = NO_PERMISSION if done and errors == {NO_PERMISSION} else None
    return NodeStacks(
        run=run, capture=capture_id, node=node, t=t, processes=done, error=node_error, flight=dumps
    )
