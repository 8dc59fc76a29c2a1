"""Layer-wise push: LayerSynchronizer, TransferConfig,
TransferWithCacheKeyConfig and CacheTask, with LLM-DataDist's Python names;
and KvReady, a ready notice ([hixl extension])."""

from abc import ABC, abstractmethod
from typing import List, NamedTuple, Optional, Union

from ._checks import check_type, check_uint32, check_uint64, int_list, layer_range
from .cache_types import BlocksCacheKey, CacheKeyByIdAndIndex
from .status import LLMStatusCode, code_2_status, raise_if_false


class LayerSynchronizer(ABC):
    """Subclass it: synchronize_layer(layer_index, timeout_in_millis) returns
    once layer layer_index is computed, True, or False if it failed. The push
    of a layer starts when it returns True; it is called from the task's own
    thread, in layer order."""

    @abstractmethod
    def synchronize_layer(self, layer_index: int, timeout_in_millis: Optional[int]) -> bool:
        ...


class TransferConfig:
    """A destination by address: dst_addrs are the peer's tensors (two per
    layer of src_layer_range; offset already to the batch for a cache)."""

    def __init__(self, dst_cluster_id: int, dst_addrs: List[int], src_layer_range: Optional[range] = None,
                 src_batch_index: int = 0):
        self.dst_cluster_id = dst_cluster_id
        self.dst_addrs = dst_addrs
        self.src_layer_range = src_layer_range
        self.src_batch_index = src_batch_index
        self.dst_layer_range = None

    def __setattr__(self, name, value):
        if name == "dst_cluster_id":
            check_uint64(name, value)
        elif name == "dst_addrs":
            check_type(name, value, [list, tuple], int, allow_none=False)
            for a in value:
                check_uint64(name, a)
        elif name in ("src_layer_range", "dst_layer_range"):
            layer_range(name, value)
        elif name == "src_batch_index":
            check_uint32(name, value)
        super().__setattr__(name, value)

    def __repr__(self):
        return (f"TransferConfig(dst_cluster_id={self.dst_cluster_id}, dst_addrs={self.dst_addrs}, "
                f"src_layer_range={self.src_layer_range}, src_batch_index={self.src_batch_index})")


class TransferWithCacheKeyConfig:
    """A destination by key: the peer's cache found by cache_key, layers
    src_layer_range to dst_layer_range (of one size)."""

    def __init__(self, cache_key: Union[BlocksCacheKey, CacheKeyByIdAndIndex], src_layer_range: range = None,
                 dst_layer_range: range = None, src_batch_index: int = 0):
        check_type("cache_key", cache_key, [BlocksCacheKey, CacheKeyByIdAndIndex], allow_none=False)
        check_type("src_layer_range", src_layer_range, range, allow_none=False)
        check_type("dst_layer_range", dst_layer_range, range, allow_none=False)
        layer_range("src_layer_range", src_layer_range)
        layer_range("dst_layer_range", dst_layer_range)
        raise_if_false(len(src_layer_range) == len(dst_layer_range),
                       "src_layer_range size should be equal to dst_layer_range size")
        check_uint32("src_batch_index", src_batch_index)
        raise_if_false(not (isinstance(cache_key, BlocksCacheKey) and src_batch_index != 0),
                       "src_batch_index should be 0 when cache_key is BlocksCacheKey.")
        self.cache_key = cache_key
        self.src_layer_range = src_layer_range
        self.dst_layer_range = dst_layer_range
        self.src_batch_index = src_batch_index
        self.dst_cluster_id = cache_key.cluster_id

    def __repr__(self):
        return (f"TransferWithCacheKeyConfig(cache_key={self.cache_key}, src_layer_range={self.src_layer_range}, "
                f"dst_layer_range={self.dst_layer_range}, src_batch_index={self.src_batch_index})")


class CacheTask:
    """A running layer-wise push (CacheManager.transfer_cache_async)."""

    def __init__(self, task, synchronizer):
        self._task = task
        self._synchronizer = synchronizer  # alive while the task may call it

    @staticmethod
    def _millis(timeout_in_millis):
        if timeout_in_millis is None:
            return -1
        return check_uint32("timeout_in_millis", timeout_in_millis)

    def synchronize(self, timeout_in_millis: Optional[int] = None) -> LLMStatusCode:
        """Waits for every layer; the first failure, LLM_SUCCESS, or LLM_TIMEOUT if the wait ran out."""
        return code_2_status(self._task.synchronize(self._millis(timeout_in_millis)))

    def get_results(self, timeout_in_millis: Optional[int] = None) -> List[Optional[LLMStatusCode]]:
        """One status per transfer config; None for one no layer was pushed to yet."""
        return [code_2_status(s) if started or s != 0 else None
                for started, s, _ in self._task.results(self._millis(timeout_in_millis))]

    def get_reports(self, timeout_in_millis: Optional[int] = None) -> List[dict]:
        """[hixl extension] Per transfer config: started, status, bytes, descriptors, failed_layers,
        failed_src_blocks, failed_dst_blocks."""
        out = []
        for started, s, report in self._task.results(self._millis(timeout_in_millis)):
            out.append(dict(report, started=started, status=code_2_status(s)))
        return out


class KvReady(NamedTuple):
    """[hixl extension] A ready notice: cluster src_cluster_id says what it
    pushed here under `tag` is in place (status LLM_SUCCESS), or not."""

    src_cluster_id: int
    tag: str
    status: LLMStatusCode
    failed_layers: List[int]


def block_ids(name, value):
    return int_list(name, value, allow_none=True)
