"""The W&B source reading runs with the real ``wandb`` client against the local stand-in
(tests/standins/wandb_server.py): incremental reads, selection, rewinds, values, real training data.

Time is the stand-in's clock, moved by the tests; nothing here waits for time to pass.
"""

from __future__ import annotations

import csv
import json
import math

import pytest

from monitor.sources.wandb_history import HEARTBEAT_AGE
from tests.conftest import REAL_DATA
from tests.standins.wandb_server import WandbStandin
from tests.wandb_support import (
    ENTITY,
    PROJECT,
    Watcher,
    state_of,
    steps,
    wandb_standin_fixture,  # noqa: F401  (the server fixture)
    wid,
)


# ---- incremental reading ---------------------------------------------------------------------------
def test_first_sight_reads_a_bounded_tail_then_only_new_steps(server: WandbStandin) -> None:
    server.add_run(PROJECT, "hero1", tags=["hero"])
    server.log_steps(PROJECT, "hero1", 0, 2500)
    w = Watcher(server, tags=["hero"], warmup_steps=2000)

    res = w.poll()
    assert res.error is None
    assert steps(res, "hero1") == list(range(500, 2500))  # the last 2000 steps, each one
    assert server.history_ranges() == [("hero1", 500, 1500), ("hero1", 1500, 2500)]
    assert server.count("Viewer") == server.count("Runs") == 1  # signing in, then one listing
    assert res.requests == server.count() == 4

    res = w.poll()  # nothing new: the run listing only
    assert steps(res, "hero1") == [] and server.count() == res.requests == 1
    assert state_of(res, "hero1") == "running"

    server.log_steps(PROJECT, "hero1", 2500, 2510)
    res = w.poll()
    assert steps(res, "hero1") == list(range(2500, 2510))
    assert server.history_ranges() == [("hero1", 2499, 2510)]  # from the cursor (one row overlap)
    assert server.count() == 2
    assert w.cursor("hero1")["step"] == 2509 and w.cursor("hero1")["lines"] == 2510


def test_of_two_runs_only_the_one_that_advanced_is_read(server: WandbStandin) -> None:
    for run in ("a", "b"):
        server.add_run(PROJECT, run, tags=["hero"])
        server.log_steps(PROJECT, run, 0, 50)
    w = Watcher(server, tags=["hero"])
    assert steps(w.poll(), "a") == list(range(50))

    server.log_steps(PROJECT, "b", 50, 53)
    res = w.poll()
    assert server.count("Runs") == 1 and server.count("HistoryPage") == 1
    assert server.history_ranges() == [("b", 49, 53)]
    assert steps(res, "a") == [] and steps(res, "b") == [50, 51, 52]
    assert {s.run for s in res.samples if s.step is None} == {wid("a"), wid("b")}  # both report their state


def test_restart_of_herowatch_resumes_from_stored_cursors(server: WandbStandin) -> None:
    server.add_run(PROJECT, "hero1", tags=["hero"])
    server.log_steps(PROJECT, "hero1", 0, 3000)
    first = Watcher(server, tags=["hero"])
    first.poll()
    server.log_steps(PROJECT, "hero1", 3000, 3005)

    again = Watcher(server, tags=["hero"])  # a new process: only the stored cursors survive
    again.cursors = json.loads(json.dumps(first.cursors))
    res = again.poll()
    assert steps(res, "hero1") == list(range(3000, 3005))
    assert server.history_ranges() == [("hero1", 2999, 3005)]


def test_a_run_with_no_history_yet_costs_no_history_request(server: WandbStandin) -> None:
    server.add_run(PROJECT, "fresh", tags=["hero"])
    w = Watcher(server, tags=["hero"])
    res = w.poll()
    assert server.count("HistoryPage") == 0 and state_of(res, "fresh") == "running"
    server.log_steps(PROJECT, "fresh", 0, 3)
    assert steps(w.poll(), "fresh") == [0, 1, 2]


def test_run_listing_pages(server: WandbStandin) -> None:
    for i in range(5):
        server.add_run(PROJECT, f"r{i}", tags=["hero"])
    w = Watcher(server, tags=["hero"], per_page=2)
    res = w.poll()
    assert server.count("Runs") == 3 and sorted(r.name for r in res.runs) == [f"r{i}" for i in range(5)]


# ---- selection -------------------------------------------------------------------------------------
def test_a_new_tagged_run_is_discovered_without_a_restart(server: WandbStandin) -> None:
    server.add_run(PROJECT, "old", tags=["hero"])
    w = Watcher(server, tags=["hero"])
    assert [r.name for r in w.poll().runs] == ["old"]
    server.add_run(PROJECT, "new", tags=["hero"])
    server.log_steps(PROJECT, "new", 0, 5)
    res = w.poll()
    assert sorted(r.name for r in res.runs) == ["new", "old"] and steps(res, "new") == list(range(5))


def test_selector_excludes_runs_that_do_not_match(server: WandbStandin) -> None:
    server.add_run(PROJECT, "r1", display_name="hero-7b", tags=["hero"])
    server.add_run(PROJECT, "r2", display_name="hero-1b", tags=["ablation"])  # wrong tag
    server.add_run(PROJECT, "r3", display_name="sweep-hero-3", tags=["hero"])  # wrong name
    server.add_run(PROJECT, "r4", display_name="hero-old", tags=["hero"], state="finished")  # wrong state
    for run in ("r1", "r2", "r3", "r4"):
        server.log_steps(PROJECT, run, 0, 10)
    w = Watcher(server, tags=["hero"], name_pattern="^hero-", states=["running"])
    res = w.poll()
    assert [r.name for r in res.runs] == ["r1"] and {s.run for s in res.samples} == {wid("r1")}
    (listing,) = [r for r in server.requests if r.operation == "Runs"]
    sent = json.loads(listing.variables["filters"])  # selection happens on the server
    assert sent == {
        "$and": [
            {"tags": {"$in": ["hero"]}},
            {"display_name": {"$regex": "^hero-"}},
            {"state": {"$in": ["running"]}},
        ]
    }

    ids = Watcher(server, run_ids=["r2", "r3"])
    assert sorted(r.name for r in ids.poll().runs) == ["r2", "r3"]


def test_a_followed_run_that_crashes_out_of_the_selector_is_still_seen(server: WandbStandin) -> None:
    server.add_run(PROJECT, "r1", tags=["hero"])
    server.log_steps(PROJECT, "r1", 0, 10)
    w = Watcher(server, tags=["hero"], states=["running"])
    w.poll()
    server.set_state(PROJECT, "r1", "crashed")
    res = w.poll()
    assert state_of(res, "r1") == "crashed" and res.runs[0].state == "crashed"


def test_run_info_state_sample_and_labels(server: WandbStandin) -> None:
    server.add_run(PROJECT, "r1", display_name="hero-7b", tags=["hero", "7b"])
    server.log_steps(PROJECT, "r1", 0, 3)
    hb = server.run(PROJECT, "r1").heartbeat_at
    server.clock += 120.0
    w = Watcher(server, tags=["hero"], web_url="https://wandb.example.com/")
    res = w.poll()
    info = res.runs[0]
    assert info.display_name == "hero-7b" and info.state == "running" and info.heartbeat_at == hb
    assert info.url == f"https://wandb.example.com/{ENTITY}/{PROJECT}/runs/r1"
    assert info.labels["tag.hero"] == "true" and info.labels["tag.7b"] == "true"
    assert info.labels["team"] == "pretrain"
    stateless = [s for s in res.samples if s.step is None]
    assert len(stateless) == 1 and stateless[0].t == server.clock
    assert stateless[0].metrics[HEARTBEAT_AGE] == pytest.approx(120.0)


# ---- rewinds, duplicates, values -------------------------------------------------------------------
def test_a_rewind_relogged_past_the_cursor_is_a_restart(server: WandbStandin) -> None:
    server.add_run(PROJECT, "r1", tags=["hero"])
    server.log_steps(PROJECT, "r1", 0, 1001)
    w = Watcher(server, tags=["hero"])
    w.poll()
    server.rewind(PROJECT, "r1", 800)  # resumed from the step-800 checkpoint...
    server.log_steps(PROJECT, "r1", 801, 1011)  # ...and already past the old step 1000 at the next poll
    res = w.poll()
    assert steps(res, "r1") == list(range(801, 1011))  # the rewound steps come back, then the new ones
    cur = w.cursor("r1")
    assert (cur["rewound_from"], cur["rewound_to"], cur["restarts"], cur["step"]) == (1000, 800, 1, 1010)
    assert server.count("HistoryPage") == 2  # from the cursor, then one page back
    server.log_steps(PROJECT, "r1", 1011, 1013)
    assert steps(w.poll(), "r1") == [1011, 1012] and w.cursor("r1")["restarts"] == 1


def test_a_rewind_seen_before_it_is_relogged(server: WandbStandin) -> None:
    server.add_run(PROJECT, "r1", tags=["hero"])
    server.log_steps(PROJECT, "r1", 0, 1001)
    w = Watcher(server, tags=["hero"])
    w.poll()
    server.rewind(PROJECT, "r1", 700)  # lastStep and historyLineCount went back
    res = w.poll()
    assert steps(res, "r1") == [] and w.cursor("r1")["step"] == 700 and w.cursor("r1")["rewound_to"] == 700
    server.log_steps(PROJECT, "r1", 701, 705)
    res = w.poll()
    assert steps(res, "r1") == [701, 702, 703, 704]  # lower than the 1000 seen before: the engine's restart


@pytest.mark.parametrize("quirk", ["duplicate", "shuffle"])
def test_duplicate_and_out_of_order_rows(server: WandbStandin, quirk: str) -> None:
    run = server.add_run(PROJECT, "r1", tags=["hero"])
    run.quirk = quirk
    server.log_steps(PROJECT, "r1", 0, 20)
    w = Watcher(server, tags=["hero"])
    assert steps(w.poll(), "r1") == list(range(20))
    server.log_steps(PROJECT, "r1", 20, 25)
    assert steps(w.poll(), "r1") == list(range(20, 25))


def test_values_nan_inf_kept_text_dropped_only_configured_keys(server: WandbStandin) -> None:
    server.add_run(PROJECT, "r1", tags=["hero"])
    server.log(
        PROJECT,
        "r1",
        [
            {
                "_step": 0,
                "train/loss": float("nan"),
                "grad/norm/total": float("inf"),
                "throughput/mfu": 41.0,
                "optim/learning_rate": "Infinity",
                "eval/loss": "n/a",
                "moe/drop_fraction": {"_type": "histogram"},
                "optim/skipped_step": True,
                "not/configured": 1.0,
                "eval/extra": 2,
            },
        ],
    )
    res = Watcher(
        server,
        tags=["hero"],
        keys=[
            "train/loss",
            "grad/norm/total",
            "throughput/mfu",
            "optim/*",
            "eval/loss",
            "moe/drop_fraction",
            "_runtime",
        ],
    ).poll()
    (row,) = [s for s in res.samples if s.step == 0]
    m = row.metrics
    assert math.isnan(m["train/loss"]) and m["grad/norm/total"] == math.inf
    assert m["optim/learning_rate"] == math.inf and m["optim/skipped_step"] == 1.0
    assert m["throughput/mfu"] == 41.0 and isinstance(m["throughput/mfu"], float)  # sent as 41
    assert set(m) == {
        "train/loss",
        "grad/norm/total",
        "throughput/mfu",
        "optim/learning_rate",
        "optim/skipped_step",
        "_runtime",
    }
    assert row.t == server.run(PROJECT, "r1").rows[0]["_timestamp"]
    assert (row.run, row.state, row.source) == (wid("r1"), None, "wandb"), (
        "rows carry no state: the listing does"
    )
    [state] = [s for s in res.samples if s.step is None]
    assert (state.run, state.state) == (wid("r1"), "running"), "the run's state, once per poll"


def test_real_llmc_history_arrives_at_full_resolution(server: WandbStandin) -> None:
    """llm.c GPT-2 124M (KellerJordan/modded-nanogpt): one-step grad-norm spikes at 7435 and 9025."""
    train = {}
    with open(REAL_DATA / "llmc_gpt2_124m_steps.csv", newline="") as f:
        for r in csv.DictReader(f):
            if r["kind"] == "train" and 7000 <= int(r["step"]) < 9500:
                train[int(r["step"])] = {
                    "_step": int(r["step"]),
                    "train/loss": float(r["loss"]),
                    "optim/learning_rate": float(r["lr"]),
                    "grad/norm/total": float(r["grad_norm"]),
                }
    server.add_run(PROJECT, "gpt2", tags=["hero"])
    ordered = [train[s] for s in sorted(train)]
    server.log(PROJECT, "gpt2", ordered[:1000])  # steps 7000..7999 before herowatch starts
    w = Watcher(server, tags=["hero"])
    seen: dict[int, dict[str, float]] = {}
    for chunk in [None, *range(1000, 2500, 300)]:
        if chunk is not None:
            server.log(PROJECT, "gpt2", ordered[chunk : chunk + 300])
        res = w.poll()
        for s in res.samples:
            if s.step is not None:
                assert s.step not in seen, f"step {s.step} delivered twice"
                seen[s.step] = dict(s.metrics)
    assert sorted(seen) == sorted(train)  # every step, none sampled away
    assert seen[7435]["grad/norm/total"] == 1.44 and seen[9025]["grad/norm/total"] == 2.02
    assert max(seen, key=lambda s: seen[s]["grad/norm/total"]) == 9025
    assert all(seen[s]["train/loss"] == train[s]["train/loss"] for s in train)
