"""The service's garbage-collector policy: what survives any collection, a young one included, is
frozen (later collections do not examine the runs' long-lived state again), and the periodic full
collection still reclaims a reference cycle that died while frozen; young collections come every
200,000 allocations, not 700; the service installs it while it runs and leaves the collector as it
was."""

from __future__ import annotations

import gc
import weakref

from monitor.engine.gc_policy import GcPolicy
from tests.helpers import make_service


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def test_survivors_are_frozen_and_a_cycle_that_dies_frozen_is_reclaimed_by_the_full_collection():
    policy = GcPolicy()
    policy.install()
    try:
        a, b = Node(), Node()
        a.other, b.other = b, a  # a cycle: only the collector can free it
        gone = weakref.ref(a)
        gc.collect()
        assert gc.get_freeze_count() >= 2 and policy.pauses[2] >= 1, (
            "the survivors of a full collection are frozen"
        )
        del a, b
        gc.collect()
        assert gone() is not None, "frozen: an ordinary full collection leaves it (bounded by the thaw)"
        policy.full_collection()
        assert gone() is None, "the periodic full collection reclaims it"
        assert gc.get_freeze_count() > 0, "and freezes what survived"
    finally:
        policy.uninstall()
    assert gc.get_freeze_count() == 0 and policy._on_gc not in gc.callbacks


def test_the_survivors_of_a_young_collection_are_frozen_and_freed_when_they_die():
    policy = GcPolicy()
    policy.install()
    try:
        gc.collect()
        before = gc.get_freeze_count()
        kept = [Node() for _ in range(100)]  # tracked objects alive at the young collection
        gone = weakref.ref(kept[0])
        gc.collect(0)
        assert policy.pauses[0] >= 1
        assert gc.get_freeze_count() >= before + 100, "a young collection's survivors are frozen"
        assert not gc.get_objects(generation=1), "nothing left for a middle collection to examine again"
        del kept
        assert gone() is None, "no cycle: reference counting frees a frozen object when it dies"
    finally:
        policy.uninstall()


def test_the_service_runs_with_the_policy_and_leaves_the_collector_as_it_found_it(tmp_path, clock):
    service, _ = make_service(
        f"sqlite:///{tmp_path / 'hw.db'}", clock, "watch:\n  - name: a\n    sim: {seed: 1}\n"
    )
    before = gc.get_threshold()
    service.start()
    try:
        assert service.gc_policy._on_gc in gc.callbacks
        assert gc.get_threshold()[0] > before[0], "young collections are fewer than CPython's default"
        assert "gc" in {j.id for j in service.scheduler.get_jobs()}
    finally:
        service.stop()
    assert service.gc_policy._on_gc not in gc.callbacks and gc.get_freeze_count() == 0
    assert gc.get_threshold() == before
