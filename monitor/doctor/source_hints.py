"""What ``herowatch doctor`` suggests for the TensorBoard, MLflow and push sources: how to fix one that
cannot be read, and what to check when it finds no run."""

from __future__ import annotations

SOURCE_FIXES = {
    "tensorboard": "check tensorboard.logdir (mounted? for gs:// or s3:// install herowatch[gcs] or "
    "herowatch[s3] and the store's credentials)",
    "mlflow": "check mlflow.tracking_uri, the experiment's name and MLFLOW_TRACKING_TOKEN (or "
    "MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD)",
    "push": "check HEROWATCH_INGEST_DIR: herowatch must be able to read and write it",
}
NO_RUNS_FIXES = {
    "tensorboard": "check tensorboard.runs (a glob of run directories under logdir, e.g. 'hero-*')",
    "mlflow": "check mlflow.filter (an MLflow search filter such as tags.hero = 'true')",
    "push": "no job has pushed yet: wrap one in `herowatch emit run --run NAME -- COMMAND`",
}
