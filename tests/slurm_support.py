"""A real Slurm on this machine for the tests: Debian's ``slurm-wlm`` (22.05) with ``munged``, ``slurmctld``
and ``slurmd`` started as root in a private folder (its own munge key and socket, its own ports), with
``ProctrackType=proctrack/linuxproc``, ``TaskPlugin=task/none`` and no accounting, as issue #43 asks.
``.ci/run`` installs the package; a machine without it fails the tests that need it (no skip)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


CONF = """ClusterName=hw
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort={ctld}
SlurmdPort={slurmd}
AuthType=auth/munge
AuthInfo=socket={root}/munge/sock
CredType=cred/munge
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=600
KillWait=2
NodeName={host} NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
"""


class Slurm:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = {**os.environ, "SLURM_CONF": str(root / "slurm.conf")}
        self.pids: list[int] = []

    def run(self, *cmd: str) -> str:
        done = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, f"{cmd}: {done.stderr}"
        return done.stdout

    def sbatch(self, *args: str) -> str:
        return self.run("sbatch", "--parsable", *args).strip().split(";")[0]

    def squeue_ready(self) -> bool:
        done = subprocess.run(["sinfo", "-h", "-o", "%T"], env=self.env, capture_output=True, text=True)
        return done.returncode == 0 and "idle" in done.stdout


@contextmanager
def slurm_cluster(tmp: Path) -> Iterator[Slurm]:
    root = tmp / "slurm"
    for sub in ("state", "spool", "munge"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    host = socket.gethostname()
    (root / "slurm.conf").write_text(
        CONF.format(host=host, root=root, ctld=_free_port(), slurmd=_free_port())
    )
    cluster = Slurm(root)
    m = root / "munge"
    subprocess.run(
        ["munged", f"--key-file={key}", f"--socket={m}/sock", f"--pid-file={m}/pid", f"--log-file={m}/log",
         f"--seed-file={m}/seed", "--force"],
        check=True, timeout=30,
    )  # fmt: skip
    try:
        subprocess.run(["slurmctld", "-i"], env=cluster.env, check=True, timeout=30)
        subprocess.run(["slurmd"], env=cluster.env, check=True, timeout=30)
        deadline = time.monotonic() + 60
        while not cluster.squeue_ready():
            assert time.monotonic() < deadline, (root / "slurmctld.log").read_text()[-2000:]
            time.sleep(0.5)
        yield cluster
    finally:
        subprocess.run(["scancel", "--full", "--user=root"], env=cluster.env, capture_output=True, timeout=30)
        deadline = time.monotonic() + 30  # slurmd ends the jobs' processes: stop it only after
        while time.monotonic() < deadline:
            left = subprocess.run(
                ["squeue", "-h", "-t", "running,completing,configuring"],
                env=cluster.env, capture_output=True, text=True, timeout=30,
            )  # fmt: skip
            if left.returncode != 0 or not left.stdout.strip():
                break
            time.sleep(0.5)
        for pidfile in (root / "slurmd.pid", root / "slurmctld.pid", m / "pid"):
            try:
                os.kill(int(pidfile.read_text().strip()), signal.SIGTERM)
            except (OSError, ValueError):
                pass
