"""Row 2: the silence matcher ``alertname=~"(.*.*)*X"`` made every GET /api/silences take ~13 s of CPU per
firing alert (Python's backtracking ``re``). Matchers are RE2 now: the pattern is accepted and takes
time linear in the label value; RE2 refuses what it cannot run in linear time (backreferences,
lookaround); and a matcher is at most 1024 characters, in silences, routes and inhibit rules alike."""

from __future__ import annotations

import time

import pytest
import re2
from typer.testing import CliRunner

from alerts.routing import MAX_MATCHER_CHARS, Matcher
from monitor.cli.main import app as cli

EVIL = 'alertname=~"(.*.*)*X"'


def _seconds(fn, repeat: int = 3) -> float:  # noqa: ANN001
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def test_the_catastrophic_pattern_runs_in_linear_time():
    m = Matcher.parse(EVIL)
    short, long = "progress_stalled" * 600, "progress_stalled" * 6000  # ~10 kB and ~100 kB
    t_short = _seconds(lambda: m.matches({"alertname": short}))
    t_long = _seconds(lambda: m.matches({"alertname": long}))
    print(f"\n(.*.*)*X on {len(short)} chars: {t_short * 1e3:.3f} ms; on {len(long)}: {t_long * 1e3:.3f} ms")
    assert not m.matches({"alertname": long})
    assert m.matches({"alertname": "progress_stalledX"})
    assert t_long < 0.1, "100 kB of label in well under 100 ms"
    assert t_long < 30 * max(t_short, 1e-5), "10x the input costs about 10x the time, not exponentially more"


def test_the_regex_is_compiled_once_when_parsed(monkeypatch):
    m = Matcher.parse('run=~"hero-.*"')

    def no_compiling(*a, **k):
        raise AssertionError("compiled again while matching")

    monkeypatch.setattr(re2, "compile", no_compiling)
    assert all(m.matches({"run": f"hero-{i}"}) for i in range(1000))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('run=~"(a)\\1"', "bad regex"),  # a backreference: no linear-time engine can run it
        ('run=~"(?=hero)h.*"', "bad regex"),  # lookahead
        ('run=~"(a{999}){999}"', "bad regex"),  # a program too large to compile
        ("run=" + "a" * MAX_MATCHER_CHARS, "limit is 1024"),
        ("run=hero\x00a", "control character"),
        ("run=hero\na", "control character"),
    ],
)
def test_what_cannot_run_in_linear_time_or_is_too_long_is_refused(text, message):
    with pytest.raises(ValueError, match=message):
        Matcher.parse(text)


def test_through_the_api_the_pattern_is_accepted_and_listing_stays_fast(server):
    api = server.client(headers=server.bearer())
    firing = api.get("/api/alerts", params={"state": "firing"}).json()
    assert firing, "a firing alert to match against"
    made = api.post(
        "/api/silences",
        json={"matchers": [EVIL], "duration": "1h", "created_by": "mallory", "comment": "redos"},
    )
    assert made.status_code == 201, made.text
    t0 = time.perf_counter()
    for _ in range(5):
        assert api.get("/api/silences").status_code == 200
        assert api.get("/api/alerts").status_code == 200
    per_request = (time.perf_counter() - t0) / 10
    print(f"\nGET /api/silences and /api/alerts with {EVIL}: {per_request * 1e3:.1f} ms per request")
    assert per_request < 1.0, "was ~13 s per firing alert"
    assert api.delete(f"/api/silences/{made.json()['id']}").status_code == 200


def test_a_lookahead_silence_is_a_422_that_says_why(server):
    r = server.client(headers=server.bearer()).post(
        "/api/silences",
        json={"matchers": ['run=~"(?=x)"'], "duration": "1h", "created_by": "a"},
    )
    assert r.status_code == 422 and "RE2" in r.json()["error"], r.text


def test_route_and_inhibit_matchers_are_checked_when_the_config_loads(tmp_path):
    cfg = tmp_path / "hw.yaml"
    long = "a" * 2000
    cfg.write_text(
        "watch:\n  - name: a\n    sim: {seed: 1}\n"
        "route:\n  receiver: console\n  routes:\n    - receiver: console\n"
        f"      matchers: ['run=~\"{long}\"']\n"
        "inhibit_rules:\n  - source_matchers: ['severity=~\"(?!x)\"']\n    target_matchers: [a=b]\n"
    )
    result = CliRunner().invoke(cli, ["check-config", str(cfg)])
    assert result.exit_code == 2, result.output
    assert f"{cfg}:8: route.routes[0].matchers[0]: matcher is 2007 characters long" in result.output
    assert f"{cfg}:10: inhibit_rules[0].source_matchers[0]: bad regex" in result.output
