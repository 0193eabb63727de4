"""Example traces shipped with herowatch, for ``herowatch replay --example NAME``: found with
importlib.resources, so that they are there wherever herowatch is installed (package data in
pyproject.toml), not only in a checkout."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

# name -> (file, what it holds)
EXAMPLES: dict[str, tuple[str, str]] = {
    "llmc": (
        "llmc-gpt2-124m.jsonl",
        "steps 7200 to 7700 of a real run (llm.c GPT-2 124M, with its real one-step grad-norm spike at "
        "step 7435), then a made-up hang: the run reports `running` for 40 minutes without a new step",
    ),
}


def describe() -> str:
    """One line per example: its name and what it holds."""
    return "\n".join(f"{name}: {what}" for name, (_, what) in EXAMPLES.items())


@contextmanager
def example_path(name: str) -> Iterator[Path]:
    """The example trace ``name`` as a file on disk (KeyError: no such example)."""
    file, _ = EXAMPLES[name]
    with resources.as_file(resources.files(__name__).joinpath(file)) as path:
        yield path
