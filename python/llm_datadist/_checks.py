"""Argument checks of the llm_datadist package: TypeError for a wrong type,
ValueError for a value out of range (as LLM-DataDist's Python package)."""

_UINT16 = 2**16 - 1
_UINT32 = 2**32 - 1
_UINT64 = 2**64 - 1
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


def check_type(name, value, classes, inner=None, allow_none=True):
    if allow_none and value is None:
        return value
    classes = classes if isinstance(classes, (list, tuple)) else (classes,)
    if not isinstance(value, tuple(classes)):
        raise TypeError(f"{name} only supports {[c.__name__ for c in classes]}, but got {type(value)}.")
    if inner is not None:
        for v in value:
            if not isinstance(v, inner):
                raise TypeError(f"{name} holds {type(v)}; only {inner.__name__} is supported.")
    return value


def _check_range(name, value, lo, hi, what):
    check_type(name, value, int, allow_none=False)
    if value < lo or value > hi:
        raise ValueError(f"{name}'s value {value} is out of range: not a {what} value.")
    return value


def check_uint16(name, value):
    return _check_range(name, value, 0, _UINT16, "uint16")


def check_uint32(name, value):
    return _check_range(name, value, 0, _UINT32, "uint32")


def check_uint64(name, value):
    return _check_range(name, value, 0, _UINT64, "uint64")


def check_int32(name, value):
    return _check_range(name, value, _INT32[0], _INT32[1], "int32")


def check_int64(name, value):
    return _check_range(name, value, _INT64[0], _INT64[1], "int64")


def int_list(name, value, allow_none=False):
    """A list or tuple of ints (or, hixl extension, a NumPy array or torch
    tensor of integers) as a list of ints >= 0."""
    if value is None and allow_none:
        return []
    if hasattr(value, "tolist") and not isinstance(value, (list, tuple)):
        value = value.tolist()
    check_type(name, value, (list, tuple), int, allow_none=False)
    for v in value:
        check_uint64(name, v)
    return list(value)


def layer_range(name, value):
    """A Python range (step 1, 0 <= start < stop) as LLM-DataDist's
    inclusive (first, last); None: (-1, -1), every layer."""
    if value is None:
        return (-1, -1)
    check_type(name, value, range, allow_none=False)
    if value.step != 1:
        raise ValueError(f"{name}.step must be 1, got {value}")
    if not 0 <= value.start < value.stop:
        raise ValueError(f"{name} must have 0 <= start < stop, got {value}")
    check_uint32(name, value.stop - 1)
    return (value.start, value.stop - 1)
