"""Source kinds register themselves: adding a source is a ``<kind>_config.py`` (its settings, a
``SourceTarget``, and one ``register`` call) and the source class it names, nothing else. The watch
config grows a ``<kind>:`` key for it (``monitor.config.schema``), ``serve`` builds it by name.

The source class is imported on first use only (a sim-only set-up never loads wandb). Every source
class is built as ``cls(settings)``: credentials come from the environment-backed Settings only, never
from the config file.
"""

from __future__ import annotations

import pkgutil
from dataclasses import dataclass
from importlib import import_module
from typing import ClassVar

from pydantic import BaseModel

from monitor.settings import Settings
from monitor.sources.base import Source


class SourceTarget(BaseModel):
    """The settings of one source for one watch. Hooks for ``herowatch backfill``: read everything a
    run has (``for_backfill``), or just enough to list the runs (``for_discovery``). ``finds_runs``: the
    source discovers runs (a tracker), rather than reading those another source found."""

    finds_runs: ClassVar[bool] = True

    def for_backfill(self, run: str | None = None) -> SourceTarget:
        return self

    def for_discovery(self) -> SourceTarget:
        return self

    def reading(self, keys: list[str]) -> SourceTarget:
        """These settings, also reading ``keys`` (names the watch maps under ``metrics:``)."""
        return self


@dataclass(frozen=True)
class SourceKind:
    kind: str
    config: type[SourceTarget]
    impl: str  # "module:Class"
    doc: str = ""  # one line for the config's description


_KINDS: dict[str, SourceKind] = {}
_LOADED = False


def register(kind: str, config: type[SourceTarget], impl: str, doc: str = "") -> None:
    if kind in _KINDS and _KINDS[kind].impl != impl:
        raise ValueError(f"source kind {kind!r} registered twice")
    _KINDS[kind] = SourceKind(kind, config, impl, doc)


def kinds() -> dict[str, SourceKind]:
    """Every source kind, found by importing each ``monitor/sources/*_config.py`` once."""
    global _LOADED
    if not _LOADED:
        import monitor.sources as package

        for info in pkgutil.iter_modules(package.__path__):
            if info.name.endswith("_config"):
                import_module(f"{package.__name__}.{info.name}")
        _LOADED = True
    return dict(_KINDS)


def source_class(kind: str) -> type[Source]:
    known = kinds()
    if kind not in known:
        raise ValueError(f"unknown source kind {kind!r}; known: {', '.join(sorted(known))}")
    module, cls = known[kind].impl.split(":")
    return getattr(import_module(module), cls)


def make_source(kind: str, settings: Settings) -> Source:
    return source_class(kind)(settings)
