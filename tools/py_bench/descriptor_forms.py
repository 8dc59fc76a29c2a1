"""Times transfer_sync of many descriptors from Python: a list of
TransferOpDesc objects (one Python object per descriptor) against the NumPy
forms (one N x 3 array, or three arrays). Two engines of this process, over
shm or tcp, 32,768 descriptors of 4 KiB (128 MiB) by default.

    PYTHONPATH=build/python /usr/bin/python3 tools/py_bench/descriptor_forms.py [--transport tcp] [--rounds 7]

Prints the median seconds of each form: building the descriptors, and
building plus the transfer.
"""

import argparse
import json
import socket
import statistics
import time

import numpy as np

import hixl


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=32768)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--transport", default="shm")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    cfg = {hixl.OPTION_GLOBAL_RESOURCE_CONFIG: json.dumps(
        {"comm_resource_config.protocol_desc": [f"{args.transport}:host"]})}
    total = args.count * args.size
    target, initiator = hixl.Hixl(), hixl.Hixl()
    name = f"127.0.0.1:{free_port()}"
    assert target.initialize(name, cfg) == hixl.SUCCESS
    assert initiator.initialize("127.0.0.1", cfg) == hixl.SUCCESS
    remote = np.ones(total, dtype=np.uint8)
    local = np.zeros(total, dtype=np.uint8)
    assert target.register_buffer(remote)[0] == hixl.SUCCESS
    assert initiator.register_buffer(local)[0] == hixl.SUCCESS
    assert initiator.connect(name, 5000) == hixl.SUCCESS
    laddr, raddr = local.ctypes.data, remote.ctypes.data
    # Every other block, reversed on the remote side: nothing merges.
    idx = np.arange(args.count, dtype=np.uint64)
    lofs = idx * args.size
    rofs = (args.count - 1 - idx) * args.size

    def objects():
        return [hixl.TransferOpDesc(laddr + int(l), raddr + int(r), args.size) for l, r in zip(lofs, rofs)]

    def array():
        d = np.empty((args.count, 3), dtype=np.uint64)
        d[:, 0] = laddr + lofs
        d[:, 1] = raddr + rofs
        d[:, 2] = args.size
        return d

    def columns():
        return (laddr + lofs, raddr + rofs, np.full(args.count, args.size, dtype=np.uint64))

    forms = {"TransferOpDesc list": objects, "N x 3 array": array, "three arrays": columns}
    for label, make in forms.items():
        build, whole = [], []
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            try:
                descs = make()
                t1 = time.perf_counter()
                status = initiator.transfer_sync(name, hixl.READ, descs, 30000)
            except TypeError as e:  # a form this build does not take
                print(f"{label:22s} not supported here ({e.__class__.__name__})")
                break
            t2 = time.perf_counter()
            assert status == hixl.SUCCESS, status
            build.append(t1 - t0)
            whole.append(t2 - t0)
        else:
            print(f"{label:22s} build {statistics.median(build) * 1e3:7.1f} ms   build+transfer "
                  f"{statistics.median(whole) * 1e3:7.1f} ms   ({args.count} x {args.size} B over {args.transport})")
    initiator.finalize()
    target.finalize()


if __name__ == "__main__":
    main()
