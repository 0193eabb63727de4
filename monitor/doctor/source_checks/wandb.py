"""Doctor's look at W&B: the API key is set, the server answers ``POST /graphql``, and accepts the key
(the same Basic auth the client sends), within the watch's timeout."""

from __future__ import annotations

import base64

from alerts.reachability import Cause, fix_for
from monitor.doctor.source_checks import Reach, probe
from monitor.settings import Settings
from monitor.sources.registry import SourceTarget
from monitor.sources.wandb_config import WandbTarget

VIEWER = "query Viewer { viewer { id entity username } }"


def check(target: SourceTarget, settings: Settings) -> Reach:
    assert isinstance(target, WandbTarget)
    base = target.base_url.rstrip("/")
    key = settings.wandb_api_key.get_secret_value() if settings.wandb_api_key else ""
    if not key:
        return Reach(
            Cause.MISSING_SECRET,
            "WANDB_API_KEY is not set",
            fix_for(Cause.MISSING_SECRET, secret="WANDB_API_KEY"),
        )
    auth = "Basic " + base64.b64encode(f"api:{key}".encode()).decode()
    reach, resp = probe(
        f"{base}/graphql",
        method="POST",
        secret="WANDB_API_KEY",
        timeout=float(target.timeout),
        what=f"W&B at {base}",
        json={"query": VIEWER, "operationName": "Viewer"},
        headers={"Authorization": auth},
    )
    if reach.cause is None and resp is not None:
        reach.facts.append(f"W&B at {base} answers (HTTP {resp.status_code})")
    return reach
