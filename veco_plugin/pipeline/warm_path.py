"""Warm starts for the Python commands that a shell script runs.

A stage that is a shell script (``evaluate-wmt14.sh``, ``prepare-pretraining-data.sh``)
starts its ``fairseq-*``, ``veco-*`` and ``python -m ...`` / ``python SCRIPT.py``
commands itself, each paying the 4-7 s of imports that :mod:`.warm` saves. :class:`WarmPath`
puts a folder of *shims* first on the script's ``PATH`` (and in ``PYTHON`` when that names
this interpreter): a shim is a small stdlib-only Python program (``python -IS``: no
site, ~20 ms) named after the command. It hands its argv, environment, working directory
and its own stdin/stdout/stderr to a *broker* thread of the caller, which forks the
command from a zygote (:meth:`.warm.WarmStarts.fork`); the shim then passes on the
signals it gets (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1/2) to the command's process
group and ends with its exit status (a command ended by a signal ends the shim by the
same signal). A shim that dies (``kill -9``) takes its command with it: the broker
kills the command's group when the shim's connection closes. A command a zygote cannot
run (``python -c``, interpreter flags) or a broker that is gone: the shim ``exec``\\ s the
real command, cold.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from typing import Dict, List, Mapping, Set

from .warm import _HEADER, BROKER_ENV, WarmStarts, _recv_request

# Program of every shim: {python}, {address}, {shims}, {mark} filled in when it is written.
MARK = "veco_plugin warm shim"
_SHIM = r"""#!{python} -IS
# {mark}
import json, os, signal, socket, sys
ADDRESS, SHIMS, PYTHON = {address!r}, {shims!r}, {python!r}
name = os.path.basename(sys.argv[0])
def real(path):  # an executable that is not a shim (nested pipelines add their folders)
    try:
        with open(path, "rb") as f:
            return os.access(path, os.X_OK) and {mark!r}.encode() not in f.read(200)
    except OSError:
        return False
if name in ("python", "python3"):
    argv = [PYTHON] + sys.argv[1:]
else:
    path = os.environ.get("PATH", "").split(os.pathsep)
    found = [os.path.join(d, name) for d in path if d and d != SHIMS]
    found = [f for f in found if os.path.isfile(f) and real(f)]
    if not found:
        sys.exit(f"{{name}}: command not found")
    argv = [found[0]] + sys.argv[1:]
def cold():
    os.execv(argv[0], argv)
def line(conn, buf=[b""]):
    while b"\n" not in buf[0]:
        chunk = conn.recv(64)
        if not chunk:
            raise OSError("the broker ended")
        buf[0] += chunk
    out, buf[0] = buf[0].split(b"\n", 1)
    return out
try:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(ADDRESS)
    payload = json.dumps({{"argv": argv, "env": dict(os.environ), "cwd": os.getcwd()}}).encode()
    socket.send_fds(conn, [len(payload).to_bytes({header}, "big")], [0, 1, 2])
    conn.sendall(payload)
    first = line(conn)
except OSError:
    cold()
if first == b"cold":
    conn.close()
    cold()
pid = int(first)
def forward(signum, frame):
    try:
        os.killpg(pid, signum)
    except OSError:
        pass
for sig in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2"):
    signal.signal(getattr(signal, sig), forward)
try:
    status = int(line(conn))
except (OSError, ValueError):
    status = -signal.SIGKILL
if status < 0:
    signal.signal(-status, signal.SIG_DFL)
    os.kill(os.getpid(), -status)
sys.exit(status)
"""


class WarmPath:
    """Shims for this interpreter's console scripts and ``python``/``python3``, and the
    broker that starts what they are asked to run from ``warm``'s zygotes."""

    def __init__(self, warm: WarmStarts) -> None:
        self.warm = warm
        self.dir = tempfile.mkdtemp(prefix="veco-warm-path-")
        self.address = f"\0veco-warm-path-{os.getpid()}-{os.urandom(6).hex()}"
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(self.address)
        self._listener.listen(64)
        self._running: Set[int] = set()  # process groups of the commands it started
        self._lock = threading.Lock()
        program = _SHIM.format(
            python=sys.executable,
            address=self.address,
            shims=self.dir,
            header=_HEADER,
            mark=MARK,
        )
        for name in ["python", "python3", *_console_scripts()]:
            path = os.path.join(self.dir, name)
            with open(path, "w", encoding="utf-8") as f:
                f.write(program)
            os.chmod(path, 0o755)
        threading.Thread(target=self._accept, name="warm-path", daemon=True).start()

    def env(self, env: Mapping[str, str]) -> Dict[str, str]:
        """``env`` with the shims first on ``PATH`` (and as ``PYTHON`` where that is
        this interpreter); this interpreter's virtual environment as the active one
        (``scripts/venv.sh`` would put its ``bin`` before the shims); the broker's address
        for the pipelines it runs (:data:`.warm.BROKER_ENV`; kept if set: the outermost)."""
        out = dict(env)
        out["PATH"] = os.pathsep.join([self.dir, env.get("PATH", os.defpath)])
        out.setdefault(BROKER_ENV, self.address[1:])  # the outermost: pipelines fork there
        if sys.prefix != sys.base_prefix:
            out.setdefault("VIRTUAL_ENV", sys.prefix)
        if out.get("PYTHON") == sys.executable:
            out["PYTHON"] = os.path.join(self.dir, "python")
        return out

    def close(self) -> None:
        """Stop taking commands (shims start cold from now on), kill what still runs
        (the shims' callers have ended) and remove the shims."""
        try:  # wakes the accept that waits (a close alone lets it take one more shim)
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listener.close()
        with self._lock:
            for pid in self._running:
                _kill(pid)
        shutil.rmtree(self.dir, ignore_errors=True)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:  # closed
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        """One shim's command: fork it with the shim's fds, report its pid, then its
        status; kill its group if the shim goes first."""
        with conn:
            try:
                request, fds = _recv_request(conn)
            except (OSError, ValueError):
                return
            try:
                mine = request["env"].get(BROKER_ENV) == self.address[1:]
                proc = self.warm.fork(
                    request["argv"], request["env"], fds, request["cwd"], delegate=not mine
                )
            finally:
                for fd in fds:
                    os.close(fd)
            try:
                if proc is None:
                    conn.sendall(b"cold\n")
                    return
                with self._lock:
                    self._running.add(proc.pid)
                conn.sendall(b"%d\n" % proc.pid)
                while True:
                    try:
                        status = proc.wait(1.0)
                        break
                    except subprocess.TimeoutExpired:
                        if _closed(conn):
                            _kill(proc.pid)
                conn.sendall(b"%d\n" % status)
            except OSError:
                if proc is not None and proc.returncode is None:
                    _kill(proc.pid)
            finally:
                with self._lock:
                    self._running.discard(proc.pid if proc is not None else -1)


def _kill(pid: int) -> None:
    """SIGKILL to the process group ``pid`` leads, if it is still there."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def _closed(conn: socket.socket) -> bool:
    """Whether the peer of ``conn`` (which sends nothing more) has gone."""
    conn.setblocking(False)
    try:
        return conn.recv(1) == b""
    except BlockingIOError:
        return False
    finally:
        conn.setblocking(True)


def _console_scripts() -> List[str]:
    """This interpreter's console scripts (their ``#!`` line names it): those a zygote
    can run (:func:`.warm.entry`)."""
    from importlib.metadata import entry_points

    folder, names = os.path.dirname(sys.executable), set()
    shebang = b"#!" + os.fsencode(sys.executable)
    for point in entry_points(group="console_scripts"):
        try:
            with open(os.path.join(folder, point.name), "rb") as f:
                if f.readline(4096).strip() == shebang:
                    names.add(point.name)
        except OSError:
            continue
    return sorted(names)
