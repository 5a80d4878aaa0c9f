"""parse → print → LLVM verify over real clang output, and printer stability."""

from __future__ import annotations

import time

import pytest

from conftest import CONFIGS, SOURCES
from enzyme_py import llvm
from enzyme_py.ir import ParseError, parse_module, print_module


@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("src", SOURCES)
@pytest.mark.parametrize("lazy", [False, True], ids=["parsed", "lazy"])
def test_roundtrip_verifies(compile_ir, src, config, lazy):
    text = compile_ir(src, config)
    mod = parse_module(text)
    if not lazy:
        n = sum(len(b.instructions) for f in mod.functions for b in f.blocks)
        assert n > 0 or not any(f._is_definition for f in mod.functions)
        assert all(f.is_materialized for f in mod.functions)
    else:
        assert all(f.is_declaration or not f.is_materialized for f in mod.functions)
    out = print_module(mod)
    llvm.parse_assembly(out, f"{src} ({config})")
    again = print_module(parse_module(out, lazy=lazy))
    assert again == out, "printing is not stable"


@pytest.mark.parametrize("src", ["exceptions.cpp", "loops.c", "stl.cpp"])
def test_parsed_and_lazy_print_the_same_module(compile_ir, src):
    text = compile_ir(src, "O2g")
    lazy = print_module(parse_module(text))
    full = print_module(parse_module(text, lazy=False))
    # both verify and reparse to the same fully-parsed printing
    assert print_module(parse_module(lazy, lazy=False)) == full


def test_lazy_body_parsed_on_first_access(compile_ir):
    mod = parse_module(compile_ir("recursion.c", "O0"))
    fib = mod.get_function("fib")
    assert not fib.is_materialized
    assert fib.blocks and fib.is_materialized
    assert not mod.get_function("ack").is_materialized


def test_global_uses_see_lazy_bodies(compile_ir):
    mod = parse_module(compile_ir("recursion.c", "O0"))
    fib = mod.get_function("fib")
    users = {u.user.function.name for u in fib.uses}
    assert users == {"fib"}


def test_parse_print_speed(compile_ir, capsys):
    texts = [compile_ir(s, "O2g") for s in ("stl.cpp", "exceptions.cpp", "lambdas.cpp")]
    text = max(texts, key=len)
    t0 = time.perf_counter()
    mod = parse_module(text, lazy=False)
    out = print_module(mod)
    dt = time.perf_counter() - t0
    lines = text.count("\n")
    with capsys.disabled():
        print(f"\n[ir] parse+print {lines} lines in {dt:.3f}s = {lines / dt:,.0f} lines/s")
    assert out


BAD = """define i32 @f(i32 %0) {
  %2 = add i32 %0, %9
  ret i32 %2
}
"""


def test_parse_error_points_at_line_and_column():
    mod = parse_module("define i32 @f(i32 %0) {\n  %2 = frob i32 %0\n  ret i32 %2\n}\n")
    with pytest.raises(ParseError) as e:
        _ = mod.get_function("f").blocks
    msg = str(e.value)
    assert ":2:8: error: expected an instruction opcode" in msg
    assert msg.splitlines()[-1] == "       ^"


def test_undefined_value_is_an_error():
    with pytest.raises(ParseError, match="undefined value %9"):
        parse_module(BAD, lazy=False)


def test_forward_references_resolve():
    text = """define i32 @f(i32 %n) {
entry:
  br label %loop

loop:
  %y = phi i32 [ 0, %entry ], [ %x, %loop ]
  %x = add i32 %y, 1
  %c = icmp slt i32 %x, %n
  br i1 %c, label %loop, label %exit

exit:
  ret i32 %x
}
"""
    mod = parse_module(text, lazy=False)
    f = mod.get_function("f")
    entry, loop, exit_ = f.blocks
    y, x = loop.instructions[:2]
    assert x.operand(0) is y and y.incoming_for(loop) is x
    assert loop.predecessors == [entry, loop] and exit_.predecessors == [loop]
    assert print_module(mod) == text
    llvm.parse_assembly(text)
