"""Flight recorder dumps as PyTorch writes them with ``torch._C._distributed_c10d._dump_nccl_trace_json()``:
c10d's ``FlightRecorder::dump_json`` (torch/csrc/distributed/c10d/FlightRecorder.hpp and
FlightRecorderDetail.hpp on PyTorch main, late 2025: dump format ``version`` "2.10", the same keys as
2.4-2.9). Top level: ``version``, ``comm_lib_version``, ``pg_config`` ({group name: {name, desc,
ranks: "[0, 1, ...]"}}), ``pg_status`` ({pg_id: {last_enqueued_collective, last_started_collective,
last_completed_collective}}, every value a string), ``entries`` (omitted when empty). Each entry:
record_id, pg_id, process_group [name, desc], thread_name, thread_id, collective_seq_id, p2p_seq_id,
op_id, profiling_name ("nccl:all_reduce"), time_created_ns, duration_ms (only when timing is on),
input_sizes, input_dtypes, output_sizes, output_dtypes, state (scheduled, started, completed),
time_discovered_started_ns and time_discovered_completed_ns (0 when not yet), retired, timeout_ms,
is_p2p. The JSON dump carries no stack frames."""

from __future__ import annotations

import json
from typing import Any

T0 = 1_780_000_000_000_000_000  # ns


def entry(
    rid: int,
    seq: int,
    op: str = "nccl:all_reduce",
    state: str = "completed",
    pg: int = 0,
    name: str = "0",
    desc: str = "default_pg",
    sizes: list | None = None,
) -> dict[str, Any]:
    created = T0 + rid * 50_000_000
    started = created + 1_000_000 if state in ("started", "completed") else 0
    done = started + 20_000_000 if state == "completed" else 0
    sizes = sizes if sizes is not None else [[1024, 1024]]
    e = {
        "record_id": rid,
        "pg_id": pg,
        "process_group": [name, desc],
        "thread_name": "pt_main_thread",
        "thread_id": "140113412413248",
        "collective_seq_id": seq,
        "p2p_seq_id": 0,
        "op_id": seq,
        "profiling_name": op,
        "time_created_ns": created,
        "input_sizes": sizes,
        "input_dtypes": ["Float"] * len(sizes),
        "output_sizes": sizes,
        "output_dtypes": ["Float"] * len(sizes),
        "state": state,
        "time_discovered_started_ns": started,
        "time_discovered_completed_ns": done,
        "retired": state == "completed",
        "timeout_ms": 600000,
        "is_p2p": False,
    }
    if state == "completed":
        e["duration_ms"] = 19.5
    return e


def dump(
    rank: int,
    world: int = 8,
    last: int = 412,
    stuck: dict[int, str] | None = None,
    entered: bool = True,
    op: str = "nccl:all_reduce",
    sizes: list | None = None,
) -> dict[str, Any]:
    """Rank ``rank``'s dump: collectives 405..last-1 of the default group completed; collective ``last``
    (``op``) in state ``stuck[rank]`` (default "started") where the rank ``entered`` it; a p2p send and
    a tensor-parallel group's completed all_gathers beside."""
    ranks = "[" + ", ".join(str(r) for r in range(world)) + "]"
    tp = [r for r in range(world) if r // 4 == rank // 4]  # this rank's tensor-parallel group
    tp_pg = 1 + rank // 4
    entries = [entry(i, seq) for i, seq in enumerate(range(last - 7, last))]
    entries.append(entry(len(entries), 0, "nccl:send 0->1", pg=0) | {"is_p2p": True, "p2p_seq_id": 3})
    entries += [
        entry(20 + k, 30 + k, "nccl:_allgather_base", pg=tp_pg, name=str(tp_pg), desc="tp", sizes=[[256]])
        for k in range(2)
    ]
    last_done = last - 1
    if entered:
        entries.append(entry(40, last, op, (stuck or {}).get(rank, "started"), sizes=sizes))
    enqueued = last if entered else last_done
    return {
        "version": "2.10",
        "comm_lib_version": "2.21.5",
        "pg_config": {
            "0": {"name": "0", "desc": "default_pg", "ranks": ranks},
            str(tp_pg): {"name": str(tp_pg), "desc": "tp", "ranks": "[" + ", ".join(map(str, tp)) + "]"},
        },
        "pg_status": {
            "0": {
                "last_enqueued_collective": str(enqueued),
                "last_started_collective": str(enqueued),
                "last_completed_collective": str(last_done),
            },
            "1": {
                "last_enqueued_collective": "31",
                "last_started_collective": "31",
                "last_completed_collective": "31",
            },
        },
        "entries": entries,
    }


def dump_bytes(**kw: Any) -> bytes:
    return json.dumps(dump(**kw)).encode()
