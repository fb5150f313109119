"""Warm starts: the Python commands of a pipeline forked from an interpreter that has
already imported torch and fairseq.

Every stage of the quickstart, ``veco-xtreme`` and ``veco-derived-transfer`` is a
command (``fairseq-train``, ``python -m veco_plugin.cli...``) whose interpreter spends
4-7 s importing torch and fairseq before it reads its first flag; a pipeline runs dozens.
A *zygote* (``python veco_plugin/pipeline/warm.py``, started by :class:`WarmStarts` when
a command first needs one) imports them once and then forks one process per command; what
the fork runs is the command's own entry point, as its interpreter would run it:

- ``[sys.executable, "-m", MODULE, ...]``: the module as ``__main__`` (:func:`_run_as_main`);
- ``[sys.executable, SCRIPT.py, ...]``: the file as ``__main__`` (:func:`_run_path_as_main`);
- ``[SCRIPT, ...]`` where ``SCRIPT`` (a path, or a name found on the request's ``PATH``)
  is a console script of this interpreter (its ``#!`` line names ``sys.executable``):
  the entry point ``importlib.metadata`` gives for that name.

The forked process is the command's process in every way a caller sees: a session of its
own (its pid leads its process group, so ``os.killpg`` stops its whole tree), the
caller's file descriptors as fds 0, 1 and 2, the request's environment, working
directory and ``sys.argv``; an uncaught exception, ``SystemExit`` and the exit status are
the interpreter's own (the command's module runs at the top of the stack), and so are
the thread joins and ``atexit`` handlers at exit. What a fork cannot change is what the
interpreter and torch read when they start (``PYTHON*``, ``OMP_*``, ``MKL_*``, ``LD_*``,
``TORCH*``...) and the root logger that the command's first import sets up (fairseq's
console scripts and fairseq itself set up different ones): requests differing there get
a zygote of their own (:func:`zygote_key`), started with their environment. Import-time
warnings print once, in the zygote, not in each command's output. Python commands that a
shell script runs start warm through :mod:`.warm_path`'s shims; a pipeline that such a
script (or a test) runs hands its commands to the shims' broker (:data:`BROKER_ENV`), so
nested pipelines share one set of zygotes. Anything else (a shell
script, another interpreter, interpreter flags), and every request after a zygote failed
to start, is ``None``: the caller starts it cold.

The zygote forks from a single thread that has never run a torch operator nor touched
CUDA; it ends when its caller closes its stdin (or exits).
"""

from __future__ import annotations

import gc
import importlib
import io
import json
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import IO, Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

# Environment variables read when an interpreter, torch or a BLAS library starts.
# (LOGLEVEL: by fairseq_cli's modules when imported)
STARTUP_ENV = (
    "PYTHON", "OMP_", "MKL_", "KMP_", "GOMP_", "OPENBLAS_", "LD_", "TORCH", "MALLOC", "LOGLEVEL",
)  # fmt: skip
# Commands whose first import configures the root logger (stdout, INFO, fairseq's format)
# before fairseq is imported (fairseq 0.12: only train.py's basicConfig comes before its
# fairseq imports); fairseq's own import configures it otherwise (stderr, DEBUG: the
# basicConfig in fairseq.models.wav2vec.wav2vec2_classification). A zygote imports what
# the command imports first.
LOGGING_AT_IMPORT = {"fairseq_cli.train"}
# Imported by the commands after they start, at a cost worth sharing: torch.optim's first
# Optimizer imports torch._dynamo (with sympy; about 2 s, then 4-5 s of a 3-update toy
# fairseq-train became 2). Imported by the zygote after fairseq, without side effects a
# command could see (no thread, no CUDA; its environment's TORCH* variables are in
# STARTUP_ENV).
LAZY_IMPORTS = ("torch._dynamo",)
_HEADER = 8  # bytes of the length that precedes a request's JSON
# Set by a :class:`~.warm_path.WarmPath` in its commands' environment: the (abstract,
# without its leading NUL) address of its broker. A pipeline run by one of them (a
# ``veco-xtreme`` in a test, a pipeline in another's shell stage) has its commands forked
# there, from the zygotes already up, rather than starting zygotes of its own.
BROKER_ENV = "VECO_WARM_BROKER"
STARTUP_TIMEOUT_S = 300.0  # for the zygote's imports on a busy machine
CLOSE_GRACE_S = 1.0  # for a zygote asked to end (an idle one ends in milliseconds)

Request = Dict[str, Any]


# ----------------------------------------------------------------------------- caller side


def entry(argv: Sequence[str], env: Mapping[str, str]) -> Optional[List[str]]:
    """How a zygote runs ``argv``: ``["module", NAME]``, ``["path", SCRIPT]`` (``python
    SCRIPT.py``) or ``["script", PATH, NAME, MODULE]`` (MODULE: the entry point's); None
    when only a cold start runs it as its interpreter would."""
    if len(argv) >= 3 and argv[0] == sys.executable and argv[1] == "-m":
        return ["module", argv[2]]
    if len(argv) >= 2 and argv[0] == sys.executable:
        script = argv[1]
        if script.startswith("-") or not script.endswith(".py") or not os.path.isfile(script):
            return None  # an interpreter flag, or no script file: cold
        return ["path", script]
    if not argv:
        return None
    path = argv[0] if os.sep in argv[0] else shutil.which(argv[0], path=env.get("PATH"))
    if path is None or not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as f:
            first = f.readline(4096).strip()
    except OSError:
        return None
    if first != b"#!" + os.fsencode(sys.executable):
        return None
    name = os.path.basename(path)
    from importlib.metadata import entry_points

    points = entry_points(group="console_scripts", name=name)
    if len(points) != 1:
        return None
    return ["script", os.path.abspath(path), name, next(iter(points)).module]


def first_import(how: Sequence[str]) -> str:
    """What a zygote for ``how`` (:func:`entry`) imports: what the command imports first
    as far as it changes the state the command starts in (the root logger)."""
    module = how[1] if how[0] == "module" else how[3] if how[0] == "script" else None
    return module if module in LOGGING_AT_IMPORT else "fairseq"


def zygote_key(how: Sequence[str], env: Mapping[str, str]) -> Tuple[str, ...]:
    """A zygote per first import and per value of the variables a fork cannot change."""
    startup = sorted(f"{k}={v}" for k, v in env.items() if k.startswith(STARTUP_ENV))
    return (first_import(how), *startup)


class WarmProcess:
    """A forked command, as much of ``subprocess.Popen`` as callers use: ``pid``,
    ``stdout``/``stderr`` (the read ends asked for, else None), ``wait(timeout)``,
    ``poll()``, ``returncode`` (negative: ended by that signal)."""

    def __init__(self, conn: socket.socket) -> None:
        self._conn, self._buf, self._lock = conn, b"", threading.Lock()
        self.stdout: Optional[IO[bytes]] = None
        self.stderr: Optional[IO[bytes]] = None
        self.returncode: Optional[int] = None
        conn.settimeout(STARTUP_TIMEOUT_S)  # the first command waits for the imports
        self.pid = int(self._line())
        conn.settimeout(None)

    def _line(self) -> bytes:
        while b"\n" not in self._buf:
            chunk = self._conn.recv(64)
            if not chunk:
                raise OSError("the zygote ended")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line

    def wait(self, timeout: Optional[float] = None) -> int:
        if self.returncode is not None:
            return self.returncode
        if not self._lock.acquire(timeout=-1 if timeout is None else timeout):
            raise subprocess.TimeoutExpired(str(self.pid), timeout or 0)
        try:
            if self.returncode is None:
                # a timeout of 0 would make the socket non-blocking (BlockingIOError)
                self._conn.settimeout(None if timeout is None else max(timeout, 1e-4))
                try:
                    self.returncode = int(self._line())
                except socket.timeout:
                    raise subprocess.TimeoutExpired(str(self.pid), timeout or 0) from None
                except (OSError, ValueError):  # the zygote was killed: the status is lost
                    self.returncode = -signal.SIGKILL
                self._conn.close()
        finally:
            self._lock.release()
        return self.returncode

    def poll(self) -> Optional[int]:
        try:
            return self.wait(0)
        except subprocess.TimeoutExpired:
            return None

    def communicate(self, timeout: Optional[float] = None) -> Tuple[bytes, bytes]:
        """Read stdout and stderr (when piped) to their ends, then wait: their bytes.
        After ``timeout`` seconds the command's process group is killed and
        ``subprocess.TimeoutExpired`` raised."""
        pipes = [f for f in (self.stdout, self.stderr) if f is not None]
        chunks: Dict[int, List[bytes]] = {f.fileno(): [] for f in pipes}
        deadline = None if timeout is None else time.monotonic() + timeout
        with selectors.DefaultSelector() as sel:
            for f in pipes:
                sel.register(f, selectors.EVENT_READ)
            while sel.get_map():
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    os.killpg(self.pid, signal.SIGKILL)
                    self.wait()
                    raise subprocess.TimeoutExpired(str(self.pid), timeout or 0)
                for key, _ in sel.select(left):
                    data = os.read(key.fd, 65536)
                    if data:
                        chunks[key.fd].append(data)
                    else:
                        sel.unregister(key.fileobj)
        out, err = (b"".join(chunks[f.fileno()]) if f else b"" for f in (self.stdout, self.stderr))
        for f in pipes:
            f.close()
        self.wait()
        return out, err


def _forked_by(address: str, request: Request, fds: Sequence[int]) -> WarmProcess:
    """``request`` with ``fds`` sent to the zygote (or broker) listening at ``address``:
    the command it forked. ``OSError``: nothing listens; ``ValueError``: it declined."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(address)
        payload = json.dumps(request).encode()
        socket.send_fds(conn, [len(payload).to_bytes(_HEADER, "big")], list(fds))
        conn.sendall(payload)
        return WarmProcess(conn)
    except BaseException:
        conn.close()
        raise


class _Zygote:
    """A zygote process started with ``env``, listening on an abstract unix socket."""

    def __init__(self, module: str, env: Mapping[str, str]) -> None:
        self.address = f"\0veco-warm-{os.getpid()}-{os.urandom(6).hex()}"
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(self.address)
            listener.listen(64)
            self.proc = subprocess.Popen(
                # by path: ``-m`` would import the veco_plugin package first
                [sys.executable, os.path.abspath(__file__), str(listener.fileno()), module],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=dict(env),
                pass_fds=[listener.fileno()],
                start_new_session=True,  # Ctrl-C at a terminal is the caller's to handle
            )
        finally:
            listener.close()

    def fork(self, request: Request, fds: Sequence[int]) -> WarmProcess:
        return _forked_by(self.address, request, fds)

    def close(self, deadline: Optional[float] = None) -> None:
        """End the zygote: at once when it waits for commands (its stdin closes); killed
        at ``deadline`` (``time.monotonic()``; default: in :data:`CLOSE_GRACE_S`) when it
        is still importing (it reads stdin only then: a pipeline stopped by Ctrl-C waited
        up to 10 s for it). The commands it forked run on."""
        if deadline is None:
            deadline = time.monotonic() + CLOSE_GRACE_S
        if self.proc.poll() is None and self.proc.stdin is not None:
            self.proc.stdin.close()
            try:
                self.proc.wait(max(deadline - time.monotonic(), 0.0))
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class WarmStarts:
    """Starts warm the commands a zygote can run (:func:`entry`); thread-safe."""

    def __init__(self) -> None:
        self._zygotes: Dict[Tuple[str, ...], _Zygote] = {}
        self._broken = False
        self._lock = threading.Lock()

    def popen(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        merge_stderr: bool = True,
        cwd: Optional[str] = None,
    ) -> Optional[WarmProcess]:
        """``subprocess.Popen(argv, env=env, cwd=cwd, stdin=DEVNULL, stdout=PIPE,
        stderr=STDOUT if merge_stderr else PIPE, start_new_session=True)``, forked from a
        zygote; None: start it cold (:func:`entry`, or no zygote came up)."""
        if entry(argv, env) is None or self._broken:
            return None
        devnull = os.open(os.devnull, os.O_RDONLY)
        out_r, out_w = os.pipe()
        err_r, err_w = (out_r, out_w) if merge_stderr else os.pipe()
        try:
            proc = self.fork(argv, env, [devnull, out_w, err_w], cwd)
        finally:
            for fd in {devnull, out_w, err_w}:
                os.close(fd)
        if proc is None:
            for fd in {out_r, err_r}:
                os.close(fd)
            return None
        proc.stdout = os.fdopen(out_r, "rb")
        proc.stderr = None if merge_stderr else os.fdopen(err_r, "rb")
        return proc

    def fork(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        fds: Sequence[int],
        cwd: Optional[str] = None,
        delegate: bool = True,
    ) -> Optional[WarmProcess]:
        """``argv`` forked from a zygote with ``fds`` (the caller's to close) as its
        stdin, stdout and stderr; None: start it cold. ``delegate``: by the broker that
        ``env`` names (:data:`BROKER_ENV`) when there is one (False: that broker asks)."""
        how = entry(argv, env)
        if how is None or self._broken:
            return None
        request = {"how": how, "argv": list(argv), "env": dict(env), "cwd": cwd or os.getcwd()}
        if delegate and env.get(BROKER_ENV):  # run by another pipeline: its zygotes
            try:
                return _forked_by("\0" + env[BROKER_ENV], request, fds)
            except (OSError, ValueError):  # gone, or it would start the command cold
                pass
        with self._lock:
            key = zygote_key(how, env)
            if key not in self._zygotes:
                self._zygotes[key] = _Zygote(key[0], env)
            zygote = self._zygotes[key]
        try:
            return zygote.fork(request, fds)
        except (OSError, ValueError):
            self._broken = True  # the zygote did not come up: cold starts from now on
            return None

    def close(self) -> None:
        """End the zygotes (commands they forked run on), within one grace between them."""
        with self._lock:
            for zygote in self._zygotes.values():
                if zygote.proc.stdin is not None:
                    zygote.proc.stdin.close()  # each ends as soon as it can
            deadline = time.monotonic() + CLOSE_GRACE_S
            for zygote in self._zygotes.values():
                zygote.close(deadline)
            self._zygotes.clear()


# ----------------------------------------------------------------------------- zygote side


def _recv_request(conn: socket.socket) -> Tuple[Request, List[int]]:
    header, fds, _, _ = socket.recv_fds(conn, _HEADER, 3)
    size = int.from_bytes(header, "big")
    payload = b""
    while len(payload) < size:
        chunk = conn.recv(size - len(payload))
        if not chunk:
            raise OSError("request cut short")
        payload += chunk
    return json.loads(payload), fds


def _command(request: Request) -> Callable[[], Any]:
    """In the forked process: its argv, environment, cwd and sys.path as its interpreter
    would set them; the entry point to call at the top of the stack."""
    how, argv = request["how"], list(request["argv"])
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    if how[0] == "module":
        sys.argv = ["-m"] + argv[3:]
        sys.path[0] = os.getcwd()
        return lambda: _run_as_main(how[1])
    if how[0] == "path":
        sys.argv = argv[1:]
        sys.path[0] = os.path.dirname(os.path.realpath(how[1]))
        return lambda: _run_path_as_main(how[1])
    sys.argv = [how[1]] + argv[1:]
    sys.path[0] = os.path.dirname(how[1])
    from importlib.metadata import entry_points

    (point,) = entry_points(group="console_scripts", name=how[2])
    return lambda: sys.exit(point.load()())


def _run_as_main(name: str) -> None:
    """``python -m NAME`` in this interpreter: the module (a package's ``__main__``) as a
    new ``__main__`` module, ``sys.argv[0]`` its file (never restored: an excepthook
    reads it). ``runpy.run_module`` would restore ``sys.argv[0]`` before the hook ran."""
    import importlib.util
    import types

    spec = importlib.util.find_spec(name)  # imports the parent packages, as -m does
    if spec is not None and spec.submodule_search_locations is not None:
        spec = importlib.util.find_spec(f"{name}.__main__")
    if spec is None or spec.loader is None or spec.origin is None:
        raise ImportError(f"No module named {name}")
    main = types.ModuleType("__main__")
    main.__spec__, main.__file__, main.__loader__ = spec, spec.origin, spec.loader
    main.__package__ = spec.parent
    main.__builtins__ = __builtins__  # type: ignore[attr-defined]
    sys.modules["__main__"] = main
    sys.argv[0] = spec.origin
    exec(spec.loader.get_code(spec.name), main.__dict__)  # type: ignore[attr-defined]


def _run_path_as_main(path: str) -> None:
    """``python PATH`` in this interpreter: the file as a new ``__main__`` module."""
    import types
    from importlib.machinery import SourceFileLoader

    main = types.ModuleType("__main__")
    main.__file__, main.__spec__ = path, None
    main.__loader__ = SourceFileLoader("__main__", path)
    main.__builtins__ = __builtins__  # type: ignore[attr-defined]
    sys.modules["__main__"] = main
    with open(path, "rb") as f:
        code = compile(f.read(), path, "exec")
    exec(code, main.__dict__)


def _fork_command(conn: socket.socket) -> Optional[Callable[[], Any]]:
    """In a handler process: fork the command; report its pid, wait, report its status,
    exit. Returns only in the command's process."""
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        request, fds = _recv_request(conn)
        pid = os.fork()
    except BaseException:
        os._exit(1)  # the caller sees the connection close: it starts the command cold
    if pid == 0:
        conn.close()
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in set(fds):
            if fd > 2:
                os.close(fd)
        if request["env"].get("PYTHONUNBUFFERED"):
            for stream in (sys.stdout, sys.stderr):
                if isinstance(stream, io.TextIOWrapper):
                    stream.reconfigure(write_through=True)
        return _command(request)
    for fd in fds:
        os.close(fd)
    try:
        conn.sendall(b"%d\n" % pid)
        _, status = os.waitpid(pid, 0)
        conn.sendall(b"%d\n" % os.waitstatus_to_exitcode(status))
    finally:
        os._exit(0)


def serve(listener: socket.socket) -> Optional[Callable[[], Any]]:
    """The zygote's loop: a handler process per connection, until stdin ends. Returns
    None in the zygote, the command to run in a forked command's process."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # handlers are reaped by the kernel
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with selectors.DefaultSelector() as sel:
        sel.register(listener, selectors.EVENT_READ)
        sel.register(sys.stdin, selectors.EVENT_READ)
        while True:
            ready = {key.fileobj for key, _ in sel.select()}
            if sys.stdin in ready and not os.read(sys.stdin.fileno(), 4096):
                return None
            if listener not in ready:
                continue
            conn, _ = listener.accept()
            if os.fork() == 0:
                listener.close()
                signal.signal(signal.SIGINT, signal.default_int_handler)
                return _fork_command(conn)
            conn.close()


def main() -> None:
    """``python .../pipeline/warm.py FD MODULE``: FD is the listening socket; MODULE is
    imported (:func:`first_import`), then torch, fairseq and :data:`LAZY_IMPORTS`."""
    listener = socket.socket(fileno=int(sys.argv[1]))
    for name in (sys.argv[2], "torch", "fairseq", *LAZY_IMPORTS):
        importlib.import_module(name)
    gc.freeze()  # what the imports made stays shared: neither collected nor copied per fork
    command = serve(listener)
    if command is None:  # the zygote: nothing to flush, no finalization worth waiting for
        os._exit(0)
    command()  # a forked command: it ends as its interpreter would end it


if __name__ == "__main__":
    main()
