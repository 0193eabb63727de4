"""The window structures under the detectors: sorted values (median) and the MAD."""

from __future__ import annotations

import statistics
from collections import deque

from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.rules.windows import SortedValues, mad

floats = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


@given(st.lists(floats, min_size=1, max_size=200), st.integers(min_value=1, max_value=50))
@settings(max_examples=200, deadline=None)
def test_sorted_values_median_matches_a_sliding_window(values, width):
    window, fifo = SortedValues(), deque()
    for v in values:
        window.add(v)
        fifo.append(v)
        if len(fifo) > width:
            window.remove(fifo.popleft())
        assert window.median() == statistics.median(fifo)
        assert len(window) == len(fifo)


def test_sorted_values_remove_of_a_missing_value_is_an_error():
    window = SortedValues()
    window.add(1.0)
    try:
        window.remove(2.0)
    except ValueError as exc:
        assert "not in the window" in str(exc)
    else:
        raise AssertionError("removing a value that is not there must fail")


@given(st.lists(floats, min_size=1, max_size=100))
def test_mad_is_the_median_absolute_deviation(values):
    m = statistics.median(values)
    assert mad(values) == statistics.median([abs(v - m) for v in values])
