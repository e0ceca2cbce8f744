"""A real single-node Slurm cluster on loopback for tests: Debian's ``munged``, ``slurmctld`` and
``slurmd`` started in the foreground from a private folder (its own munge key and socket, state,
spool, logs and free ports), with a node of ``cpus`` CPUs whatever the machine has
(``SlurmdParameters=config_overrides``). Used as a context manager; the daemons are stopped (by their
process ids) on exit, also when starting them failed half-way. Client commands need ``env``
(``SLURM_CONF``). The Debian packages are :data:`pointfail_runner.prereqs.SLURM_PACKAGES`."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

def free_port() -> int:
    """A free TCP port on loopback (bind to port 0)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SlurmCluster:
    """``SlurmCluster(root, cpus=4, mem_mb=16000)``: ``root`` is an empty folder; ``partition`` is
    the one partition (default). Raises ``RuntimeError`` with the daemons' logs when the node does not
    come up."""

    def __init__(self, root: Path, *, cpus: int = 4, mem_mb: int = 16000, kill_wait: int = 30):
        self.root = Path(root)
        self.cpus, self.mem_mb, self.kill_wait = cpus, mem_mb, kill_wait
        self.node = socket.gethostname().split(".")[0]
        self.partition = "pf"
        self.procs: list[subprocess.Popen] = []
        self.conf = self.root / "slurm.conf"
        self.env = dict(os.environ, SLURM_CONF=str(self.conf))

    def _write(self) -> None:
        r = self.root
        for d in ("state", "spool", "munge"):
            (r / d).mkdir(parents=True, exist_ok=True)
        os.chmod(r, 0o755)
        os.chmod(r / "munge", 0o700)
        key = r / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        self.munge_socket = r / "munge" / "munge.socket"
        self.conf.write_text("\n".join([
            "ClusterName=pointfail-test",
            f"SlurmctldHost={self.node}(127.0.0.1)",
            f"SlurmctldPort={free_port()}",
            f"SlurmdPort={free_port()}",
            "AuthType=auth/munge", "CredType=cred/munge", f"AuthInfo=socket={self.munge_socket}",
            "SlurmUser=root", "SlurmdUser=root",
            f"StateSaveLocation={r / 'state'}", f"SlurmdSpoolDir={r / 'spool'}",
            f"SlurmctldPidFile={r / 'slurmctld.pid'}", f"SlurmdPidFile={r / 'slurmd.pid'}",
            f"SlurmctldLogFile={r / 'slurmctld.log'}", f"SlurmdLogFile={r / 'slurmd.log'}",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "MpiDefault=none",
            "SchedulerType=sched/backfill", "SelectType=select/cons_tres", "SelectTypeParameters=CR_CPU",
            "ReturnToService=2", "JobRequeue=1", f"KillWait={self.kill_wait}", "MinJobAge=600",
            "SchedulerParameters=bf_interval=1", "MessageTimeout=30",
            "JobCompType=jobcomp/none", "AccountingStorageType=accounting_storage/none",
            "SlurmdParameters=config_overrides",
            f"NodeName={self.node} NodeAddr=127.0.0.1 CPUs={self.cpus} RealMemory={self.mem_mb} State=UNKNOWN",
            f"PartitionName={self.partition} Nodes={self.node} Default=YES MaxTime=INFINITE State=UP",
            ""]))

    def __enter__(self) -> "SlurmCluster":
        try:
            self._up()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _up(self) -> None:
        self._write()
        r = self.root
        self._start(["munged", "--foreground", "--force", f"--socket={self.munge_socket}",
                     f"--key-file={r / 'munge' / 'munge.key'}", f"--pid-file={r / 'munge' / 'munged.pid'}",
                     f"--log-file={r / 'munge' / 'munged.log'}", f"--seed-file={r / 'munge' / 'munged.seed'}"],
                    r / "munged.out")
        self._wait(lambda: self.munge_socket.exists(), "munged socket")
        self._start(["slurmctld", "-D", "-i", "-f", str(self.conf)], r / "slurmctld.out")
        self._start(["slurmd", "-D", "-f", str(self.conf), "-N", self.node], r / "slurmd.out")
        self._wait(self._node_up, "the node to be idle")

    def _start(self, argv: list[str], out: Path) -> None:
        f = open(out, "wb")
        self.procs.append(subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, env=self.env))
        f.close()

    def _node_up(self) -> bool:
        r = self.run("sinfo", "-h", "-N", "-o", "%N %t %c", check=False)
        return r.returncode == 0 and any(line.split()[1].startswith(("idle", "mix", "alloc"))
                                         for line in r.stdout.splitlines() if len(line.split()) == 3)

    def _wait(self, ok, what: str, timeout: float = 90.0) -> None:
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if any(p.poll() is not None for p in self.procs):
                break
            if ok():
                return
            time.sleep(0.5)
        raise RuntimeError(f"slurm test cluster: no {what} after {timeout:.0f} s\n" + self.logs())

    def logs(self) -> str:
        """The last lines of every daemon log (for failure messages)."""
        out = []
        for name in ("munged.out", "munge/munged.log", "slurmctld.out", "slurmctld.log", "slurmd.out", "slurmd.log"):
            p = self.root / name
            if p.exists():
                out.append(f"--- {name}\n" + "\n".join(p.read_text(errors="replace").splitlines()[-25:]))
        return "\n".join(out)

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
        """A Slurm client command against this cluster."""
        return subprocess.run(list(argv), capture_output=True, text=True, env=self.env, check=check, timeout=60)

    def __exit__(self, *exc) -> None:
        """Cancel every job, give their steps ``KillWait`` to end (the batch scripts forward SIGTERM to
        their containers, which are removed), then stop the daemons by process id (SIGTERM, then
        SIGKILL after 30 s)."""
        if any(p.poll() is None for p in self.procs) and shutil.which("scancel"):
            try:
                self.run("scancel", "--full", "-u", "root", check=False)
                t0 = time.monotonic()
                while time.monotonic() - t0 < self.kill_wait + 30:
                    q = self.run("squeue", "-h", "-o", "%i", check=False)
                    if q.returncode != 0 or not q.stdout.strip():
                        break
                    time.sleep(1.0)
            except (OSError, subprocess.SubprocessError):
                pass
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
