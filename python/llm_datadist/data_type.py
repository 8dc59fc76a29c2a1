"""DataType: the element types of a cache, with CANN's values."""

from enum import Enum


class DataType(Enum):
    DT_FLOAT = 0
    DT_FLOAT16 = 1
    DT_BF16 = 27
    DT_INT8 = 2
    DT_INT16 = 6
    DT_UINT16 = 7
    DT_UINT8 = 4
    DT_INT32 = 3
    DT_INT64 = 9
    DT_UINT32 = 8
    DT_UINT64 = 10
    DT_BOOL = 12
    DT_DOUBLE = 11
    DT_STRING = 13


# Bytes of one element; DT_STRING has no fixed size.
ELEMENT_BYTES = {
    DataType.DT_FLOAT: 4,
    DataType.DT_FLOAT16: 2,
    DataType.DT_BF16: 2,
    DataType.DT_INT8: 1,
    DataType.DT_INT16: 2,
    DataType.DT_UINT16: 2,
    DataType.DT_UINT8: 1,
    DataType.DT_INT32: 4,
    DataType.DT_INT64: 8,
    DataType.DT_UINT32: 4,
    DataType.DT_UINT64: 8,
    DataType.DT_BOOL: 1,
    DataType.DT_DOUBLE: 8,
}


def __getattr__(name):
    """dtype_to_np_dtype, valid_np_dtypes and np_dtype_to_dtype: NumPy's types
    of the DataTypes, as LLM-DataDist's module has them (made at first use,
    so that importing the package does not import NumPy)."""
    if name not in ("dtype_to_np_dtype", "valid_np_dtypes", "np_dtype_to_dtype"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import numpy as np

    to_np = {
        DataType.DT_FLOAT: np.float32,
        DataType.DT_FLOAT16: np.float16,
        DataType.DT_BF16: np.float16,  # NumPy has no bfloat16: a type of the same size, as LLM-DataDist's
        DataType.DT_INT8: np.int8,
        DataType.DT_INT16: np.int16,
        DataType.DT_UINT16: np.uint16,
        DataType.DT_UINT8: np.uint8,
        DataType.DT_INT32: np.int32,
        DataType.DT_INT64: np.int64,
        DataType.DT_UINT32: np.uint32,
        DataType.DT_UINT64: np.uint64,
        DataType.DT_BOOL: np.bool_,
        DataType.DT_DOUBLE: np.double,
        DataType.DT_STRING: np.bytes_,
    }
    from_np = {np.dtype(t): d for d, t in to_np.items() if d != DataType.DT_BF16}
    globals().update(dtype_to_np_dtype=to_np, valid_np_dtypes=list(to_np.values()), np_dtype_to_dtype=from_np)
    return globals()[name]
