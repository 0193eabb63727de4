"""Read a watch config file into a WatchConfig, or raise ConfigError naming file, line and field."""

from __future__ import annotations

from pathlib import Path

from monitor.config.errors import ConfigError, Problem
from monitor.config.schema import WatchConfig
from monitor.config.yamlpos import validate_yaml


def parse_config(text: str, path: str = "<config>") -> WatchConfig:
    cfg = validate_yaml(WatchConfig, text, path)
    assert isinstance(cfg, WatchConfig)
    return cfg


def load_config(path: str | Path) -> WatchConfig:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(str(p), [Problem(None, "", "file not found")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(str(p), [Problem(None, "", f"cannot read: {exc}")]) from None
    return parse_config(text, str(p))
