"""Grouping MLflow history reads into requests: a table over pure inputs."""

from __future__ import annotations

from monitor.sources.mlflow_history import Batch, Read, batches


def test_batches():
    reads = [
        Read("a", "loss", 100, 110, (99, 0)),
        Read("b", "loss", 101, 111, (100, 0)),
        Read("c", "loss", 5000, 5001, (4999, 0)),  # far behind the others: its own request
        Read("a", "lr", 100, 110, (99, 0)),
        Read("d", "loss", 0, 2500, None),  # a backlog wider than a page: its own pages
    ]
    assert list(batches(reads, page_steps=1000)) == [
        Batch("loss", ("d",), 0, 999),
        Batch("loss", ("d",), 1000, 1999),
        Batch("loss", ("d",), 2000, 2500),
        Batch("loss", ("a", "b"), 100, 111),
        Batch("loss", ("c",), 5000, 5001),
        Batch("lr", ("a",), 100, 110),
    ]
    many = [Read(f"r{i:03d}", "loss", 10, 11, (9, 0)) for i in range(150)]
    assert [len(b.run_ids) for b in batches(many, 1000)] == [100, 50]


def test_a_read_wants_its_window_after_its_cursor_only():
    r = Read("a", "loss", 10, 20, (10, 500))
    assert [r.wants(s, t) for s, t in [(9, 999), (10, 500), (10, 501), (20, 0), (21, 0)]] == [
        False,
        False,
        True,
        True,
        False,
    ]


def test_where_a_poll_looks_for_steps_logged_again():
    from monitor.sources.mlflow_rewind import Scan, plan

    h = (5000, 100)

    def at(**kw):
        args = {"moved_from": None, "relogged_in_read": False, "rework": None, "due": False, "window": 50}
        return plan("a", "loss", 100, h, **{**args, **kw})

    assert at() is None, "nothing moved and the probe is not due: no request"
    assert at(due=True) == Scan("a", "loss", 51, 100, h, down=True), "the window below the top"
    assert at(moved_from=90) is None, "moved as a run does: nothing logged again"
    assert at(moved_from=90, relogged_in_read=True) == Scan("a", "loss", 41, 90, h, down=True)
    assert at(rework=70, due=True) == Scan("a", "loss", 70, 100, h, down=False), "on from the rework"
    assert at(rework=70, moved_from=100) == Scan("a", "loss", 70, 100, h, down=False), "up to the old top"
    assert at(rework=70) is None, "a run that is not running is not probed"
    assert plan(
        "a", "loss", 10, h, moved_from=None, relogged_in_read=False, rework=None, due=True, window=50
    ) == (Scan("a", "loss", 0, 10, h, down=True))
