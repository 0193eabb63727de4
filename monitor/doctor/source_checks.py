"""What ``herowatch doctor`` says of the sources beyond W&B and Prometheus: how to fix one that cannot
be read or finds no run, and the push door's own set-up (its ingest token, its spool folder), which no
poll can see."""

from __future__ import annotations

import os

from monitor.config.schema import Watch
from monitor.doctor.report import FAIL, OK, Report
from monitor.settings import MAKE_TOKEN, MIN_TOKEN_CHARS, Settings

FIXES = {
    "tensorboard": "check tensorboard.logdir (mounted? for gs:// or s3:// install herowatch[gcs] or "
    "herowatch[s3] and the store's credentials)",
    "mlflow": "check mlflow.tracking_uri, the experiment's name and MLFLOW_TRACKING_TOKEN (or "
    "MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD); install herowatch[mlflow]",
    "push": "check HEROWATCH_INGEST_DIR: herowatch must be able to read and write it",
}
NO_RUNS = {
    "tensorboard": "check tensorboard.runs (a glob of run directories under logdir, e.g. 'hero-*')",
    "mlflow": "check mlflow.filter (an MLflow search filter such as tags.hero = 'true')",
    "push": "no job has pushed yet: wrap one in `herowatch emit run --run NAME -- COMMAND`",
}


def source_fix(kind: str) -> str:
    return FIXES.get(kind, "check the source's settings")


def no_runs_fix(kind: str) -> str:
    return NO_RUNS.get(kind, "")


def check_push(watch: Watch, settings: Settings, report: Report) -> None:
    """The push door of ``watch``: a usable ingest token, a spool folder herowatch can write."""
    target = watch.targets().get("push")
    if target is None:
        return
    subject = f"watch {watch.name}: push"
    token = os.environ.get(target.token_env, "")
    if not token:
        report.add(
            FAIL,
            subject,
            f"{target.token_env} is not set: jobs cannot push (POST /api/ingest answers 403)",
            f"set it to a random token of {MIN_TOKEN_CHARS}+ characters, e.g. {MAKE_TOKEN}",
        )
    elif len(token) < MIN_TOKEN_CHARS:
        report.add(
            FAIL,
            subject,
            f"{target.token_env} has {len(token)} characters",
            f"use {MIN_TOKEN_CHARS}+: {MAKE_TOKEN}",
        )
    elif api := settings.api_token:
        if api.get_secret_value() == token:
            report.add(
                FAIL, subject, f"{target.token_env} is the API token", "give jobs a token of their own"
            )
        else:
            report.add(OK, subject, f"ingest token set ({target.token_env})")
    else:
        report.add(OK, subject, f"ingest token set ({target.token_env})")
    folder = settings.ingest_dir / watch.name
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / ".doctor"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        report.add(FAIL, subject, f"cannot write the spool folder {folder}: {exc}", FIXES["push"])
    else:
        report.add(OK, subject, f"pushes are kept in {folder} until read")
