"""What several benches measure the same way."""

from __future__ import annotations

import os


def rss_mb() -> float:
    """This process's resident memory (VmRSS), in MB."""
    with open(f"/proc/{os.getpid()}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def pymalloc_report() -> str:
    """Python's own allocator (``sys._debugmallocstats``): its arenas (1 MiB each), the bytes in live
    objects' blocks, and the free blocks it holds (an arena goes back only when all of it is free)."""
    import re
    import sys
    import tempfile

    with tempfile.TemporaryFile("w+") as out:
        saved = os.dup(2)
        sys.stderr.flush()
        os.dup2(out.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        text = out.read()

    def figure(name: str) -> int:
        m = re.search(rf"# {name}\s*=\s*([\d,]+)", text)
        return int(m.group(1).replace(",", "")) if m else 0

    mb = 1 / 2**20
    arenas = figure("arenas allocated current")
    return (
        f"pymalloc: {arenas} arenas ({arenas * 1.0:.0f} MB; high-water {figure('arenas highwater mark')}),"
        f" {figure('bytes in allocated blocks') * mb:.0f} MB in live blocks,"
        f" {figure('bytes in available blocks') * mb:.0f} MB in free blocks"
    )


def malloc_report() -> str:
    """glibc malloc's own figures (``mallinfo2``, all arenas): bytes in use, free but held, mmapped; then
    the RSS after ``malloc_trim(0)`` hands what is free back (which trimming changes: call it last)."""
    import ctypes

    fields = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks")

    class Mallinfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in (*fields, "keepcost")]

    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = Mallinfo2
        info = libc.mallinfo2()
    except (OSError, AttributeError):
        return "glibc malloc: not here"
    mb = 1 / 2**20
    before = rss_mb()
    libc.malloc_trim(0)
    return (
        f"glibc malloc: {info.uordblks * mb:.0f} MB in use, {info.fordblks * mb:.0f} MB free but held (of"
        f" {info.arena * mb:.0f} MB in its heaps), {info.hblkhd * mb:.0f} MB mmapped; RSS {before:.0f} MB"
        f" -> {rss_mb():.0f} MB after malloc_trim"
    )


def profiled_writer(batches, profiler):  # noqa: ANN001, ANN201
    """The batch writer's ``_write`` wrapped so that ``profiler`` runs while it writes (in the writer
    thread); set it as ``batches._write`` and put the original (``batches._write`` before) back after."""
    real_write = batches._write

    def profiled_write(jobs):  # noqa: ANN001, ANN202 - runs in the writer thread
        profiler.enable()
        try:
            return real_write(jobs)
        finally:
            profiler.disable()

    return profiled_write
