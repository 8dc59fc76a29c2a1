"""transfer_async / get_transfer_status / connect_async / disconnect_async /
get_async_connect_status.

The C++ library may still answer these with UNSUPPORTED. Each test first
checks what holds either way (argument handling, no leaked user_data), then
skips with a message when the engine says UNSUPPORTED, and otherwise checks the
real asynchronous behaviour.
"""

import gc
import hashlib
import socket
import threading
import time
import weakref

import numpy as np
import pytest

import hixl
from conftest import CONNECT_TIMEOUT_MS, wait_until
from peer import pattern

ASYNC_TIMEOUT_S = 30


class Tag:
    """A user_data object that can be watched with a weak reference."""

    def __init__(self, name):
        self.name = name


def skip_if_unsupported(ret, what):
    if ret == hixl.UNSUPPORTED:
        pytest.skip(f"{what} returns UNSUPPORTED in this build of libhixl")


def wait_finished(engine, req):
    """Polls get_transfer_status(req) until it is no longer WAITING."""

    def poll():
        ret, status = engine.get_transfer_status(req)
        assert ret == hixl.SUCCESS, hixl.status_name(ret)
        return None if status == hixl.TransferStatus.WAITING else status

    status = wait_until(poll, timeout_s=ASYNC_TIMEOUT_S)
    assert status is not None, "the request stayed WAITING"
    return status


def test_transfer_async_single_request(server, peer):
    engine, _ = server
    local = np.random.default_rng(5).integers(0, 256, peer.size, dtype=np.uint8)
    assert engine.register_buffer(local)[0] == hixl.SUCCESS
    assert engine.connect(peer.name, CONNECT_TIMEOUT_MS) == hixl.SUCCESS

    tag = Tag("single")
    watch = weakref.ref(tag)
    ret, req = engine.transfer_async(peer.name, hixl.WRITE, [hixl.transfer_op_desc(local, peer.addr)],
                                     hixl.TransferArgs(tag))
    del tag
    if ret != hixl.SUCCESS:
        gc.collect()
        assert watch() is None, "the binding kept the user_data of a request that was never started"
    skip_if_unsupported(ret, "TransferAsync")
    assert ret == hixl.SUCCESS and req != 0
    gc.collect()
    assert watch() is not None, "the binding must keep user_data alive while the request is pending"

    assert wait_finished(engine, req) == hixl.TransferStatus.COMPLETED
    gc.collect()
    assert watch() is None, "user_data must be released once the request is reported finished"
    assert engine.get_transfer_status(req)[0] == hixl.PARAM_INVALID  # released
    assert peer.call("digest")["sha256"] == hashlib.sha256(local).hexdigest()


def test_transfer_async_batch_status_returns_user_data(server, peer):
    engine, _ = server
    local = np.zeros(peer.size, dtype=np.uint8)
    assert engine.register_buffer(local)[0] == hixl.SUCCESS
    assert engine.connect(peer.name, CONNECT_TIMEOUT_MS) == hixl.SUCCESS
    peer.call("fill", seed=11)

    half = peer.size // 2
    first = hixl.transfer_op_desc(local, peer.addr, 0, half)
    second = hixl.transfer_op_desc(local, peer.addr, half, remote_offset=half)
    tags = {"a": Tag("a"), "b": {"any": "object"}}
    ret_a, req_a = engine.transfer_async(peer.name, hixl.READ, [first], hixl.TransferArgs(tags["a"]))
    # HIXL's keyword for the last argument is `args`; ours also takes `optional_args`.
    ret_b, req_b = engine.transfer_async(peer.name, hixl.READ, [second], args=hixl.TransferArgs(user_data=tags["b"]))
    skip_if_unsupported(ret_a, "TransferAsync")
    assert ret_a == ret_b == hixl.SUCCESS and req_a != req_b

    finished = {}

    def poll():
        ret, results = engine.get_transfer_status(hixl.GetTransferStatusArgs(skip_waiting=True))
        assert ret == hixl.SUCCESS, hixl.status_name(ret)
        for r in results:
            assert isinstance(r, hixl.TransferResult)
            assert r.status != hixl.TransferStatus.WAITING  # skip_waiting
            finished[r.req] = r
        return len(finished) == 2

    assert wait_until(poll, timeout_s=ASYNC_TIMEOUT_S), f"finished: {finished}"
    assert finished[req_a].user_data is tags["a"]
    assert finished[req_b].user_data is tags["b"]
    assert all(r.status == hixl.TransferStatus.COMPLETED for r in finished.values())
    np.testing.assert_array_equal(local, pattern(11, peer.size))
    # Reported finished requests are released: not reported again.
    ret, results = engine.get_all_transfer_status()
    assert ret == hixl.SUCCESS and results == []


def test_transfer_async_argument_forms(server):
    engine, _ = server
    remote = "127.0.0.1:1"
    # Both keywords, the default, and HIXL-style int user_data are accepted
    # (the result is an error status, never an exception).
    for call in (
        lambda: engine.transfer_async(remote, hixl.WRITE, []),
        lambda: engine.transfer_async(remote, hixl.WRITE, [], hixl.TransferArgs()),
        lambda: engine.transfer_async(remote, hixl.WRITE, [], optional_args=hixl.TransferArgs(1234)),
        lambda: engine.transfer_async(remote, hixl.WRITE, [], args=hixl.TransferArgs()),
    ):
        ret, req = call()
        assert isinstance(ret, int) and isinstance(req, int)
    with pytest.raises(TypeError):
        engine.transfer_async(remote, hixl.WRITE, [], "not TransferArgs")

    tag = Tag("not connected")
    watch = weakref.ref(tag)
    desc = hixl.TransferOpDesc(0x1000, 0x2000, 8)
    ret, req = engine.transfer_async(remote, hixl.WRITE, [desc], hixl.TransferArgs(tag))
    del tag
    gc.collect()
    assert ret != hixl.SUCCESS
    assert watch() is None, "user_data of a failed transfer_async must not be kept"
    if ret != hixl.UNSUPPORTED:
        assert ret in (hixl.NOT_CONNECTED, hixl.PARAM_INVALID), hixl.status_name(ret)

    ret, status = engine.get_transfer_status(0xDEAD0)  # unknown request
    assert isinstance(status, hixl.TransferStatus)
    skip_if_unsupported(ret, "GetTransferStatus")
    assert ret == hixl.PARAM_INVALID


def test_async_connect_and_disconnect(server, peer):
    engine, _ = server
    ret, status = engine.get_async_connect_status(peer.name)
    assert isinstance(status, hixl.AsyncConnectStatus)
    ret_all, statuses = engine.get_all_async_connect_status()
    assert isinstance(statuses, dict)
    ret_connect = engine.connect_async(peer.name, CONNECT_TIMEOUT_MS)
    skip_if_unsupported(ret_connect, "ConnectAsync")
    assert ret == hixl.SUCCESS and status == hixl.AsyncConnectStatus.NOT_CONNECT  # never seen
    assert ret_all == hixl.SUCCESS
    assert ret_connect == hixl.SUCCESS

    def settled():
        ret, st = engine.get_async_connect_status(peer.name)
        assert ret == hixl.SUCCESS, hixl.status_name(ret)
        pending = (hixl.CONNECT_PENDING, hixl.CONNECTING, hixl.DISCONNECT_PENDING, hixl.DISCONNECTING)
        return None if st in pending else st

    assert wait_until(settled, timeout_s=ASYNC_TIMEOUT_S) == hixl.AsyncConnectStatus.CONNECTED
    ret, statuses = engine.get_all_async_connect_status()
    assert ret == hixl.SUCCESS and statuses.get(peer.name) == hixl.CONNECTED, statuses

    local = np.zeros(64, dtype=np.uint8)
    assert engine.register_buffer(local)[0] == hixl.SUCCESS
    op = [hixl.transfer_op_desc(local, peer.addr)]
    assert engine.transfer_sync(peer.name, hixl.READ, op, CONNECT_TIMEOUT_MS) == hixl.SUCCESS

    assert engine.disconnect_async(peer.name, CONNECT_TIMEOUT_MS) == hixl.SUCCESS
    assert wait_until(settled, timeout_s=ASYNC_TIMEOUT_S) == hixl.AsyncConnectStatus.NOT_CONNECT


def test_async_connect_bad_arguments(server):
    engine, _ = server
    results = [
        engine.connect_async("not an address"),
        engine.connect_async("127.0.0.1:1", 0),
        engine.disconnect_async("not an address"),
        engine.disconnect_async("127.0.0.1:1", -5),
    ]
    skip_if_unsupported(results[0], "ConnectAsync")
    assert results == [hixl.PARAM_INVALID] * 4


def test_transfer_async_from_many_threads(server, peer):
    """Requests issued and polled from several threads at once: every
    user_data comes back exactly once, and none is leaked."""
    engine, _ = server
    local = np.zeros(peer.size, dtype=np.uint8)
    assert engine.register_buffer(local)[0] == hixl.SUCCESS
    assert engine.connect(peer.name, CONNECT_TIMEOUT_MS) == hixl.SUCCESS
    ret, probe = engine.transfer_async(peer.name, hixl.READ, [hixl.transfer_op_desc(local, peer.addr, 0, 64)])
    skip_if_unsupported(ret, "TransferAsync")
    assert wait_finished(engine, probe) == hixl.TransferStatus.COMPLETED

    threads, per_thread, chunk = 4, 16, 1024
    watches, errors = [], []

    def desc(t, i):
        off = (t * per_thread + i) * chunk
        return [hixl.transfer_op_desc(local, peer.addr, off, chunk, remote_offset=off)]

    # Phase 1: each thread issues requests and polls its own with the single form.
    def single_form(t):
        try:
            for i in range(per_thread):
                tag = Tag((t, i))
                watches.append(weakref.ref(tag))
                ret, req = engine.transfer_async(peer.name, hixl.READ, desc(t, i), hixl.TransferArgs(tag))
                assert ret == hixl.SUCCESS, hixl.status_name(ret)
                assert wait_finished(engine, req) == hixl.TransferStatus.COMPLETED
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    workers = [threading.Thread(target=single_form, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
    assert not errors, errors
    gc.collect()
    assert all(w() is None for w in watches), "user_data leaked after single-form reports"

    # Phase 2: threads issue requests concurrently; one batch poller collects them all.
    tags = {}

    def issue(t):
        try:
            for i in range(per_thread):
                tag = Tag((t, i))
                tags[tag.name] = weakref.ref(tag)
                ret, _ = engine.transfer_async(peer.name, hixl.WRITE, desc(t, i), args=hixl.TransferArgs(tag))
                assert ret == hixl.SUCCESS, hixl.status_name(ret)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    workers = [threading.Thread(target=issue, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    seen = []

    def poll():
        ret, results = engine.get_transfer_status(hixl.GetTransferStatusArgs(max_query_count=5, skip_waiting=True))
        assert ret == hixl.SUCCESS, hixl.status_name(ret)
        for r in results:
            assert r.status == hixl.TransferStatus.COMPLETED, r
            seen.append(r.user_data.name)
        return len(seen) >= threads * per_thread

    assert wait_until(poll, timeout_s=ASYNC_TIMEOUT_S), f"{len(seen)} of {threads * per_thread} reported"
    for w in workers:
        w.join(timeout=120)
    assert not errors, errors
    assert sorted(seen) == sorted(tags)  # each exactly once
    del seen
    gc.collect()
    assert all(w() is None for w in tags.values()), "user_data leaked after batch reports"


def test_polls_do_not_wait_for_a_transfer_async_that_connects(engine, peer):
    """With AutoConnect, transfer_async to an unconnected remote connects first
    (here: to a listener that never answers, so for its full second). Polls of
    other requests on other threads must not wait for it."""
    assert engine.initialize("127.0.0.1", {hixl.OPTION_AUTO_CONNECT: "1"}) == hixl.SUCCESS
    local = np.zeros(peer.size, dtype=np.uint8)
    assert engine.register_buffer(local)[0] == hixl.SUCCESS
    ret, req = engine.transfer_async(peer.name, hixl.READ, [hixl.transfer_op_desc(local, peer.addr, 0, 64)],
                                     hixl.TransferArgs(Tag("kept")))
    skip_if_unsupported(ret, "TransferAsync")
    assert ret == hixl.SUCCESS, hixl.status_name(ret)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        remote = f"127.0.0.1:{silent.getsockname()[1]}"
        done = {}

        def connecting():
            start = time.monotonic()
            done["ret"] = engine.transfer_async(remote, hixl.READ, [hixl.transfer_op_desc(local, 0x1000, 0, 64)],
                                                hixl.TransferArgs(Tag("connecting")))[0]
            done["secs"] = time.monotonic() - start

        t = threading.Thread(target=connecting)
        t.start()
        time.sleep(0.2)  # it is connecting now
        start = time.monotonic()
        ret, results = engine.get_transfer_status(hixl.GetTransferStatusArgs(max_query_count=16))
        bulk_secs = time.monotonic() - start
        start = time.monotonic()
        engine.get_transfer_status(req)
        single_secs = time.monotonic() - start
        t.join(timeout=10)
    assert ret == hixl.SUCCESS
    assert done.get("secs", 0) >= 0.5, "the connecting call did not block: the test proves nothing"
    assert bulk_secs < 0.3, f"the bulk poll waited {bulk_secs:.2f} s for the connecting transfer_async"
    assert single_secs < 0.3, f"the single poll waited {single_secs:.2f} s"
    # The bulk poll reported the first request with its user_data.
    mine = [r for r in results if r.req == req]
    assert len(mine) == 1 and mine[0].user_data.name == "kept", results
