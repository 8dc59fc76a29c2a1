"""LLMDataDist, with LLM-DataDist's Python names and rules, on
libhixl_llm_datadist (the extension _llm_datadist).

As in LLM-DataDist, a process has one initialized LLMDataDist
(LLMDataDist.llm_engine_instance; another's init raises LLMException with
LLM_FAILED), which an exit handler finalizes. It always works the way
LLM-DataDist's cache-manager mode does (enable_cache_manager or
local_comm_res): the older KvCacheManager API (kv_cache_manager,
check_link_status) is not part of this implementation."""

import atexit
from typing import Dict, List, Optional, Tuple, Union

from . import _llm_datadist
from ._checks import check_int32, check_type, check_uint32, check_uint64
from .cache_manager import CacheManager
from .cache_types import RegisterMemStatus
from .configs import LLMClusterInfo, LLMRole
from .status import LLMException, LLMStatusCode, code_2_status, raise_if_false, raise_on
from .utils import log

# LLMConfig's keys -> the C++ options (llm_datadist.h, src/llm_datadist/options.h).
_KEYS = {
    "llm.listenIpInfo": "llm.ListenIpInfo",
    "llm.ListenIpInfo": "llm.ListenIpInfo",
    "llm.DeviceId": "llm.DeviceId",
    "llm.SyncKvCacheWaitTime": "llm.SyncKvCacheWaitTime",
    "llm.BufPoolCfg": "llm.BufPoolCfg",
    "llm.EnableSwitchRole": "llm.EnableSwitchRole",
    "llm.LocalCommRes": "llm.LocalCommRes",
    "llm.TransferBackend": "llm.TransferBackend",
    "llm.GlobalResourceConfig": "llm.GlobalResourceConfig",
    "llm.RdmaTrafficClass": "llm.RdmaTrafficClass",
    "llm.RdmaServiceLevel": "llm.RdmaServiceLevel",
    "llm.LinkTotalTime": "llm.LinkTotalTime",
    "llm.LinkRetryCount": "llm.LinkRetryCount",
}
_LISTEN_KEYS = ("llm.listenIpInfo", "llm.ListenIpInfo")

# LLM-DataDist's limits of link: a name shorter than 128 characters, 2 to 4 members.
_MAX_COMM_NAME = 128
_MAX_MEMBERS = 4


def _options(options: Dict[str, str]) -> Dict[str, str]:
    out = {}
    for k, v in options.items():
        if k in _KEYS:
            out[_KEYS[k]] = v
        elif k == "ge.exec.deviceId" and "llm.DeviceId" not in options:
            out["llm.DeviceId"] = v.split(";")[0]  # one device per process
    return out


def _check_flow_graph_max_size(options: Dict[str, str]) -> None:
    value = options.get("ge.flowGraphMemMaxSize")
    if value is None:
        return
    check_type("ge.flowGraphMemMaxSize", value, str, allow_none=False)
    raise_if_false(len(value.split(",")) == 1, "ge.flowGraphMemMaxSize only support one mem pool in llm datadist")
    raise_if_false(value.isdigit(), f"ge.flowGraphMemMaxSize must be digit, config value={value}")


def _engine_options(options: Dict[str, str]) -> Dict[str, str]:
    """The options with LLM-DataDist's defaults and its rules for LocalCommRes and TransferBackend applied."""
    opts = dict(options)
    local_comm_res = "llm.LocalCommRes" in options
    if local_comm_res:
        opts.setdefault("llm.EnableCacheManager", "1")
        opts.setdefault("llm.EnableRemoteCacheAccessible", "1")
    cache_manager = opts.get("llm.EnableCacheManager") == "1"
    raise_if_false(not local_comm_res or cache_manager,
                   "llm.LocalCommRes is not supported when llm.EnableCacheManager is not configured.")
    if "llm.TransferBackend" in options:
        raise_if_false(cache_manager,
                       "llm.TransferBackend is not supported when llm.EnableCacheManager is not configured.")
        opts.setdefault("llm.EnableRemoteCacheAccessible", "1")
        raise_if_false(opts["llm.EnableRemoteCacheAccessible"] == "1",
                       "llm.TransferBackend is not supported when llm.EnableRemoteCacheAccessible is not enable.")
        raise_if_false(any(k in options for k in _LISTEN_KEYS),
                       "llm.TransferBackend is not supported when llm.listenIpInfo is not configured.")
    return opts


def _clusters(clusters) -> List[Tuple[int, str, int]]:
    out = []
    for c in clusters:
        check_uint64("remote_cluster_id", c.remote_cluster_id)
        ip, port = c.remote_ip_info_list[0] if len(c.remote_ip_info_list) == 1 else ("", 0)
        out.append((c.remote_cluster_id, ip, port))
    return out


class LLMDataDist:
    """One side of prefill/decode KV-cache transfer: a hixl engine (a server
    when listen_ip_info is set), its caches, and links to other sides."""

    llm_engine_instance = None  # the initialized LLMDataDist of this process

    def __init__(self, role: LLMRole, cluster_id: int):
        check_type("role", role, LLMRole, allow_none=False)
        check_uint64("cluster_id", cluster_id)
        self._role = role
        self._cluster_id = cluster_id
        self._dd = _llm_datadist.DataDist(cluster_id, int(role))
        self._cache_manager = None
        self._initialized = False
        self._options: Dict[str, str] = {}

    @property
    def cluster_id(self) -> int:
        return self._cluster_id

    def init(self, options: Dict[str, str]) -> None:
        """Starts it. options: LLMConfig.generate_options(); device_id is required. LLMException on failure
        (LLM_FAILED when another LLMDataDist of this process is initialized)."""
        if self._initialized:
            return
        raise_if_false(LLMDataDist.llm_engine_instance is None, "Cannot init multiple LLMDataDists",
                       status_code=LLMStatusCode.LLM_FAILED)
        check_type("options", options, dict, allow_none=False)
        _check_flow_graph_max_size(options)
        opts = _engine_options(options)
        for k, v in opts.items():
            check_type("options key", k, str, allow_none=False)
            check_type("options value", v, str, allow_none=False)
        raise_on(self._dd.initialize(_options(opts)), "[LLMDataDist.init]", f"options = {options}")
        self._options = opts
        self._cache_manager = CacheManager(self._dd)
        self._initialized = True
        LLMDataDist.llm_engine_instance = self

    def finalize(self) -> None:
        """Stops it: links close, caches are released, layer-wise pushes end (after the layer they move)."""
        if not self._initialized:
            return
        self._dd.finalize()
        self._initialized = False
        if LLMDataDist.llm_engine_instance is self:
            LLMDataDist.llm_engine_instance = None

    def _check_init(self):
        if not self._initialized:
            raise RuntimeError("llm datadist is not initialized")

    @property
    def cache_manager(self) -> CacheManager:
        self._check_init()
        return self._cache_manager

    @property
    def kv_cache_manager(self):
        """LLM-DataDist's older KvCacheManager: not part of this implementation, which works as LLM-DataDist's
        cache-manager mode does (there, too, this raises LLMException)."""
        self._check_init()
        raise LLMException("kv_cache_manager is not supported in the cache-manager mode, the only one of this "
                           "implementation: use cache_manager", status_code=LLMStatusCode.LLM_PARAM_INVALID)

    def check_link_status(self, remote_cluster_id: int):
        """Part of LLM-DataDist's older KvCacheManager API: LLMException, as in its cache-manager mode."""
        self._check_init()
        raise LLMException("check_link_status is not supported in the cache-manager mode, the only one of this "
                           "implementation", status_code=LLMStatusCode.LLM_PARAM_INVALID)

    def _check_link_args(self, timeout, clusters, force=False):
        # Types first (TypeError), then values.
        self._check_init()
        check_type("clusters", clusters, [list, tuple], LLMClusterInfo, allow_none=False)
        check_type("force", force, bool, allow_none=False)
        check_int32("timeout", timeout)
        raise_if_false(timeout > 0, "Param timeout should be greater than 0.")

    def link_clusters(self, clusters: Union[List[LLMClusterInfo], Tuple[LLMClusterInfo, ...]], timeout=3000):
        """Links to each cluster (it must listen); (LLMStatusCode, [LLMStatusCode per cluster]). As in
        LLM-DataDist, each cluster needs a local ip_info unless the options have a non-empty local_comm_res."""
        self._check_link_args(timeout, clusters)
        for c in clusters:
            raise_if_false(c.local_ip_info_list or self._options.get("llm.LocalCommRes"),
                           "local_ip_info_list is empty. Call append_local_ip_info to add local_ip_info when "
                           "local_comm_res option is unspecified or empty.")
        ret, rets = self._dd.link(_clusters(clusters), timeout)
        return code_2_status(ret), [code_2_status(r) for r in rets]

    def unlink_clusters(self, clusters: Union[List[LLMClusterInfo], Tuple[LLMClusterInfo, ...]], timeout=3000,
                        force=False):
        """Unlinks each cluster; (LLMStatusCode, [LLMStatusCode per cluster]). A hixl link is this side's own:
        unlinking is local, forced or not."""
        self._check_link_args(timeout, clusters, force)
        ret, rets = self._dd.unlink(_clusters(clusters), timeout, force)
        return code_2_status(ret), [code_2_status(r) for r in rets]

    def switch_role(self, role: LLMRole, switch_options: Optional[Dict[str, str]] = None):
        """Changes the role, and where this side listens: at llm.listenIpInfo of switch_options, or nowhere
        without it (closing an earlier port); LLMException(LLM_EXIST_LINK) while links are up. With
        transfer_backend "hixl" the listener stays where init put it (another address:
        LLM_FEATURE_NOT_ENABLED), links or not."""
        self._check_init()
        check_type("role", role, LLMRole, allow_none=False)
        check_type("switch_options", switch_options, dict)
        options = dict(switch_options or {})
        for k, v in options.items():
            check_type("switch_options key", k, str, allow_none=False)
            check_type("switch_options value", v, str, allow_none=False)
        listen = next((options[k] for k in _LISTEN_KEYS if k in options), None)
        if listen is not None:
            raise_if_false(":" in listen, f'llm.listenIpInfo "{listen}" is invalid, format should be "ip:port"')
            int(listen.rsplit(":", 1)[1])  # ValueError for a port that is no number, as LLM-DataDist
        log.info("[switch_role] [%s->%s] start, switch_options = %s", self._role.name, role.name, switch_options)
        raise_on(self._dd.set_role(int(role), _options(options)), "[switch_role]",
                 f"Failed to switch role, role = {role}, options = {switch_options}")
        self._role = role

    # --- link with a rank table (LLM-DataDist's two-sided link) -----------

    def link(self, comm_name: str, cluster_rank_info: Dict[int, int], rank_table: str) -> int:
        """Links this side with the other clusters of cluster_rank_info (cluster id -> rank in rank_table, 2 to
        4 clusters, ranks in ascending order), every one of which calls link too: each listens at its rank's
        device_ip (and device_port, default 16666) and links to the others, so that any can pull from and push
        to any other. Waits for them up to link_total_time (LLMConfig; else HCCL_CONNECT_TIMEOUT, else 120 s);
        LLMException(LLM_LINK_FAILED) when one does not come, and nothing stays linked. Returns the comm id."""
        self._check_init()
        # Types first (TypeError), then values (ValueError for integers out of range, else LLMException).
        check_type("comm_name", comm_name, str, allow_none=False)
        check_type("cluster_rank_info", cluster_rank_info, dict, allow_none=False)
        for k, v in cluster_rank_info.items():
            check_type("cluster_rank_info key", k, int, allow_none=False)
            check_type("cluster_rank_info value", v, int, allow_none=False)
        check_type("rank_table", rank_table, str, allow_none=False)
        raise_if_false(len(comm_name) > 0, "comm_name can not be empty")
        raise_if_false(len(comm_name) < _MAX_COMM_NAME, "comm_name length should be smaller than 128.")
        raise_if_false(len(cluster_rank_info) <= _MAX_MEMBERS, "cluster_rank_info size can not be greater than 4.")
        for k, v in cluster_rank_info.items():
            check_uint64("cluster_rank_info key", k)
            check_uint32("cluster_rank_info value", v)
        ranks = list(cluster_rank_info.values())
        raise_if_false(len(ranks) > 1, "cluster num must be bigger than 1.")
        raise_if_false(ranks == sorted(ranks), "rank in cluster_rank_info must be ordered")
        ret, comm_id = self._dd.link_comm(comm_name, dict(cluster_rank_info), rank_table, -1)
        raise_on(ret, "[link]", f"cluster_rank_info = {cluster_rank_info}")
        return comm_id

    def _check_comm_id(self, comm_id):
        self._check_init()
        check_type("comm_id", comm_id, int, allow_none=False)
        check_uint64("comm_id", comm_id)

    def unlink(self, comm_id: int):
        """Unlinks this side from the members of link's comm_id (LLMException(LLM_NOT_YET_LINK) for an unknown
        one). Each member unlinks its own side."""
        self._check_comm_id(comm_id)
        raise_on(self._dd.unlink_comm(comm_id), "[unlink]", f"comm_id = {comm_id}")

    def query_register_mem_status(self, comm_id: int) -> RegisterMemStatus:
        """RegisterMemStatus.OK once link returned (it has exchanged what the members need by then)."""
        self._check_comm_id(comm_id)
        ret, status = self._dd.query_register_mem_status(comm_id)
        raise_on(ret, "[query_register_mem_status]", f"comm_id = {comm_id}")
        try:
            return RegisterMemStatus(status)
        except ValueError:
            return RegisterMemStatus.FAILED


def _shutdown_handler():
    """At exit: finalizes the process's LLMDataDist (an error there is logged: another framework may have
    finalized it)."""
    instance = LLMDataDist.llm_engine_instance
    if instance is None:
        return
    try:
        instance.finalize()
    except LLMException as e:
        log.warn(f"error occurred while finalize llm datadist: {e}; may be caused by already finalized by another "
                 f"framework")


atexit.register(_shutdown_handler)
