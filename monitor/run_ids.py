"""Run identity: every run is keyed by where it comes from, never by its display name.

A run's id is ``<source>:<project>/<name>``, made once, at the source boundary (each source's
``poll``), and used as is everywhere after: storage keys, the alert label ``run`` (so fingerprints and
group keys, one Slack thread per run), URLs. ``name`` is the run's own id at its source, ``project`` the
scope it is unique in:

- W&B: ``wandb:<entity>/<project>/<run id>`` (the 8-character id of the run URL);
- Prometheus: ``prometheus:<watch>/<run>``: the run's series are what the watch's selectors select
  with ``{run}`` = the name (a run another source of the same watch found keeps that source's id);
- the simulator: ``sim:<watch>/<run>``;
- TensorBoard: ``tensorboard:<logdir>/<run directory>``; MLflow: ``mlflow:<experiment>/<run id>``;
  a run that pushes its own samples (``herowatch emit``): ``push:<watch>/<run name>``.

Display names may repeat (an SFT and a pretraining run both called ``qwen-7b-v3``): ``title`` shows the
display name, with the project where the name alone is ambiguous.
"""

from __future__ import annotations

from collections.abc import Iterable


def qualify(source: str, project: str, name: str) -> str:
    return f"{source}:{project}/{name}"


def title(display_name: str | None, name: str | None, project: str | None, ambiguous: bool) -> str:
    """What people read for a run: its display name, and ``(project)`` when that name is not unique."""
    shown = display_name or name or ""
    return f"{shown} ({project})" if ambiguous and project else shown


def ambiguous_names(names: Iterable[str | None]) -> frozenset[str]:
    """The display names that more than one of ``names`` share."""
    seen: set[str] = set()
    twice: set[str] = set()
    for n in names:
        if n:
            (twice if n in seen else seen).add(n)
    return frozenset(twice)
