"""llm_datadist.v2.cache_manager: HIXL's module path of CacheManager."""

from ..cache_manager import CacheManager

__all__ = ["CacheManager"]
