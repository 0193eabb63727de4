"""The lines a dying training job prints, recognised in its log: each becomes a job alert (level error)
whose title says what kind of death and whose text is the line itself. Pure.

- a Python traceback's last line (``RuntimeError: ...``, ``torch.OutOfMemoryError: ...``): an exception
  line counts only within ``TRACEBACK_LINES`` lines after a ``Traceback (most recent call last):``, so a
  message that merely names an error is not a crash;
- ``CUDA out of memory`` (PyTorch's allocator, any rank);
- an NCCL watchdog timeout (``Watchdog caught collective operation timeout``, ``NCCL watchdog ... timed
  out``);
- ``Killed`` (the shell's word for a process SIGKILLed, the kernel OOM killer's usual sign) and Slurm's
  ``slurmstepd: error: Detected N oom_kill event(s)``, ``*** JOB ... CANCELLED ...`` lines;
- a non-zero ``exitcode`` (torchrun's ``ChildFailedError`` summary: ``exitcode  : -9 (pid: 1234)``,
  ``failed (exitcode: 1)``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TRACEBACK_LINES = 200
_RANK = re.compile(r"^(?:\[(?:rank|default)\d+\]:\s*)+")
_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt)|SystemExit)(?::\s?(.*))?$")
_OOM = re.compile(r"CUDA out of memory|CUDA error: out of memory")
_NCCL = re.compile(
    r"Watchdog caught collective operation timeout|NCCL watchdog.{0,200}timed out|"
    r"NCCL.{0,80}(?:Watchdog|watchdog).{0,200}timeout",
)
_KILLED = re.compile(r"^Killed$|:\s*\d+\s+Killed\s|oom_kill event|oom-kill")
_SLURM_END = re.compile(r"\*\*\* (?:JOB|STEP) [\d.]+ ON \S+ CANCELLED AT \S+(.*?)\*\*\*")
_EXITCODE = re.compile(r"exitcode\s*:\s*(-?\d+)|\(exitcode:\s*(-?\d+)\)|exit(?:ed with)? code[: ]\s*(-?\d+)")
TRACEBACK = "Traceback (most recent call last):"


@dataclass(frozen=True, slots=True)
class Crash:
    title: str  # what kind of death, at most 64 characters (a job alert's title)
    line: str  # the line, as printed (cut to 2000 characters)


def crash_of(line: str, in_traceback: bool) -> Crash | None:
    """The crash ``line`` reports, or None. ``in_traceback``: a traceback began a few lines before."""
    text = _RANK.sub("", line.strip())
    if not text:
        return None
    shown = line.strip()[:2000]
    if _OOM.search(text):
        return Crash("CUDA out of memory", shown)
    if _NCCL.search(text):
        return Crash("NCCL watchdog timeout", shown)
    end = _SLURM_END.search(text)
    if end:
        why = end.group(1).strip() or "by a user or the scheduler"
        return Crash(f"Slurm cancelled the job {why}"[:64], shown)
    if _KILLED.search(text):
        return Crash("Killed (SIGKILL, often the OOM killer)", shown)
    m = _EXITCODE.search(text)
    if m:
        code = int(next(g for g in m.groups() if g is not None))
        if code != 0:
            signal = f" (signal {-code}{', SIGKILL' if code == -9 else ''})" if code < 0 else ""
            return Crash(f"exitcode {code}{signal}", shown)
    if in_traceback:
        e = _EXCEPTION.match(text)
        if e:
            return Crash(f"{e.group(1).rsplit('.', 1)[-1]} (traceback)"[:64], shown)
    return None


def starts_traceback(line: str) -> bool:
    return TRACEBACK in line
