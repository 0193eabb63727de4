"""Doctor's look at MLflow: the tracking server answers and accepts the credentials (MLflow's own
variables), and the experiment exists, within the watch's timeout."""

from __future__ import annotations

import os

from alerts.reachability import Cause
from monitor.doctor.source_checks import Reach, probe
from monitor.settings import Settings
from monitor.sources.mlflow_config import MlflowTarget
from monitor.sources.registry import SourceTarget


def check(target: SourceTarget, settings: Settings) -> Reach:
    assert isinstance(target, MlflowTarget)
    headers = {}
    token = os.environ.get("MLFLOW_TRACKING_TOKEN", "")
    user, password = os.environ.get("MLFLOW_TRACKING_USERNAME"), os.environ.get("MLFLOW_TRACKING_PASSWORD")
    if token:
        headers["Authorization"] = f"Bearer {token}"
    reach, resp = probe(
        f"{target.tracking_uri}/api/2.0/mlflow/experiments/get-by-name",
        secret="MLFLOW_TRACKING_TOKEN",
        timeout=float(target.timeout),
        what=f"MLflow at {target.tracking_uri}",
        params={"experiment_name": target.experiment},
        headers=headers,
        auth=(user, password) if user and password else None,
    )
    if reach.cause is not None or resp is None:
        return reach
    where = f"MLflow at {target.tracking_uri}"
    if resp.status_code >= 500:
        return Reach(
            Cause.UNREACHABLE, f"{where} answers HTTP {resp.status_code}", "check the tracking server"
        )
    if resp.status_code != 200:  # the poll says it: no such experiment
        return Reach(facts=[f"{where} answers"])
    return Reach(facts=[f"{where} answers; experiment {target.experiment!r} found"])
