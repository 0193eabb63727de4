"""Paths, tools and parsed manifests shared by the deploy/ validation tests."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from pydantic import AliasChoices

from monitor.settings import Settings

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
K8S = DEPLOY / "kubernetes"
COMPOSE = DEPLOY / "compose"
DOCKERFILE = DEPLOY / "Dockerfile"
KUBERNETES_VERSION = "1.30.0"  # the oldest Kubernetes we support; its schemas ship in kubernetes-validate
VENV_BIN = Path(sys.executable).parent
CRD_KINDS = {"ServiceMonitor", "PrometheusRule"}
NOT_APPLIED = {"kustomization.yaml", "credentials.example.yaml"}
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|API_KEY|DATABASE_URL", re.IGNORECASE)
PLACEHOLDER = "REPLACE_ME"


# ---- helpers -----------------------------------------------------------------------------------------


def tool(name: str, hint: str) -> str:
    """A command-line tool from the virtualenv or PATH; fail (never skip) when it is missing."""
    found = shutil.which(name, path=f"{VENV_BIN}:{os.environ.get('PATH', '')}")
    assert found, f"{name} is not installed: {hint}"
    return found


def run(cmd: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, **kw)


@functools.cache
def manifests() -> dict[str, list[dict]]:
    """File name -> the YAML documents in it, for each file in deploy/kubernetes (read once: don't mutate)."""
    out = {}
    for path in sorted(K8S.glob("*.yaml")):
        out[path.name] = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    return out


def resource(kind: str, name: str | None = None) -> dict:
    found = [
        d
        for f, docs in manifests().items()
        if f not in NOT_APPLIED
        for d in docs
        if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)
    ]
    assert len(found) == 1, f"expected exactly one {kind} {name or ''} in deploy/kubernetes, got {len(found)}"
    return found[0]


def pod_specs() -> dict[str, dict]:
    return {
        "Deployment": resource("Deployment")["spec"]["template"]["spec"],
        "Job": resource("Job")["spec"]["template"]["spec"],
    }


def containers() -> list[dict]:
    return [c for spec in pod_specs().values() for c in spec["containers"]]


def herowatch_env_names() -> set[str]:
    """Every environment variable monitor.settings.Settings reads (prefixed field names and aliases)."""
    prefix = Settings.model_config.get("env_prefix", "")
    names = set()
    for field, info in Settings.model_fields.items():
        alias = info.validation_alias
        if isinstance(alias, AliasChoices):
            names |= {c for c in alias.choices if isinstance(c, str)}
        elif isinstance(alias, str):
            names.add(alias)
        else:
            names.add(f"{prefix}{field}")
    return {n.upper() for n in names}


@functools.cache
def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) per Dockerfile instruction, continuation lines joined, comments dropped."""
    out, pending = [], ""
    for line in DOCKERFILE.read_text().splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        full = (pending + line).strip()
        pending = ""
        word, _, rest = full.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def stages() -> list[list[tuple[str, str]]]:
    """The Dockerfile's build stages, each a list of instructions starting with its FROM."""
    out: list[list[tuple[str, str]]] = []
    for ins in dockerfile_instructions():
        if ins[0] == "FROM":
            out.append([])
        if out:
            out[-1].append(ins)
    return out


def exec_form(args: str) -> list[str]:
    value = json.loads(args)
    assert isinstance(value, list), f"use the exec (JSON) form, not a shell string: {args}"
    return value


def image_config_path() -> str:
    final = stages()[-1]
    cmd = [exec_form(a) for i, a in final if i == "CMD"][-1]
    return cmd[cmd.index("--config") + 1]
