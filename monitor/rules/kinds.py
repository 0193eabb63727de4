"""Every detector kind, registered: each module of ``monitor/rules`` that defines one registers it with
``@register`` when imported, and this imports them all. Adding a rule kind is adding its module."""

import pkgutil
from importlib import import_module

import monitor.rules as _package
from monitor.rules.base import DETECTORS

for _info in pkgutil.iter_modules(_package.__path__):
    if _info.name not in ("kinds", "base") and not _info.name.startswith("_"):
        import_module(f"{_package.__name__}.{_info.name}")

__all__ = ["DETECTORS"]
