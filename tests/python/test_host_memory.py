"""shared_host_buffer: host memory in a sealed memfd, which a peer on this
host maps and copies with memcpy (docs/python.md, "Host memory")."""

import hashlib
import mmap

import numpy as np
import pytest

import hixl
from conftest import CONNECT_TIMEOUT_MS
from peer import pattern

MIB = 1 << 20


def maps_of(pid):
    with open(f"/proc/{pid}/maps") as f:
        return [line for line in f if "memfd:hixl-host" in line]


def test_a_sealed_zeroed_writable_buffer_of_fixed_size():
    buf = hixl.shared_host_buffer(3 * MIB + 5)
    assert isinstance(buf, mmap.mmap) and len(buf) == 3 * MIB + 5
    arr = np.frombuffer(buf, dtype=np.uint8)
    assert not arr.any() and arr.flags.writeable
    arr[-1] = 9
    assert buf[-1] == 9
    assert len(maps_of("self")) == 1  # a memfd of its own, not anonymous memory
    del arr
    with pytest.raises(PermissionError):  # sealed against growing and shrinking
        buf.resize(4 * MIB)
    assert len(buf) == 3 * MIB + 5
    buf.close()
    assert maps_of("self") == []


@pytest.mark.parametrize("nbytes", [0, -1, 1.5, True, "1M"])
def test_a_size_that_is_not_a_positive_int_is_refused(nbytes):
    with pytest.raises(ValueError, match="positive int"):
        hixl.shared_host_buffer(nbytes)


def test_a_peer_on_this_host_maps_it_and_the_bytes_arrive(server, make_peer):
    engine, name = server
    buf = hixl.shared_host_buffer(2 * MIB)
    ret, handle = engine.register_buffer(buf)
    assert ret == hixl.SUCCESS and handle != 0
    addr, nbytes = hixl.buffer_address(buf)
    arr = np.frombuffer(buf, dtype=np.uint8)

    peer = make_peer(2 * MIB)
    assert peer.call("connect", remote=name, timeout=CONNECT_TIMEOUT_MS)["status"] == hixl.SUCCESS
    peer.call("fill", seed=11)
    assert peer.call("transfer", remote=name, op="WRITE", descs=[[0, addr + 3, nbytes - 3]])["status"] == hixl.SUCCESS
    np.testing.assert_array_equal(arr[3:], pattern(11, 2 * MIB)[: nbytes - 3])
    assert arr[:3].tobytes() == b"\0\0\0"
    # The peer copied through a mapping of this process's memfd.
    assert len(maps_of(peer.proc.pid)) == 1

    arr[:] = pattern(12, 2 * MIB)
    assert peer.call("transfer", remote=name, op="READ", descs=[[0, addr, nbytes]])["status"] == hixl.SUCCESS
    assert peer.call("digest")["sha256"] == hashlib.sha256(arr).hexdigest()

    # The peer's mapping is gone when deregister_mem returns.
    del arr
    assert engine.deregister_mem(handle) == hixl.SUCCESS
    assert maps_of(peer.proc.pid) == []
