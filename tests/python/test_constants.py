"""Every constant and enum value of the module matches include/hixl/hixl_types.h,
read from the header itself."""

import ast
import os
import re

import pytest

import hixl
from conftest import REPO

HEADER = os.path.join(REPO, "include", "hixl", "hixl_types.h")


def header_text():
    with open(HEADER) as f:
        text = f.read()
    return re.sub(r"//[^\n]*", "", text)  # drop comments


def header_status_codes():
    found = re.findall(r"constexpr\s+Status\s+(\w+)\s*=\s*(\d+)U?\s*;", header_text())
    return {name: int(value) for name, value in found}


def header_options():
    return dict(re.findall(r'constexpr\s+const\s+char\s+(OPTION_\w+)\[\]\s*=\s*"([^"]*)"\s*;', header_text()))


def header_int32_constants():
    found = re.findall(r"constexpr\s+int32_t\s+(\w+)\s*=\s*(-?\d+)\s*;", header_text())
    return {name: int(value) for name, value in found}


def header_enums():
    """{enum name: {enumerator: value}}, following C++'s implicit numbering."""
    enums = {}
    pattern = r"enum\s+(?:class\s+)?(\w+)\s*(?::\s*\w+\s*)?\{([^}]*)\}"
    for name, body in re.findall(pattern, header_text()):
        values, next_value = {}, 0
        for item in (i.strip() for i in body.split(",")):
            if not item:
                continue
            if "=" in item:
                key, value = (s.strip() for s in item.split("="))
                next_value = int(value)
            else:
                key = item
            values[key] = next_value
            next_value += 1
        enums[name] = values
    return enums


def test_header_parsed():
    # Guards the parsing below against silently matching nothing.
    assert len(header_status_codes()) == 9
    assert len(header_options()) == 7
    assert set(header_enums()) == {"MemType", "TransferOp", "TransferStatus", "AsyncConnectStatus", "FeatureType"}
    assert set(header_int32_constants()) == {"FEATURE_SUPPORTED", "FEATURE_NOT_SUPPORTED"}


@pytest.mark.parametrize("name,value", sorted(header_status_codes().items()))
def test_status_code(name, value):
    assert getattr(hixl, name) == value
    assert type(getattr(hixl, name)) is int
    assert hixl.status_name(value) == name


@pytest.mark.parametrize("name,value", sorted(header_options().items()))
def test_option_key(name, value):
    assert getattr(hixl, name) == value


@pytest.mark.parametrize("name,value", sorted(header_int32_constants().items()))
def test_int32_constant(name, value):
    assert getattr(hixl, name) == value


@pytest.mark.parametrize("enum_name,values", sorted(header_enums().items()))
def test_enum(enum_name, values):
    enum = getattr(hixl, enum_name)
    assert set(enum.__members__) == set(values)
    for key, value in values.items():
        member = getattr(enum, key)
        assert int(member) == value, f"{enum_name}.{key}"
        assert member.name == key
        assert enum(value) == member
        if enum_name == "TransferStatus":
            continue  # not at module level: hixl.TIMEOUT / hixl.FAILED are status codes
        assert getattr(hixl, key) == member, f"hixl.{key}"


def test_status_codes_win_over_transfer_status():
    assert hixl.TIMEOUT == 103901 and hixl.FAILED == 503900
    assert not hasattr(hixl, "WAITING") and not hasattr(hixl, "COMPLETED")


def test_status_name_unknown():
    assert hixl.status_name(12345) == "UNKNOWN(12345)"
    assert hixl.status_name(-1) == "UNKNOWN(-1)"
    assert hixl.status_name(1 << 70) == f"UNKNOWN({1 << 70})"


def test_all_is_complete_and_stubbed():
    names = set(hixl.__all__)
    assert len(names) == len(hixl.__all__)
    for name in names:
        assert hasattr(hixl, name), name
    # The compiled module's names, and those of the pure-Python helpers.
    public = {n for n in dir(hixl._hixl) if not n.startswith("_")} | set(hixl.host_memory.__all__)
    assert public == names, f"missing from __all__: {public - names}; stale: {names - public}"

    stub = os.path.join(os.path.dirname(hixl.__file__), "__init__.pyi")
    with open(stub) as f:
        tree = ast.parse(f.read())
    stubbed = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            stubbed.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            stubbed.add(node.target.id)
        elif isinstance(node, ast.ImportFrom):  # re-exported: `from .m import x as x`
            stubbed.update(a.asname for a in node.names if a.asname == a.name)
    assert names <= stubbed, f"not in __init__.pyi: {names - stubbed}"
    assert os.path.exists(os.path.join(os.path.dirname(hixl.__file__), "py.typed"))


def test_hixl_method_names():
    # HIXL's Python surface, plus this binding's extras.
    expected = {
        "initialize", "finalize", "register_mem", "deregister_mem", "connect", "disconnect", "connect_async",
        "disconnect_async", "get_async_connect_status", "get_all_async_connect_status", "transfer_sync",
        "transfer_async", "get_transfer_status", "get_all_transfer_status", "send_notify", "get_notifies",
        "register_buffer",
    }
    for name in expected:
        method = getattr(hixl.Hixl, name)
        assert method.__doc__, f"Hixl.{name} has no docstring"
