"""Rule files and packs into typed rule specs; per-run overrides; errors with file, line and field."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from monitor.config.errors import ConfigError, Problem
from monitor.config.yamlpos import format_loc, load_with_positions, problems_from
from monitor.rules.kinds import DETECTORS
from monitor.rules.spec import RuleSpec


class _RuleList(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rules: list[dict[str, Any]]


def _spec_model(kind: object) -> type[RuleSpec]:
    if not isinstance(kind, str) or kind not in DETECTORS:
        known = ", ".join(sorted(DETECTORS))
        raise ValueError(f"unknown rule kind {kind!r}; known kinds: {known}")
    return DETECTORS[kind].spec_model


def validate_rule(raw: Mapping[str, Any]) -> RuleSpec:
    """One rule dict into its kind's typed spec. Raises ValueError or ValidationError."""
    if "kind" not in raw:
        raise ValueError("required field 'kind' is missing")
    return TypeAdapter(_spec_model(raw["kind"])).validate_python(dict(raw))


def parse_rules(text: str, path: str) -> list[RuleSpec]:
    data, positions = load_with_positions(text, path)
    try:
        doc = _RuleList.model_validate(data if data is not None else {})
    except ValidationError as exc:
        raise ConfigError(path, problems_from(exc, positions)) from None
    specs, problems, seen = [], [], set()
    for i, raw in enumerate(doc.rules):
        try:
            spec = validate_rule(raw)
        except ValidationError as exc:
            for p in problems_from(exc, positions):
                field = format_loc(("rules", i)) + "." + p.field if p.field else format_loc(("rules", i))
                loc = ("rules", i, *[x for x in p.field.split(".") if x])
                line = positions.get(loc) or positions.get(("rules", i))
                problems.append(Problem(line, field, p.message))
            continue
        except ValueError as exc:
            problems.append(
                Problem(
                    positions.get(("rules", i, "kind")) or positions.get(("rules", i)),
                    format_loc(("rules", i, "kind")),
                    str(exc),
                )
            )
            continue
        if spec.name in seen:
            problems.append(
                Problem(
                    positions.get(("rules", i, "name")),
                    format_loc(("rules", i, "name")),
                    f"rule name {spec.name!r} is used twice",
                )
            )
        seen.add(spec.name)
        specs.append(spec)
    if problems:
        raise ConfigError(path, problems)
    return specs


def pack_names() -> list[str]:
    return sorted(
        p.name[:-5] for p in resources.files("monitor.rules.packs").iterdir() if p.name.endswith(".yaml")
    )


def load_pack(name: str) -> list[RuleSpec]:
    res = resources.files("monitor.rules.packs") / f"{name}.yaml"
    if not res.is_file():
        raise ConfigError(
            f"pack {name!r}",
            [Problem(None, "rules.packs", f"no built-in pack {name!r}; known: {', '.join(pack_names())}")],
        )
    return parse_rules(res.read_text(encoding="utf-8"), f"<pack {name}>")


def load_rule_file(path: str | Path) -> list[RuleSpec]:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(str(p), [Problem(None, "", f"cannot read rule file: {exc}")]) from None
    return parse_rules(text, str(p))


@dataclass(frozen=True)
class RuleSet:
    rules: tuple[RuleSpec, ...]

    def for_run(
        self,
        overrides: Mapping[str, Mapping[str, Any]] = {},  # noqa: B006 - read only
        disabled: Iterable[str] = (),
    ) -> list[RuleSpec]:
        """The rules with overrides applied (a rule's parameters merged with the override)."""
        off = set(disabled)
        out = []
        for rule in self.rules:
            if rule.name in off:
                continue
            patch = overrides.get(rule.name)
            out.append(apply_override(rule, patch) if patch else rule)
        return out


def apply_override(rule: RuleSpec, patch: Mapping[str, Any]) -> RuleSpec:
    if "kind" in patch and patch["kind"] != rule.kind:
        raise ValueError(f"an override cannot change the kind of rule {rule.name!r}")
    return validate_rule({**rule.raw(), **patch})


def check_overrides(rules: RuleSet, overrides: Mapping[str, Mapping[str, Any]], where: str) -> list[Problem]:
    """Validate overrides up front so that a typo is a config error, not a crash at the first poll."""
    by_name = {r.name: r for r in rules.rules}
    problems = []
    for name, patch in overrides.items():
        if name not in by_name:
            problems.append(
                Problem(
                    None, f"{where}.{name}", f"no rule named {name!r}; known: {', '.join(sorted(by_name))}"
                )
            )
            continue
        try:
            apply_override(by_name[name], patch)
        except ValidationError as exc:
            for err in exc.errors(include_url=False):
                loc = ".".join(str(p) for p in err["loc"] if str(p) not in DETECTORS)
                problems.append(Problem(None, f"{where}.{name}.{loc}", err["msg"]))
        except ValueError as exc:
            problems.append(Problem(None, f"{where}.{name}", str(exc)))
    return problems
