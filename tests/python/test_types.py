"""The data classes: construction, fields, and TypeError for wrong types."""

import pytest

import hixl


def test_mem_desc():
    d = hixl.MemDesc(0x1000, 4096)
    assert (d.addr, d.len) == (0x1000, 4096)
    d = hixl.MemDesc(addr=2**64 - 1, len=1)
    assert d.addr == 2**64 - 1
    d.len = 7
    assert d == hixl.MemDesc(2**64 - 1, 7)
    assert "0xffffffffffffffff" in repr(d)
    for bad in (("x", 1), (-1, 1), (2**64, 1), (1.5, 1), (1, -1)):
        with pytest.raises(TypeError):
            hixl.MemDesc(*bad)


def test_transfer_op_desc():
    d = hixl.TransferOpDesc(1, 2, 3)
    assert (d.local_addr, d.remote_addr, d.len) == (1, 2, 3)
    assert d == hixl.TransferOpDesc(local_addr=1, remote_addr=2, len=3)
    with pytest.raises(TypeError):
        hixl.TransferOpDesc(1, 2)
    with pytest.raises(TypeError):
        hixl.TransferOpDesc(1, None, 3)


def test_transfer_args_and_result():
    assert hixl.TransferArgs().user_data == 0  # HIXL's default
    marker = object()
    assert hixl.TransferArgs(marker).user_data is marker
    assert hixl.TransferArgs(user_data=42).user_data == 42  # HIXL passes ints
    a = hixl.TransferArgs()
    a.user_data = [1, 2]
    assert a.user_data == [1, 2]

    r = hixl.TransferResult()
    assert (r.req, r.user_data, r.status) == (0, 0, hixl.TransferStatus.WAITING)
    r = hixl.TransferResult(req=5, user_data="x", status=hixl.TransferStatus.COMPLETED)
    assert (r.req, r.user_data, r.status) == (5, "x", hixl.TransferStatus.COMPLETED)
    assert "COMPLETED" in repr(r)


def test_get_transfer_status_args():
    a = hixl.GetTransferStatusArgs()
    assert (a.max_query_count, a.skip_waiting) == (2**32 - 1, False)
    a = hixl.GetTransferStatusArgs(max_query_count=4, skip_waiting=True)
    assert (a.max_query_count, a.skip_waiting) == (4, True)
    with pytest.raises(TypeError):
        hixl.GetTransferStatusArgs(2**32)
    with pytest.raises(TypeError):
        hixl.GetTransferStatusArgs(-1)


def test_notify_desc():
    n = hixl.NotifyDesc(name="cache_ready", notify_msg="block_0")
    assert (n.name, n.notify_msg) == ("cache_ready", "block_0")
    assert n == hixl.NotifyDesc("cache_ready", b"block_0")
    assert hixl.NotifyDesc().name == ""

    # Any bytes survive, embedded NULs and non-UTF-8 included.
    raw = b"a\x00b\xff"
    n = hixl.NotifyDesc(raw, bytearray(raw))
    assert n.name_bytes == raw and n.notify_msg_bytes == raw
    assert n.name == "a\x00b\udcff"
    n2 = hixl.NotifyDesc(n.name, n.notify_msg)  # str round trip
    assert n2.name_bytes == raw
    n.notify_msg = "ünï"
    assert n.notify_msg_bytes == "ünï".encode()
    with pytest.raises(TypeError):
        hixl.NotifyDesc(1, "x")
    with pytest.raises(TypeError):
        n.name = None


def test_enums_are_typed():
    assert isinstance(hixl.READ, hixl.TransferOp)
    assert isinstance(hixl.MEM_HOST, hixl.MemType)
    assert hixl.TransferOp.READ is hixl.READ or hixl.TransferOp.READ == hixl.READ
    assert hixl.AsyncConnectStatus.CONNECTED == hixl.CONNECTED
    assert hixl.FeatureType.AUTO_CONNECT == hixl.AUTO_CONNECT
