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
    assert not act.has_shadow(v["acc"])     # holds a double, but nothing reads it
    for name in ("feat.addr", "goal", "fp", "gp", "c", "i"):
        assert not act.has_shadow(v[name]), name
    for name in ("fv", "gv", "cv"):
        assert not act.is_active(v[name]), name


PRUNE_IR = """
@fmt = private constant [4 x i8] c"%g\\0A\\00"

declare double @llvm.fabs.f64(double)
declare i32 @printf(ptr, ...)

define double @step(ptr %x, i32 %n) {
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %i1, %loop ]
  %err = phi double [ 0.0, %entry ], [ %err1, %loop ]
  %p = getelementptr double, ptr %x, i32 %i
  %v = load double, ptr %p
  %nv = fmul double %v, %v
  store double %nv, ptr %p
  %d = fsub double %nv, %v
  %a = call double @llvm.fabs.f64(double %d)
  %err1 = fadd double %err, %a
  %i1 = add i32 %i, 1
  %c = icmp slt i32 %i1, %n
  br i1 %c, label %loop, label %exit
exit:
  %big = fcmp ogt double %err1, 1.0
  %shown = call i32 (ptr, ...) @printf(ptr @fmt, double %err1)
  %k = fptosi double %err1 to i32
  %only = fmul double %v, 3.0
  %cmp2 = fcmp olt double %only, 0.0
  ret double %err1
}
"""


def test_activity_up_reasoning_drops_what_reaches_no_output():
    """Backward reasoning: the error estimate reaches the return value only, so when the
    caller does not ask for the return's derivative, it and everything feeding only it
    (through fabs, a phi cycle, printf, a comparison, a conversion) is inactive; the
    values stored into shadowed memory stay active either way."""
    fn = parse_module(PRUNE_IR).get_function("step")
    v = {i.name: i for i in fn.instructions() if i.name}
    act = Activity(fn, ["dup", "const"], ret_active=False)
    assert act.is_active(v["v"]) and act.is_active(v["nv"])
    for name in ("d", "a", "err", "err1", "only"):
        assert not act.is_active(v[name]), name
    assert str(act).splitlines() == [
        "entry:",
        "loop: p v nv  (reach no output: err d a err1)",
        "exit:  (reach no output: only)",
    ]
    kept = Activity(fn, ["dup", "const"])      # the return's derivative is wanted
    for name in ("v", "nv", "d", "a", "err", "err1"):
        assert kept.is_active(v[name]), name
    assert not kept.is_active(v["only"]) and kept.pruned == {v["only"]}


LOCALS_PRUNE_IR = """
declare ptr @malloc(i64)
declare void @free(ptr)

define double @g(ptr %x, double %a) {
entry:
  %err = alloca double
  %t = alloca double
  %log = call ptr @malloc(i64 16)
  %log1 = getelementptr double, ptr %log, i64 1
  %keep = call ptr @malloc(i64 8)
  store double 0.0, ptr %err
  %v = load double, ptr %x
  %m = fmul double %v, %a
  store double %m, ptr %t
  store double %m, ptr %x
  %e0 = load double, ptr %err
  %d = fsub double %m, %v
  %e1 = fadd double %e0, %d
  store double %e1, ptr %err
  %e2 = load double, ptr %err
  %small = fcmp olt double %e2, 1.0e-6
  store double %m, ptr %log1
  %lv = load double, ptr %log1
  %neg = fcmp olt double %lv, 0.0
  call void @free(ptr %log)
  store double %m, ptr %keep
  %kv = load double, ptr %keep
  store double %kv, ptr %x
  call void @free(ptr %keep)
  %tv = load double, ptr %t
  ret double %tv
}
"""


def test_activity_up_reasoning_drops_shadows_of_locals_nothing_reads():
    """-O0 keeps every variable in an alloca: a local whose loaded values reach no
    output needs no shadow, and a store of an active value into it is not an output
    (``m`` stays active through its store into ``x``); the same for a block the
    function allocates and frees (``log``), not for one whose value is read back into
    ``x`` (``keep``)."""
    fn = parse_module(LOCALS_PRUNE_IR).get_function("g")
    v = {i.name: i for i in fn.instructions() if i.name}
    act = Activity(fn, ["dup", "out"], ret_active=False)
    assert act.is_active(v["v"]) and act.is_active(v["m"])
    assert not act.has_shadow(v["err"]) and not act.has_shadow(v["t"])
    assert not act.has_shadow(v["log"]) and act.has_shadow(v["keep"])
    assert act.unshadowed_locals == {v["err"], v["t"], v["log"], v["log1"]}
    assert str(act) == "entry: keep v m kv  (reach no output: e0 d e1 e2 lv tv)"
    kept = Activity(fn, ["dup", "out"])        # t's value is returned
    assert kept.has_shadow(v["t"]) and kept.is_active(v["tv"])
    assert not kept.has_shadow(v["err"])
    assert kept.unshadowed_locals == {v["err"], v["log"], v["log1"]}
