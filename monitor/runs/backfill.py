"""Watches whose past is being played into the database now (the demo's last week, for ``/reports``).

While a past is played, its runs are "running" as of a week ago: shown among the live runs they would
read as firing incidents and runs not polled for days. The overview and the status API leave them out
until the play is over (then they are finished runs like any other) and say how far it has come.
One registry per process: the player sets the progress, the web snapshot reads it.
"""

from __future__ import annotations

import threading

_lock = threading.Lock()
_progress: dict[str, float] = {}  # watch name -> share of its past played (0..1)


def playing(watches: list[str], done: float) -> None:
    """``watches``' past is being played; ``done`` of it is in the database."""
    with _lock:
        for w in watches:
            _progress[w] = min(max(done, 0.0), 1.0)


def over(watches: list[str]) -> None:
    """The play of ``watches``' past ended (finished, stopped or failed): show their runs again."""
    with _lock:
        for w in watches:
            _progress.pop(w, None)


def in_play() -> dict[str, float]:
    """Watch name -> share played, for every watch whose past is being played now."""
    with _lock:
        return dict(_progress)
