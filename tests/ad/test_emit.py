"""The AD pass's Emitter: what it adds to ir.IRBuilder (Lazy operands, element-wise
fadd of float aggregates, const typed after a value, libm calls by base name)."""

from __future__ import annotations

import pytest

from enzyme_py import llvm
from enzyme_py.ad.emit import Emitter, Lazy
from enzyme_py.ir import IRBuilder, Module
from enzyme_py.ir import types as T


def _setup(ret, params):
    m = Module("m")
    f = m.add_function("f", T.FunctionType(ret, list(params)))
    e = Emitter(m)
    e.position_at_end(f.append_basic_block("entry"))
    return m, f, e


def test_is_an_irbuilder_and_resolves_lazy_operands_once_on_first_use():
    m, f, e = _setup(T.double, [T.double])
    assert isinstance(e, IRBuilder) and e.module is m
    made = []
    sq = Lazy(lambda: made.append(1) or e.fmul(f.args[0], f.args[0]), T.double)
    assert not made and sq.type is T.double
    c = e.const(2.0, sq)          # typed after the Lazy without computing it
    assert not made
    y = e.fadd(e.fmul(sq, c), sq)
    e.ret(e.fneg(y))
    assert made == [1]
    assert str(m).count("fmul double %0, %0") == 1
    llvm.parse_assembly(str(m))


def test_fadd_of_struct_adds_float_fields_and_keeps_the_others():
    st = T.StructType([T.double, T.i32, T.ArrayType(T.float, 2)])
    m, f, e = _setup(st, [st, st])
    e.ret(e.fadd(*f.args))
    text = str(m)
    assert text.count("fadd double") == 1 and text.count("fadd float") == 2
    assert "add i32" not in text
    llvm.parse_assembly(text)


@pytest.mark.parametrize("ty,name,callee", [
    (T.double, "cos", "llvm.cos.f64"),
    (T.float, "cos", "llvm.cos.f32"),
    (T.VectorType(T.double, 2), "tan", "llvm.tan.v2f64"),
    (T.double, "tan", "tan"),
    (T.float, "tan", "tanf"),
    (T.x86_fp80, "tan", "tanl"),
])
def test_libm_picks_the_intrinsic_or_the_libm_spelling(ty, name, callee):
    m, f, e = _setup(ty, [ty])
    r = e.libm(name, f.args[0])
    e.ret(r)
    assert r.callee.name == callee and r.type == ty
    llvm.parse_assembly(str(m))


def test_libm_powi_and_const_splat():
    v2 = T.VectorType(T.double, 2)
    m, f, e = _setup(v2, [v2, T.i32])
    r = e.libm("powi", e.fmul(f.args[0], e.const(0.5, v2)), f.args[1])
    e.ret(r)
    assert r.callee.name == "llvm.powi.v2f64.i32"
    assert "fmul <2 x double> %0, splat (double 5.000000e-01)" in str(m)
    llvm.parse_assembly(str(m))
