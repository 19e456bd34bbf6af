"""A single-node Slurm for the tests: munged, slurmctld and slurmd from Debian's packages, started in a
temporary folder with a config of their own (own ports, state, spool, logs, munge key and socket; no systemd,
nothing under /etc). stop() cancels what is still queued and ends only the daemons started here, by pid."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.support import free_port

DAEMONS = ("munged", "mungekey", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "scontrol", "scancel", "sinfo")
FIX = "install them with `apt-get install slurmctld slurmd munge slurm-client` (.ci/run's apt-get line does)"


def require_binaries() -> dict[str, str]:
    found = {name: shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin") for name in DAEMONS + CLIENTS}
    missing = sorted(name for name, path in found.items() if not path)
    if missing:
        pytest.fail(f"Slurm/munge binaries not found: {', '.join(missing)}; {FIX}", pytrace=False)
    return {k: str(v) for k, v in found.items()}


CONF = """\
ClusterName=specstack-test
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
SlurmUser={user}
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge_socket}
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd.pid
SlurmctldLogFile={dir}/slurmctld.log
SlurmdLogFile={dir}/slurmd.log
# no cgroups in a container: processes tracked by parentage, no task binding, no accounting daemon
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
# SIGTERM, then SIGKILL this much later: more than the harness's INTERRUPT_GRACE for its server
KillWait=30
MinJobAge=600
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
# A job of `urgent` (higher tier) that needs the CPUs a `test` job holds cancels it: state PREEMPTED
PreemptType=preempt/partition_prio
PreemptMode=CANCEL
PartitionName=test Nodes={host} Default=YES MaxTime=INFINITE State=UP PriorityTier=1
PartitionName=urgent Nodes={host} MaxTime=INFINITE State=UP PriorityTier=2
"""


class Cluster:
    def __init__(self, folder: Path):
        self.bin = require_binaries()
        self.dir = Path(folder)
        self.host = socket.gethostname().split(".")[0]
        self.procs: dict[str, subprocess.Popen] = {}
        self.conf = self.dir / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}

    def start(self) -> Cluster:
        d = self.dir
        for sub in ("state", "spool", "munge"):
            (d / sub).mkdir(mode=0o700, exist_ok=True)
        key, sock = d / "munge" / "munge.key", d / "munge" / "munge.sock"
        subprocess.run([self.bin["mungekey"], "--create", f"--keyfile={key}"], check=True, capture_output=True)
        key.chmod(0o600)
        self._spawn(
            "munged",
            [
                self.bin["munged"],
                "-F",
                "--force",
                f"--key-file={key}",
                f"--socket={sock}",
                f"--pid-file={d}/munge/munged.pid",
                f"--log-file={d}/munge/munged.log",
                f"--seed-file={d}/munge/seed",
            ],
        )
        self._wait(lambda: sock.exists(), 10, "munged's socket")
        self.conf.write_text(
            CONF.format(
                host=self.host,
                ctld_port=free_port(),
                d_port=free_port(),
                user=os.environ.get("USER") or "root",
                munge_socket=sock,
                dir=d,
                cpus=os.cpu_count() or 1,
            )
        )
        self._spawn("slurmctld", [self.bin["slurmctld"], "-D", "-f", str(self.conf)])
        self._wait(lambda: self.run("scontrol", "ping").returncode == 0, 30, "slurmctld answering scontrol ping")
        self._spawn("slurmd", [self.bin["slurmd"], "-D", "-f", str(self.conf), "-N", self.host])
        self._wait(lambda: self.run("sinfo", "-h", "-o", "%t").stdout.strip() == "idle", 60, "the node idle")
        return self

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.dir / f"{name}.out", "wb")  # noqa: SIM115 (the child process writes it past this block)
        self.procs[name] = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, env=self.env, start_new_session=True
        )
        log.close()

    def _wait(self, condition, seconds: float, what: str) -> None:
        deadline = time.monotonic() + seconds
        while not condition():
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    raise AssertionError(f"{name} exited ({proc.returncode}) before {what}:\n{self.logs()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"no {what} after {seconds:.0f} s:\n{self.logs()}")
            time.sleep(0.2)

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
            for p in sorted(self.dir.glob("*.out")) + sorted(self.dir.glob("*.log"))
        )

    def run(self, tool: str, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([self.bin[tool], *args], capture_output=True, text=True, env=self.env, timeout=60)

    def queued(self) -> list[str]:
        return self.run("squeue", "-h", "-r", "-o", "%i %T").stdout.split("\n")[:-1]

    def wait_idle(self, seconds: float) -> None:
        """Until no task of any job is pending or running."""
        self._wait(lambda: not self.queued(), seconds, "an empty queue")

    def stop(self) -> None:
        """Cancel every job still queued here (their processes end through Slurm), then end the daemons started
        here, by pid: slurmd, slurmctld, munged; SIGKILL after 20 s."""
        if self.procs.get("slurmctld") and self.procs["slurmctld"].poll() is None:
            self.run("scancel", "--user", os.environ.get("USER") or "root")
            deadline = time.monotonic() + 60
            while self.queued() and time.monotonic() < deadline:
                time.sleep(0.5)
        for name in ("slurmd", "slurmctld", "munged"):
            proc = self.procs.get(name)
            if proc is None or proc.poll() is not None:
                continue
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
