"""The watch config file: what to watch, with which rules, and where alerts go."""

from monitor.config.errors import ConfigError, Problem
from monitor.config.loader import load_config, parse_config
from monitor.config.schema import WatchConfig

__all__ = ["ConfigError", "Problem", "WatchConfig", "load_config", "parse_config"]
