"""Settings of a logs watch: the text a job prints (its stdout, a log file), read for progress lines and
crash lines. ``paths`` are globs of local paths (a shared file system too) or object store URLs
(``gs://``, ``s3://``: install ``herowatch[gcs]`` / ``herowatch[s3]``; the store's own credentials)."""

from __future__ import annotations

import importlib.util
import re
from typing import Literal

from pydantic import ConfigDict, Field, field_validator

from monitor.sources.log_formats import FORMATS, check_custom
from monitor.sources.registry import SourceTarget, register

WHOLE = 1 << 62
FORMAT_NAMES = (*FORMATS, "auto")


class LogsTarget(SourceTarget):
    """Each file a glob of ``paths`` matches is a run (``logs:<folder>/<file>``), or the files whose
    ``run_key`` match says the same key are one run (``logs:<watch>/<key>``)."""

    model_config = ConfigDict(extra="forbid")

    paths: list[str] = Field(
        description="globs of log files, e.g. ['/lustre/jobs/hero-*/stdout.log', 's3://bucket/logs/*.log']"
    )
    format: str = Field(
        default="auto",
        description=f"the progress line: {', '.join(FORMATS)}, 'regex:<pattern>' (named group step, the "
        "others metrics), or auto (detected from each file's first progress lines)",
    )
    run_key: str | None = Field(
        default=None,
        description="regular expression over the path whose group 'run' names the run, e.g. "
        "'/jobs/(?P<run>[^/]+)/' (files with one key are one run); default: each file is a run",
    )
    steps_per_line: int = Field(
        default=1,
        ge=1,
        description="for lines without a step (the HF Trainer without its bar): steps per line",
    )
    timestamps: Literal["local", "utc", "off"] = Field(
        default="local",
        description="a line's own 'YYYY-MM-DD HH:MM:SS' is its time in this host's zone (local), UTC, or "
        "ignored (off: the time the file was written)",
    )
    crashes: bool = Field(
        default=True, description="crash lines (traceback, CUDA OOM, NCCL timeout, Killed) alert"
    )
    warmup_bytes: int = Field(
        default=1 << 20, ge=1 << 12, description="first sight of a file: read only its last this many bytes"
    )
    read_bytes: int = Field(
        default=8 << 20, ge=1 << 12, description="most bytes read per file and poll (a backlog takes polls)"
    )
    poll_bytes: int = Field(default=64 << 20, ge=1 << 12, description="most bytes read per poll, all files")
    max_line: int = Field(
        default=64 << 10, ge=256, le=16 << 20, description="longer lines are skipped, never buffered (bytes)"
    )
    max_files: int = Field(default=2000, ge=1, le=100_000, description="files watched at most")

    @field_validator("paths")
    @classmethod
    def _paths(cls, v: list[str]) -> list[str]:
        v = [p.strip() for p in v]
        if not v or any(not p for p in v):
            raise ValueError("say which log files to read: globs such as /lustre/jobs/hero-*/stdout.log")
        for p in v:
            if "://" in p and not p.startswith("file://"):
                protocol = p.split("://", 1)[0]
                if not re.match(r"^[a-z][a-z0-9+.\-]*$", protocol):
                    raise ValueError(f"{p}: expected a path or a URL such as s3://bucket/logs/*.log")
                if importlib.util.find_spec("fsspec") is None:
                    raise ValueError(f"{p}: reading {protocol}:// needs fsspec: pip install 'herowatch[s3]'")
                import fsspec

                try:
                    fsspec.get_filesystem_class(protocol)
                except (ImportError, ValueError) as exc:
                    extra = {"gs": "gcs", "gcs": "gcs", "s3": "s3"}.get(protocol)
                    hint = f": pip install 'herowatch[{extra}]'" if extra else ""
                    raise ValueError(f"cannot read {protocol}:// URLs ({exc}){hint}") from None
        return list(dict.fromkeys(v))

    @field_validator("format")
    @classmethod
    def _format(cls, v: str) -> str:
        v = v.strip()
        if v.startswith("regex:"):
            return "regex:" + check_custom(v.removeprefix("regex:"))
        if v not in FORMAT_NAMES:
            raise ValueError(f"unknown format {v!r}; known: {', '.join(FORMAT_NAMES)}, or regex:<pattern>")
        return v

    @field_validator("run_key")
    @classmethod
    def _run_key(cls, v: str | None) -> str | None:
        if v is None:
            return v
        try:
            rx = re.compile(v)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from None
        if "run" not in rx.groupindex:
            raise ValueError("name the run's part of the path: a group (?P<run>...)")
        return v

    def promises(self) -> frozenset[str]:
        """Steps; no run state (a log has none: the slurm source gives it)."""
        from monitor.samples import STEP

        return frozenset({STEP})

    def for_backfill(self, run: str | None = None) -> LogsTarget:
        return self.model_copy(update={"read_bytes": WHOLE, "warmup_bytes": WHOLE, "poll_bytes": WHOLE})


register(
    "logs",
    LogsTarget,
    "monitor.sources.logs_source:LogsSource",
    "text a job prints (Megatron, torchtitan, HF, llm.c, nanoGPT, Levanter, a regex): each file is a run",
)
