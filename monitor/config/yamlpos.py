"""Load YAML keeping the line of every key and item, and turn pydantic errors into file:line:field."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from monitor.config.didyoumean import did_you_mean
from monitor.config.errors import ConfigError, Problem
from monitor.config.yamlsize import CountingLoader, TooManyValues, check_text_size, too_many_values

Path_ = tuple[str | int, ...]
MAX_ALIAS_VALUES = 100_000  # values that aliases may add to a document ("billion laughs" stop here)


def load_with_positions(text: str, path: str) -> tuple[Any, dict[Path_, int]]:
    """Parse YAML text. Returns the data and a map from each value's path to its 1-based line. Text or
    a document over the bounds of ``yamlsize`` is refused before the parse completes."""
    check_text_size(text, path)
    try:
        node = yaml.compose(text, Loader=CountingLoader)
    except TooManyValues as exc:
        raise too_many_values(path, exc) from None
    except yaml.MarkedYAMLError as exc:
        raise ConfigError(path, [syntax_problem(exc)]) from None
    except yaml.YAMLError as exc:
        raise ConfigError(path, [Problem(None, "", f"not valid YAML: {exc}")]) from None
    except RecursionError:
        raise ConfigError(path, [Problem(None, "", "not valid YAML: nested too deeply")]) from None
    if node is None:
        return None, {}
    positions: dict[Path_, int] = {}
    try:
        _Expansion().check(node, path)
        _walk(node, (), positions, set())
        constructor = CountingLoader("")  # the data from the nodes composed above, not a second parse
        data = constructor.construct_document(node)
        constructor.dispose()
    except yaml.MarkedYAMLError as exc:  # e.g. an unhashable (list or mapping) key
        raise ConfigError(path, [syntax_problem(exc)]) from None
    except yaml.YAMLError as exc:
        raise ConfigError(path, [Problem(None, "", f"not valid YAML: {exc}")]) from None
    except RecursionError:
        raise ConfigError(path, [Problem(None, "", "not valid YAML: nested too deeply")]) from None
    except (ValueError, TypeError, IndexError, KeyError, AttributeError, OverflowError) as exc:
        # PyYAML's constructors fail this way on an explicit tag its text does not fit: `!!int x`, `!!int`
        raise ConfigError(
            path, [Problem(None, "", f"not valid YAML: a value does not fit its tag ({type(exc).__name__})")]
        ) from None
    return data, positions


# the parser's words for the usual slips, as people say them
_PLAIN = (
    (
        "expected <block end>, but found '<block mapping start>'",
        "the indentation does not match the lines above",
    ),
    ("expected <block end>, but found '-'", "a list item ('-') indented unlike the lines above"),
    ("found character '\\t' that cannot start any token", "a tab character: YAML indents with spaces only"),
    ("found unexpected end of stream", "the file ends before the quote or bracket is closed"),
    ("mapping values are not allowed here", "a ':' where no key can start (quote a value holding ': ')"),
)


def syntax_problem(exc: yaml.MarkedYAMLError) -> Problem:
    """A YAML syntax error as FILE:LINE: message: the line and column where the parser stopped, what it
    found, and where the construct it was reading began (not the parser's raw two-part text)."""
    mark, began = exc.problem_mark or exc.context_mark, exc.context_mark
    line = mark.line + 1 if mark else None
    what = str(exc.problem or exc.context or "cannot be parsed")
    what = what.replace("could not find expected", "expected")
    what = next((plain for raw, plain in _PLAIN if raw in what), what)
    msg = f"not valid YAML (column {mark.column + 1}): {what}" if mark else f"not valid YAML: {what}"
    if exc.context and began is not None and exc.problem:
        opened = str(exc.context).removeprefix("while parsing ").removeprefix("while scanning ")
        opened = opened.removeprefix("a ")
        msg += f" (in the {opened} that began on line {began.line + 1}, column {began.column + 1})"
    return Problem(line, "", msg)


class _Expansion:
    """Counts the values a document's aliases add once expanded, without expanding them: the composed
    node graph shares an anchored node between its aliases, so each node's expanded size is computed
    once. Nine nested aliases of nine (the "billion laughs") add 9^9 values from 500 bytes of YAML; the
    first alias use that passes :data:`MAX_ALIAS_VALUES` is refused with its line."""

    def __init__(self) -> None:
        self.sizes: dict[int, int] = {}
        self.added = 0

    def check(self, node: yaml.Node, path: str) -> None:
        self._size(node, path, node.start_mark.line + 1)

    def _size(self, node: yaml.Node, path: str, line: int) -> int:
        known = self.sizes.get(id(node))
        if known is not None:  # an alias of a node already counted: its whole expansion again
            self.added += known
            if self.added > MAX_ALIAS_VALUES:
                raise ConfigError(
                    path,
                    [
                        Problem(
                            line,
                            "",
                            f"aliases expand this document by more than {MAX_ALIAS_VALUES:,} values "
                            "(nested aliases, a 'billion laughs'?): use fewer aliases",
                        )
                    ],
                )
            return known
        self.sizes[id(node)] = 1  # while inside it: an alias of an ancestor (&a [*a]) counts as one value
        total = 1
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                here = key_node.start_mark.line + 1
                total += self._size(key_node, path, here) + self._size(value_node, path, here)
        elif isinstance(node, yaml.SequenceNode):
            for item in node.value:
                total += self._size(item, path, item.start_mark.line + 1)
        self.sizes[id(node)] = total
        return total


def _walk(node: yaml.Node, here: Path_, out: dict[Path_, int], seen: set[int]) -> None:
    out.setdefault(here, node.start_mark.line + 1)
    if id(node) in seen:  # an alias of a node already walked (maybe one that contains itself: &a [*a])
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node.value)
            out[here + (key,)] = key_node.start_mark.line + 1
            _walk(value_node, here + (key,), out, seen)
            out[here + (key,)] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk(item, here + (i,), out, seen)


def format_loc(loc: Iterable[str | int]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def line_for(loc: Path_, positions: dict[Path_, int]) -> int | None:
    for n in range(len(loc), -1, -1):
        if loc[:n] in positions:
            return positions[loc[:n]]
    return None


CONFIG_HINT = "`herowatch example-config` shows every field"


def problems_from(
    exc: ValidationError,
    positions: dict[Path_, int],
    strip: Iterable[str] = (),
    hint: str = CONFIG_HINT,
    model: type[BaseModel] | None = None,
) -> list[Problem]:
    """One Problem per pydantic error, with the line of the deepest key it names; an unknown key of
    ``model`` gets the closest field it accepts there ("did you mean `gpus`?")."""
    problems = []
    skip = set(strip)
    for err in exc.errors(include_url=False):
        # Drop pydantic's validator tags (e.g. 'function-after[...]'), keep data keys.
        loc = tuple(p for p in err["loc"] if isinstance(p, int) or (p not in skip and "[" not in str(p)))
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            close = did_you_mean(model, loc)
            said = close or "check the spelling"
            msg = f"unknown field; {close} ({hint})" if close else f"unknown field ({said}; {hint})"
        elif err["type"] == "missing":
            msg = "required field is missing"
        elif "input" in err and err["type"].endswith("_type") or err["type"].endswith("_parsing"):
            msg = f"{msg} (got {err['input']!r})"
        problems.append(Problem(line_for(loc, positions), format_loc(loc), msg))
    return problems


def validate_yaml(
    model: type[BaseModel],
    text: str,
    path: str,
    context: dict | None = None,
    checks: Callable[[Any], list[Problem]] | None = None,
) -> BaseModel:
    """``model`` from YAML text; then ``checks`` (problems across fields) on the valid model. Every
    problem gets the line of the field it names."""
    data, positions = load_with_positions(text, path)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(path, [Problem(1, "", "expected a mapping of keys to values at the top level")])
    try:
        obj = model.model_validate(data, context=context)
    except ValidationError as exc:
        raise ConfigError(path, problems_from(exc, positions, model=model)) from None
    problems = checks(obj) if checks else []
    if problems:
        raise ConfigError(path, [with_line(p, positions) for p in problems])
    return obj


def with_line(p: Problem, positions: dict[Path_, int]) -> Problem:
    return p if p.line else Problem(line_for(parse_loc(p.field), positions), p.field, p.message)


def parse_loc(field: str) -> Path_:
    """``watch[0].rules.overrides`` -> ('watch', 0, 'rules', 'overrides')."""
    import re

    out: list[str | int] = []
    for name, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", field):
        out.append(int(index) if index else name)
    return tuple(out)


def add_lines(exc: ConfigError, text: str) -> ConfigError:
    """Fill in the line of problems found after parsing (cross-field checks) from the file's text."""
    try:
        _, positions = load_with_positions(text, exc.path)
    except ConfigError:
        return exc
    return ConfigError(exc.path, [with_line(p, positions) for p in exc.problems])
