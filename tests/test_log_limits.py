"""A message repeated in a flood is written a few times, then as a count (issue 37: 463,939 repeats of
``socket.accept() out of system resource`` grew the log by 248 MB in 30 s)."""

from __future__ import annotations

import io
import logging

from monitor.cli.log_limits import RepeatLimit


def test_a_flood_of_one_message_is_written_as_a_count_and_other_messages_pass():
    now = [0.0]
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(RepeatLimit(burst=10, window=60.0, clock=lambda: now[0]))
    log = logging.getLogger("test.flood")
    log.addHandler(handler)
    log.propagate = False
    try:
        for i in range(100_000):
            log.error("socket.accept() out of system resource (%d)", i)
            if i % 1000 == 0:
                log.warning("another message %d", i)
        now[0] = 61.0
        log.error("socket.accept() out of system resource (%d)", -1)
    finally:
        log.removeHandler(handler)
    lines = out.getvalue().splitlines()
    floods = [line for line in lines if "socket.accept()" in line]
    assert len(floods) == 11, floods[-3:]
    assert floods[-1].endswith("(-1) [99990 more like this in the last 60s not written]"), floods[-1]
    assert len([line for line in lines if "another message" in line]) == 10
