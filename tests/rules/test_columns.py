"""A replay batch's columns (monitor.rules.columns): the values the rules would read sample by sample."""

from __future__ import annotations

import math

from monitor.rules.columns import Batch, all_finite, batch_columns, columns, feeding
from monitor.samples import Sample


def _samples(steps: list[int | None], values: list[float | None]) -> list[Sample]:
    out = []
    for k, (step, v) in enumerate(zip(steps, values, strict=True)):
        metrics = {"loss": v, "lr": 0.1} if v is not None else {"lr": 0.1}
        out.append(Sample(t=100.0 + k, run="r", step=step, metrics=metrics))
    return out


def test_a_plain_list_gets_the_columns_of_its_slice() -> None:
    samples = _samples([1, 2, 3, 4], [1.0, None, math.nan, 2.0])
    cols = columns(samples, 1, 4)
    assert cols.base == 1
    assert cols.values("loss")[:1] == [None] and math.isnan(cols.values("loss")[1])
    assert cols.values("loss")[2] == 2.0 and cols.values("gone") == [None] * 3
    assert cols.t == [101.0, 102.0, 103.0] and cols.step == [2, 3, 4] and cols.rising


def test_the_batch_being_fed_has_whole_batch_columns() -> None:
    samples = _samples([5, 6, 7], [1.0, 2.0, 3.0])
    batch = Batch(samples, ("loss", "lr"))
    feeding(batch)
    try:
        cols = columns(samples, 1, 3)
        assert cols is batch.columns and cols.base == 0
        assert cols.values("loss") == [1.0, 2.0, 3.0] and cols.values("lr") == [0.1] * 3
        assert cols.values("absent") == [None] * 3
        assert columns(list(samples), 1, 3) is not cols  # another list: its own columns
        assert batch_columns(samples) is cols and batch_columns(list(samples)) is None
    finally:
        feeding(None)
    assert columns(samples, 1, 3) is not batch.columns


def test_rising_steps_and_finite_values() -> None:
    assert columns(_samples([1, 1, 2], [1.0] * 3), 0, 3).rising
    assert not columns(_samples([2, 1, 3], [1.0] * 3), 0, 3).rising  # a rewind
    assert not columns(_samples([1, None, 3], [1.0] * 3), 0, 3).rising
    assert not columns(_samples([None], [1.0]), 0, 1).rising
    assert columns(_samples([7], [1.0]), 0, 1).rising
    assert all_finite([1.0, 2, -3.5]) and all_finite([])
    assert not all_finite([1.0, math.inf]) and not all_finite([math.nan]) and not all_finite([1.0, None])
    assert not all_finite([1e308, 1e308])  # an overflow: not told finite (the caller's loop decides)
