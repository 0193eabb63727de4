"""The PromQL template language of the ``prometheus`` source (described in ``prometheus_config``):
``{name}`` and ``{name:re}`` replaced by escaped values, ``{name:hosts}`` by a Slurm host list (a job's
``hosts``: ``node[01-04]``) as a regular expression matching each of its hosts
(``node01|node02|node03|node04``), ``{selector}`` by a rendered fragment."""

from __future__ import annotations

import re
from collections.abc import Mapping

from monitor.sources.hostlist import HostListError, expand

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(?::([A-Za-z_]+))?\}")
_MODIFIERS = frozenset({"re", "hosts"})


class TemplateError(ValueError):
    """A template names a value the run does not have, or uses an unknown modifier."""


def check_template(text: str) -> None:
    for m in _PLACEHOLDER.finditer(text):
        if m.group(2) is not None and m.group(2) not in _MODIFIERS:
            raise ValueError(f"unknown modifier ':{m.group(2)}' in {m.group(0)}; known: :re, :hosts")


def promql_string(value: str) -> str:
    """``value`` escaped for the inside of a double-quoted PromQL string literal."""
    out = value.replace("\\", "\\\\").replace('"', '\\"')
    return out.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")


def promql_regex(value: str) -> str:
    """``value`` as a regular expression matching exactly itself, escaped for a PromQL string."""
    return promql_string(re.escape(value))


def render(text: str, values: Mapping[str, str], fragments: Mapping[str, str] | None = None) -> str:
    """Substitute ``{name}``/``{name:re}`` with escaped ``values`` and ``{name}`` with raw ``fragments``."""
    fragments = fragments or {}

    def one(m: re.Match[str]) -> str:
        name, modifier = m.group(1), m.group(2)
        if modifier is None and name in fragments:
            return fragments[name]
        if name not in values:
            known = ", ".join(sorted({*values, *fragments}))
            raise TemplateError(f"{m.group(0)} is not known for this run (known: {known})")
        if modifier == "hosts":
            try:
                return promql_string("|".join(re.escape(h) for h in expand(values[name])))
            except HostListError as exc:
                raise TemplateError(f"{m.group(0)}: {exc}") from None
        return promql_regex(values[name]) if modifier == "re" else promql_string(values[name])

    return _PLACEHOLDER.sub(one, text)
