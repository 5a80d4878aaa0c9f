"""Which globals get shadow globals (analysis/globals.py), on small hand-written IR: a
scratch array stored into (directly, through a constant GEP, through an arena function
returning a pointer into it), read-only parameters, pointer-holding pools, inactive
globals; which calls use them through the call graph (recursion included); and the
activity analysis seeded with them."""

from __future__ import annotations

from enzyme_py.analysis.activity import Activity
from enzyme_py.analysis.globals import scratch_globals, shadow_constant, touches
from enzyme_py.analysis.types import layout_kinds
from enzyme_py.ir import parse_module

IR = """
%struct.Node = type { double, ptr }
%struct.P = type { i32, i32, double }
@scratch = internal global [4 x double] zeroinitializer, align 16
@param = internal global double 1.5, align 8
@pool = internal global [8 x %struct.Node] zeroinitializer, align 16
@arena = internal global [64 x i8] zeroinitializer, align 16
@quiet = internal global [2 x double] zeroinitializer, align 16
@table = internal constant [2 x double] [double 1.0, double 2.0], align 16

define internal ptr @arena_at(i64 %o) {
  %p = getelementptr inbounds i8, ptr @arena, i64 %o
  ret ptr %p
}

define internal double @read1() {
  %v = load double, ptr getelementptr inbounds (i8, ptr @scratch, i64 8)
  ret double %v
}

define internal double @ping(i32 %d) {
  %c = icmp sgt i32 %d, 0
  br i1 %c, label %a, label %b
a:
  %d1 = sub i32 %d, 1
  %r = call double @pong(i32 %d1)
  ret double %r
b:
  %v = call double @read1()
  ret double %v
}

define internal double @pong(i32 %d) {
  %r = call double @ping(i32 %d)
  ret double %r
}

define internal double @pure(i32 %d) {
  %x = sitofp i32 %d to double
  ret double %x
}

define double @f(ptr %x, ptr %q) {
  %x0 = load double, ptr %x
  %sq = fmul double %x0, %x0
  store double %sq, ptr getelementptr inbounds (i8, ptr @scratch, i64 8)
  %pv = load double, ptr @param
  %a = call ptr @arena_at(i64 16)
  store double %x0, ptr %a
  %n = getelementptr inbounds %struct.Node, ptr @pool, i64 1, i32 0
  store double %sq, ptr %n
  store double %sq, ptr @quiet
  %y = call double @pong(i32 3)
  %z = call double @pure(i32 3)
  %w = fadd double %y, %pv
  %f2 = getelementptr inbounds %struct.P, ptr %q, i64 2, i32 1
  %k = load i32, ptr %f2
  ret double %w
}
"""


def _module():
    return parse_module(IR)


def test_scratch_globals():
    m = _module()
    fns = [f for f in m.functions if not f.is_declaration]
    got = [g.name for g in scratch_globals(fns, inactive={"quiet"})]
    # stored into: scratch (constant GEP), arena (through arena_at); not param (only
    # read), not pool (holds pointers), not quiet (inactive), not table (constant)
    assert got == ["scratch", "arena"]


def test_calls_use_shadow_globals_through_recursion():
    m = _module()
    fns = {f.name: f for f in m.functions}
    shadows = set(scratch_globals([f for f in m.functions if not f.is_declaration]))
    memo: dict = {}
    # ask about ping first: pong's only use is through ping, still being analysed
    assert touches(fns["ping"], shadows, memo) and memo[fns["pong"]]
    assert touches(fns["pong"], shadows, {})
    assert not touches(fns["pure"], shadows, memo)


def test_activity_with_shadow_globals():
    m = _module()
    f = m.get_function("f")
    fns = [g for g in m.functions if not g.is_declaration]
    shadows = {g: g for g in scratch_globals(fns)}
    act = Activity(f, ["dup", "const"], shadow_globals=shadows)
    calls = {i.callee_name: i for i in f.instructions() if i.opcode == "call"}
    assert calls["pong"] in act.active          # reads the scratch through ping/read1
    assert calls["pure"] not in act.active
    assert calls["arena_at"] in act.shadowed     # a pointer into the arena
    plain = Activity(f, ["dup", "const"])
    assert calls["pong"] not in plain.active


def test_shadow_constant_and_layout():
    m = _module()
    scratch, arena = m.get_global("scratch"), m.get_global("arena")
    f = m.get_function("f")
    st = [i for i in f.instructions() if i.opcode == "store"][0]
    sh = shadow_constant(st.operand(1), {scratch: arena})
    assert "@arena" in str(sh) and "i64 8" in str(sh)
    load = [i for i in f.instructions() if i.opcode == "load" and i.type.is_int][0]
    assert layout_kinds(load.operand(0), 4, m.datalayout) == {"int"}
    assert layout_kinds(load.operand(0), 8, m.datalayout) == {"int", "double"}
