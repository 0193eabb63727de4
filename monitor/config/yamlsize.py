"""Bounds on every YAML file herowatch reads (the watch config, rule files, rule tests), checked before
the parse completes: a config or rule file may come from a less trusted colleague, and PyYAML spends
about 20 µs and a few hundred bytes on each value, so a 52 MB list (or a 2 MB flow list of a million
scalars) once took minutes of CPU and more memory than the Deployment's 1 GiB limit.

- Size: a file over :data:`MAX_YAML_MB` is refused from its size on disk, before a byte is read
  (``FILE: too large (52.0 MB, limit 2 MB)``); a file whose size the disk does not tell (a pipe) is read
  up to the limit and no further. Text handed over directly is measured too.
- Values: composing stops at the value that passes :data:`MAX_YAML_VALUES` (every scalar, list and
  mapping counts; an alias counts once here, its expansion is bounded in ``yamlpos``), with its line.

The largest file herowatch ships, a pack's rule tests, is 21 kB with 1,652 values: the bounds are about
100 and 30 times that. Within them a parse takes at most about a second and 100 MB.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from monitor.config.errors import ConfigError, Problem

MB = 1 << 20
MAX_YAML_MB = 2
MAX_YAML_VALUES = 50_000


def too_large(path: str, size: int) -> ConfigError:
    return ConfigError(path, [Problem(None, "", f"too large ({size / MB:.1f} MB, limit {MAX_YAML_MB} MB)")])


def check_text_size(text: str, path: str) -> None:
    """Raise ``too large`` for text over the limit (in UTF-8 bytes)."""
    if len(text) * 4 <= MAX_YAML_MB * MB:  # cannot be over, whatever its characters
        return
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_YAML_MB * MB:
        raise too_large(path, size)


def read_yaml_file(path: str | Path, what: str = "file") -> str:
    """The text of a YAML file, refused (ConfigError) if it is over :data:`MAX_YAML_MB` (from its size
    on disk, before reading), missing, unreadable or not UTF-8. ``what`` names it in messages."""
    p = Path(path)
    limit = MAX_YAML_MB * MB
    try:
        size = p.stat().st_size
        if size > limit:
            raise too_large(str(p), size)
        with p.open("rb") as f:
            raw = f.read(limit + 1)  # a pipe or a file still growing: never more than the limit
        if len(raw) > limit:
            raise too_large(str(p), max(size, len(raw)))
        return raw.decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(str(p), [Problem(None, "", f"{what} not found")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(str(p), [Problem(None, "", f"cannot read {what}: {exc}")]) from None


class TooManyValues(yaml.YAMLError):
    def __init__(self, line: int) -> None:
        super().__init__(f"more than {MAX_YAML_VALUES:,} values by line {line}")
        self.line = line


class CountingLoader(yaml.SafeLoader):
    """PyYAML's safe loader, counting the nodes it composes: the one past :data:`MAX_YAML_VALUES`
    raises :class:`TooManyValues` at once (the rest of the file is never scanned)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.values = 0

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node:
        self.values += 1
        if self.values > MAX_YAML_VALUES:
            raise TooManyValues(self.peek_event().start_mark.line + 1)
        return super().compose_node(parent, index)


def too_many_values(path: str, exc: TooManyValues) -> ConfigError:
    return ConfigError(
        path,
        [
            Problem(
                exc.line,
                "",
                f"too large (more than {MAX_YAML_VALUES:,} values by this line, limit {MAX_YAML_VALUES:,}): "
                "split the file",
            )
        ],
    )
