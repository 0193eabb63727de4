"""When a run's detector state is due to be saved: its one owner counts the polls since the last save."""

from __future__ import annotations

import zlib


class CheckpointCounter:
    """Polls of each run since its detector state was last saved (``adoption.save_state``)."""

    def __init__(self) -> None:
        self._polls: dict[str, int] = {}

    def due(self, run: str, every: int, changed: bool = True) -> bool:
        """Count a poll of the run: is its detector state due to be saved (every ``every`` polls that
        ``changed`` it: a run that brought nothing new is not exported and written again)? A run's
        first save comes after 1 to ``every`` polls, by its id, so that the runs of a replica, polled
        together from its start, do not all save on the same poll."""
        if not changed:
            return False
        n = self._polls.get(run)
        self._polls[run] = n = (zlib.crc32(run.encode()) % every if n is None else n) + 1
        return n >= every

    def saved(self, run: str) -> None:
        self._polls[run] = 0

    def forget(self, run: str) -> None:
        self._polls.pop(run, None)
