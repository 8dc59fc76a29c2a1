"""transfer_sync / transfer_async take NumPy arrays of descriptors: one
N x 3 array or three 1-D arrays, moving the same bytes as TransferOpDesc
lists; wrong types and shapes are refused before anything moves."""

import numpy as np
import pytest

import hixl
from conftest import TCP_ONLY, start_server, wait_until

N = 4096
SIZE = 256


@pytest.fixture
def pair():
    """(initiator, target name, local array, remote array), linked over tcp."""
    target, initiator = hixl.Hixl(), hixl.Hixl()
    name = start_server(target, TCP_ONLY)
    assert initiator.initialize("127.0.0.1", TCP_ONLY) == hixl.SUCCESS
    remote = np.random.default_rng(1).integers(0, 255, N * SIZE, dtype=np.uint8)
    local = np.zeros(N * SIZE, dtype=np.uint8)
    assert target.register_buffer(remote)[0] == hixl.SUCCESS
    assert initiator.register_buffer(local)[0] == hixl.SUCCESS
    assert initiator.connect(name, 10000) == hixl.SUCCESS
    yield initiator, name, local, remote
    initiator.finalize()
    target.finalize()


def scattered(local, remote):
    """Descriptor columns: block i of remote (reversed order) to block i of local."""
    i = np.arange(N, dtype=np.uint64)
    return (local.ctypes.data + i * SIZE, remote.ctypes.data + (N - 1 - i) * SIZE, np.full(N, SIZE, dtype=np.uint64))


def expected(remote):
    return remote.reshape(N, SIZE)[::-1].reshape(-1)


def test_matrix_and_columns_move_the_same_bytes_as_objects(pair):
    initiator, name, local, remote = pair
    lcol, rcol, ncol = scattered(local, remote)
    matrix = np.stack([lcol, rcol, ncol], axis=1)
    assert matrix.shape == (N, 3)
    assert initiator.transfer_sync(name, hixl.READ, matrix, 30000) == hixl.SUCCESS
    assert np.array_equal(local, expected(remote))
    local[:] = 0
    assert initiator.transfer_sync(name, hixl.READ, (lcol, rcol, ncol), 30000) == hixl.SUCCESS
    assert np.array_equal(local, expected(remote))
    local[:] = 0
    # int64 and a strided view (every column of a Fortran-ordered copy) work too.
    assert initiator.transfer_sync(name, hixl.READ, np.asfortranarray(matrix.astype(np.int64)), 30000) == hixl.SUCCESS
    assert np.array_equal(local, expected(remote))
    local[:] = 0
    objs = [hixl.TransferOpDesc(int(a), int(b), int(c)) for a, b, c in matrix[:10]]
    assert initiator.transfer_sync(name, hixl.READ, objs, 30000) == hixl.SUCCESS
    assert np.array_equal(local[: 10 * SIZE], expected(remote)[: 10 * SIZE])


def test_async_takes_arrays(pair):
    initiator, name, local, remote = pair
    matrix = np.stack(scattered(local, remote), axis=1)
    status, req = initiator.transfer_async(name, hixl.READ, matrix, hixl.TransferArgs(user_data="x"))
    assert status == hixl.SUCCESS
    done = wait_until(lambda: initiator.get_transfer_status(req)[1] != hixl.TransferStatus.WAITING)
    assert done
    assert np.array_equal(local, expected(remote))


def test_bad_arrays_are_refused_and_nothing_moves(pair):
    initiator, name, local, remote = pair
    lcol, rcol, ncol = scattered(local, remote)
    with pytest.raises(TypeError, match="8-byte integers"):
        initiator.transfer_sync(name, hixl.READ, np.stack([lcol, rcol, ncol], axis=1).astype(np.float64))
    with pytest.raises(TypeError, match="8-byte integers"):
        initiator.transfer_sync(name, hixl.READ, (lcol.astype(np.uint32), rcol, ncol))
    with pytest.raises(ValueError, match="N x 3"):
        initiator.transfer_sync(name, hixl.READ, np.zeros((4, 2), dtype=np.uint64))
    with pytest.raises(ValueError, match="one length"):
        initiator.transfer_sync(name, hixl.READ, (lcol, rcol[:-1], ncol))
    negative = np.stack([lcol, rcol, ncol], axis=1).astype(np.int64)
    negative[5, 2] = -1
    with pytest.raises(ValueError, match="negative length"):
        initiator.transfer_sync(name, hixl.READ, negative)
    # A descriptor outside the remote's memory: PARAM_INVALID, nothing of the batch moved.
    bad = np.stack([lcol, rcol, ncol], axis=1)
    bad[-1, 1] = 16
    assert initiator.transfer_sync(name, hixl.READ, bad, 30000) == hixl.PARAM_INVALID
    assert not local.any()
    empty = np.zeros((0, 3), dtype=np.uint64)
    assert initiator.transfer_sync(name, hixl.READ, empty, 30000) == hixl.SUCCESS
