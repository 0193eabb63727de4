"""The Prometheus source's config (validation, query overrides, the watch's targets, the registry) and
its pure parts: PromQL templates and escaping, and counters accumulated across resets."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from monitor.config.schema import Watch
from monitor.settings import Settings
from monitor.sources.prometheus_config import (
    PrometheusTarget,
    TemplateError,
    promql_regex,
    promql_string,
    render,
)
from monitor.sources.prometheus_source import PrometheusSource, accumulate
from monitor.sources.registry import make_source


def test_config_validation() -> None:
    base = {"url": "http://prometheus:9090"}
    for bad in (
        {"url": "http://user:pw@prometheus:9090"},
        {"headers": {"Authorization": "Bearer x"}},
        {"queries": {"x": 'up{job="{run:bogus}"}'}},
        {"step": "1s", "lookback": "1d"},  # more than 11,000 points
        {"unknown": 1},
    ):
        with pytest.raises(ValidationError):
            PrometheusTarget(**{**base, **bad})
    cfg = PrometheusTarget(
        **base,
        queries={"oom_kills_total": "sum(my_ooms_total)", "restarts_total": None, "extra": "up"},
        timeout="2s",
    )
    queries = cfg.all_queries()
    assert (
        queries["oom_kills_total"].kind == "counter"
        and queries["oom_kills_total"].expr == "sum(my_ooms_total)"
    )
    assert "restarts_total" not in queries and queries["extra"].kind == "gauge"
    assert cfg.timeout == 2.0 and cfg.url == "http://prometheus:9090"
    watch = Watch(name="hero", prometheus={"url": "http://prometheus:9090/", "runs": ["r1"]})
    assert watch.targets()["prometheus"].runs == ["r1"]
    assert isinstance(make_source("prometheus", Settings()), PrometheusSource)


def test_templates() -> None:
    assert promql_string('a"b\\c\nd') == 'a\\"b\\\\c\\nd'
    assert promql_regex("llama.70b") == "llama\\\\.70b"  # \. inside a PromQL string
    values = {"run": "r.1", "job": 'j"'}
    fragments = {"sel": render('pod=~"{run:re}-.*"', values)}
    assert render('sum(x{{sel}, job="{job}"})', values, fragments) == 'sum(x{pod=~"r\\\\.1-.*", job="j\\""})'
    with pytest.raises(TemplateError):
        render('x{a="{missing}"}', values)


def test_accumulate_counter_and_events() -> None:
    series = [({"pod": "a"}, [(1, 3), (2, 0), (3, 2)]), ({"pod": "b"}, [(1, 1), (2, 1)])]
    out, state = accumulate("counter", None, series, None, now=3, forget_after=3600)
    assert out == [(1, 4), (2, 4), (3, 6)]  # the reset of a (3 -> 0) adds nothing; then 2 new
    more, _ = accumulate(
        "counter", state, [({"pod": "a"}, [(4, 1)]), ({"pod": "b"}, [(4, math.nan)])], 3, 4, 3600
    )
    assert more == [(4, 7)]
    events, _ = accumulate(
        "events", None, [({"gpu": "0"}, [(1, 0), (2, 79), (3, 79), (4, 48)])], None, 4, 3600
    )
    assert events == [(1, 0), (2, 1), (3, 1), (4, 2)]
    _, pruned = accumulate("counter", state, [], 3, now=10_000, forget_after=3600)
    assert pruned["series"] == {} and pruned["total"] == 6
