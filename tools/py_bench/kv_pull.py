"""pull_blocks from Python (llm_datadist) on a real model shape, beside the
same bytes as one contiguous hixl READ from Python, in the same run; the
ratio is comparable with hixl_kv_bench's pull rows (C++).

    PYTHONPATH=build/python /usr/bin/python3 tools/py_bench/kv_pull.py \\
        --bench build/tools/hixl_kv_bench [--transport tcp] [--pattern random] [--iters 5]

The target is hixl_kv_bench's own target process (--role target): an
LlmDataDist with one allocated cache. Defaults: Llama-3.1-8B, 32 layers,
16-token blocks, a 4K prompt (512 MiB a request), a pool of twice that.
"""

import argparse
import ctypes
import json
import random
import socket
import statistics
import subprocess
import time

import hixl
import llm_datadist as ld


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def blocks(pattern, count, pool, rng):
    if pattern == "contiguous":
        start = rng.randrange(pool - count + 1)
        return list(range(start, start + count))
    if pattern == "random":
        return rng.sample(range(pool), count)
    runs, at = [], 0  # realistic: the pool in runs of 4-16, shuffled
    while at < pool:
        n = min(rng.randint(4, 16), pool - at)
        runs.append(range(at, at + n))
        at += n
    rng.shuffle(runs)
    return [b for r in runs for b in r][:count]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True)
    ap.add_argument("--transport", default="tcp")
    ap.add_argument("--pattern", default="random")
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--block-tokens", type=int, default=16)
    ap.add_argument("--prompt", type=int, default=4096)
    args = ap.parse_args()
    tensors = 2 * args.layers
    count = args.prompt // args.block_tokens
    pool = 2 * count
    block_bytes = args.block_tokens * args.kv_heads * args.head_dim * 2
    listen = f"127.0.0.1:{free_port()}"
    target = subprocess.Popen([args.bench, "--role", "target", "--listen", listen, "--transport", args.transport,
                               "--target-geometry", f"{tensors},{pool},{block_bytes}"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = target.stdout.readline().split()
    assert line[0] == "READY", line
    remote_base = int(line[2])
    cfg = ld.LLMConfig()
    cfg.device_id = 0
    cfg.sync_kv_timeout = 120000
    cfg.global_resource_config = json.dumps({"comm_resource_config.protocol_desc": [f"{args.transport}:host"]})
    dd = ld.LLMDataDist(ld.LLMRole.DECODER, 2)
    dd.init(cfg.generate_options())
    cm = dd.cache_manager
    desc = ld.CacheDesc(tensors, [pool, block_bytes // 2], ld.DataType.DT_BF16, ld.Placement.HOST)
    cache = cm.allocate_blocks_cache(desc)
    # Fault the pages in, as a serving cache's are (hixl_kv_bench does the same).
    ctypes.memset(cache.tensor_addrs[0], 0, tensors * pool * block_bytes)
    c = ld.LLMClusterInfo()
    c.remote_cluster_id = 1
    c.append_local_ip_info("127.0.0.1", 0)  # required by LLM-DataDist's API; hixl needs none
    c.append_remote_ip_info("127.0.0.1", int(listen.rsplit(":", 1)[1]))
    assert dd.link_clusters([c], 10000)[0] == ld.LLMStatusCode.LLM_SUCCESS
    raw = hixl.Hixl()
    opts = {hixl.OPTION_BUFFER_POOL: "0:0", hixl.OPTION_GLOBAL_RESOURCE_CONFIG: cfg.global_resource_config}
    assert raw.initialize("127.0.0.1", opts) == hixl.SUCCESS
    total = tensors * count * block_bytes
    assert raw.register_mem(hixl.MemDesc(cache.tensor_addrs[0], tensors * pool * block_bytes), hixl.MEM_HOST)[0] == 0
    assert raw.connect(listen, 10000) == hixl.SUCCESS
    one = [hixl.TransferOpDesc(cache.tensor_addrs[0], remote_base, total)]
    rng = random.Random(42)
    key = ld.BlocksCacheKey(1, 0)
    ratios, kv_times, base_times = [], [], []
    for i in range(-1, args.iters):
        src, dst = blocks(args.pattern, count, pool, rng), blocks(args.pattern, count, pool, rng)
        t0 = time.perf_counter()
        if i % 2:
            assert raw.transfer_sync(listen, hixl.READ, one, 120000) == hixl.SUCCESS
        t1 = time.perf_counter()
        report = cm.pull_blocks(key, cache, src, dst)
        t2 = time.perf_counter()
        if not i % 2:
            assert raw.transfer_sync(listen, hixl.READ, one, 120000) == hixl.SUCCESS
        t3 = time.perf_counter()
        kv, base = t2 - t1, (t1 - t0) + (t3 - t2)
        if i >= 0:
            kv_times.append(kv)
            base_times.append(base)
            ratios.append(base / kv)
    kv_p50 = statistics.median(kv_times)
    print(f"python pull_blocks {args.pattern:10s} {args.transport}: {total / 2**20:.0f} MiB, "
          f"{report['descriptors']} descriptors, p50 {kv_p50 * 1e3:.1f} ms ({total / kv_p50 / 1e9:.2f} GB/s), "
          f"contiguous READ p50 {statistics.median(base_times) * 1e3:.1f} ms, ratio {statistics.median(ratios):.2f}")
    raw.finalize()
    dd.finalize()
    target.stdin.close()
    target.wait(timeout=30)


if __name__ == "__main__":
    main()
