"""The KV-cache example (examples/python/kv_prefill.py and kv_decode.py)
runs as the README shows: two processes, every byte checked by decode."""

import os
import subprocess
import sys

import pytest

from conftest import REPO, child_env, free_port

pytestmark = pytest.mark.timeout(120)

EXAMPLES = os.path.join(REPO, "examples", "python")


def test_prefill_and_decode_processes():
    prefill_addr, decode_addr = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    env = child_env()
    prefill = subprocess.Popen(
        [sys.executable, "kv_prefill.py", "--listen", prefill_addr, "--decode", decode_addr],
        cwd=EXAMPLES, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        decode = subprocess.run(
            [sys.executable, "kv_decode.py", "--listen", decode_addr, "--prefill", prefill_addr],
            cwd=EXAMPLES, env=env, capture_output=True, text=True, timeout=90)
        out, _ = prefill.communicate(timeout=60)
    finally:
        if prefill.poll() is None:
            prefill.kill()
            prefill.wait()
    assert decode.returncode == 0, decode.stdout + decode.stderr
    assert prefill.returncode == 0, out
    assert "request B landed (2 blocks x 8 tensors), bytes checked" in decode.stdout
    assert "request A pulled (163840 bytes in 24 descriptors), bytes checked" in decode.stdout
    assert out.splitlines() == ["prefill: request A computed", "prefill: request B pushed", "prefill: done"]
