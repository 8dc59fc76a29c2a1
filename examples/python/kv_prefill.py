# examples/python/kv_prefill.py: the prefill side. It computes two requests'
# KV blocks: request A for decode to pull, request B pushed to decode layer
# by layer while it still "computes" the next layer.
#
#   python3 kv_prefill.py --listen 127.0.0.1:26000 --decode 127.0.0.1:26001
import argparse
import threading
import time

import llm_datadist as ld
from kv_model import (A_PREFILL_BLOCKS, B_DECODE_BLOCKS, B_PREFILL_BLOCKS, DECODE, LAYERS, PREFILL, computed_block,
                      config, kv_cache, link)


class LayerDone(ld.LayerSynchronizer):
    """The push of a layer waits until its compute is done."""

    def __init__(self):
        self.done = [threading.Event() for _ in range(LAYERS)]

    def synchronize_layer(self, layer_index, timeout_in_millis):
        return self.done[layer_index].wait(10)


ap = argparse.ArgumentParser()
ap.add_argument("--listen", required=True)
ap.add_argument("--decode", required=True)
args = ap.parse_args()

datadist = ld.LLMDataDist(ld.LLMRole.PROMPT, PREFILL)
datadist.init(config(args.listen))
cm = datadist.cache_manager
cache, kv = kv_cache(cm, PREFILL)

# Request A: every layer computed at once; decode pulls it when it likes.
for t in range(2 * LAYERS):
    for b in A_PREFILL_BLOCKS:
        kv[t][b] = computed_block(t, b)
print("prefill: request A computed", flush=True)

# Request B: pushed layer by layer as each is computed.
link(datadist, DECODE, args.decode)
sync = LayerDone()
to_decode = ld.TransferWithCacheKeyConfig(ld.BlocksCacheKey(DECODE, 0), range(0, LAYERS), range(0, LAYERS))
task = cm.transfer_cache_async(cache, sync, [to_decode], B_PREFILL_BLOCKS, B_DECODE_BLOCKS, ready_tag="request-B")
for layer in range(LAYERS):
    time.sleep(0.01)  # the layer's compute
    for t in (2 * layer, 2 * layer + 1):  # its K and V
        for b in B_PREFILL_BLOCKS:
            kv[t][b] = computed_block(t, b)
    sync.done[layer].set()
assert task.synchronize(10000) == ld.LLMStatusCode.LLM_SUCCESS
print("prefill: request B pushed", flush=True)

# Decode says when it has what it needs; until then our memory must stay.
cm.wait_ready("decode-done", 60000)
datadist.finalize()
print("prefill: done", flush=True)
