"""Blocking calls release the GIL: other Python threads keep running meanwhile."""

import socket
import threading
import time

import numpy as np

import hixl
from conftest import CONNECT_TIMEOUT_MS


class Ticker:
    """A thread that records time.monotonic() as often as it gets the GIL."""

    def __init__(self):
        self.ticks = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            self.ticks.append(time.monotonic())
            time.sleep(0.002)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=10)

    def check_ran_during(self, start, end):
        """Asserts the thread ran all along [start, end] (a call holding the GIL
        would leave no tick inside it)."""
        inside = [t for t in self.ticks if start <= t <= end]
        assert len(inside) >= 10, f"only {len(inside)} ticks during a {end - start:.2f} s call"
        edges = [start] + inside + [end]
        gap = max(b - a for a, b in zip(edges, edges[1:]))
        assert gap < 1.0, f"the other thread stalled for {gap:.2f} s during the call"


def timed(fn, *args):
    start = time.monotonic()
    result = fn(*args)
    return result, start, time.monotonic()


def test_transfer_sync_releases_gil(tcp_server, peer):
    engine, _ = tcp_server
    local = np.zeros(peer.size, dtype=np.uint8)
    assert engine.register_buffer(local)[0] == hixl.SUCCESS
    assert engine.connect(peer.name, CONNECT_TIMEOUT_MS) == hixl.SUCCESS
    op = [hixl.transfer_op_desc(local, peer.addr)]
    assert engine.transfer_sync(peer.name, hixl.READ, op, 30000) == hixl.SUCCESS

    peer.stop()  # the READ below cannot complete: it blocks until its timeout
    try:
        with Ticker() as ticker:
            ret, start, end = timed(engine.transfer_sync, peer.name, hixl.READ, op, 2000)
    finally:
        peer.cont()
    assert ret in (hixl.TIMEOUT, hixl.FAILED), hixl.status_name(ret)
    assert end - start >= 1.5
    ticker.check_ran_during(start, end)


def test_connect_releases_gil(engine):
    # A TCP listener that never answers the handshake: connect blocks until its timeout.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        remote = f"127.0.0.1:{silent.getsockname()[1]}"
        assert engine.initialize("127.0.0.1") == hixl.SUCCESS
        with Ticker() as ticker:
            ret, start, end = timed(engine.connect, remote, 1500)
    assert ret == hixl.TIMEOUT, hixl.status_name(ret)
    assert end - start >= 1.0
    ticker.check_ran_during(start, end)


def test_finalize_waits_for_blocked_call(tcp_server, peer):
    """finalize() from another thread while transfer_sync blocks: no crash, the
    transfer ends with an error, finalize returns."""
    engine, _ = tcp_server
    local = np.zeros(4096, dtype=np.uint8)
    assert engine.register_buffer(local)[0] == hixl.SUCCESS
    assert engine.connect(peer.name, CONNECT_TIMEOUT_MS) == hixl.SUCCESS
    op = [hixl.transfer_op_desc(local, peer.addr)]
    result = {}

    def blocked():
        result["ret"] = engine.transfer_sync(peer.name, hixl.READ, op, 3000)

    peer.stop()
    try:
        t = threading.Thread(target=blocked)
        t.start()
        time.sleep(0.5)
        engine.finalize()
        t.join(timeout=30)
        assert not t.is_alive()
    finally:
        peer.cont()
    assert result["ret"] in (hixl.TIMEOUT, hixl.FAILED), hixl.status_name(result["ret"])
    assert engine.transfer_sync(peer.name, hixl.READ, op) == hixl.FAILED  # finalized

