"""llm_datadist: LLM-DataDist's Python API (the KV-cache layer of
prefill/decode-disaggregated serving) on hixl. See docs/kv.md.

LLM-DataDist's module paths are here too (llm_datadist.v2.llm_types,
llm_datadist.v2.llm_datadist, llm_datadist.status, llm_datadist.configs,
llm_datadist.utils.utils, ...), each naming this package's classes; the
list and what is left out: docs/python.md."""

from . import _llm_datadist
from .cache_manager import CacheManager
from .cache_types import (
    BlocksCacheKey,
    Cache,
    CacheDesc,
    CacheKey,
    CacheKeyByIdAndIndex,
    KvCache,
    MemInfo,
    Memtype,
    Placement,
    RegisterMemStatus,
)
from .configs import LLMClusterInfo, LLMConfig, LlmConfig, LLMRole
from .data_type import DataType
from .datadist import LLMDataDist
from .status import LLMException, LLMStatusCode, Status
from .transfer import CacheTask, KvReady, LayerSynchronizer, TransferConfig, TransferWithCacheKeyConfig

__version__ = _llm_datadist.__version__

__all__ = [
    "LLMDataDist",
    "LLMConfig",
    "LlmConfig",
    "LLMRole",
    "LLMClusterInfo",
    "CacheManager",
    "CacheDesc",
    "Cache",
    "KvCache",
    "DataType",
    "Placement",
    "CacheKey",
    "CacheKeyByIdAndIndex",
    "BlocksCacheKey",
    "LLMStatusCode",
    "LLMException",
    "Status",
    "LayerSynchronizer",
    "TransferConfig",
    "TransferWithCacheKeyConfig",
    "CacheTask",
    "Memtype",
    "MemInfo",
    "RegisterMemStatus",
    "KvReady",
]

# LLM-DataDist's list of the names of its cache-manager API.
v2_list = [
    "LLMClusterInfo",
    "LLMStatusCode",
    "LLMException",
    "LLMRole",
    "LlmConfig",
    "LLMConfig",
    "DataType",
    "Status",
    "CacheDesc",
    "CacheKey",
    "CacheKeyByIdAndIndex",
    "KvCache",
    "Cache",
    "BlocksCacheKey",
    "LLMDataDist",
    "Placement",
    "RegisterMemStatus",
    "LayerSynchronizer",
    "TransferConfig",
    "CacheTask",
    "TransferWithCacheKeyConfig",
    "Memtype",
    "MemInfo",
]

# Names of LLM-DataDist's older API (its separate llm_datadist_v1 package),
# which is not part of this implementation.
_V1_NAMES = ("TensorDesc", "Tensor", "KvCacheManager")


def __getattr__(name):
    if name in _V1_NAMES:
        raise ImportError(f"llm_datadist.{name} belongs to LLM-DataDist's older API (llm_datadist_v1), which "
                          f"this implementation does not have: use LLMDataDist.cache_manager and Cache")
    raise AttributeError(f"Module 'llm_datadist' has no attribute '{name}'")
