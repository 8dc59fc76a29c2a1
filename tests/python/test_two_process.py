"""Two Python processes move NumPy arrays both ways through hixl and compare them."""

import base64
import hashlib
import time

import numpy as np

import hixl
from conftest import CONNECT_TIMEOUT_MS, TRANSFER_TIMEOUT_MS, Peer, wait_until
from peer import pattern


def sha256(buf):
    return hashlib.sha256(memoryview(buf).cast("B")).hexdigest()


def connect(engine, remote):
    assert engine.connect(remote, timeout_in_millis=CONNECT_TIMEOUT_MS) == hixl.SUCCESS


def test_numpy_array_both_ways(server, peer):
    engine, name = server
    size = peer.size
    src = np.random.default_rng(1).standard_normal(size // 8)  # float64, `size` bytes
    dst = np.zeros_like(src)
    for arr in (src, dst):
        ret, handle = engine.register_buffer(arr)
        assert ret == hixl.SUCCESS and handle != 0
    connect(engine, peer.name)

    # WRITE: this process -> the peer.
    assert engine.transfer_sync(
        peer.name, hixl.WRITE, [hixl.transfer_op_desc(src, peer.addr)], TRANSFER_TIMEOUT_MS
    ) == hixl.SUCCESS
    assert peer.call("digest")["sha256"] == sha256(src)

    # READ: the peer -> this process, into a float64 array.
    peer.call("fill", seed=7)
    assert engine.transfer_sync(
        peer.name, hixl.READ, [hixl.transfer_op_desc(dst, peer.addr)], TRANSFER_TIMEOUT_MS
    ) == hixl.SUCCESS
    np.testing.assert_array_equal(dst.view(np.uint8), pattern(7, size))

    # The peer is the initiator now: it connects to us, READs `src` and
    # WRITEs its own buffer into `dst`.
    assert peer.call("connect", remote=name)["status"] == hixl.SUCCESS
    src_addr, nbytes = hixl.buffer_address(src)
    dst_addr, _ = hixl.buffer_address(dst)
    assert peer.call("transfer", remote=name, op="READ", descs=[[0, src_addr, nbytes]])["status"] == hixl.SUCCESS
    assert peer.call("digest")["sha256"] == sha256(src)
    dst[:] = 0
    peer.call("fill", seed=8)
    assert peer.call("transfer", remote=name, op="WRITE", descs=[[0, dst_addr, nbytes]])["status"] == hixl.SUCCESS
    np.testing.assert_array_equal(dst.view(np.uint8), pattern(8, size))


def test_scatter_gather_batch(server, peer):
    engine, _ = server
    local = np.arange(peer.size, dtype=np.uint8)
    local[:] = np.random.default_rng(3).integers(0, 256, local.size, dtype=np.uint8)
    assert engine.register_buffer(local)[0] == hixl.SUCCESS
    connect(engine, peer.name)

    # 64 chunks of 4 KiB, written to the peer in reverse order.
    chunk, count = 4096, 64
    descs = [
        hixl.transfer_op_desc(local, peer.addr, i * chunk, chunk, remote_offset=(count - 1 - i) * chunk)
        for i in range(count)
    ]
    assert engine.transfer_sync(peer.name, hixl.WRITE, descs, TRANSFER_TIMEOUT_MS) == hixl.SUCCESS
    expected = local[: chunk * count].reshape(count, chunk)[::-1].tobytes()
    got = base64.b64decode(peer.call("read", offset=0, len=chunk * count)["data"])
    assert got == expected

    # Read them back into a second array, un-reversing on the way.
    back = np.zeros(chunk * count, dtype=np.uint8)
    assert engine.register_buffer(back)[0] == hixl.SUCCESS
    descs = [
        hixl.transfer_op_desc(back, peer.addr, i * chunk, chunk, remote_offset=(count - 1 - i) * chunk)
        for i in range(count)
    ]
    assert engine.transfer_sync(peer.name, hixl.READ, descs, TRANSFER_TIMEOUT_MS) == hixl.SUCCESS
    np.testing.assert_array_equal(back, local[: chunk * count])


def test_bytearray_and_memoryview(server, peer):
    engine, _ = server
    data = bytearray(b"hello, hixl! " * 100)
    view = memoryview(data)[13:26]  # a slice: address is base + 13
    assert engine.register_buffer(data)[0] == hixl.SUCCESS
    connect(engine, peer.name)
    op = [hixl.transfer_op_desc(view, peer.addr)]
    assert engine.transfer_sync(peer.name, hixl.WRITE, op, TRANSFER_TIMEOUT_MS) == hixl.SUCCESS
    assert base64.b64decode(peer.call("read", offset=0, len=13)["data"]) == b"hello, hixl! "


def test_notifies_both_ways(server, peer):
    engine, name = server
    connect(engine, peer.name)
    assert peer.call("connect", remote=name)["status"] == hixl.SUCCESS

    sent = [hixl.NotifyDesc("cache_ready", "block_0"), hixl.NotifyDesc("ünïcode", b"\x00\xffbinary")]
    for n in sent:
        assert engine.send_notify(peer.name, n, CONNECT_TIMEOUT_MS) == hixl.SUCCESS
    got = peer.call("notifies")
    assert got["status"] == hixl.SUCCESS
    assert [[base64.b64decode(a), base64.b64decode(b)] for a, b in got["notifies"]] == [
        [n.name_bytes, n.notify_msg_bytes] for n in sent
    ]

    b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
    assert peer.call("send_notify", remote=name, name=b64(b"from_peer"), msg=b64(b"\xfe"))["status"] == hixl.SUCCESS
    received = []

    def poll():
        ret, notifies = engine.get_notifies()
        assert ret == hixl.SUCCESS
        received.extend(notifies)
        return received

    assert wait_until(poll, timeout_s=20)
    assert received[0].name == "from_peer"
    assert received[0].notify_msg_bytes == b"\xfe"
    assert received[0].notify_msg == "\udcfe"  # surrogateescape: survives a round trip
    assert received[0] == hixl.NotifyDesc("from_peer", received[0].notify_msg)


def test_bad_transfers_move_nothing(server, peer):
    engine, _ = server
    local = np.full(4096, 0xAB, dtype=np.uint8)
    assert engine.register_buffer(local)[0] == hixl.SUCCESS
    before = peer.call("digest")["sha256"]

    assert engine.transfer_sync(peer.name, hixl.WRITE, [hixl.transfer_op_desc(local, peer.addr)]) == (
        hixl.NOT_CONNECTED
    )
    connect(engine, peer.name)
    assert engine.connect(peer.name, timeout_in_millis=CONNECT_TIMEOUT_MS) == hixl.ALREADY_CONNECTED
    good = hixl.transfer_op_desc(local, peer.addr, 0, 16)
    outside = hixl.transfer_op_desc(local, peer.addr + peer.size - 8, 0, 16)  # runs past the peer's region
    assert engine.transfer_sync(peer.name, hixl.WRITE, [good, outside], TRANSFER_TIMEOUT_MS) == hixl.PARAM_INVALID
    empty = hixl.TransferOpDesc(hixl.buffer_address(local)[0], peer.addr, 0)
    assert engine.transfer_sync(peer.name, hixl.WRITE, [good, empty], TRANSFER_TIMEOUT_MS) == hixl.PARAM_INVALID
    assert engine.transfer_sync(peer.name, hixl.WRITE, [good], timeout_in_millis=0) == hixl.PARAM_INVALID
    assert peer.call("digest")["sha256"] == before  # no byte of a rejected batch moved
    assert engine.transfer_sync(peer.name, hixl.WRITE, []) == hixl.SUCCESS

    assert engine.disconnect(peer.name) == hixl.SUCCESS
    assert engine.disconnect(peer.name) == hixl.NOT_CONNECTED
    assert engine.transfer_sync(peer.name, hixl.WRITE, [good]) == hixl.NOT_CONNECTED


def test_peer_gone_fails_fast(server):
    engine, _ = server
    p = Peer()
    try:
        local = np.zeros(p.size, dtype=np.uint8)
        assert engine.register_buffer(local)[0] == hixl.SUCCESS
        connect(engine, p.name)
        p.proc.kill()
        p.proc.wait(timeout=20)
        start = time.monotonic()
        ret = engine.transfer_sync(p.name, hixl.READ, [hixl.transfer_op_desc(local, p.addr)], 5000)
        assert ret in (hixl.FAILED, hixl.TIMEOUT), hixl.status_name(ret)
        assert time.monotonic() - start < 15
    finally:
        p.close()


def test_unregistered_local_memory_uses_the_buffer_pool(peer):
    """With the default buffer pool, local arrays need no registration; with
    BufferPool "0:0" they must be registered."""
    for options, expected in (({}, hixl.SUCCESS), ({hixl.OPTION_BUFFER_POOL: "0:0"}, hixl.PARAM_INVALID)):
        with hixl.Hixl() as engine:
            assert engine.initialize("127.0.0.1", options) == hixl.SUCCESS
            connect(engine, peer.name)
            peer.call("fill", seed=21)
            local = np.zeros(peer.size, dtype=np.uint8)
            ret = engine.transfer_sync(
                peer.name, hixl.READ, [hixl.transfer_op_desc(local, peer.addr)], TRANSFER_TIMEOUT_MS
            )
            assert ret == expected, (options, hixl.status_name(ret))
            if expected == hixl.SUCCESS:
                np.testing.assert_array_equal(local, pattern(21, peer.size))
