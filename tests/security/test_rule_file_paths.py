"""`rules: {files: [...]}` cannot make ``herowatch check-config`` print another file (issue 37:
``../../../../etc/shadow`` had its lines printed). Rule files stay in the config's folder unless
``rules.files_outside: true``; a file that is not a rule file is refused without a word of its content."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO

SECRET = "root:$y$j9T$s3cr3tHash:19000:0:99999:7:::"
RULE = "rules:\n  - {name: my_loss_high, kind: threshold, metric: train/loss, above: 10}\n"


def check_config(cfg) -> subprocess.CompletedProcess:  # noqa: ANN001
    return subprocess.run(
        [sys.executable, "-m", "monitor.cli", "check-config", str(cfg)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


def config(folder, files, outside: bool = False):  # noqa: ANN001, ANN201
    folder.mkdir(parents=True, exist_ok=True)
    cfg = folder / "herowatch.yaml"
    cfg.write_text(
        "watch:\n  - {name: s, sim: {runs: 1}}\n"
        f"rules: {{files: {files}, files_outside: {str(outside).lower()}}}\n"
        "receivers: [{name: c, kind: console}]\nroute: {receiver: c}\n"
    )
    return cfg


def test_a_rule_file_outside_the_config_folder_is_refused_and_never_printed(tmp_path):
    (tmp_path / "shadow").write_text(f"{SECRET}\nplain-secret-line\n")
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "link.yaml").symlink_to(tmp_path / "shadow")
    for files in (["../shadow"], [str(tmp_path / "shadow")], ["link.yaml"]):
        got = check_config(config(tmp_path / "conf", files))
        out = got.stdout + got.stderr
        assert got.returncode == 2, out
        assert "outside the config's folder" in out and "rules.files_outside" in out, out
        assert "s3cr3t" not in out and "plain-secret-line" not in out, out


def test_a_file_that_is_not_a_rule_file_is_refused_without_its_content(tmp_path):
    (tmp_path / "env").write_text("TOKEN=supersecret123\nOTHER=abc\n")
    (tmp_path / "shadow").write_text(f"{SECRET}\n")
    (tmp_path / "map").write_text("password: hunter2\n")
    for name in ("env", "shadow", "map"):
        got = check_config(config(tmp_path / "conf", [f"../{name}"], outside=True))
        out = got.stdout + got.stderr
        assert got.returncode == 2 and "not a rule file" in out, out
        for secret in ("supersecret", "s3cr3t", "hunter2", "password"):
            assert secret not in out, out


def test_a_rule_file_in_the_config_folder_is_read(tmp_path):
    (tmp_path / "conf" / "rules").mkdir(parents=True)
    (tmp_path / "conf" / "rules" / "mine.yaml").write_text(RULE)
    got = check_config(config(tmp_path / "conf", ["rules/mine.yaml"]))
    assert got.returncode == 0, got.stdout + got.stderr
