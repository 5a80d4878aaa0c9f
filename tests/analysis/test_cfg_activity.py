"""CFG, dominators, post-dominators, loops (with trip counts), activity and type
analysis on a small hand-written function."""

from __future__ import annotations

from enzyme_py.analysis.activity import Activity
from enzyme_py.analysis.cfg import CFG, dominators, find_loops, post_dominators
from enzyme_py.analysis.types import memory_kinds
from enzyme_py.ir import parse_module

IR = """
define double @f(ptr %x, i32 %n, double %c) {
entry:
  %buf = alloca [4 x i32], align 4
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %i1, %latch ]
  %s = phi double [ 0.0, %entry ], [ %s2, %latch ]
  %p = getelementptr double, ptr %x, i32 %i
  %v = load double, ptr %p
  %pos = fcmp ogt double %v, 0.0
  br i1 %pos, label %then, label %latch
then:
  %m = fmul double %v, %c
  br label %latch
latch:
  %s1 = phi double [ %m, %then ], [ %v, %loop ]
  %s2 = fadd double %s, %s1
  %q = getelementptr i32, ptr %buf, i32 0
  store i32 %i, ptr %q
  %i1 = add i32 %i, 1
  %cond = icmp slt i32 %i1, %n
  br i1 %cond, label %loop, label %exit
exit:
  ret double %s2
}
"""


def _fn():
    return parse_module(IR).get_function("f")


def _names(bs):
    return sorted(b.name for b in bs)


def test_cfg_dominators_and_postdominators():
    fn = _fn()
    cfg = CFG(fn)
    assert [b.name for b in cfg.rpo][0] == "entry"
    dom = dominators(cfg)
    b = {x.name: x for x in fn.blocks}
    assert dom.idom[b["latch"]] is b["loop"]
    assert dom.dominates(b["loop"], b["exit"])
    assert not dom.dominates(b["then"], b["latch"])
    pdom = post_dominators(cfg)
    assert pdom.idom[b["then"]] is b["latch"]
    assert pdom.idom[b["loop"]] is b["latch"]
    assert "idom" in str(dom)


def test_loops_and_trip_count():
    fn = _fn()
    cfg = CFG(fn)
    li = find_loops(cfg, dominators(cfg))
    (lp,) = li.loops
    b = {x.name: x for x in fn.blocks}
    assert lp.header is b["loop"] and lp.preheader is b["entry"]
    assert _names(lp.blocks) == ["latch", "loop", "then"]
    assert lp.exits == [b["exit"]]
    start, bound, step, pred = lp.trip_count
    assert bound.name == "n" and pred == "slt" and step.value == 1
    assert li.loop_of(b["exit"]) is None and li.in_loop(b["then"])


def test_activity_down_reasoning():
    fn = _fn()
    act = Activity(fn, ["dup", "const", "const"])
    v = {i.name: i for i in fn.instructions() if i.name}
    assert act.has_shadow(v["p"]) and act.is_active(v["v"]) and act.is_active(v["m"])
    assert act.is_active(v["s2"]) and not act.is_active(v["i"])
    assert not act.has_shadow(v["buf"])         # an int-only local buffer
    act2 = Activity(fn, ["const", "const", "out"])
    assert not act2.is_active(v["v"]) and act2.is_active(v["m"])


def test_type_analysis_memory_kinds():
    fn = _fn()
    v = {i.name: i for i in fn.instructions() if i.name}
    assert memory_kinds([fn.args[0]]) == {"double"}
    assert memory_kinds([v["buf"]]) == {"int"}


LOCALS_IR = """
@SEQ = internal global ptr null

define internal ptr @pick(ptr %x, i64 %t) {
  %g = load ptr, ptr @SEQ
  %r = getelementptr double, ptr %g, i64 %t
  ret ptr %r
}

define double @f(ptr %x, ptr %feat) {
entry:
  %x.addr = alloca ptr
  %feat.addr = alloca ptr
  %goal = alloca ptr
  %acc = alloca double
  %i = alloca i32
  call void @llvm.lifetime.start.p0(i64 4, ptr %i)
  store i32 0, ptr %i
  store ptr %x, ptr %x.addr
  store ptr %feat, ptr %feat.addr
  %g = load ptr, ptr @SEQ
  store ptr %g, ptr %goal
  %xp = load ptr, ptr %x.addr
  %fp = load ptr, ptr %feat.addr
  %gp = load ptr, ptr %goal
  %xv = load double, ptr %xp
  %fv = load double, ptr %fp
  %gv = load double, ptr %gp
  %c = call ptr @pick(ptr %xp, i64 1)
  %cv = load double, ptr %c
  %s = fmul double %xv, %fv
  store double %s, ptr %acc
  ret double %s
}

declare void @llvm.lifetime.start.p0(i64, ptr)
"""


def test_activity_follows_pointers_kept_in_locals():
    """-O0 code keeps pointers in allocas: a local holding only pointers to constant
    data (a global's pointer, an enzyme_const argument) has no shadow, and neither do
    the pointers loaded from it or returned by a callee that returns such a pointer."""
    m = parse_module(LOCALS_IR)
    fn = m.get_function("f")
    act = Activity(fn, ["dup", "const"])
    v = {i.name: i for i in fn.instructions() if i.name}
    assert act.has_shadow(v["x.addr"]) and act.has_shadow(v["xp"]) and act.is_active(v["xv"])
    assert act.has_shadow(v["acc"])                  # holds a double
    for name in ("feat.addr", "goal", "fp", "gp", "c", "i"):
        assert not act.has_shadow(v[name]), name
    for name in ("fv", "gv", "cv"):
        assert not act.is_active(v[name]), name
