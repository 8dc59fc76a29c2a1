"""Buffer-protocol helpers: buffer_address, mem_desc, transfer_op_desc, register_buffer."""

import ctypes
import gc
import mmap
import weakref

import numpy as np
import pytest

import hixl


def test_buffer_address_numpy():
    a = np.arange(1000, dtype=np.float32)
    addr, n = hixl.buffer_address(a)
    assert addr == a.ctypes.data == a.__array_interface__["data"][0]
    assert n == a.nbytes == 4000
    b = a[10:20]  # a contiguous view: its own start
    assert hixl.buffer_address(b) == (a.ctypes.data + 40, 40)
    m = np.zeros((3, 4), dtype=np.int64)
    assert hixl.buffer_address(m) == (m.ctypes.data, 96)


def test_buffer_address_bytearray_memoryview_mmap():
    data = bytearray(64)
    addr, n = hixl.buffer_address(data)
    assert n == 64
    assert addr == ctypes.addressof(ctypes.c_char.from_buffer(data))
    assert hixl.buffer_address(memoryview(data)[8:24]) == (addr + 8, 16)
    with mmap.mmap(-1, 8192) as mm:
        maddr, mn = hixl.buffer_address(mm)
        assert mn == 8192 and maddr == ctypes.addressof(ctypes.c_char.from_buffer(mm))
        del maddr


def test_read_only_needs_writable_false():
    with pytest.raises(BufferError, match="read-only"):
        hixl.buffer_address(b"immutable")
    ro = np.zeros(8)
    ro.flags.writeable = False
    with pytest.raises(BufferError, match="writable=False"):
        hixl.mem_desc(ro)
    addr, n = hixl.buffer_address(b"immutable", writable=False)
    assert n == 9 and addr != 0
    assert hixl.mem_desc(ro, writable=False).len == 64


def test_rejected_objects():
    with pytest.raises(TypeError):
        hixl.buffer_address(123)
    with pytest.raises(TypeError):
        hixl.buffer_address("str has no buffer")
    with pytest.raises((BufferError, ValueError)):
        hixl.buffer_address(np.zeros((4, 4))[:, 1])  # not contiguous
    with pytest.raises((BufferError, ValueError)):
        hixl.buffer_address(np.zeros((4, 4)).T)  # Fortran order
    with pytest.raises((BufferError, ValueError)):
        hixl.buffer_address(memoryview(bytearray(16))[::2])


def test_mem_desc():
    a = np.ones(256, dtype=np.uint16)
    assert hixl.mem_desc(a) == hixl.MemDesc(a.ctypes.data, 512)


def test_transfer_op_desc():
    a = np.zeros(100, dtype=np.uint8)
    base = a.ctypes.data
    assert hixl.transfer_op_desc(a, 0x5000) == hixl.TransferOpDesc(base, 0x5000, 100)
    assert hixl.transfer_op_desc(a, 0x5000, 10) == hixl.TransferOpDesc(base + 10, 0x5000, 90)
    assert hixl.transfer_op_desc(a, 0x5000, 10, 5, remote_offset=7) == hixl.TransferOpDesc(base + 10, 0x5007, 5)
    assert hixl.transfer_op_desc(a, 0x5000, local_offset=100).len == 0
    with pytest.raises(ValueError):
        hixl.transfer_op_desc(a, 0x5000, 101)
    with pytest.raises(ValueError):
        hixl.transfer_op_desc(a, 0x5000, 90, 11)
    with pytest.raises(ValueError):
        hixl.transfer_op_desc(a, 2**64 - 1, remote_offset=1)
    with pytest.raises(TypeError):
        hixl.transfer_op_desc(a, 0x5000, -1)
    with pytest.raises(TypeError):
        hixl.transfer_op_desc(a, -5)
    with pytest.raises(BufferError):
        hixl.transfer_op_desc(b"source", 0x5000)
    assert hixl.transfer_op_desc(b"source", 0x5000, writable=False).len == 6


def test_register_buffer_holds_the_object(engine):
    assert engine.initialize("127.0.0.1") == hixl.SUCCESS
    arr = np.zeros(1 << 16, dtype=np.uint8)
    watch = weakref.ref(arr)
    ret, handle = engine.register_buffer(arr)
    assert ret == hixl.SUCCESS and handle != 0
    del arr
    gc.collect()
    assert watch() is not None, "a registered buffer must stay alive"
    assert engine.deregister_mem(handle) == hixl.SUCCESS
    gc.collect()
    assert watch() is None, "deregister_mem must drop the binding's reference"

    data = bytearray(4096)
    ret, handle = engine.register_buffer(data)
    assert ret == hixl.SUCCESS
    with pytest.raises(BufferError):
        data.extend(b"x")  # cannot move while registered
    assert engine.deregister_mem(handle) == hixl.SUCCESS
    data.extend(b"x")  # released

    # The same memory twice gives the same handle; one deregister releases both holds.
    arr = np.zeros(4096, dtype=np.uint8)
    watch = weakref.ref(arr)
    ret1, h1 = engine.register_buffer(arr)
    ret2, h2 = engine.register_buffer(arr)
    assert ret1 == ret2 == hixl.SUCCESS and h1 == h2
    del arr
    assert engine.deregister_mem(h1) == hixl.SUCCESS
    gc.collect()
    assert watch() is None


def test_register_buffer_released_by_finalize():
    e = hixl.Hixl()
    assert e.initialize("127.0.0.1") == hixl.SUCCESS
    arr = np.zeros(1024, dtype=np.uint8)
    watch = weakref.ref(arr)
    assert e.register_buffer(arr)[0] == hixl.SUCCESS
    del arr
    e.finalize()
    gc.collect()
    assert watch() is None
    # ... and by destruction of the engine.
    e = hixl.Hixl()
    assert e.initialize("127.0.0.1") == hixl.SUCCESS
    arr = np.zeros(1024, dtype=np.uint8)
    watch = weakref.ref(arr)
    assert e.register_buffer(arr)[0] == hixl.SUCCESS
    del arr, e
    gc.collect()
    assert watch() is None


def test_register_buffer_failures(engine):
    arr = np.zeros(16, dtype=np.uint8)
    watch = weakref.ref(arr)
    assert engine.register_buffer(arr) == (hixl.FAILED, 0)  # not initialized
    assert engine.initialize("127.0.0.1") == hixl.SUCCESS
    assert engine.register_buffer(arr, hixl.MEM_DEVICE)[0] == hixl.UNSUPPORTED
    assert engine.register_buffer(np.zeros(0, dtype=np.uint8))[0] == hixl.PARAM_INVALID
    del arr
    gc.collect()
    assert watch() is None, "a failed registration must not hold the buffer"
    with pytest.raises(BufferError):
        engine.register_buffer(b"read-only")
    with pytest.raises(TypeError):
        engine.register_buffer(42)


class _FakeCudaTensor:
    """Looks like a CUDA tensor to the binding: __cuda_array_interface__, no buffer protocol."""

    @property
    def __cuda_array_interface__(self):
        return {"shape": (16,), "typestr": "|u1", "data": (0x7F0000000000, False), "version": 3}


def test_buffer_helpers_refuse_device_memory_and_say_what_to_do(engine):
    assert engine.initialize("127.0.0.1") == hixl.SUCCESS
    t = _FakeCudaTensor()
    for call in (lambda: hixl.buffer_address(t), lambda: hixl.mem_desc(t),
                 lambda: hixl.transfer_op_desc(t, 0x5000), lambda: engine.register_buffer(t, hixl.MEM_DEVICE)):
        with pytest.raises(TypeError, match=r"GPU \(CUDA\) memory.*register_mem\(MemDesc\(t.data_ptr\(\), t.nbytes\), MEM_DEVICE\)"):
            call()


def test_register_mem_device_without_cuda_is_unsupported(engine):
    """This machine has no NVIDIA driver: MEM_DEVICE says UNSUPPORTED (a GPU host runs the GPU check instead)."""
    import os
    if os.path.exists("/dev/nvidiactl"):
        pytest.skip("this host has an NVIDIA driver: scripts/gpu_check.sh covers MEM_DEVICE")
    assert engine.initialize("127.0.0.1") == hixl.SUCCESS
    host = np.zeros(4096, dtype=np.uint8)
    assert engine.register_mem(hixl.MemDesc(host.ctypes.data, host.nbytes), hixl.MEM_DEVICE)[0] == hixl.UNSUPPORTED
