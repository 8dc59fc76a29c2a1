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
