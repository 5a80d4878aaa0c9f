"""Unnamed (numbered) globals, as sanitizers emit them, keep their numbers: a body
left unparsed refers to them as ``@0``."""

import pytest

from enzyme_py import llvm
from enzyme_py.ir import parse_module, print_module

SRC = """\
@0 = private unnamed_addr constant [3 x i8] c"ab\\00"
@named = global i32 1
@1 = private unnamed_addr global { ptr, i32 } { ptr @0, i32 7 }

declare void @report(ptr)

define i32 @f(i32 %x) {
  call void @report(ptr @1)
  %y = add i32 %x, 1
  ret i32 %y
}

define ptr @g() {
  ret ptr @0
}
"""


@pytest.mark.parametrize("lazy", [True, False], ids=["lazy", "parsed"])
def test_numbered_globals_round_trip(lazy):
    module = parse_module(SRC, lazy=lazy)
    if not lazy:
        for f in module.functions:
            f.blocks  # noqa: B018 -- parse the body
    else:
        module.get_function("g").blocks  # noqa: B018 -- one parsed, one verbatim
    out = print_module(module)
    assert "@0 = private" in out and "@1 = private" in out
    llvm.parse_assembly(out)  # verifies: every @N resolves
