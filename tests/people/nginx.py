"""A real nginx (Debian's package) as the team's sign-in proxy, run unprivileged from the test with its own
prefix, config and logs in a temporary folder, on a loopback port.

nginx signs people in with HTTP basic auth (an htpasswd file of ``{SSHA}`` hashes), maps each person to
their groups, and sets ``X-Forwarded-User`` / ``X-Forwarded-Groups`` on the way to herowatch, replacing
whatever the client sent. It connects to herowatch from its own loopback address (``proxy_bind``), the one
address herowatch believes identity headers from (``HEROWATCH_AUTH_PROXIES``).
"""

from __future__ import annotations

import base64
import hashlib
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import httpx

from tests.dashboard.conftest import free_port

PROXY_ADDRESS = "127.0.0.2"  # nginx's own source address towards herowatch


def nginx_binary() -> str:
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
    assert found, "nginx is not installed: scripts/test and .ci/run install Debian's nginx package"
    return found


def ssha(password: str, salt: bytes = b"herowatch") -> str:
    digest = hashlib.sha1(password.encode() + salt).digest()
    return "{SSHA}" + base64.b64encode(digest + salt).decode()


class Nginx:
    def __init__(self, tmp: Path, upstream: str, people: dict[str, tuple[str, str]]) -> None:
        """``people``: name -> (password, comma-separated groups)."""
        # its own folder, reachable by the unprivileged user (pytest's tmp folders are private to root)
        self.dir = Path(tempfile.mkdtemp(prefix="herowatch-nginx-", dir=tmp if os.geteuid() else None))
        self.dir.chmod(0o755)
        for sub in ("", "logs", "temp"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        (self.dir / "htpasswd").write_text("".join(f"{n}:{ssha(p)}\n" for n, (p, _) in people.items()))
        groups = "".join(f'    "{n}" "{g}";\n' for n, (_, g) in people.items())
        temp = self.dir / "temp"
        (self.dir / "nginx.conf").write_text(
            f"""
worker_processes 1;
pid {self.dir}/nginx.pid;
error_log {self.dir}/logs/error.log warn;
events {{ worker_connections 64; }}
http {{
  access_log {self.dir}/logs/access.log;
  client_body_temp_path {temp}/body;
  proxy_temp_path {temp}/proxy;
  fastcgi_temp_path {temp}/fastcgi;
  uwsgi_temp_path {temp}/uwsgi;
  scgi_temp_path {temp}/scgi;
  map $remote_user $hw_groups {{
    default "";
{groups}  }}
  server {{
    listen 127.0.0.1:{self.port};
    auth_basic "herowatch";
    auth_basic_user_file {self.dir}/htpasswd;
    location / {{
      proxy_pass {upstream};
      proxy_bind {PROXY_ADDRESS};
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Forwarded-User $remote_user;
      proxy_set_header X-Forwarded-Groups $hw_groups;
      proxy_set_header Authorization "";
    }}
  }}
}}
"""
        )
        preexec = None
        if os.geteuid() == 0:  # CI runs as root: nginx runs as nobody all the same
            nobody = pwd.getpwnam("nobody")
            for path in [self.dir, *self.dir.rglob("*")]:
                os.chown(path, nobody.pw_uid, nobody.pw_gid)

            def preexec() -> None:
                os.setgid(nobody.pw_gid)
                os.setuid(nobody.pw_uid)

        self.proc = subprocess.Popen(
            [
                nginx_binary(),
                "-p",
                str(self.dir),
                "-c",
                str(self.dir / "nginx.conf"),
                "-e",
                str(self.dir / "logs" / "error.log"),
                "-g",
                "daemon off;",
            ],
            stdout=subprocess.DEVNULL,
            stderr=open(self.dir / "logs" / "stderr.log", "ab"),  # noqa: SIM115
            preexec_fn=preexec,  # noqa: PLW1509 - dropping root before exec is the point
        )
        deadline = time.monotonic() + 20
        while True:
            assert self.proc.poll() is None, self.errors()
            assert time.monotonic() < deadline, "nginx did not start within 20 s: " + self.errors()
            try:
                httpx.get(self.url + "/", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.05)

    def errors(self) -> str:
        logs = self.dir / "logs"
        return "\n".join(p.read_text(errors="replace") for p in sorted(logs.glob("*.log")))

    def client(self, person: str, password: str) -> httpx.Client:
        return httpx.Client(base_url=self.url, auth=(person, password), timeout=30, follow_redirects=False)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        shutil.rmtree(self.dir, ignore_errors=True)
