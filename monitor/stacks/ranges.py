"""Rank numbers said briefly: [1, 2, 3, 7] -> "1-3, 7"."""

from __future__ import annotations

from collections.abc import Sequence


def ranges(numbers: Sequence[int], most: int = 8) -> str:
    """[1, 2, 3, 7] -> "1-3, 7"; at most ``most`` pieces, then "(N in all)"."""
    pieces: list[str] = []
    start = prev = numbers[0]
    for n in [*numbers[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        pieces.append(str(start) if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    if len(pieces) > most:
        return ", ".join(pieces[:most]) + f", ... ({len(numbers)} in all)"
    return ", ".join(pieces)
