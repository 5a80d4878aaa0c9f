"""Unit tests of the object model: types, use lists, RAUW, erase, clone, builder."""

from __future__ import annotations

import pytest

from enzyme_py import llvm
from enzyme_py.ir import IRBuilder, Module, parse_module, print_module
from enzyme_py.ir import types as T
from enzyme_py.ir.values import ConstantFP, ConstantInt, IRError, fp_text

SRC = """target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"

define double @sq(double %x) {
entry:
  %m = fmul fast double %x, %x
  %a = fadd double %m, 1.000000e+00
  ret double %a
}
"""


@pytest.fixture
def mod():
    return parse_module(SRC)


@pytest.mark.parametrize("ty,text", [
    (T.i32, "i32"), (T.double, "double"), (T.PointerType(1), "ptr addrspace(1)"),
    (T.VectorType(T.float, 4), "<4 x float>"), (T.VectorType(T.i8, 2, True), "<vscale x 2 x i8>"),
    (T.ArrayType(T.i8, 3), "[3 x i8]"), (T.StructType([T.i32, T.ptr]), "{ i32, ptr }"),
    (T.StructType([T.i8, T.i32], True), "<{ i8, i32 }>"),
    (T.FunctionType(T.i32, [T.ptr], True), "i32 (ptr, ...)"),
])
def test_type_str_and_equality(ty, text):
    assert str(ty) == text
    reparsed = parse_module(f"@g = external global {text}").global_variables[0].value_type \
        if not ty.is_function else ty
    assert reparsed == ty and hash(reparsed) == hash(ty)


def test_datalayout(mod):
    dl = mod.datalayout
    s = T.StructType([T.i8, T.double, T.i32])
    assert dl.field_offsets(s) == [0, 8, 16]
    assert dl.size_in_bytes(s) == 24 and dl.abi_alignment(s) == 8
    assert dl.size_in_bytes(T.x86_fp80) == 16
    assert dl.size_in_bytes(T.ArrayType(T.float, 5)) == 20
    assert dl.size_in_bytes(T.StructType([T.i8, T.i32], True)) == 5


def test_datalayout_of_deeply_nested_structs(monkeypatch):
    # C++ expression templates nest structs dozens deep (Eigen's lazy products): each
    # layout is computed once -- recomputed for every size and alignment asked, 60
    # levels took 2^60 steps (round BN: a build that did not finish in 26 minutes)
    dl = T.DataLayout("e-m:e-i64:64-f80:128-n8:16:32:64-S128")
    ty = T.StructType([T.ptr, T.i32])
    for k in range(60):
        inner = T.IdentifiedStructType(f"level{k}")
        inner.set_body([ty, T.double, ty] if k % 2 else [T.i8, ty])
        ty = inner
    calls = []
    layout = dl._struct_layout

    def counted(t):
        calls.append(t)
        assert len(calls) <= 200, "struct layouts recomputed"
        return layout(t)
    monkeypatch.setattr(dl, "_struct_layout", counted)
    # each level: {i8, prev} adds 8; {prev, double, prev} doubles and adds 8
    prev = want = 16
    for k in range(60):
        prev, want = want, (2 * want + 8 if k % 2 else want + 8)
    size, align, offsets = dl.struct_layout(ty)
    assert (size, align, offsets) == (want, 8, [0, prev, prev + 8])
    assert dl.size_in_bytes(ty) == want
    inner.set_body([T.i8])      # a body set again gives its new layout
    assert dl.struct_layout(inner)[0] == 1


@pytest.mark.parametrize("v,text", [(1.0, "1.000000e+00"), (0.1, "1.000000e-01"),
                                    (1.0 / 3, "0x3FD5555555555555"), (-0.0, "-0.000000e+00")])
def test_fp_text_matches_llvm(v, text):
    assert fp_text(T.double, v) == text


def test_use_lists_and_rauw(mod):
    f = mod.get_function("sq")
    x = f.args[0]
    m, a, r = f.blocks[0].instructions
    assert [(u.user, u.index) for u in x.uses] == [(m, 0), (m, 1)]
    c = ConstantFP(T.double, 2.0)
    x.replace_all_uses_with(c)
    assert not x.uses and m.operands == [c, c]
    assert "fmul fast double 2.000000e+00, 2.000000e+00" in print_module(mod)


def test_erase_with_uses_raises(mod):
    m, a, r = mod.get_function("sq").blocks[0].instructions
    with pytest.raises(IRError, match="still has 1 use"):
        m.erase()
    a.replace_all_uses_with(m)
    a.erase()
    assert a.parent is None and len(m.uses) == 1
    llvm.parse_assembly(print_module(mod))


def test_clone_function(mod):
    f = mod.get_function("sq")
    vmap = {}
    g = f.clone("sq_clone", vmap)
    assert mod.get_function("sq_clone") is g
    assert vmap[f.args[0]] is g.args[0]
    gm = g.blocks[0].instructions[0]
    assert gm.operands == [g.args[0], g.args[0]] and gm.flags == ["fast"]
    assert vmap[f.blocks[0].instructions[0]] is gm
    assert f.clone(vmap={}).name == "sq.1"
    llvm.parse_assembly(print_module(mod))


def test_instruction_moves_and_clone(mod):
    m, a, r = mod.get_function("sq").blocks[0].instructions
    c = m.clone()
    c.insert_after(m)
    a.set_operand(0, c)
    assert not m.uses or all(u.user is not a for u in m.uses)
    m.erase()
    assert c.parent.instructions == [c, a, r]


def test_builder_emits_verifiable_code():
    mod = parse_module(SRC)
    fnty = T.FunctionType(T.double, [T.double, T.ptr])
    f = mod.add_function("relu_acc", fnty, arg_names=["x", "p"])
    b = IRBuilder(f.append_basic_block("entry"))
    zero = b.const_fp(T.double, 0.0)
    cond = b.fcmp("ogt", f.args[0], zero, "pos")
    slot = b.alloca(T.double, name="slot")
    b.store(zero, slot)
    with b.if_then(cond):
        sq = b.call(mod.get_function("sq"), [f.args[0]], "sq")
        b.store(sq, slot)
    with b.if_else(cond) as (then, otherwise):
        with then:
            old = b.load(T.double, f.args[1], align=8)
            b.store(b.fadd(old, f.args[0]), f.args[1], align=8)
        with otherwise:
            pass
    ptr2 = b.gep(T.ArrayType(T.double, 2), f.args[1], [0, 1], inbounds=True)
    i = b.fptosi(b.load(T.double, ptr2), T.i32)
    b.ret(b.select(b.icmp("slt", i, ConstantInt(T.i32, 0)), zero, b.load(T.double, slot)))
    text = print_module(mod)
    llvm.parse_assembly(text)
    assert print_module(parse_module(text)) == text
    jit = llvm.Jit(llvm.parse_assembly(text))
    import ctypes
    fn = jit.function("relu_acc", ctypes.c_double, ctypes.c_double, ctypes.c_void_p)
    buf = (ctypes.c_double * 2)(0.0, 5.0)
    assert fn(3.0, ctypes.addressof(buf)) == 10.0 and buf[0] == 3.0  # sq(x) = x*x + 1


def test_phi_incoming_edits():
    mod = parse_module("""define i32 @f(i1 %c) {
entry:
  br i1 %c, label %a, label %b

a:
  br label %b

b:
  %p = phi i32 [ 1, %entry ], [ 2, %a ]
  ret i32 %p
}
""", lazy=False)
    f = mod.get_function("f")
    entry, a, b = f.blocks
    p = b.phis[0]
    p.set_incoming_value(a, ConstantInt(T.i32, 7))
    assert p.incoming_for(a).value == 7
    p.remove_incoming(entry)
    assert [blk for _, blk in p.incoming] == [a]
    assert b.predecessors == [entry, a]
    assert entry.successors == [a, b]


def test_debug_location(compile_ir):
    mod = parse_module(compile_ir("loops.c", "O2g"))
    f = mod.get_function("dot")
    located = [i for i in f.instructions() if i.debug_loc is not None]
    assert located
    fname, line, col = located[0].debug_loc
    assert fname.endswith("loops.c") and line == 2  # dot() is written on line 2
    assert f"{fname}:2:" in located[0].location_str()


def test_debug_records_follow_rauw(compile_ir):
    mod = parse_module(compile_ir("loops.c", "O2g"), lazy=False)
    f = mod.get_function("poly")
    recs = [r for i in f.instructions() for r in i.dbg_records]
    assert recs and all(r.kind in ("value", "declare", "assign", "label") for r in recs)
    x = f.args[0]
    assert any(u.user in recs for u in x.uses)
    new = ConstantFP(T.double, 0.5)
    x.replace_all_uses_with(new)
    text = print_module(mod)
    assert "#dbg_value(double 5.000000e-01" in text
    llvm.parse_assembly(text)


def test_new_module_from_scratch():
    m = Module("scratch")
    g = m.add_global("counter", T.i32, ConstantInt(T.i32, 0), align=4)
    f = m.add_function("bump", T.FunctionType(T.void, []))
    b = IRBuilder(f.append_basic_block())
    v = b.load(T.i32, g, align=4)
    b.store(b.add(v, ConstantInt(T.i32, 1), flags=("nsw",)), g, align=4)
    b.ret_void()
    text = str(m)
    llvm.parse_assembly(text)
    assert "%2 = add nsw i32 %1, 1" in text  # the unnamed entry block is %0
