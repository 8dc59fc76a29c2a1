"""Type stubs of the hixl package (the compiled module hixl._hixl)."""

from typing import Any, Dict, List, Optional, Sequence, Tuple, Union, overload

__version__: str
__all__: List[str]

# A "buffer" is any object with the buffer protocol: NumPy array, bytearray,
# memoryview, mmap, ... (typing.Buffer needs Python 3.12, so: Any).
_Buffer = Any
# str is sent as UTF-8; bytes as they are.
_Text = Union[str, bytes, bytearray]
# op_descs: TransferOpDesc objects, or (hixl extension) NumPy arrays of
# uint64/int64: one N x 3 array (local address, remote address, length), or
# a tuple of three 1-D arrays of N.
_Descs = Union[Sequence["TransferOpDesc"], _Buffer, Tuple[_Buffer, _Buffer, _Buffer]]

# --- status codes (Hixl methods return these) --------------------------------
SUCCESS: int
PARAM_INVALID: int
TIMEOUT: int
NOT_CONNECTED: int
ALREADY_CONNECTED: int
NOTIFY_FAILED: int
UNSUPPORTED: int
RESOURCE_EXHAUSTED: int
FAILED: int

def status_name(status: int) -> str:
    """Name of a status code ("SUCCESS", ...), or "UNKNOWN(<code>)"."""

# --- option keys for Hixl.initialize -----------------------------------------
OPTION_ENABLE_USE_FABRIC_MEM: str
OPTION_RDMA_TRAFFIC_CLASS: str
OPTION_RDMA_SERVICE_LEVEL: str
OPTION_BUFFER_POOL: str
OPTION_GLOBAL_RESOURCE_CONFIG: str
OPTION_AUTO_CONNECT: str
OPTION_LOCAL_COMM_RES: str

FEATURE_SUPPORTED: int
FEATURE_NOT_SUPPORTED: int

# --- enums (pybind11 enums: int(x), x.name, x.value) -------------------------
class _Enum:
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> int: ...
    def __init__(self, value: int) -> None: ...
    def __int__(self) -> int: ...
    def __index__(self) -> int: ...
    def __hash__(self) -> int: ...
    def __eq__(self, other: object) -> bool: ...
    def __ne__(self, other: object) -> bool: ...
    __members__: Dict[str, Any]

class MemType(_Enum):
    MEM_DEVICE: "MemType"
    MEM_HOST: "MemType"

class TransferOp(_Enum):
    READ: "TransferOp"
    WRITE: "TransferOp"

class TransferStatus(_Enum):
    """Not exported at module level: hixl.TIMEOUT / hixl.FAILED are status codes."""

    WAITING: "TransferStatus"
    COMPLETED: "TransferStatus"
    TIMEOUT: "TransferStatus"
    FAILED: "TransferStatus"

class AsyncConnectStatus(_Enum):
    NOT_CONNECT: "AsyncConnectStatus"
    CONNECT_PENDING: "AsyncConnectStatus"
    CONNECTING: "AsyncConnectStatus"
    CONNECTED: "AsyncConnectStatus"
    CONNECT_FAILED: "AsyncConnectStatus"
    DISCONNECT_PENDING: "AsyncConnectStatus"
    DISCONNECTING: "AsyncConnectStatus"

class FeatureType(_Enum):
    AUTO_CONNECT: "FeatureType"
    CLIENT_SERVER_COMM: "FeatureType"

MEM_DEVICE: MemType
MEM_HOST: MemType
READ: TransferOp
WRITE: TransferOp
NOT_CONNECT: AsyncConnectStatus
CONNECT_PENDING: AsyncConnectStatus
CONNECTING: AsyncConnectStatus
CONNECTED: AsyncConnectStatus
CONNECT_FAILED: AsyncConnectStatus
DISCONNECT_PENDING: AsyncConnectStatus
DISCONNECTING: AsyncConnectStatus
AUTO_CONNECT: FeatureType
CLIENT_SERVER_COMM: FeatureType

# --- data classes ------------------------------------------------------------
class MemDesc:
    """A memory region (C++ hixl::MemDesc). See mem_desc() for buffers."""

    addr: int
    len: int
    def __init__(self, addr: int, len: int) -> None: ...

class TransferOpDesc:
    """One piece of a transfer (C++ hixl::TransferOpDesc). See transfer_op_desc()."""

    local_addr: int
    remote_addr: int
    len: int
    def __init__(self, local_addr: int, remote_addr: int, len: int) -> None: ...

class TransferArgs:
    """Optional arguments of transfer_async. user_data: any object, kept alive by
    the binding until the request is reported finished, returned in
    TransferResult.user_data."""

    user_data: Any
    def __init__(self, user_data: Any = None) -> None: ...

class GetTransferStatusArgs:
    max_query_count: int
    skip_waiting: bool
    def __init__(self, max_query_count: int = 4294967295, skip_waiting: bool = False) -> None: ...

class TransferResult:
    req: int
    user_data: Any
    status: TransferStatus
    def __init__(self, req: int = 0, user_data: Any = None, status: TransferStatus = ...) -> None: ...

class NotifyDesc:
    """name and notify_msg: at most 1024 bytes each. Set as str (UTF-8) or bytes;
    read as str (surrogateescape) or through the *_bytes properties."""

    name: str
    notify_msg: str
    @property
    def name_bytes(self) -> bytes: ...
    @property
    def notify_msg_bytes(self) -> bytes: ...
    def __init__(self, name: _Text = "", notify_msg: _Text = "") -> None: ...

# --- the engine --------------------------------------------------------------
class Hixl:
    """A HIXL engine (C++ hixl::Hixl). Methods return status codes, or
    (status, value) where the C++ call has an output parameter. Every method
    releases the GIL while the engine works."""

    def __init__(self) -> None: ...
    def __enter__(self) -> "Hixl": ...
    def __exit__(self, *args: Any) -> bool: ...
    def initialize(self, local_engine: str, options: Dict[str, str] = {}) -> int: ...
    def finalize(self) -> None: ...
    def register_mem(self, mem_desc: MemDesc, mem_type: MemType) -> Tuple[int, int]: ...
    def register_buffer(self, obj: _Buffer, mem_type: MemType = MemType.MEM_HOST) -> Tuple[int, int]:
        """[hixl extension] Register a writable C-contiguous buffer and hold it
        (alive, not resizable) until deregister_mem(handle) or finalize()."""
    def deregister_mem(self, mem_handle: int) -> int: ...
    def connect(self, remote_engine: str, timeout_in_millis: int = 1000) -> int: ...
    def disconnect(self, remote_engine: str, timeout_in_millis: int = 1000) -> int: ...
    def connect_async(self, remote_engine: str, timeout_in_millis: int = 1000) -> int: ...
    def disconnect_async(self, remote_engine: str, timeout_in_millis: int = 1000) -> int: ...
    def get_async_connect_status(self, remote_engine: str) -> Tuple[int, AsyncConnectStatus]: ...
    def get_all_async_connect_status(self) -> Tuple[int, Dict[str, AsyncConnectStatus]]: ...
    def transfer_sync(
        self,
        remote_engine: str,
        op: TransferOp,
        op_descs: _Descs,
        timeout_in_millis: int = 1000,
    ) -> int: ...
    @overload
    def transfer_async(
        self,
        remote_engine: str,
        op: TransferOp,
        op_descs: _Descs,
        optional_args: TransferArgs = ...,
    ) -> Tuple[int, int]: ...
    @overload
    def transfer_async(
        self, remote_engine: str, op: TransferOp, op_descs: _Descs, *, args: TransferArgs
    ) -> Tuple[int, int]: ...
    @overload
    def get_transfer_status(self, req: int) -> Tuple[int, TransferStatus]: ...
    @overload
    def get_transfer_status(self, args: GetTransferStatusArgs) -> Tuple[int, List[TransferResult]]: ...
    def get_all_transfer_status(self, args: GetTransferStatusArgs = ...) -> Tuple[int, List[TransferResult]]: ...
    def send_notify(self, remote_engine: str, notify: NotifyDesc, timeout_in_millis: int = 1000) -> int: ...
    def get_notifies(self) -> Tuple[int, List[NotifyDesc]]: ...

def get_capability(feature_type: Union[FeatureType, int]) -> Tuple[int, int]: ...

# --- buffer helpers (hixl extension) -----------------------------------------
from .host_memory import shared_host_buffer as shared_host_buffer

def buffer_address(obj: _Buffer, *, writable: bool = True) -> Tuple[int, int]:
    """(address, nbytes) of a C-contiguous buffer. Keep obj alive while used."""

def mem_desc(obj: _Buffer, *, writable: bool = True) -> MemDesc: ...
def transfer_op_desc(
    local: _Buffer,
    remote_addr: int,
    local_offset: int = 0,
    length: Optional[int] = None,
    *,
    remote_offset: int = 0,
    writable: bool = True,
) -> TransferOpDesc: ...
