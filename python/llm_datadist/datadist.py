"""LLMDataDist, with LLM-DataDist's Python names and rules, on
libhixl_llm_datadist (the extension _llm_datadist)."""

import atexit
import weakref
from typing import Dict, List, Optional, Tuple, Union

from . import _llm_datadist
from ._checks import check_int32, check_type, check_uint64
from .cache_manager import CacheManager
from .configs import LLMClusterInfo, LLMRole
from .status import LLMException, LLMStatusCode, code_2_status, raise_if_false, raise_on

# LLMConfig's keys -> the C++ options (llm_datadist.h).
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
}

_live = weakref.WeakSet()


def _options(options: Dict[str, str]) -> Dict[str, str]:
    out = {}
    for k, v in options.items():
        if k in _KEYS:
            out[_KEYS[k]] = v
        elif k == "ge.exec.deviceId" and "llm.DeviceId" not in options:
            out["llm.DeviceId"] = v.split(";")[0]  # one device per process
    return out


def _clusters(clusters) -> List[Tuple[int, str, int]]:
    check_type("clusters", clusters, [list, tuple], LLMClusterInfo, allow_none=False)
    out = []
    for c in clusters:
        check_uint64("remote_cluster_id", c.remote_cluster_id)
        ip, port = c.remote_ip_info_list[0] if len(c.remote_ip_info_list) == 1 else ("", 0)
        out.append((c.remote_cluster_id, ip, port))
    return out


class LLMDataDist:
    """One side of prefill/decode KV-cache transfer: a hixl engine (a server
    when listen_ip_info is set), its caches, and links to other sides."""

    def __init__(self, role: LLMRole, cluster_id: int):
        check_type("role", role, LLMRole, allow_none=False)
        check_uint64("cluster_id", cluster_id)
        self._role = role
        self._cluster_id = cluster_id
        self._dd = _llm_datadist.DataDist(cluster_id, int(role))
        self._cache_manager = None
        self._initialized = False

    @property
    def cluster_id(self) -> int:
        return self._cluster_id

    def init(self, options: Dict[str, str]) -> None:
        """Starts it. options: LLMConfig.generate_options(); device_id is required. LLMException on failure."""
        if self._initialized:
            return
        check_type("options", options, dict, allow_none=False)
        for k, v in options.items():
            check_type("options key", k, str, allow_none=False)
            check_type("options value", v, str, allow_none=False)
        raise_on(self._dd.initialize(_options(options)), "[LLMDataDist.init]", f"options = {options}")
        self._cache_manager = CacheManager(self._dd)
        self._initialized = True
        _live.add(self)

    def finalize(self) -> None:
        """Stops it: links close, caches are released, layer-wise pushes end (after the layer they move)."""
        if not self._initialized:
            return
        self._dd.finalize()
        self._initialized = False

    def _check_init(self):
        if not self._initialized:
            raise RuntimeError("llm datadist is not initialized")

    @property
    def cache_manager(self) -> CacheManager:
        self._check_init()
        return self._cache_manager

    def link_clusters(self, clusters: Union[List[LLMClusterInfo], Tuple[LLMClusterInfo, ...]], timeout=3000):
        """Links to each cluster (it must listen); (LLMStatusCode, [LLMStatusCode per cluster])."""
        self._check_init()
        check_int32("timeout", timeout)
        raise_if_false(timeout > 0, "Param timeout should be greater than 0.")
        ret, rets = self._dd.link(_clusters(clusters), timeout)
        return code_2_status(ret), [code_2_status(r) for r in rets]

    def unlink_clusters(self, clusters: Union[List[LLMClusterInfo], Tuple[LLMClusterInfo, ...]], timeout=3000,
                        force=False):
        """Unlinks each cluster; (LLMStatusCode, [LLMStatusCode per cluster]). A hixl link is this side's own:
        unlinking is local, forced or not."""
        self._check_init()
        check_int32("timeout", timeout)
        raise_if_false(timeout > 0, "Param timeout should be greater than 0.")
        check_type("force", force, bool, allow_none=False)
        ret, rets = self._dd.unlink(_clusters(clusters), timeout, force)
        return code_2_status(ret), [code_2_status(r) for r in rets]

    def switch_role(self, role: LLMRole, switch_options: Optional[Dict[str, str]] = None):
        """Changes the role; LLMException(LLM_EXIST_LINK) while links are up. The hixl backend's listen address
        is fixed at init (LLM_FEATURE_NOT_ENABLED for another)."""
        self._check_init()
        check_type("role", role, LLMRole, allow_none=False)
        check_type("switch_options", switch_options, dict)
        raise_on(self._dd.set_role(int(role), _options(switch_options or {})), "[switch_role]",
                 f"role = {role}, options = {switch_options}")
        self._role = role

    def link(self, comm_name: str, cluster_rank_info: Dict[int, int], rank_table: str) -> int:
        raise LLMException("link (HCCL communication domains) is not supported by the hixl backend; use "
                           "link_clusters", status_code=LLMStatusCode.LLM_FEATURE_NOT_ENABLED)

    def unlink(self, comm_id: int):
        raise LLMException("unlink is not supported by the hixl backend; use unlink_clusters",
                           status_code=LLMStatusCode.LLM_FEATURE_NOT_ENABLED)

    def query_register_mem_status(self, comm_id: int):
        raise LLMException("query_register_mem_status is not supported by the hixl backend",
                           status_code=LLMStatusCode.LLM_FEATURE_NOT_ENABLED)


@atexit.register
def _finalize_all():
    for dd in list(_live):
        try:
            dd.finalize()
        except LLMException:
            pass
