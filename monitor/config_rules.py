"""What the watch config's rules build, without starting anything: the rule set (packs, rule files,
overrides) and the pages' layouts. `serve` builds from here; `check-config` checks with the same
functions with no engine, database or web server imported (monitor/cli/loading.py)."""

from __future__ import annotations

from pathlib import Path

from monitor.config.errors import ConfigError, Problem
from monitor.config.schema import WatchConfig
from monitor.rules.loader import (
    RuleSet,
    check_overrides,
    inside,
    load_layouts,
    load_pack,
    load_rule_file,
    pack_names,
)
from monitor.rules.panels import Layouts, layout_problems


def build_rules(cfg: WatchConfig, base_dir: Path, config_path: str = "<config>") -> RuleSet:
    """Packs, then rule files; global overrides applied; every watch's overrides checked now. All the
    config's problems are raised together (a rule file's own problems name that file)."""
    specs, problems = [], []
    for i, pack in enumerate(cfg.rules.packs):
        if pack in pack_names():
            specs.extend(load_pack(pack))
        else:  # said with its line; the rest of the file is still checked
            known = ", ".join(pack_names())
            problems.append(Problem(None, f"rules.packs[{i}]", f"no built-in pack {pack!r}; known: {known}"))
    for i, f in enumerate(cfg.rules.files):
        if not cfg.rules.files_outside and not inside(base_dir, f):
            outside = (
                f"{f!r} is outside the config's folder {str(base_dir)!r} (rules.files_outside allows it)"
            )
            problems.append(Problem(None, f"rules.files[{i}]", outside))
        elif (base_dir / f).is_file():
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
    files = [f for f in cfg.rules.files if cfg.rules.files_outside or inside(base_dir, f)]
    layouts = load_layouts(cfg.rules.packs, files, base_dir)
    kinds = {f"watch[{i}].kind": w.kind for i, w in enumerate(cfg.watch) if w.kind is not None}
    problems = layout_problems(layouts, {r.name for r in rules.rules}, kinds)
    if problems:
        raise ConfigError(config_path, [Problem(None, field, msg) for field, msg in problems])
    return layouts
