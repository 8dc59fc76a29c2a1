"""Error statuses for bad arguments and wrong states (never exceptions), and
TypeError for arguments of the wrong Python type."""

import socket

import numpy as np
import pytest

import hixl
from conftest import free_port

GOOD_REMOTE = "127.0.0.1:9"  # well-formed; nothing is expected to listen there


def test_calls_before_initialize_fail(engine):
    md = hixl.MemDesc(0x1000, 16)
    assert engine.register_mem(md, hixl.MEM_HOST) == (hixl.FAILED, 0)
    assert engine.deregister_mem(0x1234) == hixl.FAILED
    assert engine.connect(GOOD_REMOTE) == hixl.FAILED
    assert engine.disconnect(GOOD_REMOTE) == hixl.FAILED
    assert engine.connect_async(GOOD_REMOTE) == hixl.FAILED
    assert engine.disconnect_async(GOOD_REMOTE) == hixl.FAILED
    assert engine.get_async_connect_status(GOOD_REMOTE)[0] == hixl.FAILED
    assert engine.get_all_async_connect_status() == (hixl.FAILED, {})
    assert engine.transfer_sync(GOOD_REMOTE, hixl.READ, []) == hixl.FAILED
    assert engine.transfer_async(GOOD_REMOTE, hixl.READ, [])[0] == hixl.FAILED
    assert engine.get_transfer_status(1)[0] == hixl.FAILED
    assert engine.get_transfer_status(hixl.GetTransferStatusArgs()) == (hixl.FAILED, [])
    assert engine.send_notify(GOOD_REMOTE, hixl.NotifyDesc("n", "m")) == hixl.FAILED
    assert engine.get_notifies() == (hixl.FAILED, [])
    engine.finalize()  # safe without initialize
    engine.finalize()


def test_initialize_errors(engine):
    assert engine.initialize("not-an-address") == hixl.PARAM_INVALID
    assert engine.initialize("127.0.0.1:70000") == hixl.PARAM_INVALID
    assert engine.initialize("127.0.0.1", {hixl.OPTION_BUFFER_POOL: "nonsense"}) == hixl.PARAM_INVALID
    assert engine.initialize("127.0.0.1", {hixl.OPTION_GLOBAL_RESOURCE_CONFIG: "{not json"}) == hixl.PARAM_INVALID
    assert engine.initialize("127.0.0.1", {hixl.OPTION_ENABLE_USE_FABRIC_MEM: "1"}) == hixl.UNSUPPORTED
    assert engine.initialize("127.0.0.1", {"SomeUnknownKey": "x"}) == hixl.SUCCESS  # ignored, logged
    engine.finalize()
    assert engine.initialize("127.0.0.1", options={hixl.OPTION_BUFFER_POOL: "0:0"}) == hixl.SUCCESS


def test_initialize_again_is_ignored(engine):
    """As HIXL's module: a second initialize without finalize returns SUCCESS
    and changes nothing (it returned FAILED, the C++ call's status)."""
    assert engine.initialize("127.0.0.1") == hixl.SUCCESS
    port = free_port()
    assert engine.initialize(f"127.0.0.1:{port}") == hixl.SUCCESS
    assert engine.initialize("not-an-address") == hixl.SUCCESS  # not even looked at
    probe = socket.socket()
    try:
        assert probe.connect_ex(("127.0.0.1", port)) != 0, "the ignored initialize started a listener"
    finally:
        probe.close()
    engine.finalize()
    assert engine.initialize(f"127.0.0.1:{port}") == hixl.SUCCESS  # after finalize it is a first one
    probe = socket.create_connection(("127.0.0.1", port), timeout=5)
    probe.close()


def test_argument_errors(engine):
    assert engine.initialize("127.0.0.1") == hixl.SUCCESS
    buf = np.zeros(64, dtype=np.uint8)
    assert engine.register_mem(hixl.MemDesc(0, 64), hixl.MEM_HOST)[0] == hixl.PARAM_INVALID
    assert engine.register_mem(hixl.MemDesc(buf.ctypes.data, 0), hixl.MEM_HOST)[0] == hixl.PARAM_INVALID
    assert engine.register_mem(hixl.mem_desc(buf), hixl.MEM_DEVICE)[0] == hixl.UNSUPPORTED
    assert engine.register_mem(hixl.mem_desc(buf), hixl.MemType(7))[0] == hixl.PARAM_INVALID
    ret, handle = engine.register_mem(hixl.mem_desc(buf), hixl.MEM_HOST)
    assert ret == hixl.SUCCESS and handle != 0
    assert engine.register_mem(hixl.mem_desc(buf), hixl.MEM_HOST) == (hixl.SUCCESS, handle)  # same region
    assert engine.deregister_mem(0) == hixl.PARAM_INVALID
    assert engine.deregister_mem(handle) == hixl.SUCCESS
    assert engine.deregister_mem(handle) == hixl.SUCCESS  # again: no effect

    for bad_remote in ("", "nonsense", "127.0.0.1", "127.0.0.1:0", "1.2.3.4:99999"):
        assert engine.connect(bad_remote) == hixl.PARAM_INVALID, bad_remote
    assert engine.connect(GOOD_REMOTE, 0) == hixl.PARAM_INVALID
    assert engine.connect(GOOD_REMOTE, timeout_in_millis=-1) == hixl.PARAM_INVALID
    assert engine.disconnect(GOOD_REMOTE) == hixl.NOT_CONNECTED
    assert engine.disconnect("nonsense") == hixl.PARAM_INVALID

    desc = hixl.transfer_op_desc(buf, 0x1000)
    assert engine.transfer_sync(GOOD_REMOTE, hixl.WRITE, [desc]) == hixl.NOT_CONNECTED
    assert engine.transfer_sync("nonsense", hixl.WRITE, [desc]) == hixl.PARAM_INVALID
    assert engine.transfer_sync(GOOD_REMOTE, hixl.WRITE, [desc], 0) == hixl.PARAM_INVALID
    assert engine.transfer_sync(GOOD_REMOTE, hixl.TransferOp(5), [desc]) == hixl.PARAM_INVALID
    assert engine.transfer_sync(GOOD_REMOTE, hixl.READ, []) == hixl.SUCCESS  # empty batch

    assert engine.send_notify(GOOD_REMOTE, hixl.NotifyDesc("n", "m")) == hixl.NOT_CONNECTED
    assert engine.send_notify(GOOD_REMOTE, hixl.NotifyDesc("n", "m"), 0) == hixl.PARAM_INVALID
    assert engine.send_notify(GOOD_REMOTE, hixl.NotifyDesc("n" * 1025, "m")) == hixl.PARAM_INVALID
    assert engine.send_notify(GOOD_REMOTE, hixl.NotifyDesc("n", b"m" * 1025)) == hixl.PARAM_INVALID
    assert engine.get_notifies() == (hixl.SUCCESS, [])


def test_connect_refused(engine):
    assert engine.initialize("127.0.0.1") == hixl.SUCCESS
    assert engine.connect(f"127.0.0.1:{free_port()}", 2000) == hixl.FAILED


def test_get_capability():
    assert hixl.get_capability(hixl.CLIENT_SERVER_COMM) == (hixl.SUCCESS, hixl.FEATURE_SUPPORTED)
    ret, value = hixl.get_capability(hixl.FeatureType.AUTO_CONNECT)
    assert ret == hixl.SUCCESS and value in (hixl.FEATURE_SUPPORTED, hixl.FEATURE_NOT_SUPPORTED)
    assert hixl.get_capability(hixl.FeatureType(-1))[0] == hixl.PARAM_INVALID
    assert hixl.get_capability(-1)[0] == hixl.PARAM_INVALID
    assert hixl.get_capability(1000) == (hixl.SUCCESS, hixl.FEATURE_NOT_SUPPORTED)
    assert hixl.get_capability(1) == (hixl.SUCCESS, hixl.FEATURE_SUPPORTED)
    with pytest.raises(TypeError):
        hixl.get_capability("AUTO_CONNECT")
    with pytest.raises(TypeError):
        hixl.get_capability(2**31)


def test_python_type_errors(engine):
    with pytest.raises(TypeError):
        engine.initialize(123)
    with pytest.raises(TypeError):
        engine.initialize("127.0.0.1", {"BufferPool": 4})  # values are str
    with pytest.raises(TypeError):
        engine.initialize("127.0.0.1", ["not", "a", "dict"])
    assert engine.initialize("127.0.0.1") == hixl.SUCCESS
    with pytest.raises(TypeError):
        engine.register_mem((0x1000, 16), hixl.MEM_HOST)
    with pytest.raises(TypeError):
        engine.register_mem(hixl.MemDesc(0x1000, 16), 1)  # an int is not a MemType
    with pytest.raises(TypeError):
        engine.deregister_mem(-1)
    with pytest.raises(TypeError):
        engine.deregister_mem(None)
    with pytest.raises(TypeError):
        engine.connect(GOOD_REMOTE, 2**31)  # timeout is int32
    with pytest.raises(TypeError):
        engine.connect(GOOD_REMOTE, 1.5)
    with pytest.raises(TypeError):
        engine.transfer_sync(GOOD_REMOTE, "READ", [])
    with pytest.raises(TypeError):
        engine.transfer_sync(GOOD_REMOTE, hixl.READ, [(1, 2, 3)])
    with pytest.raises(TypeError):
        engine.transfer_sync(GOOD_REMOTE, hixl.READ, hixl.TransferOpDesc(1, 2, 3))
    with pytest.raises(TypeError):
        engine.get_transfer_status("req")
    with pytest.raises(TypeError):
        engine.send_notify(GOOD_REMOTE, ("name", "msg"))
    # A tuple of descriptors is as good as a list.
    assert engine.transfer_sync(GOOD_REMOTE, hixl.READ, (hixl.TransferOpDesc(1, 2, 3),)) == hixl.NOT_CONNECTED


def test_context_manager():
    with hixl.Hixl() as e:
        assert e.initialize("127.0.0.1") == hixl.SUCCESS
    assert e.connect(GOOD_REMOTE) == hixl.FAILED  # finalized on exit
