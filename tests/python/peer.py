#!/usr/bin/env python3
"""Second process of the Python tests (see conftest.Peer).

Starts a HIXL server engine on a free 127.0.0.1 port with one registered NumPy
buffer, prints {"ok": true, "engine": ..., "addr": ..., "len": ...} and then
answers commands read from stdin, one JSON object per line, with one JSON
object per line on stdout ({"ok": true, ...} or {"ok": false, "error": ...}).
stdout carries nothing else; HIXL's log goes to stderr. EOF on stdin ends it.
"""

import argparse
import base64
import hashlib
import json
import socket
import sys
import traceback

import numpy as np

import hixl


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pattern(seed, size):
    """The bytes a "fill" with this seed writes (the tests rebuild them)."""
    return np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8)


class PeerState:
    def __init__(self, size):
        self.engine = hixl.Hixl()
        for _ in range(20):
            self.name = f"127.0.0.1:{free_port()}"
            if self.engine.initialize(self.name) == hixl.SUCCESS:
                break
        else:
            raise RuntimeError("could not start the peer's engine")
        self.buf = np.zeros(size, dtype=np.uint8)
        ret, self.handle = self.engine.register_buffer(self.buf)
        if ret != hixl.SUCCESS:
            raise RuntimeError(f"register_buffer: {hixl.status_name(ret)}")
        self.addr, _ = hixl.buffer_address(self.buf)

    def hello(self):
        return {"engine": self.name, "addr": self.addr, "len": int(self.buf.nbytes)}

    # Commands: cmd_<name>(**args) -> dict merged into the reply.
    def cmd_fill(self, seed):
        self.buf[:] = pattern(seed, self.buf.size)
        return {"sha256": hashlib.sha256(self.buf).hexdigest()}

    def cmd_digest(self, offset=0, len=None):
        end = self.buf.nbytes if len is None else offset + len
        return {"sha256": hashlib.sha256(self.buf[offset:end]).hexdigest()}

    def cmd_read(self, offset, len):
        return {"data": base64.b64encode(self.buf[offset : offset + len].tobytes()).decode()}

    def cmd_connect(self, remote, timeout=10000):
        return {"status": self.engine.connect(remote, timeout)}

    def cmd_disconnect(self, remote, timeout=10000):
        return {"status": self.engine.disconnect(remote, timeout)}

    def cmd_transfer(self, remote, op, descs, timeout=30000):
        """descs: [[offset into the peer's buffer, remote address, length], ...]"""
        op_descs = [hixl.transfer_op_desc(self.buf, raddr, off, n) for off, raddr, n in descs]
        return {"status": self.engine.transfer_sync(remote, hixl.TransferOp.__members__[op], op_descs, timeout)}

    def cmd_send_notify(self, remote, name, msg, timeout=10000):
        notify = hixl.NotifyDesc(base64.b64decode(name), base64.b64decode(msg))
        return {"status": self.engine.send_notify(remote, notify, timeout)}

    def cmd_notifies(self):
        ret, notifies = self.engine.get_notifies()
        return {
            "status": ret,
            "notifies": [
                [base64.b64encode(n.name_bytes).decode(), base64.b64encode(n.notify_msg_bytes).decode()]
                for n in notifies
            ],
        }

    def cmd_exit(self):
        self.engine.finalize()
        return {}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=1 << 20)
    args = ap.parse_args()

    def reply(obj):
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

    try:
        state = PeerState(args.size)
    except Exception:  # noqa: BLE001 - reported to the test
        reply({"ok": False, "error": traceback.format_exc()})
        return 1
    reply(dict(state.hello(), ok=True))

    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            cmd = request.pop("cmd")
            result = getattr(state, "cmd_" + cmd)(**request)
            reply(dict(result, ok=True))
        except Exception:  # noqa: BLE001 - reported to the test
            reply({"ok": False, "error": traceback.format_exc()})
            continue
        if cmd == "exit":
            return 0
    state.engine.finalize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
