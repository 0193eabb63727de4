"""PyTorch's flight recorder, live: ``herowatch serve`` as a real process and a ``herowatch emit run``
wrapper whose job environment sets ``TORCH_FR_DUMP_TEMP_FILE``, where the job's ranks left JSON dumps
as ``_dump_nccl_trace_json()`` writes them (``tests/stacks/fr_dumps.py``: 8 ranks, rank 5 never entered
collective #412) and rank 3's pickle (PyTorch's own dump file, never loaded). The hang's first page
names the collective and the rank missing from it beside the stacks; the API's answer says it too."""

from __future__ import annotations

import pickle

from tests.live.sources_support import source_stack
from tests.live.support import wait_for
from tests.live.test_stacks_live import PUSH, RULES, stop, wrapper
from tests.stacks.fr_dumps import dump_bytes

HANG = "collective #412 all_reduce on pg 0 (default_pg): rank 5 never entered it (7 of 8 entered)"


def test_the_first_hang_page_names_the_collective_the_flight_recorder_saw(tmp_path):
    dumps = tmp_path / "fr"
    dumps.mkdir()
    for r in range(8):
        (dumps / f"nccl_trace_rank_{r}").write_bytes(dump_bytes(rank=r, entered=r != 5))
    (dumps / "nccl_trace_rank_9").write_bytes(pickle.dumps({"version": "2.10"}, protocol=2))
    with source_stack(tmp_path) as stack:
        hw = stack.serve(stack.write_config(PUSH, RULES))
        env = {**stack.env(), "TORCH_FR_DUMP_TEMP_FILE": str(dumps / "nccl_trace_rank_")}
        job = ["--ranks", "3", "--read", "1", "--steps", "25", "--run", "job-fr", "--url", hw.url]
        w = wrapper(hw.url, "job-fr", "node-0", *job, env=env)
        try:
            first = wait_for(lambda: stack.pages("job-fr"), 90, "the hang page", seen=stack.pages)[0]
            print(first)
            assert "rank 1 on node-0 is in `read_chunk`" in first, first
            assert f"flight recorder: {HANG}" in first, first
            assert "rank 9: flight recorder dump is pickle" in first, first
            got = hw.api("/api/runs/push:live%2Fjob-fr/stacks")
            assert got["report"]["flight"][0] == HANG, got["report"]
            [node] = got["nodes"]
            assert sorted(d["rank"] for d in node["flight"]) == [0, 1, 2, 3, 4, 5, 6, 7, 9]
            assert hw.errors() == ""
        finally:
            stop([w])
