#!/usr/bin/env python3
"""Second process of the llm_datadist tests (see test_llm_two_process.LlmPeer).

An LLMDataDist server (cluster 1, prompt role) on a free 127.0.0.1 port whose
caches are CPU torch tensors. Prints {"ok": true, "listen": "ip:port"}, then
answers JSON commands on stdin, one per line, with one JSON line each:

  register  {tensors, shape, seed, blocks, key}   -> {cache_id}   (key: BlocksCacheKey model id, or
                                                                   a list of req ids for a batch cache)
  digest    {cache_id, tensors: [t0, t1], units}   -> {sha256}     (units: dim-0 indices, in order)
  unregister {cache_id}                            -> {}
  wait_ready {tag, timeout_ms}                     -> {status, failed_layers}
  allocate  {tensors, shape, seed, blocks, key}    -> {cache_id}   (allocate_cache / allocate_blocks_cache,
                                                                   filled as register fills)
  remove_key {req}                                 -> {}           (remove_cache_key(CacheKey(1, req)))
  link      {cluster, ip, port}                    -> {status}     (link_clusters)
  unlink    {cluster}                              -> {status}
  link_comm {name, ranks: [[cluster, rank]...], table}  -> {comm_id, status: RegisterMemStatus name}
  unlink_comm {comm_id}                            -> {}
  pull_blocks {cluster, model, src_blocks, cache_id, dst_blocks}  -> {}  (from BlocksCacheKey(cluster, model))
  exit                                             -> {}           (then finalize)

stdout carries nothing else; logs go to stderr.
"""

import argparse
import ctypes
import hashlib
import json
import socket
import sys
import traceback

import numpy as np
import torch

import llm_datadist as ld

CLUSTER = 1


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tensor_bytes(seed, t, shape):
    """The bytes tensor t of a cache registered with `seed` holds (the tests rebuild them)."""
    n = int(np.prod(shape)) * 2
    return np.random.default_rng(seed * 1000 + t).integers(0, 256, n, dtype=np.uint8)


def digest(tensors, t0, t1, units):
    h = hashlib.sha256()
    for t in range(t0, t1):
        flat = tensors[t].view(torch.int16).numpy().view(np.uint8).reshape(tensors[t].shape[0], -1)
        for u in units:
            h.update(flat[u].tobytes())
    return h.hexdigest()


class Peer:
    def __init__(self, transport):
        self.dd = ld.LLMDataDist(ld.LLMRole.PROMPT, CLUSTER)
        cfg = ld.LLMConfig()
        cfg.device_id = 0
        cfg.sync_kv_timeout = 20000
        if transport != "any":
            cfg.global_resource_config = json.dumps({"comm_resource_config.protocol_desc": [f"{transport}:host"]})
        for _ in range(20):
            self.listen = f"127.0.0.1:{free_port()}"
            cfg.listen_ip_info = self.listen
            try:
                self.dd.init(cfg.generate_options())
                break
            except ld.LLMException:
                continue
        else:
            raise RuntimeError("the peer's LLMDataDist did not start")
        self.caches = {}

    def cmd_register(self, tensors, shape, seed, blocks=True, key=None):
        ts = []
        for t in range(tensors):
            data = tensor_bytes(seed, t, shape) if seed else np.zeros(int(np.prod(shape)) * 2, dtype=np.uint8)
            ts.append(torch.from_numpy(data.view(np.int16).reshape(shape).copy()).view(torch.bfloat16))
        desc = ld.CacheDesc(tensors, shape, ld.DataType.DT_BF16, ld.Placement.HOST)
        cm = self.dd.cache_manager
        if blocks:
            cache = cm.register_blocks_cache(desc, ts, None if key is None else ld.BlocksCacheKey(CLUSTER, key))
        else:
            keys = [ld.CacheKey(CLUSTER, r) for r in (key or [])]
            cache = cm.register_cache(desc, [t.data_ptr() for t in ts], keys)
        self.caches[cache.cache_id] = (cache, ts)
        return {"cache_id": cache.cache_id}

    def cmd_allocate(self, tensors, shape, seed, blocks=True, key=None):
        desc = ld.CacheDesc(tensors, shape, ld.DataType.DT_BF16, ld.Placement.HOST)
        cm = self.dd.cache_manager
        if blocks:
            cache = cm.allocate_blocks_cache(desc, None if key is None else ld.BlocksCacheKey(CLUSTER, key))
        else:
            cache = cm.allocate_cache(desc, [ld.CacheKey(CLUSTER, r) for r in (key or [])])
        n = int(np.prod(shape)) * 2
        ts = []
        for t, addr in enumerate(cache.tensor_addrs):
            view = np.ctypeslib.as_array((ctypes.c_uint8 * n).from_address(addr))
            if seed:
                view[:] = tensor_bytes(seed, t, shape)
            ts.append(torch.from_numpy(view).view(torch.int16).reshape(shape).view(torch.bfloat16))
        self.caches[cache.cache_id] = (cache, ts)
        return {"cache_id": cache.cache_id}

    def cmd_remove_key(self, req):
        self.dd.cache_manager.remove_cache_key(ld.CacheKey(CLUSTER, req))
        return {}

    def _cluster(self, cluster, ip="127.0.0.1", port=1):
        c = ld.LLMClusterInfo()
        c.remote_cluster_id = cluster
        c.append_local_ip_info("127.0.0.1", 0)
        c.append_remote_ip_info(ip, port)
        return c

    def cmd_link(self, cluster, ip, port):
        ret, _ = self.dd.link_clusters([self._cluster(cluster, ip, port)], 5000)
        return {"status": int(ret)}

    def cmd_unlink(self, cluster):
        ret, _ = self.dd.unlink_clusters([self._cluster(cluster)], 5000)
        return {"status": int(ret)}

    def cmd_link_comm(self, name, ranks, table):
        comm_id = self.dd.link(name, {c: r for c, r in ranks}, table)
        return {"comm_id": comm_id, "status": self.dd.query_register_mem_status(comm_id).name}

    def cmd_unlink_comm(self, comm_id):
        self.dd.unlink(comm_id)
        return {}

    def cmd_pull_blocks(self, cluster, model, src_blocks, cache_id, dst_blocks):
        self.dd.cache_manager.pull_blocks(ld.BlocksCacheKey(cluster, model), self.caches[cache_id][0], src_blocks,
                                          dst_blocks)
        return {}

    def cmd_digest(self, cache_id, tensors, units):
        return {"sha256": digest(self.caches[cache_id][1], tensors[0], tensors[1], units)}

    def cmd_unregister(self, cache_id):
        self.dd.cache_manager.unregister_cache(cache_id)
        self.caches.pop(cache_id)
        return {}

    def cmd_wait_ready(self, tag, timeout_ms=20000):
        r = self.dd.cache_manager.wait_ready(tag, timeout_ms)
        return {"status": int(r.status), "failed_layers": r.failed_layers, "src": r.src_cluster_id}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--transport", default="tcp")
    args = ap.parse_args()
    peer = Peer(args.transport)
    print(json.dumps({"ok": True, "listen": peer.listen}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        cmd = req.pop("cmd")
        if cmd == "exit":
            print(json.dumps({"ok": True}), flush=True)
            break
        try:
            reply = dict(getattr(peer, "cmd_" + cmd)(**req), ok=True)
        except Exception as e:  # reported to the test, which fails with it
            reply = {"ok": False, "error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()}
            if isinstance(e, ld.LLMException):
                reply["status"] = int(e.status_code)
        print(json.dumps(reply), flush=True)
    peer.dd.finalize()


if __name__ == "__main__":
    main()
