"""llm_datadist as HIXL's tests use it: its module paths, names HIXL removed
(ImportError), the rules of init (one LLMDataDist per process, options),
link_clusters' local ip_info, the calls of LLM-DataDist's older API, and
argument checks of device-memory calls. Each of these was found different
by HIXL's own tests (tests/python of HIXL), whose files we do not copy."""

import importlib

import numpy as np
import pytest

import llm_datadist as ld
from conftest import free_port

pytestmark = pytest.mark.timeout(60)
Code = ld.LLMStatusCode


def config(**kw):
    cfg = ld.LLMConfig()
    cfg.device_id = 0
    for k, v in kw.items():
        setattr(cfg, k, v)
    return cfg.generate_options()


@pytest.fixture
def dd():
    d = ld.LLMDataDist(ld.LLMRole.PROMPT, 3)
    d.init(config(enable_cache_manager=True))
    yield d
    d.finalize()


def test_module_paths_name_the_same_classes():
    types = importlib.import_module("llm_datadist.v2.llm_types")
    for name in ("RegisterMemStatus", "Cache", "Memtype", "MemInfo", "CacheDesc", "CacheKey", "BlocksCacheKey",
                 "CacheKeyByIdAndIndex", "KvCache", "Placement", "LayerSynchronizer", "TransferConfig",
                 "TransferWithCacheKeyConfig", "CacheTask"):
        assert getattr(types, name) is getattr(ld, name), name
    assert importlib.import_module("llm_datadist.v2.llm_datadist").LLMDataDist is ld.LLMDataDist
    assert importlib.import_module("llm_datadist.v2.cache_manager").CacheManager is ld.CacheManager
    assert importlib.import_module("llm_datadist.configs").LlmConfig is ld.LLMConfig
    status = importlib.import_module("llm_datadist.status")
    assert status.LLMException is ld.LLMException and status.LLMStatusCode is ld.LLMStatusCode
    assert status.Status(Code.LLM_SUCCESS).is_ok() and not ld.Status(Code.LLM_FAILED).is_ok()
    for name in ld.v2_list:
        assert hasattr(ld, name), name
    wrapper = importlib.import_module("llm_datadist.llm_datadist_wrapper")
    assert (wrapper.kSuccess, wrapper.kParamInvalid, wrapper.kLLMExistLink) == (0, 0x5010B005, 0x5010B018)


def test_names_hixl_removed_and_unknown_names():
    for name in ("Tensor", "TensorDesc", "KvCacheManager"):
        with pytest.raises(ImportError):
            getattr(ld, name)
    with pytest.raises(ImportError):
        exec("from llm_datadist import TensorDesc", {})
    with pytest.raises(AttributeError, match="has no attribute"):
        ld.NoSuchThing


def test_utils_and_data_type_modules():
    utils = importlib.import_module("llm_datadist.utils.utils")
    for check, value in ((utils.check_uint64, -1), (utils.check_int64, 2**64 - 1), (utils.check_int32, 2**31),
                         (utils.check_uint32, -1), (utils.check_uint16, 2**16), (utils.check_uint8, 256),
                         (utils.check_list_int32, [0, 2**31])):
        with pytest.raises(ValueError):
            check("x", value)
    with pytest.raises(TypeError):
        utils.check_isinstance("x", "1", int)
    assert utils.check_positive_or_set_default("x", None) == -1
    dt = importlib.import_module("llm_datadist.data_type")
    assert dt.dtype_to_np_dtype[ld.DataType.DT_FLOAT16] is np.float16
    assert dt.np_dtype_to_dtype[np.dtype(np.int32)] is ld.DataType.DT_INT32
    assert len(dt.valid_np_dtypes) == len(ld.DataType)
    log = importlib.import_module("llm_datadist.utils.log")
    log.info("the package's logger works")
    kv = ld.KvCache.create_cpu_cache(ld.CacheDesc(2, [4, 8], ld.DataType.DT_INT8, ld.Placement.HOST), [16, 32])
    assert kv.per_device_tensor_addrs == [[16, 32]] and kv.cache_id == -1
    with pytest.raises(ld.LLMException):
        ld.KvCache.create_cpu_cache(ld.CacheDesc(2, [4, 8], ld.DataType.DT_INT8), [16, 32])  # not HOST


def test_one_initialized_llm_datadist_per_process():
    first, second = ld.LLMDataDist(ld.LLMRole.PROMPT, 10), ld.LLMDataDist(ld.LLMRole.DECODER, 11)
    first.init(config())
    try:
        first.init(config())  # initialized already: nothing happens
        assert ld.LLMDataDist.llm_engine_instance is first
        with pytest.raises(ld.LLMException) as e:
            second.init(config())
        assert e.value.status_code == Code.LLM_FAILED
    finally:
        first.finalize()
    assert ld.LLMDataDist.llm_engine_instance is None
    second.init(config())
    shutdown = importlib.import_module("llm_datadist.v2.llm_datadist")._shutdown_handler
    shutdown()  # what runs at exit
    assert ld.LLMDataDist.llm_engine_instance is None
    with pytest.raises(RuntimeError):
        second.cache_manager


def test_init_options_as_hixl_checks_them():
    dd = ld.LLMDataDist(ld.LLMRole.PROMPT, 12)
    refused = [
        ({"ge_options": {"ge.flowGraphMemMaxSize": "1.23"}}, "flowGraphMemMaxSize"),
        ({"ge_options": {"ge.flowGraphMemMaxSize": "-1"}}, "flowGraphMemMaxSize"),
        ({"ge_options": {"ge.flowGraphMemMaxSize": "1024,2048"}}, "flowGraphMemMaxSize"),
        ({"transfer_backend": "hixl", "listen_ip_info": "127.0.0.1:26000"}, "EnableCacheManager"),
        ({"transfer_backend": "hixl", "enable_cache_manager": True}, "listenIpInfo"),
        ({"transfer_backend": "hixl", "enable_cache_manager": True, "enable_remote_cache_accessible": False,
          "listen_ip_info": "127.0.0.1:26000"}, "EnableRemoteCacheAccessible"),
        ({"local_comm_res": "", "enable_cache_manager": False}, "EnableCacheManager"),
    ]
    for kw, word in refused:
        with pytest.raises(ld.LLMException) as e:
            dd.init(config(**kw))
        assert word in str(e.value) and e.value.status_code == Code.LLM_PARAM_INVALID, kw
    options = config()
    options["ge.flowGraphMemMaxSize"] = 123
    with pytest.raises(TypeError):
        dd.init(options)
    with pytest.raises(TypeError):
        dd.init([("ge.exec.deviceId", "0")])
    assert ld.LLMDataDist.llm_engine_instance is None  # nothing refused took the process's place
    # RDMA classes: any uint32, as LLM-DataDist's default backend (HCCL) takes them.
    dd.init(config(rdma_service_level=100, rdma_traffic_class=100, link_total_time=1000, link_retry_count=80))
    dd.finalize()
    # With the hixl backend they go to hixl, which refuses what RDMA cannot use (as in LLM-DataDist).
    with pytest.raises(ld.LLMException) as e:
        dd.init(config(rdma_service_level=100, transfer_backend="hixl", enable_cache_manager=True,
                       listen_ip_info=f"127.0.0.1:{free_port()}"))
    assert e.value.status_code == Code.LLM_PARAM_INVALID


def test_older_api_and_link_clusters_rules(dd):
    with pytest.raises(ld.LLMException):
        dd.kv_cache_manager
    with pytest.raises(ld.LLMException):
        dd.check_link_status(1)
    c = ld.LLMClusterInfo()
    c.remote_cluster_id = 1
    c.append_remote_ip_info("127.0.0.1", 9)
    with pytest.raises(ld.LLMException, match="local_ip_info_list is empty"):
        dd.link_clusters([c], 1000)
    with pytest.raises(TypeError):
        dd.link_clusters("not_list", 1000)
    with pytest.raises(ld.LLMException):
        dd.link_clusters([c], 0)
    with pytest.raises(TypeError):
        dd.unlink_clusters([c], 1000, force="yes")
    with pytest.raises(ld.LLMException):
        dd.unlink_clusters([c], 0)
    # With a local_comm_res (HCCL's rank table of this side) the local ip_info may be left out.
    dd.finalize()
    dd.init(config(local_comm_res='{"server_count": "1", "server_list": [{"device": [{"device_id": "0", '
                                  '"device_ip": "127.0.0.1"}], "server_id": "127.0.0.1"}], "version": "1.0"}'))
    assert dd.link_clusters([c], 1000)[0] == Code.LLM_LINK_FAILED  # nothing listens at port 9


def test_device_memory_calls_check_their_arguments(dd):
    cm = dd.cache_manager
    for bad in ("some val", [ld.MemInfo(ld.Memtype.MEM_TYPE_HOST, 1234, 1)],
                ld.MemInfo(ld.Memtype.MEM_TYPE_DEVICE, 0, 1), ld.MemInfo(ld.Memtype.MEM_TYPE_DEVICE, 1234, -1),
                [ld.MemInfo(ld.Memtype.MEM_TYPE_DEVICE, 1, 1), "x"]):
        with pytest.raises(ld.LLMException) as e:
            cm.remap_registered_memory(bad)
        assert e.value.status_code == Code.LLM_PARAM_INVALID, bad
    with pytest.raises(ld.LLMException) as e:
        cm.remap_registered_memory(ld.MemInfo(ld.Memtype.MEM_TYPE_DEVICE, 1234, 1))
    assert e.value.status_code == Code.LLM_FEATURE_NOT_ENABLED  # there is no device memory here
    host = ld.CacheDesc(2, [4, 64], ld.DataType.DT_BF16, ld.Placement.HOST)
    a, b = cm.allocate_blocks_cache(host), cm.allocate_blocks_cache(host)
    try:
        with pytest.raises(TypeError):
            cm.swap_blocks(a, "b", {0: 1})
        with pytest.raises(ld.LLMException) as e:
            cm.swap_blocks(a, b, {0: 9})  # block 9 of 4
        assert e.value.status_code == Code.LLM_PARAM_INVALID
        with pytest.raises(ld.LLMException) as e:
            cm.swap_blocks(a, b, {0: 1})  # host to host: not a swap
        assert e.value.status_code == Code.LLM_PARAM_INVALID
    finally:
        cm.deallocate_blocks_cache(a)
        cm.deallocate_blocks_cache(b)
