"""hixl: Python binding of the HIXL one-sided transfer API.

The API mirrors HIXL's own Python module (``class Hixl`` and friends, same names,
same status codes); see docs/python.md. Everything lives in the compiled
extension ``hixl._hixl`` and is re-exported here.
"""

from . import _hixl
from ._hixl import *  # noqa: F401,F403
from .host_memory import shared_host_buffer

__version__ = _hixl.__version__

__all__ = [
    # engine
    "Hixl",
    "get_capability",
    # memory that same-host peers copy with memcpy
    "shared_host_buffer",
    # data classes
    "MemDesc",
    "TransferOpDesc",
    "TransferArgs",
    "GetTransferStatusArgs",
    "TransferResult",
    "NotifyDesc",
    # enums
    "MemType",
    "TransferOp",
    "TransferStatus",
    "AsyncConnectStatus",
    "FeatureType",
    # enum values at module level (TransferStatus's are not: TIMEOUT and
    # FAILED are status codes here, as in HIXL's module)
    "MEM_DEVICE",
    "MEM_HOST",
    "READ",
    "WRITE",
    "NOT_CONNECT",
    "CONNECT_PENDING",
    "CONNECTING",
    "CONNECTED",
    "CONNECT_FAILED",
    "DISCONNECT_PENDING",
    "DISCONNECTING",
    "AUTO_CONNECT",
    "CLIENT_SERVER_COMM",
    # status codes
    "SUCCESS",
    "PARAM_INVALID",
    "TIMEOUT",
    "NOT_CONNECTED",
    "ALREADY_CONNECTED",
    "NOTIFY_FAILED",
    "UNSUPPORTED",
    "RESOURCE_EXHAUSTED",
    "FAILED",
    "status_name",
    # option keys
    "OPTION_ENABLE_USE_FABRIC_MEM",
    "OPTION_RDMA_TRAFFIC_CLASS",
    "OPTION_RDMA_SERVICE_LEVEL",
    "OPTION_BUFFER_POOL",
    "OPTION_GLOBAL_RESOURCE_CONFIG",
    "OPTION_AUTO_CONNECT",
    "OPTION_LOCAL_COMM_RES",
    # capability values
    "FEATURE_SUPPORTED",
    "FEATURE_NOT_SUPPORTED",
    # buffer helpers (hixl extension)
    "buffer_address",
    "mem_desc",
    "transfer_op_desc",
]
