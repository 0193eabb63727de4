"""Doctor's look at Prometheus: ``GET /api/v1/status/buildinfo`` answers (with
HEROWATCH_PROMETHEUS_TOKEN when set), and which version it is."""

from __future__ import annotations

from monitor.doctor.source_checks import Reach, probe
from monitor.settings import Settings
from monitor.sources.prometheus_config import TOKEN_ENV, PrometheusTarget
from monitor.sources.registry import SourceTarget


def check(target: SourceTarget, settings: Settings) -> Reach:
    assert isinstance(target, PrometheusTarget)
    base = str(target.url).rstrip("/")
    token = settings.prometheus_token.get_secret_value() if settings.prometheus_token else ""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    reach, resp = probe(
        f"{base}/api/v1/status/buildinfo",
        secret=TOKEN_ENV,
        timeout=float(target.timeout),
        what=f"Prometheus at {base}",
        headers=headers,
    )
    if reach.cause is None and resp is not None:
        version = ""
        if resp.status_code == 200:
            try:
                version = str(resp.json().get("data", {}).get("version") or "")
            except ValueError:
                version = ""
        said = f"version {version}" if version else f"HTTP {resp.status_code} to buildinfo"
        reach.facts.append(f"Prometheus at {base} answers ({said})")
    return reach
