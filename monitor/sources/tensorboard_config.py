"""Settings of a TensorBoard watch: a log directory whose run directories are runs.

``logdir`` is a local path, or an object store URL (``gs://``, ``s3://``, any fsspec protocol: install
``herowatch[gcs]`` or ``herowatch[s3]``); credentials come from the store's own environment
(``GOOGLE_APPLICATION_CREDENTIALS``, ``AWS_*``), never from this file.
"""

from __future__ import annotations

import glob
import importlib.util
import re

from pydantic import ConfigDict, Field, field_validator

from monitor.durations import Duration
from monitor.sources.registry import SourceTarget, register

WHOLE = 1 << 62  # bytes: "all of it"


class TensorboardTarget(SourceTarget):
    """Each directory under ``logdir`` matching ``runs`` that holds event files is a run
    (``tensorboard:<logdir>/<dir>``); a directory that appears while serving is picked up."""

    model_config = ConfigDict(extra="forbid")

    logdir: str = Field(description="the log directory: a path, or a URL such as gs://bucket/tb")
    runs: str = Field(
        default="*",
        description="glob of run directories under logdir, e.g. 'hero-*' or '*/*' (one level: '*'); "
        "'.' watches logdir itself as one run",
    )
    tags: list[str] = Field(
        default_factory=lambda: ["*"],
        description="scalar tags to read; '*' wildcards, e.g. ['lm loss', 'train/*']",
    )
    warmup_bytes: int = Field(
        default=2 << 20,
        ge=1 << 16,
        description="on first sight of an event file, read only its last this many bytes (backfill: all)",
    )
    read_bytes: int = Field(
        default=8 << 20,
        ge=1 << 16,
        description="most bytes read per event file and poll: a long backlog is read over several polls",
    )
    poll_bytes: int = Field(
        default=64 << 20, ge=1 << 16, description="most bytes read per poll, all files together"
    )
    poll_time: Duration = Field(
        default=10.0,
        description="a poll stops opening files after this long (a backlog is read over several polls)",
    )
    max_runs: int = Field(default=2000, ge=1, le=100_000, description="run directories watched at most")
    max_record_bytes: int = Field(
        default=32 << 20,
        ge=1 << 16,
        le=1 << 30,
        description="largest event record read; a longer one makes its run unreadable (named with file and "
        "byte), never the watch",
    )

    @field_validator("logdir")
    @classmethod
    def _logdir(cls, v: str) -> str:
        v = v.strip()
        if not v:
            raise ValueError("say which log directory to watch")
        if "://" in v and not re.match(r"^[a-z][a-z0-9+.\-]*://", v):
            raise ValueError("expected a path or a URL such as gs://bucket/path")
        if importlib.util.find_spec("tensorboard") is None:
            raise ValueError("reading TensorBoard logs needs: pip install 'herowatch[tensorboard]'")
        if "://" in v and not v.startswith("file://"):
            import fsspec

            protocol = v.split("://", 1)[0]
            try:
                fsspec.get_filesystem_class(protocol)
            except (ImportError, ValueError) as exc:
                extra = {"gs": "gcs", "gcs": "gcs", "s3": "s3"}.get(protocol)
                hint = f": pip install 'herowatch[{extra}]'" if extra else ""
                raise ValueError(f"cannot read {protocol}:// URLs ({exc}){hint}") from None
        return v.rstrip("/") or "/"

    @field_validator("runs")
    @classmethod
    def _runs(cls, v: str) -> str:
        v = v.strip().strip("/")
        if not v or ".." in v.split("/"):
            raise ValueError("a glob under logdir such as '*' or 'hero-*' (no '..')")
        return v

    @field_validator("tags")
    @classmethod
    def _tags(cls, v: list[str]) -> list[str]:
        if not v or any(not t.strip() for t in v):
            raise ValueError("tags cannot be empty or blank")
        return list(dict.fromkeys(v))

    def promises(self) -> frozenset[str]:
        """Steps (from the events); no run state: TensorBoard has none."""
        from monitor.samples import STEP

        return frozenset({STEP})

    def for_backfill(self, run: str | None = None) -> TensorboardTarget:
        update: dict[str, object] = {
            "read_bytes": WHOLE,
            "warmup_bytes": WHOLE,
            "poll_bytes": WHOLE,
            "poll_time": float(WHOLE),
        }
        if run:
            update["runs"] = glob.escape(run)
        return self.model_copy(update=update)

    def reading(self, keys: list[str]) -> TensorboardTarget:
        extra = [k for k in keys if k not in self.tags]
        return (
            self.model_copy(update={"tags": [*self.tags, *extra]}) if extra and "*" not in self.tags else self
        )


register(
    "tensorboard",
    TensorboardTarget,
    "monitor.sources.tensorboard_source:TensorboardSource",
    "a TensorBoard log directory (local or object store): each run directory is a run",
)
