"""LLMStatusCode and LLMException, with LLM-DataDist's names and values."""

from enum import IntEnum

from . import _llm_datadist


class LLMStatusCode(IntEnum):
    LLM_SUCCESS = 0x0
    LLM_FAILED = 0xFFFFFFFF
    LLM_PARAM_INVALID = 0x5010B005
    LLM_WAIT_PROCESS_TIMEOUT = 0x5010B001
    LLM_KV_CACHE_NOT_EXIST = 0x5010B002
    LLM_REPEAT_REQUEST = 0x5010B003
    LLM_REQUEST_ALREADY_COMPLETED = 0x5010B004
    LLM_ENGINE_FINALIZED = 0x5010B006
    LLM_NOT_YET_LINK = 0x5010B007
    LLM_ALREADY_LINK = 0x5010B008
    LLM_LINK_FAILED = 0x5010B009
    LLM_UNLINK_FAILED = 0x5010B00A
    LLM_NOTIFY_PROMPT_UNLINK_FAILED = 0x5010B00B
    LLM_CLUSTER_NUM_EXCEED_LIMIT = 0x5010B00C
    LLM_PROCESSING_LINK = 0x5010B00D
    LLM_DEVICE_OUT_OF_MEMORY = 0x5010B00E
    LLM_PREFIX_ALREADY_EXIST = 0x5010B00F
    LLM_PREFIX_NOT_EXIST = 0x5010B010
    LLM_SEQ_LENOVERLIMIT = 0x5010B011
    LLM_NO_FREE_BLOCK = 0x5010B012
    LLM_BLOCKS_OUT_OF_MEMORY = 0x5010B013
    LLM_EXIST_LINK = 0x5010B018
    LLM_FEATURE_NOT_ENABLED = 0x5010B019
    LLM_TIMEOUT = 0x5010B01A
    LLM_LINK_BUSY = 0x5010B01B
    LLM_OUT_OF_MEMORY = 0x5010B01C
    LLM_DEVICE_MEM_ERROR = 507053
    LLM_SUSPECT_REMOTE_ERROR = 507057
    LLM_UNKNOWN_ERROR = -1

    def __str__(self):
        return f"{self.__class__.__name__}.{self.name}"


assert LLMStatusCode.LLM_SUCCESS == _llm_datadist.LLM_SUCCESS
assert LLMStatusCode.LLM_FAILED == _llm_datadist.LLM_FAILED
assert LLMStatusCode.LLM_PARAM_INVALID == _llm_datadist.LLM_PARAM_INVALID


def code_2_status(code) -> LLMStatusCode:
    """The LLMStatusCode of a library status; LLM_FAILED for one it does not name."""
    try:
        return LLMStatusCode(code)
    except ValueError:
        return LLMStatusCode.LLM_FAILED


class LLMException(RuntimeError):
    """Raised by LLMDataDist and CacheManager calls that fail; status_code says
    how. [hixl extension] failed_src_blocks / failed_dst_blocks name the block
    pairs of a failed transfer that may not have landed (the others did);
    failed_layers the layers of a layer-wise push that did not."""

    def __init__(self, *args, status_code=LLMStatusCode.LLM_SUCCESS, failed_src_blocks=(), failed_dst_blocks=(),
                 failed_layers=()):
        super().__init__(*args)
        self._status_code = status_code
        self.failed_src_blocks = list(failed_src_blocks)
        self.failed_dst_blocks = list(failed_dst_blocks)
        self.failed_layers = list(failed_layers)

    @property
    def status_code(self):
        return self._status_code


def raise_on(code, call, detail="", report=None):
    """Raises LLMException for a status other than LLM_SUCCESS."""
    if code == LLMStatusCode.LLM_SUCCESS:
        return
    status = code_2_status(code)
    report = report or {}
    raise LLMException(
        f"{call} failed, error code is {status}{', ' + detail if detail else ''}.",
        status_code=status,
        failed_src_blocks=report.get("failed_src_blocks", ()),
        failed_dst_blocks=report.get("failed_dst_blocks", ()),
        failed_layers=report.get("failed_layers", ()),
    )


class Status:
    """A status code with is_ok(), as LLM-DataDist's Status."""

    def __init__(self, status):
        self._status_code = status

    def is_ok(self) -> bool:
        return self._status_code == LLMStatusCode.LLM_SUCCESS

    @property
    def status_code(self):
        return self._status_code

    def __repr__(self):
        return f"Status({self._status_code!r})"


def handle_llm_status(status, func_name, other_info):
    """LLM-DataDist's name for raise_on: LLMException unless status is LLM_SUCCESS."""
    raise_on(status, func_name, other_info)


def raise_if_false(pred, message, *args, status_code=LLMStatusCode.LLM_PARAM_INVALID, **kwargs):
    """LLMException(status_code) unless pred; message is formatted with args / kwargs when given."""
    if not pred:
        raise LLMException(message.format(*args, **kwargs) if args or kwargs else message, status_code=status_code)


def raise_if_true(pred, message, *args, status_code=LLMStatusCode.LLM_PARAM_INVALID, **kwargs):
    raise_if_false(not pred, message, *args, status_code=status_code, **kwargs)
