"""Odd metric values and odd rows (NaN, Inf, strings, 1e308, 10**400, booleans, negative, duplicate and
out-of-order steps) through the three places they go: the trace parser, the Evaluator with the hero
pack, and the engine's storage path (a real service over SQLite with a source that returns them).

The engine must never raise on them; a NaN loss must fire ``loss_nonfinite``; duplicated or shuffled
rows must not look like a stall, a restart or a negative step rate.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from alerts.clock import ManualClock
from alerts.model import AlertState
from monitor.engine.evaluator import Evaluator
from monitor.rules.loader import load_pack
from monitor.samples import RunInfo, Sample
from monitor.sources.base import PollResult
from monitor.storage.models import Alert, Run
from monitor.traces.trace import TraceError, read_trace
from monitor.web.app import create_app
from tests.helpers import make_service

PATH = "values.jsonl"
BIG = str(10**400)
HERO_METRICS = [
    "train/loss",
    "grad/norm/total",
    "throughput/tokens_per_second",
    "throughput/mfu",
    "moe/drop_fraction",
    "train/router/routing_entropy_mean",
    "eval/paloma/macro_loss",
    "optim/skipped_step",
    "oom_kills_total",
    "xid_errors_total",
    "gpu_sm_active_ratio",
    "host_memory_available_bytes",
    "restarts_total",
]
ODD = [math.nan, math.inf, -math.inf, 1e308, -1e308, 5e-324, -0.0, 0.0, 1e-308]


# ---- the trace parser -----------------------------------------------------------------------------------
def one(value_json: str, **extra) -> list[Sample]:
    row = {"t": 1714564800.0, "run": "r", "step": 1, **extra}
    text = json.dumps(row)[:-1] + f', "metrics": {{"train/loss": {value_json}}}}}'
    return read_trace([text], PATH)


@pytest.mark.parametrize(
    "written, expected",
    [
        ("NaN", math.nan),
        ('"NaN"', math.nan),
        ('"nan"', math.nan),
        ("null", math.nan),
        ("Infinity", math.inf),
        ('"Infinity"', math.inf),
        ('"-Infinity"', -math.inf),
        ('"-inf"', -math.inf),
        ("1e308", 1e308),
        ("-1e308", -1e308),
        ("1e400", math.inf),
        ("-1e400", -math.inf),
        ("true", 1.0),
        ("false", 0.0),
        ("0", 0.0),
        ("-0.0", -0.0),
        ("5e-324", 5e-324),
    ],
)
def test_trace_reads_odd_numbers(written, expected):
    (s,) = one(written)
    got = s.metrics["train/loss"]
    assert isinstance(got, float)
    assert (math.isnan(got) and math.isnan(expected)) or got == expected


@pytest.mark.parametrize(
    "written",
    ['"abc"', '"1.5"', '""', "[1]", '{"v": 1}', BIG, "-" + BIG, '"9e999"'],
)
def test_trace_refuses_non_numbers_naming_line_and_metric(written):
    with pytest.raises(TraceError) as info:
        second = f'{{"t": 2.0, "run": "r", "metrics": {{"train/loss": {written}}}}}'
        read_trace(['{"t": 1.0, "run": "r"}', second], PATH)
    assert info.value.line == 2 and info.value.field == "metrics.train/loss"
    assert str(info.value).startswith(f"{PATH}:2: metrics.train/loss:")


@pytest.mark.parametrize("t", [BIG, "-" + BIG, "1e400", "NaN", "-Infinity", '"yesterday"', "true", "[]"])
def test_trace_refuses_times_that_are_not_finite_seconds(t):
    with pytest.raises(TraceError) as info:
        read_trace([f'{{"t": {t}, "run": "r"}}'], PATH)
    assert info.value.line == 1 and info.value.field == "t"


@pytest.mark.parametrize("step", ["1.5", '"7"', "true", "NaN", "1e400", "[]"])
def test_trace_refuses_steps_that_are_not_integers(step):
    with pytest.raises(TraceError) as info:
        read_trace([f'{{"t": 1.0, "run": "r", "step": {step}}}'], PATH)
    assert info.value.field == "step" and info.value.line == 1


def test_trace_negative_and_duplicate_steps_are_read_as_written():
    lines = [
        '{"t": 1.0, "run": "r", "step": -5}',
        '{"t": 2.0, "run": "r", "step": -5}',
        '{"t": 2.0, "run": "r", "step": -5}',
        '{"t": 3.0, "run": "r", "step": 12.0}',
    ]
    assert [s.step for s in read_trace(lines, PATH)] == [-5, -5, -5, 12]


def test_trace_a_run_going_back_in_time_is_an_error_on_that_line_but_runs_may_interleave():
    lines = [
        '{"t": 10.0, "run": "a", "step": 1}',
        '{"t": 5.0, "run": "b", "step": 1}',
        '{"t": 9.0, "run": "a", "step": 2}',
    ]
    with pytest.raises(TraceError) as info:
        read_trace(lines, PATH)
    assert info.value.line == 3 and info.value.field == "t" and "back in time" in info.value.message


# ---- the Evaluator with the hero pack -------------------------------------------------------------------
@pytest.fixture(scope="module")
def hero():
    return load_pack("hero")


def firing(ev: Evaluator, run: str) -> set[str]:
    return {key.rule.name for key, status in ev.alerts(run) if status.state == AlertState.FIRING}


def healthy(run: str, t0: float, n: int, step0: int = 0, dt: float = 10.0) -> list[Sample]:
    return [
        Sample(
            t0 + i * dt,
            run,
            step0 + i,
            {"train/loss": 3.0 - i * 1e-4, "throughput/tokens_per_second": 400_000.0},
            state="running",
        )
        for i in range(n)
    ]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_evaluator_fires_loss_nonfinite_on_a_non_finite_loss(hero, bad):
    ev = Evaluator(lambda run: hero)
    t0 = 1_780_000_000.0
    for s in healthy("r", t0, 60):
        ev.observe(s)
    ev.evaluate("r", t0 + 600)
    assert "loss_nonfinite" not in firing(ev, "r")
    ev.observe(Sample(t0 + 600, "r", 60, {"train/loss": bad}, state="running"))
    events = ev.evaluate("r", t0 + 600)
    assert "loss_nonfinite" in firing(ev, "r"), events
    assert any(
        e.key.rule.name == "loss_nonfinite" and e.transition.to_state == AlertState.FIRING for e in events
    )


@pytest.mark.parametrize("metric", ["restarts_total", "oom_kills_total", "optim/skipped_step", "train/loss"])
@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, 1e308, -1e308])
def test_evaluator_a_non_finite_counter_does_not_raise(hero, metric, value):
    """A counter going from -1e308 to 1e308 increases by inf: int(inf) must not escape."""
    ev = Evaluator(lambda run: hero)
    t0 = 1_780_000_000.0
    ev.observe(Sample(t0, "r", 1, {metric: 1.0}, state="running"))
    ev.evaluate("r", t0)
    ev.observe(Sample(t0 + 10, "r", 2, {metric: value}, state="running"))
    ev.evaluate("r", t0 + 10)
    for i, v in enumerate([2.0, -1e308, 1e308, 3.0], start=3):  # -1e308 -> 1e308: an infinite increase
        ev.observe(Sample(t0 + 10 * i, "r", i, {metric: v}, state="running"))
        ev.evaluate("r", t0 + 10 * i)


@pytest.mark.parametrize("huge", [1e308, -1e308, 5e-324])
def test_evaluator_a_huge_but_finite_loss_is_not_non_finite(hero, huge):
    ev = Evaluator(lambda run: hero)
    t0 = 1_780_000_000.0
    for s in healthy("r", t0, 60):
        ev.observe(s)
    ev.observe(Sample(t0 + 600, "r", 60, {m: huge for m in HERO_METRICS}, state="running"))
    ev.evaluate("r", t0 + 600)
    assert "loss_nonfinite" not in firing(ev, "r")


sample_values = st.one_of(
    st.sampled_from(ODD),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(10**6), 10**6).map(float),
)


@st.composite
def odd_rows(draw: st.DrawFn) -> list[Sample]:
    rows, t = [], 1_780_000_000.0
    for _ in range(draw(st.integers(1, 40))):
        t += draw(st.sampled_from([0.0, 0.001, 10.0, 60.0, 3600.0]))
        names = draw(st.lists(st.sampled_from(HERO_METRICS), max_size=4, unique=True))
        rows.append(
            Sample(
                t,
                "r",
                draw(st.one_of(st.none(), st.integers(-5, 30), st.sampled_from([-(2**62), 2**62]))),
                {n: draw(sample_values) for n in names},
                state=draw(st.sampled_from([None, "running", "running", "crashed", "preempted", "finished"])),
            )
        )
    return rows


@settings(
    max_examples=80,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],  # shrinking these rows can take minutes
    suppress_health_check=[HealthCheck.too_slow],
)
@given(odd_rows())
def test_evaluator_never_raises_and_a_non_finite_latest_loss_fires(rows):
    hero = load_pack("hero")
    ev = Evaluator(lambda run: hero)
    latest_loss = None
    for s in rows:
        ev.observe(s)
        if "train/loss" in s.metrics:
            latest_loss = s.metrics["train/loss"]
        ev.evaluate("r", s.t)
        if latest_loss is not None and not math.isfinite(latest_loss):
            assert "loss_nonfinite" in firing(ev, "r"), (latest_loss, rows)
    for _key, status in ev.alerts("r"):
        assert status.state in (AlertState.PENDING, AlertState.FIRING)
    ev.evaluate("r", rows[-1].t + 86400)  # a day later: clocked rules wake up


# ---- the engine's storage path ------------------------------------------------------------------------
CONFIG = """
watch:
  - name: hero-a
    poll_interval: 60s
    sim: {seed: 1}
"""
RUN = "hero-a"


class RowSource:
    """A source that makes one row every 10 s of clock time, shaped by ``make(i, t) -> Sample | None``,
    and hands each poll's rows through ``deliver(rows, previous_rows) -> rows`` (to shuffle or repeat)."""

    kind = "sim"

    def __init__(self, make, deliver=lambda rows, prev: rows, start: float | None = None) -> None:
        self.make, self.deliver = make, deliver
        self.next_t = start
        self.i = 0
        self.prev: list[Sample] = []

    def poll(self, target, cursors, now):
        if self.next_t is None:
            self.next_t = now
        rows = []
        while self.next_t <= now:
            s = self.make(self.i, self.next_t)
            if s is not None:
                rows.append(s)
            self.i += 1
            self.next_t += 10.0
        out = self.deliver(list(rows), list(self.prev))
        self.prev = rows
        return PollResult(
            samples=out,
            runs=[RunInfo(run=RUN, source="sim", state="running")],
            cursors={RUN: {"i": self.i}},
        )

    def close(self) -> None:
        pass


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'herowatch.db'}"


def serve(sqlite_url: str, source: RowSource):
    clock = ManualClock(1_780_000_000.0)
    service, _ = make_service(sqlite_url, clock, CONFIG)
    service.engine.sources = {"sim": source}
    service.engine.resume()
    return service, clock


def run_for(service, clock, seconds: float) -> None:
    for _ in range(int(seconds // 60)):
        clock.advance(60)
        service.engine.poll("hero-a")  # must not raise
        service.dispatcher.run_once()


def alerts_by_rule(service) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    with service.sessions() as s:
        for a in s.scalars(select(Alert)):
            out.setdefault(a.rule, []).append(a.state)
    return out


def the_run(service) -> Run:
    with service.sessions() as s:
        run = s.get(Run, RUN)
        s.expunge(run)
        return run


def test_engine_nan_loss_fires_loss_nonfinite(sqlite_url):
    def make(i, t):
        loss = math.nan if 40 <= i < 45 else 3.0 - i * 1e-4
        return Sample(t, RUN, i, {"train/loss": loss, "throughput/tokens_per_second": 4e5}, state="running")

    service, clock = serve(sqlite_url, RowSource(make))
    try:
        run_for(service, clock, 10 * 60)
        assert "firing" in alerts_by_rule(service).get("loss_nonfinite", []), alerts_by_rule(service)
        assert "progress_stalled" not in alerts_by_rule(service)
    finally:
        service.stop()


@pytest.mark.parametrize("value", ODD, ids=[repr(v) for v in ODD])
def test_engine_stores_extreme_values_and_the_api_still_answers(sqlite_url, value):
    def make(i, t):
        if i < 30:
            return Sample(t, RUN, i, {"train/loss": 3.0, "grad/norm/total": 1.0}, state="running")
        return Sample(t, RUN, i, {m: value for m in HERO_METRICS}, state="running")

    service, clock = serve(sqlite_url, RowSource(make))
    try:
        run_for(service, clock, 12 * 60)
        run = the_run(service)
        assert run.last_step is not None and run.last_step >= 60
        rate = (run.stats or {}).get("steps_per_second")
        assert rate is None or rate > 0
        client = TestClient(create_app(service), base_url="http://localhost")
        for url in ["/api/runs", f"/api/runs/{RUN}", "/api/alerts", "/metrics", "/", f"/runs/{RUN}"]:
            r = client.get(url)
            assert r.status_code < 500, (url, r.status_code, r.text[:500])
        if not math.isfinite(value):
            assert "firing" in alerts_by_rule(service).get("loss_nonfinite", [])
    finally:
        service.stop()


def _steady(i, t):
    return Sample(
        t, RUN, i, {"train/loss": 3.0 - i * 1e-4, "throughput/tokens_per_second": 4e5}, state="running"
    )


DELIVERIES = {
    "shuffled": lambda rows, prev: random.Random(len(rows)).sample(rows, len(rows)),
    "every row twice": lambda rows, prev: [r for r in rows for _ in (0, 1)],
    "the previous poll's rows again": lambda rows, prev: prev + rows,
    "reversed, with repeats": lambda rows, prev: list(reversed(prev + rows + rows)),
}


@pytest.mark.parametrize("deliver", DELIVERIES.values(), ids=DELIVERIES.keys())
def test_engine_duplicate_or_out_of_order_rows_are_no_stall_restart_or_negative_rate(sqlite_url, deliver):
    source = RowSource(_steady, deliver)
    service, clock = serve(sqlite_url, source)
    try:
        run_for(service, clock, 90 * 60)
        fired = alerts_by_rule(service)
        for rule in ("progress_stalled", "run_restarted", "crash_loop", "telemetry_gone"):
            assert rule not in fired, fired
        run = the_run(service)
        assert run.restarts == 0, "a re-delivered row is not a step rewind"
        assert run.last_step == source.i - 1
        rate = run.stats["steps_per_second"]
        assert rate is not None and rate == pytest.approx(0.1, rel=0.05)
    finally:
        service.stop()


def test_engine_negative_steps_count_up_normally(sqlite_url):
    def make(i, t):
        return Sample(t, RUN, i - 1000, {"train/loss": 3.0}, state="running")

    source = RowSource(make)
    service, clock = serve(sqlite_url, source)
    try:
        run_for(service, clock, 30 * 60)
        run = the_run(service)
        assert run.last_step == source.i - 1 - 1000 < 0 and run.restarts == 0
        assert run.stats["steps_per_second"] == pytest.approx(0.1, rel=0.05)
        assert "progress_stalled" not in alerts_by_rule(service)
    finally:
        service.stop()


def test_engine_string_or_bool_metric_values_from_a_source_do_not_crash_the_poll(sqlite_url):
    """A source bug (a str or bool where a float belongs) must not take the engine down."""

    def make(i, t):
        weird = ["1.5", True, None, "NaN"][i % 4]
        return Sample(t, RUN, i, {"train/loss": 3.0, "extra/weird": weird}, state="running")

    service, clock = serve(sqlite_url, RowSource(make))
    try:
        run_for(service, clock, 5 * 60)
    finally:
        service.stop()
