"""The alerting half of the composition root: the route tree, the inhibit rules, the notifiers and the
checks of the config's matchers, built from the watch config (``service.build_service`` wires them)."""

from __future__ import annotations

import os

from alerts.grouping import GroupTiming
from alerts.inhibition import InhibitRule
from alerts.notifiers import BuildContext, Notifier, build_notifier
from alerts.routing import Matcher, Route
from monitor.config.errors import ConfigError, Problem
from monitor.config.schema import RouteConfig, WatchConfig
from monitor.engine import blindness
from monitor.rules.loader import pack_inhibit_rules
from monitor.settings import Settings


def build_route(cfg: RouteConfig, parent: GroupTiming | None = None) -> Route:
    """The route tree; a child route inherits the timers it does not set (Alertmanager semantics)."""
    base = parent or GroupTiming()
    timing = GroupTiming(
        group_wait=cfg.group_wait if cfg.group_wait is not None else base.group_wait,
        group_interval=cfg.group_interval if cfg.group_interval is not None else base.group_interval,
        repeat_interval=cfg.repeat_interval if cfg.repeat_interval is not None else base.repeat_interval,
        send_resolved=cfg.send_resolved if cfg.send_resolved is not None else base.send_resolved,
    )
    return Route(
        receiver=cfg.receiver,
        matchers=tuple(Matcher.parse(m) for m in cfg.matchers),
        group_by=tuple(cfg.group_by),
        timing=timing,
        continue_=cfg.continue_,
        routes=tuple(build_route(c, timing) for c in cfg.routes),
    )


def inhibit_configs(cfg: WatchConfig) -> list:
    """The config's inhibit rules, or when it sets none, those its packs declare."""
    if cfg.inhibit_rules is not None:
        return list(cfg.inhibit_rules)
    return [r for pack in cfg.rules.packs for r in pack_inhibit_rules(pack)]


def build_inhibit_rules(cfg: WatchConfig) -> list[InhibitRule]:
    """The config's (or its packs') inhibit rules, and herowatch's own: a watch-wide watching_blind
    stands for its runs' messages."""
    configured = [
        InhibitRule.parse(r.source_matchers, r.target_matchers, r.equal) for r in inhibit_configs(cfg)
    ]
    return [*configured, InhibitRule.parse(*blindness.INHIBIT)]


def matcher_problems(cfg: WatchConfig) -> list[Problem]:
    """Every matcher of the route tree and the inhibit rules that does not parse, with its field."""
    problems: list[Problem] = []

    def check(texts: list[str], where: str) -> None:
        for j, text in enumerate(texts):
            try:
                Matcher.parse(text)
            except ValueError as exc:
                problems.append(Problem(None, f"{where}[{j}]", str(exc)))

    def walk(route: RouteConfig, where: str) -> None:
        check(route.matchers, f"{where}.matchers")
        for i, child in enumerate(route.routes):
            walk(child, f"{where}.routes[{i}]")

    walk(cfg.route, "route")
    for i, rule in enumerate(cfg.inhibit_rules or ()):
        found = len(problems)
        check(rule.source_matchers, f"inhibit_rules[{i}].source_matchers")
        check(rule.target_matchers, f"inhibit_rules[{i}].target_matchers")
        if len(problems) == found:  # each matcher parses: then what they cost together
            try:
                InhibitRule.parse(rule.source_matchers, rule.target_matchers, rule.equal)
            except ValueError as exc:
                problems.append(Problem(None, f"inhibit_rules[{i}]", str(exc)))
    return problems


def check_matchers(cfg: WatchConfig, config_path: str) -> None:
    problems = matcher_problems(cfg)
    if problems:
        raise ConfigError(config_path, problems)


def build_notifiers(
    cfg: WatchConfig, settings: Settings, config_path: str = "<config>"
) -> dict[str, Notifier]:
    """A notifier per receiver that sends, built by its kind's registered builder. Secrets come from the
    environment (and the settings' own, e.g. SLACK_BOT_TOKEN); a receiver that cannot work (its secret
    is missing) is a config error naming the receiver."""
    context = BuildContext(env={**os.environ, **settings.secret_env()}, external_url=cfg.server.external_url)
    out: dict[str, Notifier] = {}
    problems = []
    for i, r in enumerate(cfg.receivers):
        try:
            notifier = build_notifier(r, context)
        except ValueError as exc:
            problems.append(Problem(None, f"receivers[{i}]", f"receiver {r.name!r}: {exc}"))
            continue
        if notifier is not None:
            out[r.name] = notifier
    if problems:
        raise ConfigError(config_path, problems)
    return out
