# examples/python/kv_decode.py: the decode side. It pulls request A's blocks
# from prefill, receives request B's (pushed layer by layer), and checks
# every byte against what prefill computed.
#
#   python3 kv_decode.py --listen 127.0.0.1:26001 --prefill 127.0.0.1:26000
import argparse

import torch

import llm_datadist as ld
from kv_model import (A_DECODE_BLOCKS, A_PREFILL_BLOCKS, B_DECODE_BLOCKS, B_PREFILL_BLOCKS, DECODE, LAYERS, PREFILL,
                      computed_block, config, kv_cache, link)

ap = argparse.ArgumentParser()
ap.add_argument("--listen", required=True)
ap.add_argument("--prefill", required=True)
args = ap.parse_args()

datadist = ld.LLMDataDist(ld.LLMRole.DECODER, DECODE)
datadist.init(config(args.listen))
cm = datadist.cache_manager
cache, kv = kv_cache(cm, DECODE)
link(datadist, PREFILL, args.prefill)


def check(src_blocks, dst_blocks):
    for t in range(2 * LAYERS):
        for s, d in zip(src_blocks, dst_blocks):
            assert torch.equal(kv[t][d], computed_block(t, s)), f"tensor {t} block {d}"


# Request B: its notice comes only after its data.
notice = cm.wait_ready("request-B", 30000)
assert notice.status == ld.LLMStatusCode.LLM_SUCCESS, notice
check(B_PREFILL_BLOCKS, B_DECODE_BLOCKS)
print(f"decode: request B landed ({len(B_DECODE_BLOCKS)} blocks x {2 * LAYERS} tensors), bytes checked", flush=True)

# Request A: prefill computed it before it pushed B (real serving learns what
# is ready, and which blocks, from its scheduler).
report = cm.pull_blocks(ld.BlocksCacheKey(PREFILL, 0), cache, A_PREFILL_BLOCKS, A_DECODE_BLOCKS)
check(A_PREFILL_BLOCKS, A_DECODE_BLOCKS)
print(f"decode: request A pulled ({report['bytes']} bytes in {report['descriptors']} descriptors), bytes checked",
      flush=True)

cm.notify_ready(PREFILL, "decode-done")
datadist.finalize()
print("decode: done", flush=True)
