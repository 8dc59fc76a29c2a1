"""Argument checks under the names of LLM-DataDist's llm_datadist.utils.utils
(the same rules as the package's own, _checks): TypeError for a wrong type,
ValueError for an integer outside its C type's range."""

from .._checks import check_int32, check_int64, check_type, check_uint16, check_uint32, check_uint64

__all__ = [
    "check_isinstance", "check_inner", "check_dict", "check_uint8", "check_uint16", "check_int32", "check_uint32",
    "check_int64", "check_uint64", "check_list_int32", "check_list_int64", "check_list_uint64",
    "check_positive_or_set_default",
]


def check_inner(arg_name, arg_value, inner_class):
    for v in arg_value:
        if not isinstance(v, inner_class):
            raise TypeError(f"{arg_name} holds {type(v)}; only {inner_class} is supported.")


def check_isinstance(arg_name, arg_value, classes, inner_class=None, extra_fmt="", allow_none=True):
    """arg_value itself, if it is one of classes (and each item one of inner_class); TypeError if not."""
    try:
        return check_type(arg_name, arg_value, classes, inner_class, allow_none=allow_none)
    except TypeError as e:
        raise TypeError(f"{extra_fmt}{e}") from None


def check_dict(arg_name, arg_value, k_class, v_class, v_inner_class=None):
    for k, v in arg_value.items():
        if not isinstance(k, k_class):
            raise TypeError(f"{arg_name} dict key only supports {k_class}, but got {type(k)}.")
        if not isinstance(v, v_class):
            raise TypeError(f"{arg_name} dict value only supports {v_class}, but got {type(v)}.")
        if v_inner_class is not None:
            check_inner("dict value", v, v_inner_class)


def check_uint8(arg_name, arg_value):
    check_type(arg_name, arg_value, int, allow_none=False)
    if not 0 <= arg_value <= 255:
        raise ValueError(f"{arg_name}'s value {arg_value} is out of range: not a uint8 value.")


def check_list_int32(arg_name, arg_value):
    for v in arg_value:
        check_int32(arg_name, v)


def check_list_int64(arg_name, arg_value):
    for v in arg_value:
        check_int64(arg_name, v)


def check_list_uint64(arg_name, arg_value):
    for v in arg_value:
        check_uint64(arg_name, v)


def check_positive_or_set_default(arg_name, arg_value, default=-1):
    """arg_value (an int64 >= 0), or default for None."""
    if arg_value is None:
        return default
    check_int64(arg_name, arg_value)
    if arg_value < 0:
        raise ValueError(f"{arg_name}'s value:{arg_value} is invalid, should be >= 0")
    return arg_value
