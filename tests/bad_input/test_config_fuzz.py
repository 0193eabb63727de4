"""Bad input never crashes the watch-config parser: random text, YAML-ish fragments, random values
dumped as YAML and mutations of the example config give a WatchConfig or a ConfigError naming the file
and, where known, a line inside it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from monitor.config import ConfigError, WatchConfig, parse_config
from tests.bad_input.fuzz_support import *  # noqa: F403


# ---- the watch config ----------------------------------------------------------------------------------
def test_the_shipped_example_config_parses():
    assert isinstance(parse_config(EXAMPLE, CONFIG_PATH), WatchConfig)


@FUZZ
@given(st.text(max_size=300))
def test_config_any_text(text):
    assert_config_parses_or_explains(text)


@FUZZ
@given(yamlish(CONFIG_KEYS))
def test_config_yamlish_text(text):
    assert_config_parses_or_explains(text)


@FUZZ
@given(dumped(CONFIG_KEYS))
def test_config_random_values_dumped_as_yaml(text):
    assert_config_parses_or_explains(text)


@FUZZ
@given(mutated(EXAMPLE, CONFIG_KEYS))
def test_config_mutations_of_the_example(text):
    assert_config_parses_or_explains(text)


CONFIG_REGRESSIONS = {
    "recursive alias": "watch: &a [*a]\n",
    "self-containing route": "route: &r {routes: [*r]}\n",
    "deep nesting": "watch: " + "[" * 1200 + "\n",
    "deep mappings": "server: " + "{a: " * 1200 + "\n",
    "list as a key": "? [a, b]\n: 1\n",
    "int key": "1: 2\n",
    "python tag": "watch: !!python/object/apply:os.system [echo hi]\n",
    "not a mapping": "- a\n- b\n",
    "a scalar": "hello\n",
    "NUL byte": "watch: \x00\n",
    "BOM": "\ufeffwatch: []\n",
    "two documents": "watch: []\n---\nwatch: []\n",
    "huge int poll_interval": f"watch:\n  - name: a\n    poll_interval: {BIG}\n    sim: {{}}\n",
    "huge int step_time": f"watch:\n  - name: a\n    sim: {{step_time: {BIG}}}\n",
    "huge int evaluation_interval": f"server:\n  evaluation_interval: {BIG}\n",
    "huge int target_step": f"watch:\n  - name: a\n    target_step: {BIG}\n    sim: {{}}\n",
    "huge int jitter": f"watch:\n  - name: a\n    sim: {{jitter: {BIG}}}\n",
    "nan poll_interval": "watch:\n  - name: a\n    poll_interval: .nan\n    sim: {}\n",
}


@pytest.mark.parametrize("text", CONFIG_REGRESSIONS.values(), ids=CONFIG_REGRESSIONS.keys())
def test_config_known_nasty_inputs(text):
    assert_config_parses_or_explains(text)


def test_config_errors_point_at_the_right_line():
    text = EXAMPLE.replace("poll_interval: 30s", "poll_interval: soon")
    with pytest.raises(ConfigError) as info:
        parse_config(text, CONFIG_PATH)
    line = next(i for i, x in enumerate(text.split("\n"), 1) if "poll_interval: soon" in x)
    assert f"{CONFIG_PATH}:{line}: watch[0].poll_interval:" in str(info.value)


def test_a_nan_poll_interval_is_refused():
    """``poll_interval: .nan`` passes the ``v < 1`` check (every comparison with NaN is false)."""
    text = "watch:\n  - name: a\n    poll_interval: .nan\n    sim: {}\n"
    with pytest.raises(ConfigError) as info:
        parse_config(text, CONFIG_PATH)
    assert f"{CONFIG_PATH}:3: watch[0].poll_interval" in str(info.value)
