"""llm_datadist: LLM-DataDist's Python API (the KV-cache layer of
prefill/decode-disaggregated serving) on hixl. See docs/kv.md."""

from . import _llm_datadist
from .cache_manager import CacheManager
from .cache_types import (
    BlocksCacheKey,
    Cache,
    CacheDesc,
    CacheKey,
    CacheKeyByIdAndIndex,
    MemInfo,
    Memtype,
    Placement,
    RegisterMemStatus,
)
from .configs import LLMClusterInfo, LLMConfig, LlmConfig, LLMRole
from .data_type import DataType
from .datadist import LLMDataDist
from .status import LLMException, LLMStatusCode
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
    "DataType",
    "Placement",
    "CacheKey",
    "CacheKeyByIdAndIndex",
    "BlocksCacheKey",
    "LLMStatusCode",
    "LLMException",
    "LayerSynchronizer",
    "TransferConfig",
    "TransferWithCacheKeyConfig",
    "CacheTask",
    "Memtype",
    "MemInfo",
    "RegisterMemStatus",
    "KvReady",
]
