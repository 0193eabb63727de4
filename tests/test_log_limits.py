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


def test_the_cli_logging_set_up_leaves_handlers_it_did_not_make_alone(caplog):
    """herowatch's CLI run in-process (a test, an embedding program) puts its flood limit and one-line
    format on its own stderr handler only: a warning logged twenty times still reaches the handlers
    that were there before (pytest's capture among them) twenty times."""
    from monitor.cli.common import setup_logging

    root = logging.getLogger()
    before = list(root.handlers)
    setup_logging("WARNING")
    added = [h for h in root.handlers if h not in before]
    try:
        caplog.set_level(logging.WARNING, logger="test.repeat")
        for _ in range(20):
            logging.getLogger("test.repeat").warning("plot for group %s not posted", "g1")
        assert caplog.text.count("plot for group g1 not posted") == 20
        assert all(not h.filters for h in before if h is not caplog.handler)
    finally:
        for h in added:
            root.removeHandler(h)
