"""Peer authentication through the Python binding: the key file goes in
GlobalResourceConfig ("auth.key_file") or HIXL_AUTH_KEY_FILE, as in C++
(docs/security.md). Two engines in this process, over 127.0.0.1."""

import json
import os

import numpy as np
import pytest

import hixl
from conftest import CONNECT_TIMEOUT_MS, TRANSFER_TIMEOUT_MS, start_server


@pytest.fixture
def key_file(tmp_path):
    def make(secret, mode=0o600):
        path = tmp_path / f"key{len(list(tmp_path.iterdir()))}"
        path.write_bytes(secret)
        path.chmod(mode)
        return str(path)

    return make


def config(path):
    return {hixl.OPTION_GLOBAL_RESOURCE_CONFIG: json.dumps({"auth.key_file": path})}


@pytest.fixture
def target(key_file):
    engine = hixl.Hixl()
    name = start_server(engine, config(key_file(b"python's shared secret, 32 bytes\n")))
    buf = np.zeros(1 << 16, dtype=np.uint8)
    ret, _ = engine.register_buffer(buf)
    assert ret == hixl.SUCCESS
    yield name, buf
    engine.finalize()


def test_same_key_moves_bytes(target, key_file):
    name, remote = target
    engine = hixl.Hixl()
    assert engine.initialize("127.0.0.1", config(key_file(b"python's shared secret, 32 bytes"))) == hixl.SUCCESS
    src = np.arange(remote.size, dtype=np.uint32).view(np.uint8)[: remote.size].copy()
    assert engine.register_buffer(src)[0] == hixl.SUCCESS
    assert engine.connect(name, timeout_in_millis=CONNECT_TIMEOUT_MS) == hixl.SUCCESS
    remote_addr, _ = hixl.buffer_address(remote)
    desc = hixl.transfer_op_desc(src, remote_addr)
    assert engine.transfer_sync(name, hixl.WRITE, [desc], TRANSFER_TIMEOUT_MS) == hixl.SUCCESS
    np.testing.assert_array_equal(remote, src)
    engine.finalize()


def test_keyless_or_wrong_key_is_refused_and_env_supplies_the_key(target, key_file, monkeypatch):
    name, _ = target
    for options in ({}, config(key_file(b"not python's shared secret, 32 b"))):
        engine = hixl.Hixl()
        assert engine.initialize("127.0.0.1", options) == hixl.SUCCESS
        assert engine.connect(name, timeout_in_millis=CONNECT_TIMEOUT_MS) == hixl.FAILED
        engine.finalize()
    monkeypatch.setenv("HIXL_AUTH_KEY_FILE", key_file(b"python's shared secret, 32 bytes"))
    engine = hixl.Hixl()
    assert engine.initialize("127.0.0.1", {}) == hixl.SUCCESS
    assert engine.connect(name, timeout_in_millis=CONNECT_TIMEOUT_MS) == hixl.SUCCESS
    engine.finalize()


def test_bad_key_file_fails_initialize(key_file):
    for path in (key_file(b"short"), key_file(b"a long enough secret, but 0644", 0o644), "/nonexistent/key"):
        engine = hixl.Hixl()
        assert engine.initialize("127.0.0.1", config(path)) == hixl.PARAM_INVALID, path
