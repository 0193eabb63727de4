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
  a run that pushes its own samples (``herowatch emit``): ``push:<watch>/<run name>``;
- a job's log file: ``logs:<folder>/<file>`` (or ``logs:<watch>/<key>`` with a ``run_key``); a Slurm job:
  ``slurm:<cluster>/<job id>`` (a requeue keeps the id: the same run).

An id is at most 200 characters (``MAX_ID``): a longer one is cut and ends in ``~`` and a hash of the
whole (``fit``), the same on every poll; the door of a push watch refuses a run name that would need it.

Display names may repeat (an SFT and a pretraining run both called ``qwen-7b-v3``): ``title`` shows the
display name, with the project where the name alone is ambiguous.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

MAX_ID = 200  # characters of a run id, as stored


def qualify(source: str, project: str, name: str) -> str:
    """The run's id; one longer than :data:`MAX_ID` (a deep TensorBoard logdir, a long MLflow experiment
    name) is shortened by :func:`fit`, never dropped."""
    return fit(f"{source}:{project}/{name}")


def fit(run_id: str) -> str:
    """``run_id`` if it is at most :data:`MAX_ID` characters, else its beginning with ``~`` and 16 hex
    digits of its SHA-256: the same id for the same run on every poll and after restarts, distinct runs
    kept apart. The run's display name, name and project are kept whole elsewhere (``RunInfo``)."""
    if len(run_id) <= MAX_ID:
        return run_id
    digest = hashlib.sha256(run_id.encode()).hexdigest()[:16]
    return f"{run_id[: MAX_ID - len(digest) - 1]}~{digest}"


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
