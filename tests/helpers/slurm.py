"""A one-node Slurm cluster of this machine's slurm-wlm daemons, under a temp dir.

munged (a generated key), slurmctld and slurmd run in the foreground as children of the
test, with every file (config, state, spool, logs, munge socket) in the dir; clients
reach this cluster, and no other, through ``SLURM_CONF``. Needs root (slurmd launches
tasks as the submitting user) and Debian's ``slurm-wlm`` (Slurm 22.05) with ``munge``.
"""

import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Dict, Iterator, List, Mapping, Optional

PROGRAMS = ("munged", "slurmctld", "slurmd", "srun", "sinfo", "squeue", "scancel")
START_S = 20  # to a usable srun (1.4 s measured)
STOP_S = 10  # running steps cancelled and gone


def program(name: str) -> Optional[str]:
    """The path of Slurm's or munge's program ``name`` (sbin included)."""
    return shutil.which(name, path=os.environ.get("PATH", "") + ":/usr/sbin:/usr/bin")


def missing() -> Optional[str]:
    """Why this machine cannot run the cluster (None when it can)."""
    absent = [p for p in PROGRAMS if program(p) is None]
    if absent:
        return f"no {', '.join(absent)}: apt-get install -y slurm-wlm munge"
    if os.geteuid() != 0:
        return "slurmd needs root to launch tasks"
    return None


def free_ports(n: int) -> List[int]:
    """``n`` distinct ports free on this machine now."""
    with ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(n)]
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]


def _config(root: Path, first_job_id: int) -> str:
    ctld_port, slurmd_port = free_ports(2)
    return f"""\
ClusterName=veco-test
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser={pwd.getpwuid(os.geteuid()).pw_name}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root}/munge/socket
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
FirstJobId={first_job_id}
MailProg=/bin/true
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
NodeName=localhost NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP
"""


def client_env(base: Mapping[str, str], conf: Path) -> Dict[str, str]:
    """``base`` for the Slurm clients of cluster ``conf``: its ``SLURM_CONF``, and none of
    the variables of a Slurm job the tests may run in."""
    environ = {k: v for k, v in base.items() if not k.startswith("SLURM_")}
    environ["SLURM_CONF"] = str(conf)
    return environ


def _wait(ready, what: str, logs: List[Path], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            tails = "\n".join(
                f"--- {log}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-20:])
                for log in logs
                if log.exists()
            )
            raise RuntimeError(f"{what} not ready after {timeout:.0f} s\n{tails}")
        time.sleep(0.2)


def _query(command: List[str], environ: Dict[str, str]) -> Optional[str]:
    """``command``'s output; None when it fails (no controller yet, or none left)."""
    try:
        proc = subprocess.run(
            [program(command[0]) or command[0], *command[1:]],
            capture_output=True,
            text=True,
            env=environ,
            timeout=5,
        )
    except subprocess.TimeoutExpired:
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def _idle(environ: Dict[str, str]) -> bool:
    return _query(["sinfo", "--noheader", "--format", "%t"], environ) == "idle"


def _queue_empty(environ: Dict[str, str]) -> bool:
    return not _query(["squeue", "--noheader"], environ)


def _stepds(conf: Path) -> List[int]:
    """slurmstepd processes of this cluster (they leave slurmd's session, and keep its
    environment: ``SLURM_CONF``)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if (proc / "comm").read_text().strip() != "slurmstepd":
                continue
            if f"SLURM_CONF={conf}".encode() in (proc / "environ").read_bytes().split(b"\0"):
                found.append(int(proc.name))
        except (OSError, ValueError):
            continue
    return found


def _start(stack: ExitStack, command: List[str], out, environ: Dict[str, str]) -> None:
    """Run daemon ``command`` in the foreground, in its own session, until ``stack`` ends."""
    daemon = subprocess.Popen(
        [program(command[0]) or command[0], *command[1:]],
        stdout=out,
        stderr=subprocess.STDOUT,
        env=environ,
        start_new_session=True,
    )
    stack.callback(_stop, daemon)


def _stop(daemon: subprocess.Popen) -> None:
    """Stop ``daemon`` and whatever else runs in its session (slurmctld's slurmscriptd)."""
    if daemon.poll() is None:
        daemon.terminate()
        try:
            daemon.wait(STOP_S)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
    try:
        os.killpg(daemon.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _cancel_all(environ: Dict[str, str]) -> None:
    _query(["scancel", "--user", pwd.getpwuid(os.geteuid()).pw_name], environ)
    deadline = time.monotonic() + STOP_S
    while not _queue_empty(environ) and time.monotonic() < deadline:
        time.sleep(0.2)


def _kill_stepds(conf: Path) -> None:
    for pid in _stepds(conf):  # a step that outlived its job
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@contextmanager
def cluster(root: Path, first_job_id: int = 1) -> Iterator[Path]:
    """Start munged, slurmctld and slurmd under ``root``; yield their ``slurm.conf`` once
    the node is idle (jobs are numbered from ``first_job_id``). On exit every job is cancelled
    and every daemon stopped, whether the body raised or not."""
    for d in ("munge", "state", "spool", "log"):
        (root / d).mkdir(parents=True, exist_ok=True)
    (root / "munge").chmod(0o700)
    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    conf = root / "slurm.conf"
    conf.write_text(_config(root, first_job_id))
    environ = client_env(os.environ, conf)
    logs = [root / "log" / n for n in ("munged.log", "slurmctld.log", "slurmd.log", "daemons.out")]
    munge = ["munged", "--foreground", "--force", f"--key-file={key}"]
    munge += [f"--socket={root}/munge/socket", f"--pid-file={root}/munge/pid"]
    munge += [f"--log-file={logs[0]}", f"--seed-file={root}/munge/seed"]
    with ExitStack() as stack, open(logs[3], "ab") as out:
        stack.callback(_kill_stepds, conf)  # callbacks run last to first
        _start(stack, munge, out, environ)
        _wait((root / "munge" / "socket").exists, "munged", logs, START_S)
        _start(stack, ["slurmctld", "-D", "-i", "-f", str(conf)], out, environ)
        _start(stack, ["slurmd", "-D", "-f", str(conf), "-N", "localhost"], out, environ)
        stack.callback(_cancel_all, environ)
        _wait(lambda: _idle(environ), "slurm node localhost", logs, START_S)
        yield conf
