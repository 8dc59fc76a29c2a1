# examples/python/kv_model.py: what the prefill and decode examples share: the
# KV cache's shape, the blocks of two requests, and the values "prefill"
# computes (so that decode can check every byte it receives).
import time

import torch

import llm_datadist as ld

PREFILL, DECODE = 0, 1  # cluster ids
LAYERS, BLOCKS, BLOCK_TOKENS, KV_HEADS, HEAD_DIM = 4, 32, 16, 2, 64
SHAPE = [BLOCKS, BLOCK_TOKENS, KV_HEADS, HEAD_DIM]  # one K or V tensor of one layer

# Request A: decode pulls it. Request B: prefill pushes it, layer by layer.
A_PREFILL_BLOCKS, A_DECODE_BLOCKS = [3, 7, 8, 9, 20], [0, 1, 2, 3, 4]
B_PREFILL_BLOCKS, B_DECODE_BLOCKS = [11, 12], [10, 11]


def config(listen):
    cfg = ld.LLMConfig()
    cfg.device_id = 0
    cfg.listen_ip_info = listen  # both sides serve: each can be linked to
    cfg.sync_kv_timeout = 10000
    return cfg.generate_options()


def kv_cache(cache_manager, my_cluster):
    """K and V tensors of every layer (K0, V0, K1, V1...), registered as a blocks cache."""
    tensors = [torch.zeros(SHAPE, dtype=torch.bfloat16) for _ in range(2 * LAYERS)]
    desc = ld.CacheDesc(2 * LAYERS, SHAPE, ld.DataType.DT_BF16, ld.Placement.HOST)
    cache = cache_manager.register_blocks_cache(desc, tensors, ld.BlocksCacheKey(my_cluster, 0))
    return cache, tensors


def computed_block(tensor_index, block):
    """What prefill's tensor tensor_index holds in `block` once computed."""
    base = tensor_index * 1000 + block * 10
    return (torch.arange(BLOCK_TOKENS * KV_HEADS * HEAD_DIM, dtype=torch.float32) % 7 + base).to(
        torch.bfloat16).reshape(SHAPE[1:])


def link(datadist, cluster_id, address, attempts=150):
    """Links to a cluster, retrying while it is still starting (at most 15 s)."""
    c = ld.LLMClusterInfo()
    c.remote_cluster_id = cluster_id
    ip, port = address.rsplit(":", 1)
    c.append_local_ip_info(ip, 0)  # required by LLM-DataDist's API (unless local_comm_res is set); hixl needs none
    c.append_remote_ip_info(ip, int(port))
    for _ in range(attempts):
        ret, _ = datadist.link_clusters([c], 2000)
        if ret == ld.LLMStatusCode.LLM_SUCCESS:
            return
        time.sleep(0.1)
    raise RuntimeError(f"could not link to cluster {cluster_id} at {address}")
