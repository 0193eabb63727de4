"""Row 12: only lower bounds and no lock, so ``fastapi>=0.115`` admitted Starlette versions with a
published Range-header DoS in StaticFiles (which serves the dashboard's scripts), and ``jinja2>=3.1``
versions before 3.1.6. Now the floors are past the advisories and every install (CI, scripts/test, the
Makefile, the image) goes through a lock file that pins each version and each file's sha256."""

from __future__ import annotations

import re
import time
from importlib.metadata import version

from packaging.requirements import Requirement
from packaging.version import Version

from tests.conftest import REPO
from tests.security.wire import raw_request

# package -> the first version without the advisory (docs/security.md lists them)
FIXED = {
    "starlette": "1.0.1",  # CVE-2025-62727 (Range header DoS, 0.49.1), CVE-2026-48710 (Host path, 1.0.1)
    "jinja2": "3.1.6",  # CVE-2025-27516 (sandbox escape through |attr)
    "h11": "0.16.0",  # CVE-2025-43859 (request smuggling through chunked trailers)
}
LOCKS = ("requirements/runtime.lock", "requirements/dev.lock")


def pins(path: str) -> dict[str, tuple[str, list[str]]]:
    """name -> (version, hashes) of a lock file; fails on any requirement that is not pinned and hashed."""
    text = (REPO / path).read_text()
    out = {}
    for block in re.split(r"\n(?=[A-Za-z0-9])", text):
        line = block.split("\\", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        req = Requirement(line.split(";")[0].strip())
        spec = str(req.specifier)
        assert spec.startswith("=="), f"{path}: {req.name} is not pinned ({spec})"
        hashes = re.findall(r"--hash=sha256:([0-9a-f]{64})", block)
        assert hashes, f"{path}: {req.name} has no hash"
        out[req.name.lower()] = (spec[2:], hashes)
    return out


def test_the_floors_in_pyproject_are_past_the_advisories():
    import tomllib

    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    floors = {Requirement(d).name.lower(): Requirement(d).specifier for d in deps}
    for name, fixed in FIXED.items():
        assert name in floors, f"{name} needs an explicit floor"
        lowest = min(Version(s.version) for s in floors[name] if s.operator == ">=")
        assert lowest >= Version(fixed), f"{name}>={lowest} admits versions before {fixed}"


def test_every_lock_pins_and_hashes_every_package_past_the_advisories():
    runtime, dev = pins(LOCKS[0]), pins(LOCKS[1])
    for name, fixed in FIXED.items():
        for lock in (runtime, dev):
            assert Version(lock[name][0]) >= Version(fixed), (name, lock[name][0])
    for name, (ver, _) in runtime.items():
        assert dev[name][0] == ver, f"{name}: runtime.lock has {ver}, dev.lock {dev[name][0]}"
    for needed in ("fastapi", "uvicorn", "google-re2", "psycopg-binary", "slack-sdk"):
        assert needed in runtime


def test_ci_scripts_and_the_image_install_from_the_locks():
    assert "--require-hashes -r requirements/dev.lock" in (REPO / "scripts/test").read_text()
    assert "--require-hashes -r requirements/runtime.lock" in (REPO / "Makefile").read_text()
    docker = (REPO / "deploy/Dockerfile").read_text()
    assert "--require-hashes -r requirements/runtime.lock" in docker and "--no-deps ." in docker
    assert "requirements/runtime.lock" in (REPO / ".dockerignore").read_text()


def test_the_installed_versions_are_the_fixed_ones():
    for name, fixed in FIXED.items():
        assert Version(version(name)) >= Version(fixed), name


def test_a_range_header_with_thousands_of_ranges_is_answered_quickly(server):
    """The Range DoS itself, against the dashboard's static files: quadratic merging in old Starlette."""
    ranges = ",".join(f"{i}-{i}" for i in range(0, 3000, 2))
    t0 = time.monotonic()
    status, _ = raw_request(
        server.port,
        f"GET /static/htmx.min.js HTTP/1.1\r\nHost: 127.0.0.1\r\nRange: bytes={ranges}\r\n"
        "Connection: close\r\n\r\n".encode(),
    )
    seconds = time.monotonic() - t0
    print(f"\n1500 ranges on a static file: {status} in {seconds * 1e3:.0f} ms")
    assert status is not None and status < 500 and seconds < 2.0
