"""From a source kind in the watch config (``sim``, ``wandb``, ``prometheus``) to its class.

Every source class is built as ``cls(settings)``: credentials come from the environment-backed
Settings only, never from the config file.
"""

from __future__ import annotations

from importlib import import_module

from monitor.settings import Settings
from monitor.sources.base import Source

# kind -> "module:Class"; imported on first use so that a sim-only setup never loads wandb.
SOURCE_KINDS: dict[str, str] = {
    "sim": "monitor.sources.sim:SimSource",
    "wandb": "monitor.sources.wandb_source:WandbSource",
    "prometheus": "monitor.sources.prometheus_source:PrometheusSource",
}


def source_class(kind: str) -> type[Source]:
    try:
        module, cls = SOURCE_KINDS[kind].split(":")
    except KeyError:
        raise ValueError(f"unknown source kind {kind!r}; known: {', '.join(sorted(SOURCE_KINDS))}") from None
    return getattr(import_module(module), cls)


def make_source(kind: str, settings: Settings) -> Source:
    return source_class(kind)(settings)
