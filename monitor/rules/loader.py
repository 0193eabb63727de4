"""Rule files and packs into typed rule specs; per-run overrides; errors with file, line and field."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from monitor.config.errors import ConfigError, Problem
from monitor.config.yamlpos import format_loc, load_with_positions, problems_from
from monitor.config.yamlsize import read_yaml_file
from monitor.rules.kinds import DETECTORS
from monitor.rules.panels import Layout, Layouts, Panel, RunKind
from monitor.rules.spec import Importance, RuleSpec


class PackInhibitRule(BaseModel):
    """A pack's own inhibition: while an alert matching ``source_matchers`` fires, alerts matching
    ``target_matchers`` with the same ``equal`` labels are muted (a crashed run is not also stalled)."""

    model_config = ConfigDict(extra="forbid")
    source_matchers: list[str]
    target_matchers: list[str]
    equal: list[str] = ["run"]


class PackInputs(BaseModel):
    """How important a pack's inputs are (docs/rules.md, "Inputs and their importance"). An essential
    input a run never sends is paged once (``watching_blind``); any input not listed is optional: shown
    where a run does not log it, paged by nobody. Any input that stops pages, whatever its importance.
    The step clock and the run state are essential wherever a source provides them."""

    model_config = ConfigDict(extra="forbid")
    essential: list[str] = []  # every run a trainer's tracker feeds sends these (the training loss)
    essential_where_queried: list[str] = []  # essential where a source of the watch queries them

    def importance(self) -> dict[str, Importance]:
        out: dict[str, Importance] = {name: "queried" for name in self.essential_where_queried}
        out.update({name: "essential" for name in self.essential})
        return out


class _RuleList(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rules: list[dict[str, Any]]
    inputs: PackInputs = PackInputs()
    inhibit_rules: list[PackInhibitRule] = []
    run_kind: RunKind | None = None  # what the pages show of a run (monitor.rules.panels)
    panels: list[Panel] = []


def _spec_model(kind: object) -> type[RuleSpec]:
    if not isinstance(kind, str) or kind not in DETECTORS:
        known = ", ".join(sorted(DETECTORS))
        raise ValueError(f"unknown rule kind {kind!r}; known kinds: {known}")
    return DETECTORS[kind].spec_model


class FieldError(ValueError):
    """A rule parameter refused before validation (e.g. an integer too large for any float)."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(message)


MAX_INT = 10**15  # no parameter needs more (a step, a count); beyond, floats lose integers


def validate_rule(raw: Mapping[str, Any]) -> RuleSpec:
    """One rule dict into its kind's typed spec. Raises ValueError (FieldError) or ValidationError."""
    if "kind" not in raw:
        raise ValueError("required field 'kind' is missing")
    for key, value in raw.items():
        if type(value) is int and abs(value) > MAX_INT:
            raise FieldError(
                str(key), f"{str(value)[:12]}... ({len(str(abs(value)))} digits) is too large a number"
            )
    try:
        return TypeAdapter(_spec_model(raw["kind"])).validate_python(dict(raw))
    except (OverflowError, ArithmeticError) as exc:
        raise ValueError(f"a number is out of range: {exc}") from None


RULES_HINT = "docs/rules.md lists the fields of every rule kind; `herowatch rules list hero` shows examples"
TESTS_HINT = "docs/rules.md shows a rule test file; `herowatch rules test hero` runs the built-in ones"


NOT_RULES = "not a rule file: expected a mapping with a `rules:` list (its content is not shown)"


def _document(text: str, path: str) -> tuple[_RuleList, dict]:
    data, positions = load_with_positions(text, path)
    if data is not None and (not isinstance(data, dict) or "rules" not in data):
        raise ConfigError(path, [Problem(None, "", NOT_RULES)])  # never echo what a stray file holds
    try:
        doc = _RuleList.model_validate(data if data is not None else {})
    except ValidationError as exc:
        raise ConfigError(path, problems_from(exc, positions, hint=RULES_HINT, model=_RuleList)) from None
    ids: dict[str, int] = {}
    for i, panel in enumerate(doc.panels):
        if panel.id in ids:
            where = ("panels", i, "id")
            raise ConfigError(
                path,
                [Problem(positions.get(where), format_loc(where), f"panel id {panel.id!r} is used twice")],
            )
        ids[panel.id] = i
    return doc, positions


def parse_layout(text: str, path: str, origin: str | None = None) -> Layout:
    """The run kind and panels a pack or rule file declares."""
    doc, _ = _document(text, path)
    return Layout(origin or path, doc.run_kind, tuple(doc.panels))


def parse_rules(text: str, path: str) -> list[RuleSpec]:
    doc, positions = _document(text, path)
    specs, problems, seen = [], [], set()
    for i, raw in enumerate(doc.rules):
        try:
            spec = validate_rule(raw)
        except ValidationError as exc:
            for p in problems_from(exc, positions, hint=RULES_HINT):
                field = format_loc(("rules", i)) + "." + p.field if p.field else format_loc(("rules", i))
                loc = ("rules", i, *[x for x in p.field.split(".") if x])
                line = positions.get(loc) or positions.get(("rules", i))
                problems.append(Problem(line, field, p.message))
            continue
        except ValueError as exc:
            name = exc.field if isinstance(exc, FieldError) else "kind"
            problems.append(
                Problem(
                    positions.get(("rules", i, name)) or positions.get(("rules", i)),
                    format_loc(("rules", i, name)),
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
    importance = doc.inputs.importance()
    if not importance:
        return specs
    return [s if s.importance else s.model_copy(update={"importance": importance}) for s in specs]


TEST_SUFFIX = "_test.yaml"  # a pack's rule tests sit next to it: hero.yaml, hero_test.yaml


def pack_names() -> list[str]:
    return sorted(
        p.name[:-5]
        for p in resources.files("monitor.rules.packs").iterdir()
        if p.name.endswith(".yaml") and not p.name.endswith(TEST_SUFFIX)
    )


def pack_test_file(name: str) -> Path | None:
    """The built-in tests of pack ``name`` (a real file: packs ship as package data), if any."""
    res = resources.files("monitor.rules.packs") / f"{name}{TEST_SUFFIX}"
    return Path(str(res)) if res.is_file() else None


def load_pack(name: str) -> list[RuleSpec]:
    res = resources.files("monitor.rules.packs") / f"{name}.yaml"
    if name.endswith(TEST_SUFFIX[:-5]) or not res.is_file():
        raise ConfigError(
            f"pack {name!r}",
            [Problem(None, "rules.packs", f"no built-in pack {name!r}; known: {', '.join(pack_names())}")],
        )
    text = res.read_text(encoding="utf-8")
    specs = parse_rules(text, f"<pack {name}>")
    kind = parse_layout(text, f"<pack {name}>").kind
    if kind is None:
        return specs
    return [s if s.for_kind else s.model_copy(update={"for_kind": kind.name}) for s in specs]


def pack_layout(name: str) -> Layout:
    res = resources.files("monitor.rules.packs") / f"{name}.yaml"
    return parse_layout(res.read_text(encoding="utf-8"), f"<pack {name}>", f"pack {name}")


def file_layout(path: str | Path) -> Layout:
    return parse_layout(read_yaml_file(path, "rule file"), str(path))


def load_layouts(packs: Iterable[str], files: Iterable[str | Path], base_dir: str | Path = ".") -> Layouts:
    """The layouts of the packs, then the rule files, in force (files that cannot be read are skipped:
    loading their rules reports them)."""
    out = [pack_layout(p) for p in packs]
    for f in files:
        path = Path(base_dir) / f
        if path.is_file():
            out.append(file_layout(path))
    return Layouts(tuple(out))


def pack_inhibit_rules(name: str) -> list[PackInhibitRule]:
    """The inhibit rules a built-in pack declares (its rule names are its own business, not alerts/')."""
    res = resources.files("monitor.rules.packs") / f"{name}.yaml"
    data, _ = load_with_positions(res.read_text(encoding="utf-8"), f"<pack {name}>")
    return _RuleList.model_validate(data).inhibit_rules


def inside(base_dir: str | Path, name: str) -> bool:
    """Whether the file ``name`` (relative to ``base_dir``), symbolic links followed, is in that folder:
    a config's rule files stay in its folder unless ``rules.files_outside`` says otherwise."""
    base = Path(base_dir).resolve()
    return (base / name).resolve().is_relative_to(base)


def load_rule_file(path: str | Path) -> list[RuleSpec]:
    return parse_rules(read_yaml_file(path, "rule file"), str(path))


@dataclass(frozen=True)
class RuleSet:
    rules: tuple[RuleSpec, ...]

    def for_run(
        self,
        overrides: Mapping[str, Mapping[str, Any]] = {},  # noqa: B006 - read only
        disabled: Iterable[str] = (),
        settings: Mapping[str, Any] = {},  # noqa: B006 - read only
    ) -> list[RuleSpec]:
        """The rules with overrides applied (a rule's parameters merged with the override).

        ``settings`` are the run's watch settings (e.g. ``target_step``): they fill the parameter of
        that name of every rule that has one and leaves it unset (an override still wins)."""
        off = set(disabled)
        out = []
        for rule in self.rules:
            if rule.name in off:
                continue
            patch = dict(overrides.get(rule.name) or {})
            for key, value in settings.items():
                if value is not None and key not in patch and getattr(rule, key, value) is None:
                    patch[key] = value
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
            near = difflib.get_close_matches(name, list(by_name), n=1)
            hint = f"did you mean {near[0]!r}?" if near else f"known: {', '.join(sorted(by_name))}"
            problems.append(Problem(None, f"{where}.{name}", f"no rule named {name!r}; {hint}"))
            continue
        try:
            apply_override(by_name[name], patch)
        except ValidationError as exc:
            for err in exc.errors(include_url=False):
                loc = ".".join(str(p) for p in err["loc"] if str(p) not in DETECTORS)
                msg = err["msg"]
                if err["type"] == "extra_forbidden":
                    near = difflib.get_close_matches(loc, sorted(type(by_name[name]).model_fields), n=1)
                    every = "`herowatch rules list PACK --verbose` shows them"
                    hint = f"did you mean {near[0]!r}?" if near else every
                    msg = f"{name} has no setting {loc!r}; {hint}"
                problems.append(Problem(None, f"{where}.{name}.{loc}", msg))
        except FieldError as exc:
            problems.append(Problem(None, f"{where}.{name}.{exc.field}", str(exc)))
        except ValueError as exc:
            problems.append(Problem(None, f"{where}.{name}", str(exc)))
    return problems


def load_rules(refs: Iterable[str], base_dir: str | Path | None = None) -> list[RuleSpec]:
    """Rules from built-in pack names and rule files (paths relative to ``base_dir``), in order.

    A ref that names an existing file (or ends in .yaml/.yml) is a file, else a pack. Rule names
    must be unique across all of them. Raises ConfigError.
    """
    specs: list[RuleSpec] = []
    where: dict[str, str] = {}
    for ref in refs:
        path = Path(ref) if base_dir is None or Path(ref).is_absolute() else Path(base_dir) / ref
        if path.is_file() or ref.endswith((".yaml", ".yml")):
            loaded, origin = load_rule_file(path), str(path)
        else:
            loaded, origin = load_pack(ref), f"pack {ref}"
        for spec in loaded:
            if spec.name in where:
                raise ConfigError(
                    origin,
                    [Problem(None, "rules", f"rule {spec.name!r} is also defined in {where[spec.name]}")],
                )
            where[spec.name] = origin
            specs.append(spec)
    return specs


def parse_override(text: str) -> tuple[str, str, Any]:
    """``rule.param=value`` (the value read as YAML: 2.5, 15m, null, [a, b]) into its parts."""
    import yaml

    target, sep, raw = text.partition("=")
    rule, dot, param = target.strip().partition(".")
    if not sep or not dot or not rule or not param:
        raise ValueError(f"{text!r}: expected RULE.PARAM=VALUE, e.g. tokens_per_second_low.below=350000")
    try:
        value = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError as exc:
        raise ValueError(f"{text!r}: the value is not valid YAML: {exc}") from None
    return rule, param.strip(), value


def apply_overrides(
    rules: Iterable[RuleSpec], overrides: Mapping[str, Mapping[str, Any]], where: str
) -> list[RuleSpec]:
    """The rules with per-rule parameter overrides applied; a typo is a ConfigError naming ``where``."""
    rules = list(rules)
    problems = check_overrides(RuleSet(tuple(rules)), overrides, where)
    if problems:
        raise ConfigError(where, problems)
    return RuleSet(tuple(rules)).for_run(overrides)
