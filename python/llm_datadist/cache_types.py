"""Caches and the keys that name them, with LLM-DataDist's Python names."""

from enum import Enum, IntEnum
from typing import List, Optional, Tuple, Union

from ._checks import check_int32, check_int64, check_type, check_uint32, check_uint64
from .data_type import ELEMENT_BYTES, DataType
from .status import LLMException, raise_if_false

_INVALID_ID = 2**64 - 1


class Placement(IntEnum):
    HOST = 0
    DEVICE = 1

    def __str__(self):
        return f"{self.__class__.__name__}.{self.name}"


class Memtype(Enum):
    MEM_TYPE_DEVICE = 0
    MEM_TYPE_HOST = 1


class RegisterMemStatus(Enum):
    OK = 0
    PREPARING = 1
    FAILED = 2


class MemInfo:
    def __init__(self, mem_type: Memtype, addr: int, size: int):
        check_type("mem_type", mem_type, Memtype, allow_none=False)
        check_type("addr", addr, int, allow_none=False)
        check_type("size", size, int, allow_none=False)
        self.mem_type, self.addr, self.size = mem_type, addr, size

    def __repr__(self):
        return f"MemInfo(mem_type={self.mem_type}, addr={self.addr}, size={self.size})"


class CacheDesc:
    """num_tensors tensors of one shape and data type; dim batch_dim_index
    (0) counts batch items, or blocks for a blocks cache."""

    def __init__(self, num_tensors: int, shape: Union[Tuple[int, ...], List[int]], data_type: DataType,
                 placement: Placement = Placement.DEVICE, batch_dim_index: int = 0, seq_len_dim_index: int = -1,
                 kv_tensor_format: Optional[str] = None):
        check_uint32("num_tensors", num_tensors)
        check_type("shape", shape, [tuple, list], int, allow_none=False)
        check_type("data_type", data_type, DataType, allow_none=False)
        check_type("placement", placement, Placement, allow_none=False)
        check_type("batch_dim_index", batch_dim_index, int, allow_none=False)
        check_int32("seq_len_dim_index", seq_len_dim_index)
        check_type("kv_tensor_format", kv_tensor_format, str)
        raise_if_false(0 <= batch_dim_index < len(shape),
                       f"batch_dim_index {batch_dim_index} out of range, [0, {len(shape)})")
        raise_if_false(seq_len_dim_index == -1 or 0 <= seq_len_dim_index < len(shape),
                       f"seq_len_dim_index {seq_len_dim_index} is invalid, should be -1 or in range [0, {len(shape)})")
        for d in shape:
            check_int64("shape", d)
        self._num_tensors = num_tensors
        self._shape = list(shape)
        self._data_type = data_type
        self._placement = placement
        self._batch_dim = batch_dim_index
        self._seq_len_dim_index = seq_len_dim_index
        self._kv_tensor_format = kv_tensor_format

    def __repr__(self):
        return (f"CacheDesc(num_tensors={self._num_tensors}, shape={self._shape}, data_type={self._data_type}, "
                f"placement={self._placement}, batch_dim_index={self._batch_dim}, "
                f"seq_len_dim_index={self._seq_len_dim_index}, kv_tensor_format={self._kv_tensor_format})")

    num_tensors = property(lambda self: self._num_tensors)
    shape = property(lambda self: self._shape)
    data_type = property(lambda self: self._data_type)
    placement = property(lambda self: self._placement)
    batch_dim = property(lambda self: self._batch_dim)
    seq_len_dim_index = property(lambda self: self._seq_len_dim_index)
    kv_tensor_format = property(lambda self: self._kv_tensor_format)

    @property
    def batch_size(self) -> int:
        return self._shape[self._batch_dim]

    @property
    def size(self) -> int:
        """Bytes of one tensor."""
        elem = ELEMENT_BYTES.get(self._data_type)
        if elem is None or any(d < 1 for d in self._shape):
            raise LLMException(f"Failed to calc tensor size, shape = {self._shape}, data_type = {self._data_type}")
        n = elem
        for d in self._shape:
            n *= d
        return n


class Cache:
    """A cache of this side, returned by CacheManager.register_cache,
    register_blocks_cache, allocate_cache and allocate_blocks_cache."""

    def __init__(self, cache_id: int, cache_desc: CacheDesc, tensor_addrs: List[int], is_blocks_cache: bool = False,
                 _keep=None):
        check_int64("cache_id", cache_id)
        self._cache_id = cache_id
        self._cache_desc = cache_desc
        self._tensor_addrs = list(tensor_addrs)
        self._is_blocks_cache = is_blocks_cache
        self._keep = _keep  # tensors whose addresses these are (hixl extension: kept alive)

    cache_id = property(lambda self: self._cache_id)
    cache_desc = property(lambda self: self._cache_desc)
    tensor_addrs = property(lambda self: self._tensor_addrs)
    is_blocks_cache = property(lambda self: self._is_blocks_cache)

    @classmethod
    def create_cpu_cache(cls, cache_desc: CacheDesc, addrs: List[int]):
        check_type("cache_desc", cache_desc, CacheDesc, allow_none=False)
        check_type("addrs", addrs, list, int, allow_none=False)
        raise_if_false(cache_desc.placement == Placement.HOST, "cache_desc placement must be HOST")
        raise_if_false(cache_desc.num_tensors == len(addrs),
                       f"cache_desc num_tensors:{cache_desc.num_tensors} not equal addrs num:{len(addrs)}")
        return cls(-1, cache_desc, addrs, True)

    def __repr__(self):
        return (f"Cache(cache_id = {self._cache_id}, device_tensor_addrs = {len(self._tensor_addrs)}, "
                f"is_blocks_cache = {self._is_blocks_cache})")


class KvCache:
    """LLM-DataDist's KvCache: the cache type of its older KvCacheManager API
    (not part of this implementation: llm_datadist.KvCacheManager raises
    ImportError). Kept for code that builds one with create_cpu_cache;
    per_device_tensor_addrs holds one list of tensor addresses per device."""

    def __init__(self, cache_id: int, cache_desc: CacheDesc, per_device_tensor_addrs: List[List[int]],
                 kv_cache_manager=None):
        check_int64("cache_id", cache_id)
        self._cache_id = cache_id
        self._cache_desc = cache_desc
        self._per_device_tensor_addrs = per_device_tensor_addrs

    cache_id = property(lambda self: self._cache_id)
    cache_desc = property(lambda self: self._cache_desc)
    per_device_tensor_addrs = property(lambda self: self._per_device_tensor_addrs)

    @classmethod
    def create_cpu_cache(cls, cache_desc: CacheDesc, addrs: Union[List[int], List[List[int]]]):
        check_type("cache_desc", cache_desc, CacheDesc, allow_none=False)
        raise_if_false(cache_desc.placement == Placement.HOST, "cache_desc placement must be HOST")
        check_type("addrs", addrs, list, allow_none=False)
        raise_if_false(len(addrs) > 0, "addrs length should be bigger than zero.")
        nested = isinstance(addrs[0], list)
        for a in addrs:
            check_type("the internal element of addrs", a, [list, int], allow_none=False)
            raise_if_false(isinstance(a, list) == nested,
                           "the type of the internal element of addrs should be consistent.")
            if nested:
                check_type("the internal element of addrs", a, list, int, allow_none=False)
                raise_if_false(len(a) == cache_desc.num_tensors,
                               f"cache_desc num_tensors:{cache_desc.num_tensors} should be equal to size of the "
                               f"internal element of addrs:{len(a)}")
        raise_if_false(nested or len(addrs) == cache_desc.num_tensors,
                       f"cache_desc num_tensors:{cache_desc.num_tensors} should be equal to size of addrs:{len(addrs)}")
        return cls(-1, cache_desc, addrs if nested else [addrs])

    def __repr__(self):
        return f"KvCache(cache_id = {self._cache_id}, num_devices = {len(self._per_device_tensor_addrs)})"


def _named_args(args, kwargs, order, limit):
    raise_if_false(len(args) + len(kwargs) <= limit, "Param num is over limit")
    for name, value in zip(order, args):
        kwargs[name] = value
    raise_if_false("prompt_cluster_id" in kwargs or "cluster_id" in kwargs,
                   "Param prompt_cluster_id or cluster_id is required")
    for k in kwargs:
        raise_if_false(k in order or k == "prompt_cluster_id", f"Unsupported param:{k}")
    cluster_key = "cluster_id" if "cluster_id" in kwargs else "prompt_cluster_id"
    return kwargs, cluster_key


class BlocksCacheKey:
    """Names the blocks cache a peer registered under (cluster_id, model_id)."""

    def __init__(self, *args, **kwargs):
        kwargs, self._cluster_id_key = _named_args(args, kwargs, ["cluster_id", "model_id"], 2)
        self._cluster_id = kwargs[self._cluster_id_key]
        self._model_id = kwargs.get("model_id", 0)
        check_type("cluster_id", self._cluster_id, int, allow_none=False)
        check_type("model_id", self._model_id, int, allow_none=False)

    cluster_id = property(lambda self: self._cluster_id)
    prompt_cluster_id = property(lambda self: self._cluster_id)
    model_id = property(lambda self: self._model_id)

    def __repr__(self):
        return f"BlocksCacheKey({self._cluster_id_key}={self._cluster_id}, model_id={self._model_id})"


class CacheKey:
    """Names the batch of a cache a peer registered under (req_id or
    prefix_id, model_id)."""

    def __init__(self, *args, **kwargs):
        kwargs, self._cluster_id_key = _named_args(args, kwargs, ["cluster_id", "req_id", "model_id", "prefix_id"], 4)
        raise_if_false("req_id" in kwargs, "Param req_id is required")
        self._cluster_id = kwargs[self._cluster_id_key]
        self._req_id = kwargs["req_id"]
        self._model_id = kwargs.get("model_id", 0)
        self._prefix_id = kwargs.get("prefix_id", _INVALID_ID)
        for name in ("cluster_id", "req_id", "model_id", "prefix_id"):
            check_uint64(name, getattr(self, "_" + name))

    cluster_id = property(lambda self: self._cluster_id)
    prompt_cluster_id = property(lambda self: self._cluster_id)
    req_id = property(lambda self: self._req_id)
    model_id = property(lambda self: self._model_id)
    prefix_id = property(lambda self: self._prefix_id)

    def __repr__(self):
        return (f"CacheKey(cluster_id={self._cluster_id}, req_id={self._req_id}, prefix_id={self._prefix_id}, "
                f"model_id={self._model_id})")


class CacheKeyByIdAndIndex:
    """Names batch batch_index of the cache cache_id of cluster cluster_id."""

    def __init__(self, cluster_id: int, cache_id: int, batch_index: int = 0):
        check_uint64("cluster_id", cluster_id)
        check_int64("cache_id", cache_id)
        check_uint32("batch_index", batch_index)
        self._cluster_id, self._cache_id, self._batch_index = cluster_id, cache_id, batch_index

    cluster_id = property(lambda self: self._cluster_id)
    cache_id = property(lambda self: self._cache_id)
    batch_index = property(lambda self: self._batch_index)

    def __repr__(self):
        return (f"CacheKeyByIdAndIndex(cluster_id={self._cluster_id}, cache_id={self._cache_id}, "
                f"batch_index={self._batch_index})")


# The library's key kinds (llm_datadist::KvCacheKeyKind).
_BY_ID, _BY_BLOCKS_KEY, _BY_REQUEST_KEY = 0, 1, 2


def key_tuple(key) -> tuple:
    """A key as the extension takes it: (kind, cluster_id, cache_id, batch_index, model_id, req_id, prefix_id)."""
    if isinstance(key, CacheKeyByIdAndIndex):
        return (_BY_ID, key.cluster_id, key.cache_id, key.batch_index, 0, _INVALID_ID, _INVALID_ID)
    if isinstance(key, BlocksCacheKey):
        return (_BY_BLOCKS_KEY, key.cluster_id, -1, 0, key.model_id, _INVALID_ID, _INVALID_ID)
    if isinstance(key, CacheKey):
        valid_req, valid_prefix = key.req_id != _INVALID_ID, key.prefix_id != _INVALID_ID
        raise_if_false(valid_req != valid_prefix,
                       f"exactly one of req id and prefix id should hold a valid value [0, 2**64-1), req id:"
                       f"{key.req_id}, prefix id:{key.prefix_id}.")
        return (_BY_REQUEST_KEY, key.cluster_id, -1, 0, key.model_id, key.req_id, key.prefix_id)
    raise TypeError(f"a cache key is CacheKey, CacheKeyByIdAndIndex or BlocksCacheKey, not {type(key)}")
