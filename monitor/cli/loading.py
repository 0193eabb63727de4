"""The config every command reads, checked as a whole: the file (``monitor.config.checked``), then its
rules, rule files, run kinds and panels, and the matchers of its routes and inhibit rules. A rule
file's own problems name that file."""

from __future__ import annotations

from pathlib import Path

from monitor.config.checked import load_checked
from monitor.config.errors import ConfigError, Problem
from monitor.config.schema import WatchConfig
from monitor.config_rules import build_layouts, build_rules
from monitor.rules.loader import RuleSet


def build_all_rules(cfg: WatchConfig, base_dir: Path, path: str) -> tuple[RuleSet | None, list[Problem]]:
    from monitor.alerting_setup import matcher_problems

    problems = matcher_problems(cfg)
    rules = None
    try:
        rules = build_rules(cfg, base_dir, path)
        build_layouts(cfg, rules, base_dir, path)  # run kinds and panels
    except ConfigError as exc:
        if exc.path != path:  # a rule file's own problems, with its own lines
            raise
        problems += exc.problems
    return rules, problems


def unset_secrets(cfg: WatchConfig) -> list[str]:
    """Receivers whose secret this environment lacks: the file is valid, but `serve` here would refuse it."""
    import os

    from alerts.notifiers.base import MissingSecret
    from alerts.notifiers.registry import BuildContext, build_notifier

    context = BuildContext(env=dict(os.environ), external_url=cfg.server.external_url)
    out = []
    for r in cfg.receivers:
        try:
            build_notifier(r, context)
        except MissingSecret as exc:
            out.append(f"receiver {r.name}: {exc.env} is not set here")
        except ValueError:
            continue  # said by doctor, which builds it the same way
    return out


def load(config: Path) -> tuple[WatchConfig, RuleSet]:
    cfg, rules = load_checked(config, build_all_rules)
    assert rules is not None  # no problem was found, so the rules were built
    return cfg, rules
