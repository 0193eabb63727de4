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
