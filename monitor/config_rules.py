"""What the watch config's rules, routes and inhibit rules build, without starting anything: the rule
set (packs, rule files, overrides), the pages' layouts, the route tree, and every matcher that does not
parse. `serve` builds from here; `check-config` checks with the same functions and no engine, database or
web server imported (monitor/cli/loading.py)."""

from __future__ import annotations

from pathlib import Path

from alerts.grouping import GroupTiming
from alerts.inhibition import InhibitRule
from alerts.routing import Matcher, Route
from monitor.config.errors import ConfigError, Problem
from monitor.config.schema import RouteConfig, WatchConfig
from monitor.rules.loader import RuleSet, check_overrides, load_layouts, load_pack, load_rule_file
from monitor.rules.panels import Layouts, layout_problems


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


def build_rules(cfg: WatchConfig, base_dir: Path, config_path: str = "<config>") -> RuleSet:
    """Packs, then rule files; global overrides applied; every watch's overrides checked now. All the
    config's problems are raised together (a rule file's own problems name that file)."""
    specs = []
    for pack in cfg.rules.packs:
        specs.extend(load_pack(pack))
    problems = []
    for i, f in enumerate(cfg.rules.files):
        if (base_dir / f).is_file():
            specs.extend(load_rule_file(base_dir / f))
        else:
            missing = f"no rule file {str(base_dir / f)!r} (relative to the config)"
            problems.append(Problem(None, f"rules.files[{i}]", missing))
    rules = RuleSet(tuple(specs))
    problems += check_overrides(rules, cfg.rules.overrides, "rules.overrides")
    for bad in {*cfg.rules.disabled} - {r.name for r in specs}:
        problems.append(Problem(None, "rules.disabled", f"no rule named {bad!r}"))
    valid = {k: v for k, v in cfg.rules.overrides.items() if not check_overrides(rules, {k: v}, "")}
    rules = RuleSet(tuple(rules.for_run(valid, cfg.rules.disabled)))
    for i, w in enumerate(cfg.watch):
        problems += check_overrides(rules, w.rules.overrides, f"watch[{i}].rules.overrides")
    if problems:
        raise ConfigError(config_path, problems)
    return rules


def build_layouts(cfg: WatchConfig, rules: RuleSet, base_dir: Path, config_path: str = "<config>") -> Layouts:
    """What the packs and rule files in force declare for the pages (run kinds, panels), checked
    against the rules and the watches' kinds."""
    layouts = load_layouts(cfg.rules.packs, cfg.rules.files, base_dir)
    kinds = {f"watch[{i}].kind": w.kind for i, w in enumerate(cfg.watch) if w.kind is not None}
    problems = layout_problems(layouts, {r.name for r in rules.rules}, kinds)
    if problems:
        raise ConfigError(config_path, [Problem(None, field, msg) for field, msg in problems])
    return layouts


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
