"""llm_datadist.v2.llm_types: HIXL's module path of the cache types."""

from ..cache_types import (
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
from ..transfer import CacheTask, LayerSynchronizer, TransferConfig, TransferWithCacheKeyConfig

__all__ = [
    "BlocksCacheKey", "Cache", "CacheDesc", "CacheKey", "CacheKeyByIdAndIndex", "CacheTask", "KvCache",
    "LayerSynchronizer", "MemInfo", "Memtype", "Placement", "RegisterMemStatus", "TransferConfig",
    "TransferWithCacheKeyConfig",
]
