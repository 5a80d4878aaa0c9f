"""IRBuilder: where instructions go, operands through ``resolve``, and the conveniences
(``declare``, ``call``, ``gep_bytes``) that the AD pass's Emitter inherits."""

from __future__ import annotations

import pytest

from enzyme_py import llvm
from enzyme_py.ir import IRBuilder, Module, Phi
from enzyme_py.ir import types as T
from enzyme_py.ir.values import ConstantInt, IRError, Poison, Value


def _function(m, ret=T.i32, params=(T.i32,), name="f"):
    return m.add_function(name, T.FunctionType(ret, list(params)))


def test_at_the_end_of_a_terminated_block_instructions_go_before_the_terminator():
    m = Module("m")
    f = _function(m)
    entry = f.append_basic_block("entry")
    b = IRBuilder(entry)
    r = b.ret(f.args[0])
    b.position_at_end(entry)
    x = b.add(f.args[0], ConstantInt(T.i32, 1))
    y = b.mul(x, x)
    r.set_operand(0, y)
    assert entry.instructions == [x, y, r]
    llvm.parse_assembly(str(m))


def test_positions():
    m = Module("m")
    f = _function(m)
    entry, loop = f.append_basic_block("entry"), f.append_basic_block("loop")
    b = IRBuilder(entry)
    b.br(loop)
    b.position_at_end(loop)
    i = b.phi(T.i32, [(ConstantInt(T.i32, 0), entry)])
    nxt = b.add(i, ConstantInt(T.i32, 1))
    done = b.icmp("sge", nxt, f.args[0])
    br = b.cbranch(done, loop, loop)
    i.add_incoming(nxt, loop)
    b.position_at_start(loop)
    j = b.phi(T.i32, [(ConstantInt(T.i32, 1), entry), (nxt, loop)])
    assert loop.instructions[0] is j
    b.position_after_phis(loop)
    a = b.add(j, i)
    assert loop.instructions.index(a) == 2
    b.position_after(nxt)
    s = b.sub(nxt, a)
    assert loop.instructions.index(s) == loop.instructions.index(nxt) + 1
    b.position_before(br)
    z = b.zext(done, T.i32)
    assert loop.instructions[-2:] == [z, br]
    with b.goto_block(entry):   # entry ends in a branch: before it
        c = b.add(f.args[0], f.args[0])
    assert entry.instructions[-2] is c and b.block is loop
    br.set_operand(0, b.icmp("eq", z, c))
    with pytest.raises(IRError):
        IRBuilder().add(f.args[0], f.args[0])   # no insertion point
    after = f.append_basic_block("after")
    br.set_operand(2, after)
    b.position_at_end(after)
    b.ret(a)
    llvm.parse_assembly(str(m))


def test_declare_uses_the_given_module_or_the_blocks():
    m = Module("m")
    b = IRBuilder(module=m)
    cos = b.declare("cos", T.double, [T.double])
    assert b.declare("cos", T.double, [T.double]) is cos and m.get_function("cos") is cos
    f = _function(m, T.double, [T.double])
    b2 = IRBuilder(f.append_basic_block("entry"))
    assert b2.module is m and b2.declare("cos", T.double, [T.double]) is cos
    printf = b2.declare("printf", T.i32, [T.ptr], varargs=True)
    assert printf.function_type.varargs
    c = b2.call(cos, [f.args[0]], fn_attrs="nounwind")
    b2.ret(c)
    assert "call double @cos(double %0) nounwind" in str(m)
    llvm.parse_assembly(str(m))


def test_gep_bytes():
    m = Module("m")
    f = _function(m, T.ptr, [T.ptr, T.i64])
    b = IRBuilder(f.append_basic_block("entry"))
    p, n = f.args
    q = b.gep_bytes(p, -16)
    r = b.gep_bytes(q, n, name="r")
    b.ret(r)
    text = str(m)
    assert "%2 = getelementptr i8, ptr %0, i64 -16" in text
    assert "%r = getelementptr i8, ptr %2, i64 %1" in text
    llvm.parse_assembly(text)


class _Box:
    """A stand-in for a value, unwrapped by ``_Unboxing.resolve``."""

    def __init__(self, v):
        self.v = v


class _Unboxing(IRBuilder):
    def resolve(self, v):
        return v.v if isinstance(v, _Box) else v


def test_every_operand_goes_through_resolve():
    m = Module("m")
    cos = m.add_function("cos", T.FunctionType(T.double, [T.double]))
    f = _function(m, T.double, [T.double, T.ptr, T.i32])
    x, p, n = (_Box(a) for a in f.args)
    entry, other, out = (f.append_basic_block(s) for s in ("entry", "other", "out"))
    b = _Unboxing(entry)
    pair = T.StructType([T.double, T.double])
    v2 = T.VectorType(T.double, 2)
    slot = b.alloca(T.double, _Box(ConstantInt(T.i32, 2)))
    b.store(x, slot)
    y = _Box(b.fmul(x, b.load(T.double, _Box(slot))))
    s = b.insertvalue(b.insertvalue(_Box(Poison(pair)), y, 0), x, [1])
    v = b.insertelement(_Box(Poison(v2)), _Box(b.extractvalue(_Box(s), 1)), _Box(n.v))
    e = b.extractelement(_Box(v), 0)
    c = b.call(cos, [_Box(e)])
    g = b.gep(T.double, p, [_Box(ConstantInt(T.i64, 1))])
    b.gep_bytes(_Box(g), 8)
    b.atomicrmw("fadd", p, _Box(c), align=8)
    k = b.select(_Box(b.fcmp("olt", x, _Box(c))), x, _Box(c))
    b.switch(_Box(b.fptosi(_Box(k), T.i32)), other, [(ConstantInt(T.i32, 7), out)])
    b.position_at_end(other)
    b.cbranch(_Box(b.icmp("slt", n, _Box(ConstantInt(T.i32, 0)))), out, other)
    b.position_at_end(out)
    ph = b.phi(T.double, [(_Box(k), entry), (y, other)])
    b.ret(_Box(b.fneg(_Box(ph))))
    for inst in f.instructions():
        assert all(isinstance(o, Value) for o in inst.operands), inst
    assert any(isinstance(i, Phi) for i in out.instructions)
    llvm.parse_assembly(str(m))
