"""Review 2, defect 2: config and rule files had no size limit. ``check-config`` on a 52 MB YAML (520k list
items) took 134 s of CPU and 1.2 GB peak RSS; a 2 MB flow list of a million scalars 60 s and 1.5 GB, both
past the Deployment's 1 GiB. Now every YAML herowatch reads (the config, its rule files, rule tests) is
refused past 2 MB (before it is read) or past 50,000 values (as soon as the parse reaches them) with
``FILE: too large (...)`` and exit 2. Run through the real CLI; CPU time and peak RSS come from the
child's own resource usage (``wait4``), next to a tiny valid config's as the baseline."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from monitor.config.yamlsize import MAX_YAML_MB, MAX_YAML_VALUES
from tests.conftest import REPO

SMALL = "watch:\n  - name: a\n    sim: {seed: 1}\n"
MAX_EXTRA_CPU = 4.0  # seconds of CPU a refusal may cost beyond checking a one-watch config
MAX_EXTRA_RSS_MB = 120  # and memory; the Deployment's limit is 1 GiB
TIMEOUT = 120  # before the fix the first case ran for 134 s of CPU


@dataclass
class Run:
    code: int
    out: str
    cpu: float  # user + system seconds of the child
    rss_mb: float  # its peak resident memory

    def __str__(self) -> str:
        return f"exit {self.code}, {self.cpu:.2f} s CPU, peak RSS {self.rss_mb:.0f} MB"


# A small, freshly started interpreter forks and runs the command and reports its resource usage from
# wait4: forked from pytest itself, the child's peak RSS would count pytest's pages from before exec.
LAUNCHER = """
import json, os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    json.dump([os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime, usage.ru_maxrss], f)
"""


def herowatch(*args: str) -> Run:
    """The real CLI in a child process; its own CPU time and peak RSS from its resource usage."""
    with tempfile.NamedTemporaryFile(suffix=".json") as facts:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-I",
                "-S",
                "-c",
                LAUNCHER,
                facts.name,
                sys.executable,
                "-m",
                "monitor.cli",
                *args,
            ],
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env={**os.environ, "COLUMNS": "200"},
            start_new_session=True,  # a timeout kills the command too
        )
        try:
            out, _ = proc.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise AssertionError(f"herowatch {' '.join(args)} still ran after {TIMEOUT} s") from None
        code, cpu, rss_kb = json.loads(Path(facts.name).read_text())
    return Run(code, out.decode(errors="replace"), cpu, rss_kb / 1024)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory) -> Run:
    cfg = tmp_path_factory.mktemp("base") / "small.yaml"
    cfg.write_text(SMALL)
    run = herowatch("check-config", str(cfg))
    assert run.code == 0, run.out
    print(f"\nbaseline, check-config on a one-watch config: {run}")
    return run


def big_list(path: Path) -> Path:
    """52 MB: 520,000 watch entries of a block list."""
    entry = (
        "  - name: watch-{:06d}\n    sim: {{seed: 1, step_time: 10s}}\n"
        "    labels: {{team: pretrain-hero, tier: 1}}\n"
    )
    with path.open("w") as f:
        f.write("watch:\n")
        f.writelines(entry.format(i) for i in range(520_000))
    return path


def flow_list(path: Path, key: str = "watch") -> Path:
    """2 MB: a flow list of a million scalars (under the size limit: the value limit stops it)."""
    path.write_text(f"{key}: [" + ",".join(["0"] * 1_000_000) + "]\n")
    return path


def refused(run: Run, baseline: Run, file: Path, what: str) -> None:
    print(
        f"\n{what}: {run} (baseline {baseline.cpu:.2f} s, {baseline.rss_mb:.0f} MB; "
        f"extra {run.cpu - baseline.cpu:+.2f} s of {MAX_EXTRA_CPU} s, "
        f"{run.rss_mb - baseline.rss_mb:+.0f} MB of {MAX_EXTRA_RSS_MB} MB)\n{run.out.strip()}"
    )
    assert run.code == 2, run.out
    assert f"{file}" in run.out and "too large (" in run.out, run.out
    assert run.cpu < baseline.cpu + MAX_EXTRA_CPU
    assert run.rss_mb < baseline.rss_mb + MAX_EXTRA_RSS_MB


def test_a_52_mb_config_is_refused_from_its_size(tmp_path, baseline):
    cfg = big_list(tmp_path / "big.yaml")
    size = cfg.stat().st_size / (1 << 20)
    assert size > 50
    run = herowatch("check-config", str(cfg))
    refused(run, baseline, cfg, f"check-config on {size:.1f} MB")
    assert f"{cfg}: too large ({size:.1f} MB, limit {MAX_YAML_MB} MB)" in run.out


def test_a_2_mb_flow_list_of_a_million_scalars_is_refused_at_its_value_limit(tmp_path, baseline):
    cfg = flow_list(tmp_path / "flow.yaml")
    assert cfg.stat().st_size < MAX_YAML_MB << 20
    run = herowatch("check-config", str(cfg))
    refused(run, baseline, cfg, "check-config on a million scalars")
    assert f"{cfg}:1: too large (more than {MAX_YAML_VALUES:,} values" in run.out


@pytest.mark.parametrize("make", [big_list, flow_list], ids=["52 MB", "a million scalars"])
def test_a_huge_rule_file_is_refused_with_its_own_name(tmp_path, baseline, make):
    rules = make(tmp_path / "rules.yaml") if make is big_list else flow_list(tmp_path / "rules.yaml", "rules")
    cfg = tmp_path / "hw.yaml"
    cfg.write_text(SMALL + "rules:\n  files: [rules.yaml]\n")
    run = herowatch("check-config", str(cfg))
    refused(run, baseline, rules, "a config naming a huge rule file")


@pytest.mark.parametrize("make", [big_list, flow_list], ids=["52 MB", "a million scalars"])
def test_a_huge_rule_test_file_is_refused(tmp_path, baseline, make):
    tests = make(tmp_path / "tests.yaml") if make is big_list else flow_list(tmp_path / "tests.yaml", "tests")
    run = herowatch("rules", "test", str(tests))
    refused(run, baseline, tests, "herowatch rules test on a huge file")


def test_a_large_config_within_the_limits_still_loads(tmp_path, baseline):
    """300 watches, each with labels, overrides and a source (about 6,000 values, 40 kB): fine."""
    cfg = tmp_path / "many.yaml"
    entry = (
        "  - name: run-{i:03d}\n    sim: {{seed: {i}, step_time: 10s}}\n"
        "    labels: {{team: t{i}, tier: hero}}\n"
        "    rules: {{overrides: {{progress_stalled: {{floor: 20m}}}}}}\n"
    )
    cfg.write_text("watch:\n" + "".join(entry.format(i=i) for i in range(300)))
    run = herowatch("check-config", str(cfg))
    print(f"\ncheck-config on 300 watches ({cfg.stat().st_size / 1024:.0f} kB): {run}")
    assert run.code == 0, run.out
