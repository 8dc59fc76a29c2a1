"""llm_datadist's names, values and argument checks, as LLM-DataDist's
Python package has them; calls before init; registration statuses."""

import pytest
import torch

import llm_datadist as ld

pytestmark = pytest.mark.timeout(60)


def test_values():
    c = ld.LLMStatusCode
    assert (c.LLM_SUCCESS, c.LLM_FAILED, c.LLM_PARAM_INVALID) == (0, 0xFFFFFFFF, 0x5010B005)
    assert (c.LLM_KV_CACHE_NOT_EXIST, c.LLM_NOT_YET_LINK, c.LLM_ALREADY_LINK) == (0x5010B002, 0x5010B007, 0x5010B008)
    assert (c.LLM_EXIST_LINK, c.LLM_FEATURE_NOT_ENABLED, c.LLM_TIMEOUT) == (0x5010B018, 0x5010B019, 0x5010B01A)
    assert (c.LLM_DEVICE_MEM_ERROR, c.LLM_SUSPECT_REMOTE_ERROR, c.LLM_UNKNOWN_ERROR) == (507053, 507057, -1)
    assert str(c.LLM_TIMEOUT) == "LLMStatusCode.LLM_TIMEOUT"
    assert [ld.DataType.DT_FLOAT.value, ld.DataType.DT_FLOAT16.value, ld.DataType.DT_BF16.value,
            ld.DataType.DT_INT8.value, ld.DataType.DT_STRING.value] == [0, 1, 27, 2, 13]
    assert len(ld.DataType) == 14
    assert (ld.LLMRole.PROMPT, ld.LLMRole.DECODER, ld.LLMRole.MIX) == (1, 2, 3)
    assert (ld.Placement.HOST, ld.Placement.DEVICE) == (0, 1)
    assert ld.LlmConfig is ld.LLMConfig


def test_config_options():
    cfg = ld.LLMConfig()
    cfg.device_id = [3, 4]
    cfg.listen_ip_info = "127.0.0.1:26000"
    cfg.sync_kv_timeout = "2500"
    cfg.enable_cache_manager = True
    cfg.transfer_backend = "hixl"
    cfg.local_comm_res = ""
    opts = cfg.generate_options()
    assert opts["ge.exec.deviceId"] == "3;4" and opts["ge.session_device_id"] == "3"
    assert opts["llm.listenIpInfo"] == "127.0.0.1:26000"
    assert opts["llm.SyncKvCacheWaitTime"] == "2500"
    assert opts["llm.EnableCacheManager"] == "1" and opts["llm.TransferBackend"] == "hixl"
    assert opts["llm.LocalCommRes"] == ""
    # As LLM-DataDist: TypeError for a type, ValueError for an integer outside its C type, LLMException
    # for other values (these were ValueError before HIXL's tests said otherwise).
    for attr, value in (("device_id", -1), ("device_id", [0, -1]), ("sync_kv_timeout", 0), ("sync_kv_timeout", "x"),
                        ("link_retry_count", 101), ("link_total_time", -1), ("mem_utilization", 1.5)):
        with pytest.raises(ld.LLMException) as e:
            setattr(cfg, attr, value)
        assert e.value.status_code == ld.LLMStatusCode.LLM_PARAM_INVALID, (attr, value)
    for attr, value in (("device_id", 2**31), ("rdma_service_level", -1), ("rdma_traffic_class", 2**32)):
        with pytest.raises(ValueError):
            setattr(cfg, attr, value)
    for attr, value in (("device_id", "0"), ("device_id", [0, "1"]), ("enable_cache_manager", 1),
                        ("global_resource_config", {"k": "v"}), ("mem_utilization", 1), ("deploy_res_path", 1),
                        ("output_max_size", "1")):
        with pytest.raises(TypeError):
            setattr(cfg, attr, value)
    assert cfg.gen_options() == cfg.generate_options()
    cfg.deploy_res_path = "/tmp/res"
    cfg.output_max_size = 4
    assert cfg.gen_options()["llm.deployResPath"] == "/tmp/res" and cfg.gen_options()["llm.OutputMaxSize"] == "4"


def test_keys_descs_and_configs():
    assert ld.CacheKey(1, 2).prefix_id == 2**64 - 1
    assert ld.CacheKey(prompt_cluster_id=1, req_id=2, model_id=3).model_id == 3
    with pytest.raises(ld.LLMException):
        ld.CacheKey(1)  # req_id is required
    with pytest.raises(ValueError):
        ld.CacheKey(1, -2)
    assert ld.BlocksCacheKey(5).model_id == 0
    with pytest.raises(ld.LLMException):
        ld.BlocksCacheKey(model_id=1)
    with pytest.raises(ValueError):
        ld.CacheKeyByIdAndIndex(1, 2, -1)
    d = ld.CacheDesc(80, [4, 2048, 1, 128], ld.DataType.DT_FLOAT16)
    assert d.placement == ld.Placement.DEVICE and d.batch_size == 4 and d.size == 4 * 2048 * 128 * 2
    with pytest.raises(TypeError):
        ld.CacheDesc(2, [4, 8], "bf16")
    with pytest.raises(ld.LLMException):
        ld.CacheDesc(2, [4, 8], ld.DataType.DT_BF16, batch_dim_index=2)
    with pytest.raises(ld.LLMException):
        ld.TransferWithCacheKeyConfig(ld.BlocksCacheKey(1), range(0, 2), range(0, 3))
    with pytest.raises(ld.LLMException):
        ld.TransferWithCacheKeyConfig(ld.BlocksCacheKey(1), range(0, 2), range(0, 2), src_batch_index=1)
    with pytest.raises(ValueError):
        ld.TransferConfig(1, [1, 2], range(0, 2, 2))
    cluster = ld.LLMClusterInfo()
    cluster.append_remote_ip_info(0x0100007F, 26000)  # LLM-DataDist's int form of 127.0.0.1
    assert cluster.remote_ip_info_list == [("127.0.0.1", 26000)]
    with pytest.raises(ValueError):
        cluster.append_local_ip_info("1.2.3.4", 70000)


def test_calls_before_init_and_registration_statuses():
    dd = ld.LLMDataDist(ld.LLMRole.DECODER, 5)
    with pytest.raises(RuntimeError):
        dd.cache_manager
    with pytest.raises(RuntimeError):
        dd.link_clusters([], 1000)
    with pytest.raises(ld.LLMException) as e:
        dd.init({})  # no device id
    assert e.value.status_code == ld.LLMStatusCode.LLM_PARAM_INVALID
    cfg = ld.LLMConfig()
    cfg.device_id = 0
    dd.init(cfg.generate_options())
    try:
        cm = dd.cache_manager
        dev = ld.CacheDesc(2, [4, 64], ld.DataType.DT_BF16)  # Placement.DEVICE: there is no accelerator here
        with pytest.raises(ld.LLMException) as e:
            cm.register_blocks_cache(dev, [torch.zeros(4, 64, dtype=torch.bfloat16) for _ in range(2)])
        assert e.value.status_code == ld.LLMStatusCode.LLM_FEATURE_NOT_ENABLED
        host = ld.CacheDesc(2, [4, 64], ld.DataType.DT_BF16, ld.Placement.HOST)
        with pytest.raises(ld.LLMException):
            cm.register_blocks_cache(host, [torch.zeros(4, 64, dtype=torch.bfloat16)])  # one address for 2 tensors
        with pytest.raises(ld.LLMException):
            cm.register_blocks_cache(host, [torch.zeros(2, 64, dtype=torch.bfloat16)] * 2)  # tensors too small
        with pytest.raises(TypeError):
            cm.register_blocks_cache(host, ["addr", "addr"])
        cache = cm.allocate_blocks_cache(host, ld.BlocksCacheKey(0, 1))
        assert len(cache.tensor_addrs) == 2 and cache.tensor_addrs[1] - cache.tensor_addrs[0] == 4 * 64 * 2
        cm.deallocate_blocks_cache(cache)
        dd.switch_role(ld.LLMRole.PROMPT)
        with pytest.raises(ld.LLMException) as e:
            dd.link("comm", {1: 0, 2: 1}, "{}")  # cluster 5 is not among them
        assert e.value.status_code == ld.LLMStatusCode.LLM_PARAM_INVALID
    finally:
        dd.finalize()
