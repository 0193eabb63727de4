"""One way to make a report from a watch config and what was asked (the CLI, the API, the page, the
Slack command and the schedule all come through here), and to render it in any format."""

from __future__ import annotations

from typing import Literal

from sqlalchemy.orm import Session

from monitor.config.schema import WatchConfig
from monitor.reports import html, markdown, pictures
from monitor.reports.build import GpuSettings, build_report
from monitor.reports.model import Period, Report

Format = Literal["md", "html", "json"]


def gpu_settings(cfg: WatchConfig | None) -> GpuSettings:
    if cfg is None:
        return GpuSettings({}, {})
    by_watch = {w.name: w.gpus for w in cfg.watch if w.gpus}
    by_run = {run: n for w in cfg.watch for run, n in w.run_gpus.items()}
    return GpuSettings(by_watch, by_run)


def make(
    s: Session,
    cfg: WatchConfig | None,
    period: Period,
    *,
    now: float,
    tz: str = "UTC",
    watch: str | None = None,
    runs: list[str] | None = None,
) -> Report:
    return build_report(s, period, now=now, tz=tz, watch=watch, runs=runs, gpus=gpu_settings(cfg))


def render(s: Session, r: Report, fmt: Format) -> str:
    if fmt == "json":
        return r.model_dump_json(indent=2) + "\n"
    if fmt == "md":
        return markdown.render(r)
    return html.document(r, pictures.collect(s, r))
