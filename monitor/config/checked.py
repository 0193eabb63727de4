"""A watch config with its rules and page layouts, checked as a whole: every problem of the file at once
(``check-config``, ``serve``, ``doctor``), each with its line, in the file's order. Fields that are
invalid on their own do not hide the checks across fields (``salvage``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from monitor.config.errors import ConfigError, Problem
from monitor.config.references import reference_problems
from monitor.config.salvage import salvage
from monitor.config.schema import WatchConfig
from monitor.config.yamlpos import add_lines, load_with_positions
from monitor.config.yamlsize import read_yaml_file

# (config, the config's folder, its path) -> the rules; raises ConfigError with every problem it finds
Later = Callable[[WatchConfig, Path, str], tuple[Any, list[Problem]]]


def load_checked(config: Path, later: Later) -> tuple[WatchConfig, Any]:
    """The config and what ``later`` builds from it (the rules), or ConfigError with every problem."""
    path = str(config)
    text = read_yaml_file(config)
    data, positions = load_with_positions(text, path)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(path, [Problem(1, "", "expected a mapping of keys to values at the top level")])
    found = salvage(WatchConfig, data, positions)
    if found.model is None:
        raise ConfigError(path, found.problems)
    cfg = found.model
    assert isinstance(cfg, WatchConfig)
    built, problems = later(cfg, config.parent, path)
    problems = found.problems + found.relocate(reference_problems(cfg) + problems)
    if problems:
        raise add_lines(ConfigError(path, problems), text)
    return cfg, built
