"""glibc's malloc arenas for a threaded monitor.

glibc gives each thread that allocates while another holds the main arena an arena of its own, up to
8 per core. The service polls on a pool of 8 or 16 scheduler threads besides its writer, API and
delivery threads: each arena keeps the memory its thread freed for itself, so the process holds the
peak of every arena at once, not of all of them together. Python's small objects come from its own
allocator; what goes to malloc is the rest (list and dict tables, JSON text, zlib buffers, database
rows), which the writer and the polls make and drop by the megabyte.

``limit_arenas`` caps them (``mallopt(M_ARENA_MAX)``, as ``MALLOC_ARENA_MAX`` would) before the first
thread allocates: ``herowatch serve`` calls it first thing, ``Service.start`` again (a no-op by then,
glibc reads the limit when it first makes an arena for a thread). An operator's own
``MALLOC_ARENA_MAX`` wins. Elsewhere than Linux with glibc (macOS, musl) it does nothing.
"""

from __future__ import annotations

import ctypes
import os
import sys

ARENAS = 2  # arenas at most (the main one included)
M_ARENA_MAX = -8  # glibc's malloc.h
_DONE: list[bool] = []


def _glibc() -> bool:
    try:
        return (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    except (ValueError, OSError, AttributeError):
        return False


def limit_arenas(arenas: int = ARENAS) -> bool:
    """Cap glibc's malloc arenas at ``arenas`` (once a process). True if the cap was set here."""
    if _DONE:
        return False
    _DONE.append(True)
    if not sys.platform.startswith("linux") or not _glibc():
        return False
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False  # the operator's (glibc read it at start)
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return mallopt(M_ARENA_MAX, arenas) == 1
