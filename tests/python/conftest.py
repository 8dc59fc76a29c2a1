"""Shared fixtures of the Python tests.

Run from the repository root, with the package built by CMake:

    PYTHONPATH=build/python /usr/bin/python3 -m pytest -q tests/python

The second process of the two-process tests is peer.py, driven over
stdin/stdout pipes with one JSON object per line (see Peer below). Every wait
is bounded.
"""

import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

try:
    import hixl
except ImportError as e:  # pragma: no cover - a setup problem, say so clearly
    raise ImportError(
        f"cannot import hixl ({e}); build it (make -C <build> _hixl) and run with PYTHONPATH=<build>/python"
    ) from e

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PEER_SCRIPT = os.path.join(HERE, "peer.py")

# Generous bounds: the machine may be shared and slow.
REPLY_TIMEOUT_S = 60.0
CONNECT_TIMEOUT_MS = 10000
TRANSFER_TIMEOUT_MS = 30000


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(engine, options=None, attempts=20):
    """initialize(engine) as a server on a free 127.0.0.1 port; returns its name."""
    last = None
    for _ in range(attempts):
        name = f"127.0.0.1:{free_port()}"
        last = engine.initialize(name, options or {})
        if last == hixl.SUCCESS:
            return name
    raise AssertionError(f"could not start a server engine: {hixl.status_name(last)}")


def wait_until(predicate, timeout_s=REPLY_TIMEOUT_S, interval_s=0.01):
    """Polls predicate() until it returns a truthy value (returned) or the time is up (None)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            return None
        time.sleep(interval_s)


def child_env():
    """The environment for child processes: they import the same hixl as this one."""
    env = dict(os.environ)
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(hixl.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_parent, env.get("PYTHONPATH", "")) if p)
    return env


class ScriptProcess:
    """A second process running a Python script that answers JSON commands,
    one per line, after a first JSON line of its own (returned by start)."""

    def __init__(self, script, args=()):
        self.proc = subprocess.Popen(
            [sys.executable, script, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
            env=child_env(),
        )
        self._replies = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def hello(self):
        hello = self._recv(REPLY_TIMEOUT_S)
        assert hello.get("ok"), hello
        return hello

    def _read(self):
        for line in self.proc.stdout:
            self._replies.put(line)
        self._replies.put(None)

    def _recv(self, timeout_s):
        try:
            line = self._replies.get(timeout=timeout_s)
        except queue.Empty:
            raise AssertionError(f"peer did not answer within {timeout_s} s") from None
        if line is None:
            raise AssertionError(f"peer exited (code {self.proc.wait(timeout=10)})")
        return json.loads(line)

    def call(self, cmd, timeout_s=REPLY_TIMEOUT_S, **args):
        """Sends one command; returns the reply (a dict). Raises if the peer failed."""
        self.send(cmd, **args)
        reply = self._recv(timeout_s)
        if not reply.get("ok"):
            raise AssertionError(f"peer command {cmd} failed: {reply.get('error')}")
        return reply

    def send(self, cmd, **args):
        """The first half of call: sends the command and returns at once (the
        peer works on it while this process does something else)."""
        self.proc.stdin.write(json.dumps(dict(args, cmd=cmd)) + "\n")
        self.proc.stdin.flush()

    def reply(self, timeout_s=REPLY_TIMEOUT_S):
        """The second half: the reply to the command sent, failed or not."""
        return self._recv(timeout_s)

    def stop(self):
        """SIGSTOP: the peer's engine stops answering (its sockets stay open).
        Returns once every thread of the peer is stopped: the signal alone only
        starts the group stop, and an I/O thread could still serve a request
        meanwhile."""
        os.kill(self.proc.pid, signal.SIGSTOP)

        def all_stopped():
            task_dir = f"/proc/{self.proc.pid}/task"
            for tid in os.listdir(task_dir):
                try:
                    with open(f"{task_dir}/{tid}/stat") as f:
                        state = f.read().rsplit(")", 1)[1].split()[0]
                except FileNotFoundError:
                    continue
                if state not in ("T", "t"):
                    return False
            return True

        assert wait_until(all_stopped, timeout_s=10, interval_s=0.001), "the peer did not stop"

    def cont(self):
        os.kill(self.proc.pid, signal.SIGCONT)

    def close(self):
        if self.proc.poll() is None:
            try:
                self.cont()
                self.call("exit", timeout_s=20)
            except (AssertionError, OSError, ValueError):
                pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=20)
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass


class Peer(ScriptProcess):
    """A second process running peer.py: a HIXL server engine with one
    registered NumPy buffer of `size` bytes, driven with call()."""

    def __init__(self, size=1 << 20):
        super().__init__(PEER_SCRIPT, ["--size", str(size)])
        hello = self.hello()
        self.name = hello["engine"]  # "127.0.0.1:port"
        self.addr = hello["addr"]  # address of its registered buffer
        self.size = hello["len"]


@pytest.fixture
def peer():
    """A running peer process (1 MiB buffer); closed after the test."""
    p = Peer()
    yield p
    p.close()


@pytest.fixture
def make_peer():
    """Factory for peers of other sizes; every one is closed after the test."""
    peers = []

    def make(size=1 << 20):
        p = Peer(size)
        peers.append(p)
        return p

    yield make
    for p in peers:
        p.close()


@pytest.fixture
def engine():
    """A Hixl engine, not initialized; finalized after the test."""
    e = hixl.Hixl()
    yield e
    e.finalize()


@pytest.fixture
def server(engine):
    """(engine, name): a Hixl engine initialized as a server on a free port."""
    return engine, start_server(engine)


TCP_ONLY = {hixl.OPTION_GLOBAL_RESOURCE_CONFIG: '{"comm_resource_config.protocol_desc": ["tcp:host"]}'}


@pytest.fixture
def tcp_server(engine):
    """Like `server`, but its links carry data over TCP only. Tests that freeze
    the peer need this: over shm (the default between engines of one host)
    copies complete even into a stopped process."""
    return engine, start_server(engine, TCP_ONLY)
