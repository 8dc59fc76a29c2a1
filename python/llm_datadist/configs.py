"""LLMRole, LLMClusterInfo and LLMConfig, with LLM-DataDist's names; LLMConfig
makes the option dict LLMDataDist.init takes, with LLM-DataDist's keys."""

import json
import socket
from enum import IntEnum
from typing import Dict, List, Tuple, Union

from ._checks import check_int32, check_type, check_uint16, check_uint32, check_uint64
from .status import raise_if_false


class LLMRole(IntEnum):
    PROMPT = 1
    DECODER = 2
    MIX = 3

    def __str__(self):
        return f"{self.__class__.__name__}.{self.name}"


def _ip_text(ip: Union[str, int]) -> str:
    # LLM-DataDist also takes an IPv4 address as an int (its bytes little-endian).
    if isinstance(ip, int):
        return socket.inet_ntoa(int(ip).to_bytes(4, "little"))
    return ip


class LLMClusterInfo:
    """A cluster to link to or unlink from: its id and where it listens."""

    def __init__(self):
        self._remote_cluster_id = None
        self._remote_role_type = None
        self._local_ip_info_list: List[Tuple[str, int]] = []
        self._remote_ip_info_list: List[Tuple[str, int]] = []

    @property
    def remote_cluster_id(self):
        return self._remote_cluster_id

    @remote_cluster_id.setter
    def remote_cluster_id(self, value):
        check_uint64("remote_cluster_id", value)
        self._remote_cluster_id = value

    @property
    def remote_role_type(self):
        return self._remote_role_type

    @remote_role_type.setter
    def remote_role_type(self, value):
        check_type("remote_role_type", value, [LLMRole, int])
        self._remote_role_type = value

    @property
    def local_ip_info_list(self):
        return self._local_ip_info_list

    @property
    def remote_ip_info_list(self):
        return self._remote_ip_info_list

    @staticmethod
    def _checked(ip, port):
        check_type("ip", ip, [str, int], allow_none=False)
        check_uint16("port", port)
        return (_ip_text(ip), port)

    def append_local_ip_info(self, ip: Union[str, int], port: int):
        self._local_ip_info_list.append(self._checked(ip, port))

    def append_remote_ip_info(self, ip: Union[str, int], port: int):
        self._remote_ip_info_list.append(self._checked(ip, port))


class LLMConfig:
    """Builds LLMDataDist.init's options (generate_options, or gen_options).
    Settings this implementation has no use for (memory pools, HCCL link
    retries, deploy paths...) are accepted and passed on; LLMDataDist.init
    ignores them. Wrong types raise TypeError, integers out of their C range
    ValueError, other bad values LLMException (LLM_PARAM_INVALID), as in
    LLM-DataDist."""

    def __init__(self):
        self._options: Dict[str, str] = {}
        self._device_id = None
        self._sync_kv_timeout = None
        self._listen_ip_info = ""
        self._ge_options: Dict[str, str] = {}
        self._enable_switch_role = False
        self._enable_cache_manager = None
        self._enable_remote_cache_accessible = None
        self._local_comm_res = None
        self._transfer_backend = None
        self._global_resource_config = None
        self._rdma_traffic_class = None
        self._rdma_service_level = None
        self._link_total_time = None
        self._link_retry_count = None
        self._buf_pool_cfg = ""
        self._mem_pool_cfg = ""
        self._host_mem_pool_cfg = ""
        self._mem_utilization = 0.95
        self._deploy_res_path = ""
        self._output_max_size = None
        self._cluster_info = ""

    def generate_options(self) -> Dict[str, str]:
        return self.gen_options()

    def gen_options(self) -> Dict[str, str]:
        o = self._options
        o.update(self._ge_options)
        if self._device_id is not None:
            ids = [self._device_id] if isinstance(self._device_id, int) else list(self._device_id)
            o["ge.exec.deviceId"] = ";".join(str(d) for d in ids)
            o["ge.session_device_id"] = str(ids[0])
        if self._sync_kv_timeout is not None:
            o["llm.SyncKvCacheWaitTime"] = str(self._sync_kv_timeout)
        if self._buf_pool_cfg:
            o["llm.BufPoolCfg"] = self._buf_pool_cfg
        if self._mem_pool_cfg:
            o["llm.MemPoolConfig"] = self._mem_pool_cfg
        if self._host_mem_pool_cfg:
            o["llm.HostMemPoolConfig"] = self._host_mem_pool_cfg
        if self._enable_cache_manager is not None:
            o["llm.EnableCacheManager"] = "1" if self._enable_cache_manager else "0"
        if self._enable_remote_cache_accessible is not None:
            o["llm.EnableRemoteCacheAccessible"] = "1" if self._enable_remote_cache_accessible else "0"
        if self._listen_ip_info:
            o["llm.listenIpInfo"] = self._listen_ip_info
        if self._link_total_time is not None:
            o["llm.LinkTotalTime"] = str(self._link_total_time)
        if self._link_retry_count is not None:
            o["llm.LinkRetryCount"] = str(self._link_retry_count)
        if self._rdma_traffic_class is not None:
            o["llm.RdmaTrafficClass"] = str(self._rdma_traffic_class)
        if self._rdma_service_level is not None:
            o["llm.RdmaServiceLevel"] = str(self._rdma_service_level)
        if self._local_comm_res is not None:
            o["llm.LocalCommRes"] = self._local_comm_res
        if self._transfer_backend is not None:
            o["llm.TransferBackend"] = self._transfer_backend
        if self._global_resource_config is not None:
            o["llm.GlobalResourceConfig"] = self._global_resource_config
        if self._enable_switch_role:
            o["llm.EnableSwitchRole"] = "1"
        if self._mem_utilization is not None:
            o["llm.MemoryUtilization"] = str(self._mem_utilization)
        if self._deploy_res_path:
            o["llm.deployResPath"] = self._deploy_res_path
        if self._output_max_size is not None:
            o["llm.OutputMaxSize"] = str(self._output_max_size)
        if self._cluster_info:
            o["llm.ClusterInfo"] = self._cluster_info
        return o

    @property
    def options(self):
        return self._options

    @property
    def device_id(self):
        return self._device_id

    @device_id.setter
    def device_id(self, value):
        check_type("device_id", value, [list, tuple, int], allow_none=False)
        ids = value if isinstance(value, (list, tuple)) else [value]
        check_type("device_id", ids, [list, tuple], int, allow_none=False)
        for d in ids:
            raise_if_false(d >= 0, "device_id should be greater than or equal to zero.")
            check_int32("device_id", d)
        self._device_id = value

    @property
    def sync_kv_timeout(self):
        return self._sync_kv_timeout

    @sync_kv_timeout.setter
    def sync_kv_timeout(self, value):
        check_type("sync_kv_timeout", value, [int, str], allow_none=False)
        if isinstance(value, str):
            raise_if_false(value.isdigit(), "sync_kv_timeout must be digit.")
        raise_if_false(int(value) > 0, "sync_kv_timeout should be greater than zero.")
        check_int32("sync_kv_timeout", int(value))
        self._sync_kv_timeout = value

    @property
    def listen_ip_info(self):
        return self._listen_ip_info

    @listen_ip_info.setter
    def listen_ip_info(self, value):
        self._listen_ip_info = check_type("listen_ip_info", value, str, allow_none=False)

    @property
    def ge_options(self):
        return self._ge_options

    @ge_options.setter
    def ge_options(self, value):
        check_type("ge_options", value, dict, allow_none=False)
        for k, v in value.items():
            check_type("ge_options key", k, str, allow_none=False)
            check_type("ge_options value", v, str, allow_none=False)
        self._ge_options = value

    def _flag(name):  # noqa: N805 - a property factory used in the class body
        attr = "_" + name

        def get(self):
            v = getattr(self, attr)
            return False if v is None else v

        def put(self, value):
            setattr(self, attr, check_type(name, value, bool, allow_none=False))

        return property(get, put)

    enable_switch_role = _flag("enable_switch_role")
    enable_cache_manager = _flag("enable_cache_manager")
    enable_remote_cache_accessible = _flag("enable_remote_cache_accessible")

    def _text(name):  # noqa: N805
        attr = "_" + name

        def get(self):
            v = getattr(self, attr)
            return "" if v is None else v

        def put(self, value):
            setattr(self, attr, check_type(name, value, str, allow_none=False))

        return property(get, put)

    local_comm_res = _text("local_comm_res")
    transfer_backend = _text("transfer_backend")
    global_resource_config = _text("global_resource_config")
    buf_pool_cfg = _text("buf_pool_cfg")
    mem_pool_cfg = _text("mem_pool_cfg")
    host_mem_pool_cfg = _text("host_mem_pool_cfg")
    del _flag, _text

    @property
    def rdma_traffic_class(self):
        return self._rdma_traffic_class

    @rdma_traffic_class.setter
    def rdma_traffic_class(self, value):
        self._rdma_traffic_class = check_uint32("rdma_traffic_class", value)

    @property
    def rdma_service_level(self):
        return self._rdma_service_level

    @rdma_service_level.setter
    def rdma_service_level(self, value):
        self._rdma_service_level = check_uint32("rdma_service_level", value)

    @property
    def link_total_time(self):
        return 0 if self._link_total_time is None else self._link_total_time

    @link_total_time.setter
    def link_total_time(self, value):
        """Seconds a link (LLMDataDist.link) waits for its members; 0: HCCL_CONNECT_TIMEOUT, else 120 s."""
        check_type("link_total_time", value, int, allow_none=False)
        raise_if_false(0 <= value <= 2**32 - 1,
                       f"link_total_time should be an integer between [0, 2^32-1], given value is {value}")
        self._link_total_time = value

    @property
    def link_retry_count(self):
        return 1 if self._link_retry_count is None else self._link_retry_count

    @link_retry_count.setter
    def link_retry_count(self, value):
        check_type("link_retry_count", value, int, allow_none=False)
        raise_if_false(1 <= value <= 100,
                       f"link_retry_count should be an integer between [1, 100], given value is {value}")
        self._link_retry_count = value

    @property
    def mem_utilization(self):
        return self._mem_utilization

    @mem_utilization.setter
    def mem_utilization(self, value):
        check_type("mem_utilization", value, float, allow_none=False)
        raise_if_false(0.0 <= value <= 1.0, f"mem_utilization must be in range [0,1], current:{value}")
        self._mem_utilization = value

    @property
    def deploy_res_path(self):
        return self._deploy_res_path

    @deploy_res_path.setter
    def deploy_res_path(self, value):
        self._deploy_res_path = check_type("deploy_res_path", value, str, allow_none=False)

    @property
    def output_max_size(self):
        return self._output_max_size

    @output_max_size.setter
    def output_max_size(self, value):
        self._output_max_size = check_type("output_max_size", value, int, allow_none=False)

    @property
    def cluster_info(self):
        return self._cluster_info

    @cluster_info.setter
    def cluster_info(self, value):
        check_type("cluster_info", value, str, allow_none=False)
        info = json.loads(value)
        for ip_info in info.get("listen_ip_info", []) if isinstance(info, dict) else []:
            if isinstance(ip_info, dict) and isinstance(ip_info.get("ip"), str):
                ip_info["ip"] = int.from_bytes(socket.inet_aton(ip_info["ip"]), "little")  # LLM-DataDist's int form
        self._cluster_info = json.dumps(info)


LlmConfig = LLMConfig
