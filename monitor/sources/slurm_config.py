"""Settings of a slurm watch: the jobs a Slurm cluster runs, their states from the scheduler and their
progress from the ``StdOut`` file each job writes (read as the ``logs`` source reads a file)."""

from __future__ import annotations

from pydantic import ConfigDict, Field, field_validator

from monitor.durations import Duration
from monitor.sources.log_formats import check_custom
from monitor.sources.logs_config import FORMAT_NAMES, LogsTarget
from monitor.sources.registry import SourceTarget, register


class SlurmTarget(SourceTarget):
    """Each job whose name matches ``jobs`` is a run (``slurm:<cluster>/<job id>``): a requeued job keeps its
    id (a restart of the same run)."""

    model_config = ConfigDict(extra="forbid")

    jobs: str = Field(default="*", description="glob of job names, e.g. 'hero-*'")
    user: str | None = Field(default=None, description="only this user's jobs (squeue --user)")
    partition: str | None = Field(default=None, description="only this partition's jobs (squeue --partition)")
    squeue: str = Field(default="squeue", description="the squeue command (a path, or on PATH)")
    timeout: Duration = Field(default=20.0, description="an squeue call taking longer is an outage")
    read_logs: bool = Field(default=True, description="read each job's StdOut for progress and crash lines")
    log_format: str = Field(
        default="auto", description="the StdOut's progress line, as the logs source's format"
    )
    max_jobs: int = Field(default=1000, ge=1, le=100_000, description="jobs watched at most")
    read_bytes: int = Field(
        default=8 << 20, ge=1 << 12, description="most StdOut bytes read per job and poll"
    )
    warmup_bytes: int = Field(default=1 << 20, ge=1 << 12, description="first sight: a StdOut's last bytes")

    @field_validator("log_format")
    @classmethod
    def _format(cls, v: str) -> str:
        if v.startswith("regex:"):
            return "regex:" + check_custom(v.removeprefix("regex:"))
        if v not in FORMAT_NAMES:
            raise ValueError(f"unknown format {v!r}; known: {', '.join(FORMAT_NAMES)}, or regex:<pattern>")
        return v

    @field_validator("jobs")
    @classmethod
    def _jobs(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("a glob of job names such as 'hero-*' ('*': every job)")
        return v.strip()

    def logs(self, path: str) -> LogsTarget:
        """How a job's StdOut is read."""
        return LogsTarget(
            paths=[path],
            format=self.log_format,
            read_bytes=self.read_bytes,
            warmup_bytes=self.warmup_bytes,
            poll_bytes=self.read_bytes,
        )

    def promises(self) -> frozenset[str]:
        """The scheduler's state always; steps when the StdOut prints progress lines."""
        from monitor.samples import STATE

        return frozenset({STATE})


register(
    "slurm",
    SlurmTarget,
    "monitor.sources.slurm_source:SlurmSource",
    "Slurm jobs (squeue --json): their states, exit codes and requeues, and their StdOut's progress lines",
)
