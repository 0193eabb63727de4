"""``Cells``: one time column of a fleet raster, every member's min, max, mean and count, packed as
little-endian arrays (float32 min, max, mean; uint32 count): 16 bytes a member, 11 kB for 704 GPUs.
Whole columns are folded and merged at once (numpy), so a poll of 704 members costs microseconds."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

F32 = np.dtype("<f4")
U32 = np.dtype("<u4")
COUNT_MAX = np.iinfo(np.uint32).max


class Cells:
    __slots__ = ("min", "max", "mean", "count")

    def __init__(self, n: int) -> None:
        self.min = np.full(n, np.nan, dtype=F32)
        self.max = np.full(n, np.nan, dtype=F32)
        self.mean = np.full(n, np.nan, dtype=F32)
        self.count = np.zeros(n, dtype=U32)

    def __len__(self) -> int:
        return len(self.count)

    def grow(self, n: int) -> None:
        extra = n - len(self.count)
        if extra > 0:
            pad = np.full(extra, np.nan, dtype=F32)
            self.min = np.concatenate([self.min, pad])
            self.max = np.concatenate([self.max, pad])
            self.mean = np.concatenate([self.mean, pad])
            self.count = np.concatenate([self.count, np.zeros(extra, dtype=U32)])

    def fold(self, index: np.ndarray, values: np.ndarray) -> None:
        """One more value for each member ``index[k]`` (distinct; -1: not stored); NaN: no value."""
        ok = (index >= 0) & ~np.isnan(values)
        i, v = index[ok], values[ok].astype(F32)
        c = self.count[i]
        first = c == 0
        self.min[i] = np.where(first, v, np.fmin(self.min[i], v))
        self.max[i] = np.where(first, v, np.fmax(self.max[i], v))
        old = np.where(first, 0.0, self.mean[i].astype(np.float64))
        self.mean[i] = (old + (v - old) / (c.astype(np.float64) + 1.0)).astype(F32)
        self.count[i] = np.minimum(c.astype(np.uint64) + 1, COUNT_MAX).astype(U32)

    def merge(self, other: Cells) -> None:
        """Fold a whole column in (the neighbouring column of a coarser bucket)."""
        self.grow(len(other))
        n = len(other)
        c1 = self.count[:n].astype(np.float64)
        c2 = other.count.astype(np.float64)
        total = c1 + c2
        both, has2 = (c1 > 0) & (c2 > 0), c2 > 0
        self.min[:n] = np.fmin(self.min[:n], other.min)  # an empty cell's NaN gives way (fmin, fmax)
        self.max[:n] = np.fmax(self.max[:n], other.max)
        with np.errstate(invalid="ignore", divide="ignore"):
            mixed = (np.nan_to_num(self.mean[:n]) * c1 + np.nan_to_num(other.mean) * c2) / total
        self.mean[:n] = np.where(both, mixed, np.where(has2, other.mean, self.mean[:n])).astype(F32)
        self.count[:n] = np.minimum(total, COUNT_MAX).astype(U32)

    @classmethod
    def merged(cls, columns: Iterable[Cells], n: int) -> Cells:
        out = cls(n)
        for c in columns:
            out.merge(c)
        return out

    def values(self, stat: str, n: int | None = None) -> np.ndarray:
        """``stat`` (mean, min or max) per member as float64, NaN where there is no value, ``n`` long."""
        n = len(self) if n is None else n
        out = np.full(n, np.nan)
        k = min(n, len(self))
        got = getattr(self, stat)[:k].astype(np.float64)
        out[:k] = np.where(self.count[:k] > 0, got, np.nan)
        return out

    def means(self, n: int | None = None) -> list[float]:
        """Per member, the mean (NaN where there is no value), for ``n`` members."""
        return self.values("mean", n).tolist()

    def to_bytes(self) -> bytes:
        return b"".join(a.tobytes() for a in (self.min, self.max, self.mean, self.count))

    @classmethod
    def from_bytes(cls, data: bytes, n: int) -> Cells:
        size = 4 * n
        if len(data) != 4 * size:
            raise ValueError(f"a raster column of {n} members holds {4 * size} bytes, not {len(data)}")
        out = cls.__new__(cls)
        out.min = np.frombuffer(data, F32, n, 0).copy()
        out.max = np.frombuffer(data, F32, n, size).copy()
        out.mean = np.frombuffer(data, F32, n, 2 * size).copy()
        out.count = np.frombuffer(data, U32, n, 3 * size).copy()
        return out
