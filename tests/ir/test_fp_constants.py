"""Float constants the AD pass creates must be spelled so LLVM accepts them
and reads back the same value."""

import struct

import pytest

from enzyme_py import llvm
from enzyme_py.ir import parse_module
from enzyme_py.ir import types as T
from enzyme_py.ir.values import fp_text

VALUES = [0.6931471805599453, 0.5, 1e-7, 3.0, -2.5e10, 0.1, -0.0, 1e300, 5e-324]


CASES = [pytest.param(ty, v, id=f"{ty}-{v!r}") for ty in (T.float, T.double) for v in VALUES
         if ty is T.double or abs(v) < 3e38]


@pytest.mark.parametrize("ty,v", CASES)
def test_fp_constant_spelling_round_trips(ty, v):
    text = fp_text(ty, v)
    src = f"define {ty} @f() {{\n  ret {ty} {text}\n}}\n"
    llvm.parse_assembly(src)  # LLVM accepts the spelling
    want = struct.unpack("<f", struct.pack("<f", v))[0] if ty is T.float else v
    ret = parse_module(src).get_function("f").blocks[0].terminator.operand(0)
    assert ret.value == want or (want != want and ret.value != ret.value)
