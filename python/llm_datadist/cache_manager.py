"""CacheManager: registering, allocating, pulling, pushing and copying caches,
with LLM-DataDist's Python names and rules. Blocking calls release the GIL
(in the extension)."""

import time
from typing import Dict, List, Optional, Tuple, Union

from ._checks import check_int64, check_type, check_uint32, check_uint64, int_list, layer_range
from .cache_types import (
    _BY_BLOCKS_KEY,
    _BY_REQUEST_KEY,
    _INVALID_ID,
    BlocksCacheKey,
    Cache,
    CacheDesc,
    CacheKey,
    CacheKeyByIdAndIndex,
    MemInfo,
    Memtype,
    Placement,
    key_tuple,
)
from .status import LLMException, LLMStatusCode, code_2_status, raise_if_false, raise_on
from .transfer import (
    CacheTask,
    KvReady,
    LayerSynchronizer,
    TransferConfig,
    TransferWithCacheKeyConfig,
    block_ids,
)

_NUM_TENSORS_PER_LAYER = 2


def _address(x) -> int:
    """An address: an int, or (hixl extension) a CPU torch tensor or a NumPy array."""
    if isinstance(x, int):
        return x
    if hasattr(x, "data_ptr") and hasattr(x, "device"):
        raise_if_false(x.device.type == "cpu", f"a tensor on {x.device} is not host memory")
        return int(x.data_ptr())
    if hasattr(x, "__array_interface__"):
        return int(x.__array_interface__["data"][0])
    raise TypeError(f"an address is an int, a torch tensor or a NumPy array, not {type(x)}")


def _addresses(cache_desc: CacheDesc, addrs) -> Tuple[List[int], list]:
    """The addresses, and the objects to keep alive with the cache."""
    check_type("addrs", addrs, (list, tuple), allow_none=False)
    keep = [a for a in addrs if not isinstance(a, int)]
    out = [_address(a) for a in addrs]
    for a, x in zip(out, addrs):
        check_uint64("addrs", a)
        if not isinstance(x, int):
            nbytes = x.nbytes if hasattr(x, "nbytes") else x.numel() * x.element_size()
            raise_if_false(nbytes >= cache_desc.size,
                           f"a tensor of {nbytes} bytes is smaller than the cache's {cache_desc.size}")
    return out, keep


def _ext(kwargs, names=("src_layer_range", "dst_layer_range", "tensor_num_per_layer")):
    for k in kwargs:
        if k not in names:
            raise TypeError(f"unexpected keyword argument {k!r}")
    per_layer = kwargs.get("tensor_num_per_layer", _NUM_TENSORS_PER_LAYER)
    check_uint32("tensor_num_per_layer", per_layer)
    raise_if_false(per_layer > 0, f"tensor_num_per_layer ({per_layer}) is invalid, should be >= 1")
    return (layer_range("src_layer_range", kwargs.get("src_layer_range")),
            layer_range("dst_layer_range", kwargs.get("dst_layer_range")), per_layer)


class CacheManager:
    """Get it from LLMDataDist.cache_manager."""

    def __init__(self, datadist):
        self._dd = datadist  # the extension's DataDist
        self._pending: List[KvReady] = []  # notices wait_ready took that were not its own

    # --- registration and allocation ------------------------------------

    def _register(self, cache_desc, addrs, keys, is_blocks, call):
        check_type("cache_desc", cache_desc, CacheDesc, allow_none=False)
        raise_if_false(len(addrs) > 0, "addrs can not be empty.")
        raise_if_false(len(addrs) == cache_desc.num_tensors, "addrs length should be equal to num_tensors.")
        values, keep = _addresses(cache_desc, addrs)
        raise_if_false(all(a != 0 for a in values), "addr can not be zero.")
        ret, cache_id = self._dd.register(cache_desc.num_tensors, cache_desc.data_type.value, cache_desc.shape,
                                          int(cache_desc.placement), values, keys)
        raise_on(ret, call, f"cache_desc = {cache_desc}")
        return Cache(cache_id, cache_desc, values, is_blocks, _keep=keep)

    def register_cache(self, cache_desc: CacheDesc, addrs: List[int],
                       cache_keys: Union[Tuple[CacheKey, ...], List[CacheKey]] = (),
                       remote_accessible: Optional[bool] = None) -> Cache:
        """Registers a cache (batch items); addresses may be ints, CPU torch tensors or NumPy arrays. Peers
        reach every registered cache (remote_accessible is accepted and not needed), before or after linking."""
        check_type("cache_keys", cache_keys, [list, tuple], CacheKey, allow_none=False)
        check_type("remote_accessible", remote_accessible, bool)
        return self._register(cache_desc, addrs, self._request_keys(cache_keys), False, "[register_cache]")

    def register_blocks_cache(self, cache_desc: CacheDesc, addrs: List[int],
                              blocks_cache_key: Optional[BlocksCacheKey] = None,
                              remote_accessible: Optional[bool] = None) -> Cache:
        """Registers a blocks cache (PagedAttention: dim 0 counts blocks)."""
        check_type("blocks_cache_key", blocks_cache_key, BlocksCacheKey)
        check_type("remote_accessible", remote_accessible, bool)
        keys = [] if blocks_cache_key is None else [key_tuple(blocks_cache_key)]
        return self._register(cache_desc, addrs, keys, True, "[register_blocks_cache]")

    def unregister_cache(self, cache_id: int) -> None:
        check_int64("cache_id", cache_id)
        raise_on(self._dd.unregister(cache_id), "[unregister_cache]", f"cache_id = {cache_id}")

    @staticmethod
    def _request_keys(cache_keys):
        # The i-th key names batch i; req_id 2**64-1 holds a batch's place.
        out = []
        for i, k in enumerate(cache_keys):
            if k.req_id == _INVALID_ID and k.prefix_id == _INVALID_ID:
                continue
            t = key_tuple(k)
            out.append((_BY_REQUEST_KEY, 0, -1, i, t[4], t[5], t[6]))
        return out

    def _allocate(self, cache_desc, keys, is_blocks, call):
        check_type("cache_desc", cache_desc, CacheDesc, allow_none=False)
        raise_if_false(cache_desc.num_tensors > 0, "num_tensors should be bigger than zero.")
        ret, cache_id, addrs = self._dd.allocate(cache_desc.num_tensors, cache_desc.data_type.value,
                                                 cache_desc.shape, int(cache_desc.placement), keys)
        raise_on(ret, call, f"cache_desc = {cache_desc}")
        return Cache(cache_id, cache_desc, addrs, is_blocks)

    def allocate_cache(self, cache_desc: CacheDesc,
                       cache_keys: Union[Tuple[CacheKey, ...], List[CacheKey]] = ()) -> Cache:
        """Allocates a cache of host memory (Placement.HOST; DEVICE needs an accelerator), its tensors back to
        back."""
        check_type("cache_keys", cache_keys, [list, tuple], CacheKey, allow_none=False)
        return self._allocate(cache_desc, self._request_keys(cache_keys), False, "[allocate_cache]")

    def allocate_blocks_cache(self, cache_desc: CacheDesc, blocks_cache_key: Optional[BlocksCacheKey] = None) -> Cache:
        check_type("blocks_cache_key", blocks_cache_key, BlocksCacheKey)
        keys = [] if blocks_cache_key is None else [key_tuple(blocks_cache_key)]
        return self._allocate(cache_desc, keys, True, "[allocate_blocks_cache]")

    def _deallocate(self, cache, call):
        check_type("cache", cache, Cache, allow_none=False)
        raise_on(self._dd.deallocate(cache.cache_id), call, f"cache_id = {cache.cache_id}")
        cache._tensor_addrs = []

    def deallocate_cache(self, cache: Cache) -> None:
        self._deallocate(cache, "[deallocate_cache]")

    def deallocate_blocks_cache(self, cache: Cache) -> None:
        self._deallocate(cache, "[deallocate_blocks_cache]")

    # --- pulls and pushes --------------------------------------------------

    def pull_cache(self, cache_key: Union[CacheKey, CacheKeyByIdAndIndex], cache: Cache, batch_index: int = 0,
                   size: int = -1, **kwargs) -> None:
        """Pulls the peer's batch cache_key names into batch batch_index of cache (size bytes of each tensor, -1:
        all)."""
        check_type("cache_key", cache_key, [CacheKey, CacheKeyByIdAndIndex], allow_none=False)
        check_type("cache", cache, Cache, allow_none=False)
        check_uint32("batch_index", batch_index)
        check_int64("size", size)
        raise_if_false(not cache.is_blocks_cache, "param check failed, cache can not be blocks cache.")
        raise_if_false(size == -1 or size > 0, f"[pull_cache] size ({size}) is invalid, should be = -1 or > 0")
        src_range, dst_range, per_layer = _ext(kwargs)
        ret, report = self._dd.pull(key_tuple(cache_key), cache.cache_id, [], [], False, batch_index, size,
                                    src_range, dst_range, per_layer)
        raise_on(ret, "[pull_cache]", f"cache_key = {cache_key}", report)

    def pull_blocks(self, src_cache_key: Union[CacheKey, CacheKeyByIdAndIndex, BlocksCacheKey], dst_cache: Cache,
                    src_blocks=(), dst_blocks=(), **kwargs) -> dict:
        """Pulls blocks src_blocks of the peer's blocks cache into dst_blocks of dst_cache; with a CacheKey or
        CacheKeyByIdAndIndex (src_blocks empty) the batch it names, spread over dst_blocks. Block lists may be
        lists, tuples or (hixl extension) integer NumPy arrays. Returns (hixl extension; LLM-DataDist returns
        None) the transfer's report: bytes and descriptors."""
        check_type("src_cache_key", src_cache_key, [CacheKey, CacheKeyByIdAndIndex, BlocksCacheKey], allow_none=False)
        check_type("dst_cache", dst_cache, Cache, allow_none=False)
        src, dst = block_ids("src_blocks", src_blocks), block_ids("dst_blocks", dst_blocks)
        raise_if_false(dst_cache.is_blocks_cache, "param check failed, dst_cache should be blocks cache.")
        raise_if_false(len(dst) > 0, "dst_blocks can not be empty.")
        if isinstance(src_cache_key, BlocksCacheKey):
            raise_if_false(len(src) > 0, "src_blocks can not be empty.")
        else:
            raise_if_false(len(src) == 0,
                           "src_blocks should be empty when src_cache_key is not instance of BlocksCacheKey.")
        src_range, dst_range, per_layer = _ext(kwargs)
        ret, report = self._dd.pull(key_tuple(src_cache_key), dst_cache.cache_id, src, dst, True, 0, -1,
                                    src_range, dst_range, per_layer)
        raise_on(ret, "[pull_blocks]", f"src_cache_key = {src_cache_key}", report)
        return report

    def push_blocks(self, dst_cache_key: Union[BlocksCacheKey, CacheKeyByIdAndIndex], src_cache: Cache,
                    src_blocks=(), dst_blocks=(), src_layer_range: range = None, dst_layer_range: range = None,
                    tensor_num_per_layer=_NUM_TENSORS_PER_LAYER) -> dict:
        """Pushes blocks src_blocks of src_cache into dst_blocks of the peer's blocks cache. Returns the
        report (hixl extension)."""
        check_type("dst_cache_key", dst_cache_key, [BlocksCacheKey, CacheKeyByIdAndIndex], allow_none=False)
        check_type("src_cache", src_cache, Cache, allow_none=False)
        src, dst = block_ids("src_blocks", src_blocks), block_ids("dst_blocks", dst_blocks)
        raise_if_false(src_cache.is_blocks_cache, "param check failed, cache should be blocks cache.")
        raise_if_false(len(dst) > 0, "dst_blocks can not be empty.")
        src_range, dst_range, per_layer = _ext(dict(src_layer_range=src_layer_range, dst_layer_range=dst_layer_range,
                                                    tensor_num_per_layer=tensor_num_per_layer))
        ret, report = self._dd.push(src_cache.cache_id, key_tuple(dst_cache_key), src, dst, True, 0, -1,
                                    src_range, dst_range, per_layer)
        raise_on(ret, "[push_blocks]", f"dst_cache_key = {dst_cache_key}", report)
        return report

    def push_cache(self, dst_cache_key: CacheKeyByIdAndIndex, src_cache: Cache, src_batch_index: int = 0,
                   src_layer_range: range = None, dst_layer_range: range = None, size: int = -1,
                   tensor_num_per_layer=_NUM_TENSORS_PER_LAYER) -> None:
        check_type("dst_cache_key", dst_cache_key, CacheKeyByIdAndIndex, allow_none=False)
        check_type("src_cache", src_cache, Cache, allow_none=False)
        check_uint32("src_batch_index", src_batch_index)
        raise_if_false(not src_cache.is_blocks_cache, "param check failed, cache can not be blocks cache.")
        check_int64("size", size)
        raise_if_false(size == -1, f"[push_cache] size ({size}) is invalid, should be = -1.")
        src_range, dst_range, per_layer = _ext(dict(src_layer_range=src_layer_range, dst_layer_range=dst_layer_range,
                                                    tensor_num_per_layer=tensor_num_per_layer))
        ret, report = self._dd.push(src_cache.cache_id, key_tuple(dst_cache_key), [], [], False, src_batch_index,
                                    size, src_range, dst_range, per_layer)
        raise_on(ret, "[push_cache]", f"dst_cache_key = {dst_cache_key}", report)

    # --- local copies --------------------------------------------------------

    def copy_cache(self, dst: Cache, src: Cache, dst_batch_index: int = 0, src_batch_index: int = 0, offset: int = 0,
                   size: int = -1, req_id: Optional[int] = None) -> None:
        check_type("dst", dst, Cache, allow_none=False)
        check_type("src", src, Cache, allow_none=False)
        check_uint32("dst_batch_index", dst_batch_index)
        check_uint32("src_batch_index", src_batch_index)
        check_uint64("offset", offset)
        check_int64("size", size)
        if req_id is not None:
            check_uint64("req_id", req_id)
        raise_if_false(size == -1 or size > 0, f"[copy_cache] size ({size}) is invalid, should be = -1 or > 0")
        ret = self._dd.copy_cache(src.cache_id, dst.cache_id, src_batch_index, dst_batch_index, offset, size)
        raise_on(ret, "[copy_cache]", f"src {src.cache_id} batch {src_batch_index} -> dst {dst.cache_id}")

    def copy_blocks(self, cache: Cache, copy_block_info: Dict[int, List[int]]) -> None:
        """Copies block k of cache to every block of copy_block_info[k]."""
        check_type("cache", cache, Cache, allow_none=False)
        check_type("copy_block_info", copy_block_info, dict, allow_none=False)
        raise_if_false(cache.is_blocks_cache, "param check failed, cache should be blocks cache.")
        for src, dsts in copy_block_info.items():
            check_uint64("copy_block_info key", src)
            dsts = int_list("copy_block_info value", dsts)
            ret = self._dd.copy_blocks(cache.cache_id, cache.cache_id, [src], [[d] for d in dsts])
            raise_on(ret, "[copy_blocks]", f"cache id is:{cache.cache_id}")

    # --- layer-wise push ---------------------------------------------------

    def transfer_cache_async(self, src_cache: Cache, layer_synchronizer: LayerSynchronizer,
                             transfer_configs: Union[List[Union[TransferConfig, TransferWithCacheKeyConfig]],
                                                     Tuple[Union[TransferConfig, TransferWithCacheKeyConfig], ...]],
                             src_block_indices: Optional[Union[List[int], Tuple[int, ...]]] = None,
                             dst_block_indices: Optional[Union[List[int], Tuple[int, ...]]] = None,
                             dst_block_memory_size: Optional[int] = None, *, ready_tag: Optional[str] = None,
                             timeout_in_millis: Optional[int] = None) -> CacheTask:
        """Pushes src_cache layer by layer: each layer as soon as layer_synchronizer says it is computed, while the
        caller computes the next. [hixl extension] ready_tag: each destination is told, after its data, when
        every layer has landed (CacheManager.get_ready / wait_ready there)."""
        check_type("src_cache", src_cache, Cache, allow_none=False)
        check_type("layer_synchronizer", layer_synchronizer, LayerSynchronizer, allow_none=False)
        check_type("transfer_configs", transfer_configs, [list, tuple], allow_none=False)
        src = block_ids("src_block_indices", src_block_indices)
        dst = block_ids("dst_block_indices", dst_block_indices)
        if dst_block_memory_size is not None:
            check_uint64("dst_block_memory_size", dst_block_memory_size)
        if src:
            raise_if_false(len(dst) > 0, "transfer from blocks to cache is not supported")
            raise_if_false(len(src) == len(dst),
                           f"num_block_indices mismatches, src_num = {len(src)}, dst_num = {len(dst)}")
        elif dst:
            raise_if_false(dst_block_memory_size is not None,
                           "dst_block_memory_size must be set when transfer from cache to blocks")
        raise_if_false(dst or dst_block_memory_size in (None, 0),
                       f"dst_block_memory_size ({dst_block_memory_size}) is neither None nor 0 while dst is not blocks")
        configs = []
        for cfg in transfer_configs:
            check_type("transfer_configs", cfg, [TransferConfig, TransferWithCacheKeyConfig], allow_none=False)
            if isinstance(cfg, TransferConfig):
                key = (0, cfg.dst_cluster_id, -1, 0, 0, _INVALID_ID, _INVALID_ID)
                configs.append((key, list(cfg.dst_addrs), layer_range("src_layer_range", cfg.src_layer_range),
                                (-1, -1), cfg.src_batch_index))
            else:
                configs.append((key_tuple(cfg.cache_key), [], layer_range("src_layer_range", cfg.src_layer_range),
                                layer_range("dst_layer_range", cfg.dst_layer_range), cfg.src_batch_index))
        timeout = -1 if timeout_in_millis is None else check_uint32("timeout_in_millis", timeout_in_millis)
        tag = "" if ready_tag is None else check_type("ready_tag", ready_tag, str, allow_none=False)
        ret, task = self._dd.transfer_cache_async(src_cache.cache_id, layer_synchronizer, configs, src, dst,
                                                  dst_block_memory_size or 0, _NUM_TENSORS_PER_LAYER, timeout, tag)
        raise_on(ret, "[transfer_cache_async]", f"configs = {transfer_configs}")
        return CacheTask(task, layer_synchronizer)

    # --- ready notices ([hixl extension]) ------------------------------------

    def notify_ready(self, cluster_id: int, tag: str, timeout_in_millis: int = 1000) -> None:
        """Tells linked cluster cluster_id that what this side pushed to it is in place: it sees the notice only
        after the data of every push that returned before."""
        check_uint64("cluster_id", cluster_id)
        check_type("tag", tag, str, allow_none=False)
        raise_on(self._dd.notify_ready(cluster_id, tag, 0, timeout_in_millis), "[notify_ready]")

    def _collect(self):
        ret, ready = self._dd.get_ready()
        raise_on(ret, "[get_ready]")
        self._pending.extend(KvReady(c, t, code_2_status(s), list(f)) for c, t, s, f in ready)

    def get_ready(self) -> List[KvReady]:
        """The ready notices received since the last call (and forgets them)."""
        self._collect()
        out, self._pending = self._pending, []
        return out

    def wait_ready(self, tag: str, timeout_in_millis: int = 10000) -> KvReady:
        """Waits (polling every 50 us, the GIL released between polls) for the notice tagged `tag`; notices with
        other tags that come meanwhile are kept for get_ready. LLMException(LLM_TIMEOUT) when it does not come."""
        check_type("tag", tag, str, allow_none=False)
        deadline = time.monotonic() + timeout_in_millis / 1000.0
        while True:
            self._collect()
            for i, r in enumerate(self._pending):
                if r.tag == tag:
                    return self._pending.pop(i)
            if time.monotonic() >= deadline:
                raise LLMException(f"[wait_ready] no notice tagged {tag!r} within {timeout_in_millis} ms",
                                   status_code=LLMStatusCode.LLM_TIMEOUT)
            time.sleep(0.00005)

    def remove_cache_key(self, cache_key: CacheKey) -> None:
        """Peers no longer find a cache by cache_key (the cache stays, by its id and other keys). Nothing
        happens for a key no cache has."""
        check_type("cache_key", cache_key, CacheKey, allow_none=False)
        raise_on(self._dd.remove_cache_key(key_tuple(cache_key)), "[remove_cache_key]", f"cache_key = {cache_key}")

    # --- device memory: not on this backend ------------------------------------

    def remap_registered_memory(self, mem_infos: Union[MemInfo, List[MemInfo]]) -> None:
        """Arguments are checked as LLM-DataDist does (LLMException(LLM_PARAM_INVALID)); then
        LLM_FEATURE_NOT_ENABLED: it repairs Ascend device memory after a fault, and there is none here."""
        raise_if_false(isinstance(mem_infos, (list, MemInfo)),
                       f"mem_infos type only support list of MemInfo or MemInfo, but got {type(mem_infos)}.")
        for i, m in enumerate(mem_infos if isinstance(mem_infos, list) else [mem_infos]):
            raise_if_false(isinstance(m, MemInfo), f"mem_infos[{i}] type only support MemInfo, but got {type(m)}.")
            raise_if_false(m.mem_type == Memtype.MEM_TYPE_DEVICE,
                           f"check mem_info.mem_type failed, only support Memtype.MEM_TYPE_DEVICE, index={i}.")
            raise_if_false(m.addr != 0, f"check mem_info.addr failed, addr can not be zero, index={i}.")
            raise_if_false(m.size > 0, f"check mem_info.size failed, size must be > 0, index={i}.")
        raise LLMException("remap_registered_memory repairs Ascend device memory; there is none here",
                           status_code=LLMStatusCode.LLM_FEATURE_NOT_ENABLED)

    def swap_blocks(self, src_cache: Cache, dst_cache: Cache, src_to_dst: Dict[int, int]) -> None:
        """Arguments are checked as LLM-DataDist does; then LLM_FEATURE_NOT_ENABLED: it moves blocks between
        host and device memory, and there is no device here."""
        check_type("src", src_cache, Cache, allow_none=False)
        check_type("dst", dst_cache, Cache, allow_none=False)
        check_type("src_to_dst", src_to_dst, dict, int, allow_none=False)
        for k, v in src_to_dst.items():
            check_type("src_to_dst value", v, int, allow_none=False)
        raise_if_false(src_cache.is_blocks_cache, "param check failed, src cache should be blocks cache.")
        raise_if_false(dst_cache.is_blocks_cache, "param check failed, dst cache should be blocks cache.")
        src_desc, dst_desc = src_cache.cache_desc, dst_cache.cache_desc
        raise_if_false(src_desc.size // src_desc.batch_size == dst_desc.size // dst_desc.batch_size,
                       "src and dst block sizes must be equal")
        raise_if_false(src_desc.num_tensors == dst_desc.num_tensors, "src and dst num_tensors must be equal")
        for s, d in src_to_dst.items():
            raise_if_false(0 <= s < src_desc.batch_size, f"src_block_index:{s} must be in [0, {src_desc.batch_size})")
            raise_if_false(0 <= d < dst_desc.batch_size, f"dst_block_index:{d} must be in [0, {dst_desc.batch_size})")
        placements = (src_desc.placement, dst_desc.placement)
        raise_if_false(placements in ((Placement.HOST, Placement.DEVICE), (Placement.DEVICE, Placement.HOST)),
                       f"swap src placement:{placements[0]} to dst placement:{placements[1]} is not support")
        raise LLMException("swap_blocks moves blocks between host and device memory; there is no device here",
                           status_code=LLMStatusCode.LLM_FEATURE_NOT_ENABLED)
