"""When a run's detector state is due to be saved: its one owner keeps when it was last saved."""

from __future__ import annotations

import zlib


class CheckpointCounter:
    """When each run's detector state was last saved (``adoption.save_state``).

    A run's state is saved once ``every`` seconds have passed since its last save, at a poll that
    changed it (a run that brought nothing new is not exported and written again): a crash loses at
    most that much of its rules' input, whatever the watch's poll interval, and the CPU the snapshots
    cost grows with the runs, not with how often they are polled. A run's first save comes 0 to
    ``every`` seconds after its first poll, by its id, so that the runs of a replica, polled together
    from its start, do not all save at the same poll."""

    def __init__(self) -> None:
        self._saved: dict[str, float] = {}

    def due(self, run: str, now: float, every: float, changed: bool = True) -> bool:
        """Is the run's detector state due to be saved at this poll, at ``now``?"""
        if not changed:
            return False
        last = self._saved.get(run)
        if last is None:  # first seen: as if saved a part of ``every`` ago, by its id
            last = self._saved[run] = now - every * (zlib.crc32(run.encode()) % 1024) / 1024
        return now - last >= every

    def saved(self, run: str, now: float) -> None:
        self._saved[run] = now

    def forget(self, run: str) -> None:
        self._saved.pop(run, None)
