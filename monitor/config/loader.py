"""Read a watch config file into a WatchConfig, or raise ConfigError naming file, line and field."""

from __future__ import annotations

from pathlib import Path

from monitor.config.references import reference_problems
from monitor.config.schema import WatchConfig
from monitor.config.yamlpos import validate_yaml
from monitor.config.yamlsize import read_yaml_file


def parse_config(text: str, path: str = "<config>", *, references: bool = True) -> WatchConfig:
    """``references=False`` leaves the checks across fields to the caller (check-config gathers them with
    the rule and matcher problems, to report all at once)."""
    cfg = validate_yaml(WatchConfig, text, path, checks=reference_problems if references else None)
    assert isinstance(cfg, WatchConfig)
    return cfg


def load_config(path: str | Path, *, references: bool = True) -> WatchConfig:
    """The config in ``path``; a file over the size bounds is refused before it is read (``yamlsize``)."""
    return parse_config(read_yaml_file(path), str(path), references=references)
