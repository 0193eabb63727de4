"""herowatch's monitor: sources, rules, engine, storage, API and dashboard."""

__version__ = "0.1.0"
