"""The trend rule's closed buckets are columns of doubles now (``bt``, ``bs``, ``by``: 8 bytes a figure,
where a ``[t, step, median]`` list a bucket took ~130): a snapshot written before, with the lists, reads
back and the restored detector goes on exactly as one that never restarted, through the divergence it
then pages (and as one restored from the new form)."""

from __future__ import annotations

from typing import Any

from monitor.rules.loader import load_pack
from monitor.rules.snapshot import decode, encode
from tests.rules.real_scenarios import Scenario
from tests.rules.test_replay_batched import plain
from tests.rules.test_snapshot_old_windows import goes_on_alike


def as_lists(det: Any, attrs: dict[str, Any]) -> int:
    """The windows' buckets as the code before wrote them: a list of [t, step, median] each."""
    windows, n = decode(attrs["windows"]), 0
    for w in windows:
        bt, bs, by = w.pop("bt"), w.pop("bs"), w.pop("by")
        w["buckets"] = [[t, None if s != s else int(s), y] for t, s, y in zip(bt, bs, by, strict=True)]
        n += len(bt)
    attrs["windows"] = encode(windows)
    return n


def test_an_old_trend_snapshot_with_bucket_lists_reads_back_and_goes_on_alike():
    spec = {r.name: r for r in load_pack("hero")}["loss_diverging"]
    sc = Scenario(loss_shift=lambda step: 0.0004 * max(0, step - 6000), last_step=9000)
    samples = plain(sc.build())
    cut = next(i for i, s in enumerate(samples) if s.step is not None and s.step >= 6200)
    goes_on_alike(spec, samples, cut, as_lists, fires=True)
