"""``herowatch serve`` as a real process on a fresh PostgreSQL database, behind a real nginx that signs
people in (tests/people/nginx.py): the set-up of docs/security.md's "Sign-in through a reverse proxy"."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.conftest import REPO, _fresh_pg_database
from tests.dashboard.conftest import free_port
from tests.people.nginx import PROXY_ADDRESS, Nginx

AUTOMATION = "people-suite-automation-token-0123456789abc"  # fakes: tests never hold real secrets
SECRET_KEY = "people-suite-secret-key-0123456789abcdefghij"
PEOPLE = {  # name -> (password, groups) as the team's directory has them
    "vic": ("vic-pw", "staff"),
    "amy": ("amy-pw", "staff,oncall"),
    "ada": ("ada-pw", "hw-admins"),
    "nora": ("nora-pw", "contractors"),  # no group of hers has a role
}
ROLES = {"vic": "viewer", "amy": "responder", "ada": "admin"}
CONFIG = """
watch:
  - name: hero-a
    poll_interval: 5s
    sim: {run: hero-a, step_time: 10s}
receivers:
  - {name: console, kind: console}
route: {receiver: console}
"""


@dataclass
class Served:
    url: str  # herowatch itself (as anyone on the network reaches it)
    proxy: Nginx
    proc: subprocess.Popen
    log: Path

    def as_person(self, name: str) -> httpx.Client:
        return self.proxy.client(name, PEOPLE[name][0])

    def direct(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=30, follow_redirects=False)

    def automation(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {AUTOMATION}"}


def serve_env(db_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HEROWATCH_", "SLACK_"))}
    env.update(
        {
            "PYTHONPATH": str(REPO),
            "HEROWATCH_DATABASE_URL": db_url,
            "HEROWATCH_API_TOKEN": AUTOMATION,
            "HEROWATCH_SECRET_KEY": SECRET_KEY,
            "HEROWATCH_AUTH_PROXIES": PROXY_ADDRESS,
            "HEROWATCH_TRUSTED_PROXIES": PROXY_ADDRESS,
            "HEROWATCH_ROLE_GROUPS": "admin=hw-admins;responder=oncall;viewer=staff",
            "HEROWATCH_PROTECT_READS": "true",
        }
    )
    return env


def start_serve(
    tmp: Path, env: dict[str, str], port: int | None = None
) -> tuple[subprocess.Popen, str, Path]:
    """``herowatch serve`` on a migrated database, answering /healthz: (process, url, log)."""
    cfg = tmp / "herowatch.yaml"
    cfg.write_text(CONFIG)
    subprocess.run([sys.executable, "-m", "monitor.cli", "db", "upgrade"], env=env, cwd=REPO, check=True)
    port = port or free_port()
    log = tmp / "herowatch.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "monitor.cli", "serve", "--config", str(cfg), "--listen", f"127.0.0.1:{port}"],
        env=env,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=log.open("ab"),
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, "herowatch serve did not answer within 60 s"
        try:
            if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    return proc, url, log


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


@pytest.fixture(scope="module")
def served(tmp_path_factory, pg_server_url) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("people")
    db_url, drop = _fresh_pg_database(pg_server_url)
    proc, url, log = start_serve(tmp, serve_env(db_url))
    proxy = Nginx(tmp, url, PEOPLE)
    try:
        yield Served(url, proxy, proc, log)
    finally:
        proxy.stop()
        stop(proc)
        drop()
