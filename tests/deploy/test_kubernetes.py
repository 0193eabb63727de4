"""deploy/kubernetes: every core manifest against the Kubernetes schemas (kubernetes-validate, strict),
what the manifests promise (replicas, probes, lock-down, config mount, migration Job, selectors), secrets
by reference only, and the shipped watch configs passing `herowatch check-config`."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from tests.deploy.support import *  # noqa: F403

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
    assert "credentials.example.yaml" not in kust["resources"]
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
    example = manifests()["credentials.example.yaml"][0]
    keys = example["stringData"].keys()
    for c in containers():
        for e in c.get("env", []):
            if SECRET_NAME.search(e["name"]):
                assert "value" not in e, f"{e['name']} must come from a secretKeyRef, not a literal"
                ref = e["valueFrom"]["secretKeyRef"]
                assert ref["name"] == example["metadata"]["name"] and ref["key"] in keys, e["name"]


def test_the_example_secret_holds_placeholders_only():
    (doc,) = manifests()["credentials.example.yaml"]
    assert doc["kind"] == "Secret" and "data" not in doc, "stringData only, readable placeholders"
    for key, value in doc["stringData"].items():
        assert PLACEHOLDER in value, f"{key}: use {PLACEHOLDER}, never a real value"


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
