"""LLMDataDist.link with a rank table, switch_role moving the listener, and
remove_cache_key, between this process and llm_peer.py (cluster 1, a
prompt), as HIXL's examples use them.

The rank-table tests run the flow of HIXL's pull_cache_sample.py,
pull_blocks_sample.py and pull_from_cache_to_blocks.py on host memory: both
sides link with a rank table (loopback addresses of their own, the default
port), query_register_mem_status until OK, the decoder pulls (bytes
checked), the prompt pulls from the decoder too (the link is two-sided),
both unlink, the prompt removes its cache keys, both finalize."""

import ctypes
import hashlib
import json
import random
import socket
import time

import numpy as np
import pytest

import llm_datadist as ld
from test_llm_two_process import PEER, SEED, LlmPeer, tensor_bytes

pytestmark = pytest.mark.timeout(180)

LOCAL = 2
Code = ld.LLMStatusCode
SHAPE = [8, 4, 64]  # 8 blocks (or batch items) of 512 bytes


@pytest.fixture
def peer():
    p = LlmPeer("any")
    yield p
    p.close()


def config(**kw):
    """LLMConfig as HIXL's examples make it (cache manager, a memory pool), with kw set."""
    cfg = ld.LLMConfig()
    cfg.device_id = 0
    cfg.enable_cache_manager = True
    cfg.mem_pool_cfg = '{"memory_size": 67108864}'
    cfg.sync_kv_timeout = 20000
    for k, v in kw.items():
        setattr(cfg, k, v)
    return cfg.generate_options()


@pytest.fixture
def decoder():
    dd = ld.LLMDataDist(ld.LLMRole.DECODER, LOCAL)
    dd.init(config())
    yield dd
    dd.finalize()


def rank_table(ranks):
    """HIXL's examples' rank table: a server per rank; ranks is [(device_ip, device_port or None)]."""
    servers = []
    for r, (ip, port) in enumerate(ranks):
        dev = {"device_id": "0", "device_ip": ip, "rank_id": str(r)}
        if port is not None:
            dev["device_port"] = str(port)
        servers.append({"device": [dev], "host_ip": ip, "server_id": str(r + 1)})
    return json.dumps({"server_count": str(len(ranks)), "status": "completed", "version": "1.2",
                       "server_list": servers})


def loopback_pair():
    """Two addresses of the loopback network that nothing else here uses (127.x.y.1 and .2)."""
    x, y = random.randrange(1, 255), random.randrange(1, 255)
    return f"127.{x}.{y}.1", f"127.{x}.{y}.2"


def free_port(ip="127.0.0.1"):
    with socket.socket() as s:
        s.bind((ip, 0))
        return s.getsockname()[1]


def listening(ip, port):
    with socket.socket() as s:
        s.settimeout(5)
        return s.connect_ex((ip, port)) == 0


def link_both(dd, peer, table, ranks=((PEER, 0), (LOCAL, 1))):
    """Both sides call link at once, as every member must; then query_register_mem_status until OK."""
    peer.send("link_comm", name="link", ranks=[list(r) for r in ranks], table=table)
    comm_id = dd.link("link", dict(ranks), table)
    reply = peer.reply()
    assert reply.get("ok"), reply
    assert reply["status"] == "OK"
    deadline = time.monotonic() + 30
    while dd.query_register_mem_status(comm_id) != ld.RegisterMemStatus.OK:
        assert time.monotonic() < deadline, "query_register_mem_status never said OK"
        time.sleep(0.01)
    return comm_id, reply["comm_id"]


def tensor_view(cache, t, shape=SHAPE):
    n = int(np.prod(shape)) * 2
    return np.ctypeslib.as_array((ctypes.c_uint8 * n).from_address(cache.tensor_addrs[t]))


def unit(data, u, shape=SHAPE):
    per = int(np.prod(shape[1:])) * 2
    return data[u * per:(u + 1) * per].tobytes()


def test_the_pull_examples_flow_over_a_rank_table(decoder, peer):
    ip_prompt, ip_decoder = loopback_pair()
    table = rank_table([(ip_prompt, None), (ip_decoder, None)])  # no device_port: the default, 16666
    comm_id, peer_comm = link_both(decoder, peer, table)
    assert listening(ip_decoder, 16666) and listening(ip_prompt, 16666)
    cm = decoder.cache_manager
    desc = ld.CacheDesc(4, SHAPE, ld.DataType.DT_BF16, ld.Placement.HOST)

    # pull_cache_sample: the prompt's batches by CacheKey, into batch 0 and 1.
    peer.call("allocate", tensors=4, shape=SHAPE, seed=SEED, blocks=False, key=[0, 1])
    cache = cm.allocate_cache(desc)
    cm.pull_cache(ld.CacheKey(prompt_cluster_id=PEER, req_id=0, model_id=0), cache, batch_index=0)
    cm.pull_cache(ld.CacheKey(prompt_cluster_id=PEER, req_id=1, model_id=0), cache, batch_index=1)
    for t in range(4):
        data = tensor_view(cache, t)
        assert unit(data, 0) == unit(tensor_bytes(SEED, t, SHAPE), 0)
        assert unit(data, 1) == unit(tensor_bytes(SEED, t, SHAPE), 1)
        assert not data[2 * len(data) // 8:].any()  # nothing else landed

    # pull_blocks_sample: blocks of the prompt's blocks cache (BlocksCacheKey).
    peer.call("allocate", tensors=4, shape=SHAPE, seed=SEED + 1, blocks=True, key=0)
    blocks = cm.allocate_blocks_cache(desc)
    cm.pull_blocks(ld.BlocksCacheKey(prompt_cluster_id=PEER, model_id=0), blocks, src_blocks=[0, 3, 5],
                   dst_blocks=[1, 2, 7])
    for t in range(4):
        data, want = tensor_view(blocks, t), tensor_bytes(SEED + 1, t, SHAPE)
        assert [unit(data, d) for d in (1, 2, 7)] == [unit(want, s) for s in (0, 3, 5)]

    # pull_from_cache_to_blocks: a batch of a cache, spread over blocks.
    to_blocks = cm.allocate_blocks_cache(desc)
    cm.pull_blocks(ld.CacheKey(prompt_cluster_id=PEER, req_id=1, model_id=0), to_blocks, [], [4])
    for t in range(4):
        assert unit(tensor_view(to_blocks, t), 4) == unit(tensor_bytes(SEED, t, SHAPE), 1)

    # Two-sided: the prompt pulls from the decoder over the same link.
    mine = cm.allocate_blocks_cache(desc, ld.BlocksCacheKey(LOCAL, 0))
    for t in range(4):
        tensor_view(mine, t)[:] = tensor_bytes(SEED + 2, t, SHAPE)
    dst = peer.call("allocate", tensors=4, shape=SHAPE, seed=0, blocks=True)["cache_id"]
    peer.call("pull_blocks", cluster=LOCAL, model=0, src_blocks=[6, 7], cache_id=dst, dst_blocks=[0, 1])
    got = peer.call("digest", cache_id=dst, tensors=[0, 4], units=[0, 1])["sha256"]
    h = hashlib.sha256()
    for t in range(4):
        for u in (6, 7):
            h.update(unit(tensor_bytes(SEED + 2, t, SHAPE), u))
    assert got == h.hexdigest()

    decoder.unlink(comm_id)
    peer.call("unlink_comm", comm_id=peer_comm)
    with pytest.raises(ld.LLMException) as e:
        cm.pull_cache(ld.CacheKey(PEER, 0), cache, batch_index=0)
    assert e.value.status_code == Code.LLM_NOT_YET_LINK
    peer.call("remove_key", req=0)  # as the prompt of pull_cache_sample does before it deallocates
    peer.call("remove_key", req=1)
    for c in (cache, to_blocks, blocks, mine):
        (cm.deallocate_cache if not c.is_blocks_cache else cm.deallocate_blocks_cache)(c)


def test_a_member_that_never_comes_fails_the_link_and_leaves_nothing(monkeypatch):
    """Three members, one of which never calls link: link fails within link_total_time (here; the
    peer's HCCL_CONNECT_TIMEOUT) on both others, and neither is linked to the other afterwards."""
    monkeypatch.setenv("HCCL_CONNECT_TIMEOUT", "3")  # the peer's wait: seconds, as in LLM-DataDist
    peer = LlmPeer("any")
    try:
        run_with_a_member_missing(peer)
    finally:
        peer.close()


def run_with_a_member_missing(peer):
    dd = ld.LLMDataDist(ld.LLMRole.DECODER, LOCAL)
    dd.init(config(link_total_time=2))
    try:
        table = rank_table([("127.0.0.1", int(peer.listen.rsplit(":", 1)[1])), ("127.0.0.1", free_port()),
                            ("127.0.0.1", free_port())])
        ranks = ((PEER, 0), (LOCAL, 1), (3, 2))
        peer.send("link_comm", name="c3", ranks=[list(r) for r in ranks], table=table)
        start = time.monotonic()
        with pytest.raises(ld.LLMException) as e:
            dd.link("c3", dict(ranks), table)
        took = time.monotonic() - start
        assert e.value.status_code == Code.LLM_LINK_FAILED
        assert 1.9 <= took < 60, took  # link_total_time, with slack for a loaded machine
        assert not peer.reply(timeout_s=120).get("ok")
        c = ld.LLMClusterInfo()
        c.remote_cluster_id = PEER
        c.append_local_ip_info("127.0.0.1", 0)
        ip, port = peer.listen.rsplit(":", 1)
        c.append_remote_ip_info(ip, int(port))
        assert dd.link_clusters([c], 10000) == (Code.LLM_SUCCESS, [Code.LLM_SUCCESS])  # not LLM_ALREADY_LINK
    finally:
        dd.finalize()


def test_link_argument_errors(decoder):
    """As HIXL's LLMDataDist.link: TypeError for wrong types (before any other check), LLMException for
    bad values; unknown comm ids are LLM_NOT_YET_LINK."""
    table = rank_table([("127.0.0.1", 1), ("127.0.0.1", 2)])
    for args in (("link", [3, 2], table), ("link", {3: 0, LOCAL: 1}, 123), (5, {3: 0, LOCAL: 1}, table),
                 ("link", {"3": 0, LOCAL: 1}, table), ("", [3, 2], table), ("link", {3: 0, LOCAL: 1}, None)):
        with pytest.raises(TypeError):
            decoder.link(*args)
    for args in (("", {3: 0, LOCAL: 1}, table), ("a" * 128, {3: 0, LOCAL: 1}, table),
                 ("link", {1: 0, 2: 1, 3: 2, 4: 3, 5: 4}, table), ("link", {LOCAL: 0}, table),
                 ("link", {3: 1, LOCAL: 0}, table)):
        with pytest.raises(ld.LLMException) as e:
            decoder.link(*args)
        assert e.value.status_code == Code.LLM_PARAM_INVALID
    with pytest.raises(ValueError):
        decoder.link("link", {3: -1, LOCAL: 1}, table)
    with pytest.raises(ld.LLMException) as e:
        decoder.link("link", {3: 0, 4: 1}, table)  # this cluster is not a member
    assert e.value.status_code == Code.LLM_PARAM_INVALID
    with pytest.raises(ld.LLMException) as e:
        decoder.link("link", {3: 0, LOCAL: 1}, '{"server_list":[{"device":[{}]}]}')  # HCCL would refuse it
    assert e.value.status_code == Code.LLM_LINK_FAILED
    for call in (decoder.unlink, decoder.query_register_mem_status):
        with pytest.raises(TypeError):
            call("1")
        with pytest.raises(ValueError):
            call(-1)
        with pytest.raises(ld.LLMException) as e:
            call(1)
        assert e.value.status_code == Code.LLM_NOT_YET_LINK
    idle = ld.LLMDataDist(ld.LLMRole.DECODER, 9)
    for call in (lambda: idle.link("link", {3: 0, 9: 1}, table), lambda: idle.unlink(1),
                 lambda: idle.query_register_mem_status(1)):
        with pytest.raises(RuntimeError):
            call()


def test_switch_role_moves_the_listener(decoder, peer):
    """To PROMPT with llm.listenIpInfo: listens there, and an earlier port closes; to DECODER: no port;
    LLM_EXIST_LINK while this side has a link up."""
    p1, p2 = free_port(), free_port()
    decoder.switch_role(ld.LLMRole.PROMPT, {"llm.listenIpInfo": f"127.0.0.1:{p1}"})
    assert listening("127.0.0.1", p1)
    assert peer.call("link", cluster=LOCAL, ip="127.0.0.1", port=p1)["status"] == Code.LLM_SUCCESS
    assert peer.call("unlink", cluster=LOCAL)["status"] == Code.LLM_SUCCESS
    c = ld.LLMClusterInfo()
    c.remote_cluster_id = PEER
    c.append_local_ip_info("127.0.0.1", 0)
    ip, port = peer.listen.rsplit(":", 1)
    c.append_remote_ip_info(ip, int(port))
    assert decoder.link_clusters([c], 10000)[0] == Code.LLM_SUCCESS
    with pytest.raises(ld.LLMException) as e:
        decoder.switch_role(ld.LLMRole.PROMPT, {"llm.listenIpInfo": f"127.0.0.1:{p2}"})
    assert e.value.status_code == Code.LLM_EXIST_LINK
    assert listening("127.0.0.1", p1)
    assert decoder.unlink_clusters([c], 10000)[0] == Code.LLM_SUCCESS
    decoder.switch_role(ld.LLMRole.PROMPT, {"llm.listenIpInfo": f"127.0.0.1:{p2}"})
    assert not listening("127.0.0.1", p1) and listening("127.0.0.1", p2)
    assert peer.call("link", cluster=LOCAL, ip="127.0.0.1", port=p1)["status"] == Code.LLM_LINK_FAILED
    assert peer.call("link", cluster=LOCAL, ip="127.0.0.1", port=p2)["status"] == Code.LLM_SUCCESS
    assert peer.call("unlink", cluster=LOCAL)["status"] == Code.LLM_SUCCESS
    decoder.switch_role(ld.LLMRole.DECODER)
    assert not listening("127.0.0.1", p2)
    assert peer.call("link", cluster=LOCAL, ip="127.0.0.1", port=p2)["status"] == Code.LLM_LINK_FAILED
    with pytest.raises(TypeError):
        decoder.switch_role("PROMPT")
    with pytest.raises(TypeError):
        decoder.switch_role(ld.LLMRole.PROMPT, "127.0.0.1:1")
    with pytest.raises(TypeError):
        decoder.switch_role(ld.LLMRole.PROMPT, {"llm.listenIpInfo": 1})
    with pytest.raises(ld.LLMException) as e:
        decoder.switch_role(ld.LLMRole.PROMPT, {"llm.listenIpInfo": "127.0.0.1"})
    assert e.value.status_code == Code.LLM_PARAM_INVALID
    with pytest.raises(ValueError):
        decoder.switch_role(ld.LLMRole.PROMPT, {"llm.listenIpInfo": "127.0.0.1:port"})


def test_switch_role_with_the_hixl_backend_keeps_the_port(peer):
    """As HIXL with transfer_backend="hixl": the port of init stays, whatever the role; another is
    LLM_FEATURE_NOT_ENABLED; links do not stop a switch; link (rank table) is not there."""
    p = free_port()
    dd = ld.LLMDataDist(ld.LLMRole.PROMPT, LOCAL)
    dd.init(config(transfer_backend="hixl", listen_ip_info=f"127.0.0.1:{p}"))
    try:
        dd.switch_role(ld.LLMRole.DECODER)
        assert listening("127.0.0.1", p)
        with pytest.raises(ld.LLMException) as e:
            dd.switch_role(ld.LLMRole.PROMPT, {"llm.listenIpInfo": f"127.0.0.1:{free_port()}"})
        assert e.value.status_code == Code.LLM_FEATURE_NOT_ENABLED
        dd.switch_role(ld.LLMRole.PROMPT, {"llm.listenIpInfo": f"127.0.0.1:{p}"})
        c = ld.LLMClusterInfo()
        c.remote_cluster_id = PEER
        c.append_local_ip_info("127.0.0.1", 0)
        ip, port = peer.listen.rsplit(":", 1)
        c.append_remote_ip_info(ip, int(port))
        assert dd.link_clusters([c], 10000)[0] == Code.LLM_SUCCESS
        dd.switch_role(ld.LLMRole.DECODER)
        with pytest.raises(ld.LLMException) as e:
            dd.link("link", {PEER: 0, LOCAL: 1}, rank_table([("127.0.0.1", p), (ip, int(port))]))
        assert e.value.status_code == Code.LLM_FEATURE_NOT_ENABLED
    finally:
        dd.finalize()


def test_remove_cache_key(decoder, peer):
    """After remove_cache_key a peer no longer finds the cache by that key (LLM_KV_CACHE_NOT_EXIST); by
    its id it does; removing a key no cache has is no error."""
    cid = peer.call("register", tensors=2, shape=SHAPE, seed=SEED, blocks=False, key=[10, 11])["cache_id"]
    c = ld.LLMClusterInfo()
    c.remote_cluster_id = PEER
    c.append_local_ip_info("127.0.0.1", 0)
    ip, port = peer.listen.rsplit(":", 1)
    c.append_remote_ip_info(ip, int(port))
    assert decoder.link_clusters([c], 10000)[0] == Code.LLM_SUCCESS
    cm = decoder.cache_manager
    cache = cm.allocate_cache(ld.CacheDesc(2, SHAPE, ld.DataType.DT_BF16, ld.Placement.HOST))
    cm.pull_cache(ld.CacheKey(PEER, 10), cache, batch_index=0)
    peer.call("remove_key", req=10)
    peer.call("remove_key", req=10)  # not there any more: nothing happens
    with pytest.raises(ld.LLMException) as e:
        cm.pull_cache(ld.CacheKey(PEER, 10), cache, batch_index=0)
    assert e.value.status_code == Code.LLM_KV_CACHE_NOT_EXIST
    cm.pull_cache(ld.CacheKey(PEER, 11), cache, batch_index=1)  # the other key stays
    cm.pull_cache(ld.CacheKeyByIdAndIndex(PEER, cid, 0), cache, batch_index=2)
    for t in range(2):
        data = tensor_view(cache, t)
        assert [unit(data, u) for u in (0, 1, 2)] == [unit(tensor_bytes(SEED, t, SHAPE), u) for u in (0, 1, 0)]
    with pytest.raises(TypeError):
        cm.remove_cache_key(ld.BlocksCacheKey(PEER, 0))
    cm.deallocate_cache(cache)
