"""Overwrite analysis: which loads the reverse sweep may re-execute (golden output)."""

from __future__ import annotations

from enzyme_py.analysis.cfg import CFG
from enzyme_py.analysis.overwrite import Overwrite
from enzyme_py.ir import parse_module

IR = """
@c = internal constant [2 x double] [double 1.0, double 2.0]
@g = global double 0.0
declare double @sin(double)
define double @f(ptr %x, ptr noalias %y, ptr %out, i64 %n) {
entry:
  %buf = alloca double
  store double 1.0, ptr %buf
  %b0 = load double, ptr %buf
  %c0 = load double, ptr @c
  %g0 = load double, ptr @g
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %px = getelementptr double, ptr %x, i64 %i
  %vx = load double, ptr %px
  %py = getelementptr double, ptr %y, i64 %i
  %vy = load double, ptr %py
  %f1 = getelementptr i8, ptr %x, i64 8
  %w = load double, ptr %x
  %po = getelementptr double, ptr %out, i64 %i
  %m = fmul double %vx, %vy
  store double %m, ptr %po
  %i1 = add i64 %i, 1
  %c = icmp slt i64 %i1, %n
  br i1 %c, label %loop, label %exit
exit:
  %last = load double, ptr %out
  store double %last, ptr %f1
  ret double %m
}

define double @g2(ptr %s, ptr %t) {
entry:
  %a = load double, ptr %s
  %q = getelementptr inbounds i8, ptr %s, i64 8
  %b = load double, ptr %q
  %sb = call double @sin(double %b)
  store double %sb, ptr %q
  %h = load double, ptr @g
  %m = call ptr @malloc(i64 8)
  store double %a, ptr %m
  ret double %h
}
declare ptr @malloc(i64)
"""


def _ow(name, stable, pure=None):
    fn = parse_module(IR).get_function(name)
    return str(Overwrite(fn, CFG(fn), stable, pure=pure))


def test_overwrite_golden_top_level():
    assert _ow("f", True) == """\
b0: cache (local memory (gone or changed before the reverse sweep))
c0: recompute (not overwritten)
g0: cache (may be overwritten later by a store in block loop)
vx: cache (may be overwritten later by a store in block loop)
vy: recompute (not overwritten)
w: cache (may be overwritten later by a store in block loop)
last: cache (may be overwritten later by a store in block exit)"""


def test_overwrite_callee_caches_everything_but_constants():
    out = _ow("f", False).splitlines()
    assert out[1] == "c0: recompute (not overwritten)"
    assert all("cache" in line for k, line in enumerate(out) if k != 1)


def test_overwrite_offsets_and_pure_calls():
    # %a (bytes 0-7) survives the store to bytes 8-15, %b does not; sin writes nothing;
    # the store into fresh malloc'd memory aliases no argument or global
    out = _ow("g2", True, pure=lambda n: n == "sin")
    assert out == """\
a: recompute (not overwritten)
b: cache (may be overwritten later by a store in block entry)
h: recompute (not overwritten)"""
    # the call-effects table (analysis/effects.py) knows sin writes no memory, without
    # the AD layer's hook
    assert _ow("g2", True) == out


IR_OUT = """
define double @rd(ptr %p) {
entry:
  %v = load double, ptr %p
  ret double %v
}
define void @wr(ptr %p, ptr %q) {
entry:
  %v = load double, ptr %q
  store double %v, ptr %p
  ret void
}
define void @h(ptr %a, ptr %err) {
entry:
  %a0 = load double, ptr %a
  %q = getelementptr double, ptr %a, i64 1
  %a1 = load double, ptr %q
  %s = fmul double %a0, %a1
  %r = call double @rd(ptr %a)
  br label %tail
tail:
  store double %s, ptr %err
  %e = load double, ptr %err
  %t = fadd double %e, %r
  store double %t, ptr %err
  ret void
}
define void @h2(ptr %a, ptr %err, ptr %c) {
entry:
  %a0 = load double, ptr %a
  %c0 = load double, ptr %c
  call void @wr(ptr %err, ptr %a)
  store double %a0, ptr %err
  ret void
}
define void @h3(ptr %a, ptr %err, i64 %n) {
entry:
  %a0 = load double, ptr %a
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  store double %a0, ptr %err
  %i1 = add i64 %i, 1
  %c = icmp slt i64 %i1, %n
  br i1 %c, label %loop, label %exit
exit:
  ret void
}
"""


def _ow_out(name, stable=True):
    fn = parse_module(IR_OUT).get_function(name)
    return Overwrite(fn, CFG(fn), stable)


def test_stores_after_every_load_are_undone_instead_of_caching():
    """The only writers that may alias %a are the stores to %err after every load of
    %a and after every block that uses its values (the call to @rd, a defined
    function, writes nothing): the loads are recomputed and the stores undone in the
    reverse.  %e is used in the block of the second store, so it is cached."""
    ow = _ow_out("h")
    assert str(ow) == """\
a0: recompute (the stores after it are undone in the reverse (a store in block tail))
a1: recompute (the stores after it are undone in the reverse (a store in block tail))
e: cache (may be overwritten later by a store in block tail)"""
    stores = [i for b in ow.fn.blocks for i in b.instructions if i.opcode == "store"]
    assert list(ow.restores) == stores
    # not at a callee's level: the caller's memory may change anyway
    assert not _ow_out("h", stable=False).restores


def test_no_undo_for_calls_or_stores_in_loops():
    # @wr writes its first argument (read from its body: no attributes say so), a
    # write that cannot be undone by a saved value; %c is written by nobody
    assert str(_ow_out("h2")) == """\
a0: cache (may be overwritten later by a call to wr in block entry)
c0: cache (may be overwritten later by a call to wr in block entry)"""
    # a store in a loop executes again after ... itself: no single value to restore
    ow = _ow_out("h3")
    assert str(ow) == "a0: cache (may be overwritten later by a store in block loop)"
    assert not ow.restores


def test_no_undo_of_stores_into_local_memory():
    """A load through a pointer read from memory may alias a later store into a local
    alloca; the reverse cannot write that alloca again (it belongs to the augmented
    forward), so the load is cached."""
    ir = """
define void @h4(ptr %pp) {
entry:
  %buf = alloca double
  %p = load ptr, ptr %pp
  %v = load double, ptr %p
  br label %next
next:
  store double 1.0, ptr %buf
  ret void
}
"""
    fn = parse_module(ir).get_function("h4")
    ow = Overwrite(fn, CFG(fn), True)
    assert str(ow).splitlines()[1] == "v: cache (may be overwritten later by a store in block next)"
    assert not ow.restores


IR_CALLEE = """
define void @proj(ptr %c, ptr %out) {
entry:
  %v = load double, ptr %c
  %m = fmul double %v, 2.0
  store double %m, ptr %out
  %q = getelementptr double, ptr %c, i64 1
  %w = load double, ptr %q
  %o1 = getelementptr double, ptr %out, i64 1
  store double %w, ptr %o1
  ret void
}
define void @reproj(ptr %c, ptr %err) {
entry:
  %p = alloca [2 x double]
  call void @proj(ptr %c, ptr %p)
  %r = load double, ptr %p
  store double %r, ptr %err
  ret void
}
"""


def test_callee_arguments_stable_and_noalias_at_the_call():
    """At reproj's call, %c is stable for the callee (the later store to %err, which
    may alias it, is undone by reproj's reverse before it reaches the call) and %p,
    reproj's own alloca that no other argument reaches, is noalias there; with those
    facts both loads of the callee are recomputed, without them both are cached."""
    m = parse_module(IR_CALLEE)
    caller, callee = m.get_function("reproj"), m.get_function("proj")
    ow = Overwrite(caller, CFG(caller), True)
    (call,) = [i for i in caller.blocks[0].instructions if i.opcode == "call"]
    assert ow.callee_stable[call] == frozenset({0})
    assert ow.callee_noalias[call] == frozenset({1})
    assert [i.opcode for i in ow.restores] == ["store"]
    facts = Overwrite(callee, CFG(callee), ow.callee_stable[call],
                      noalias_args=ow.callee_noalias[call])
    assert str(facts) == "v: recompute (not overwritten)\nw: recompute (not overwritten)"
    assert str(Overwrite(callee, CFG(callee), ow.callee_stable[call])) == \
        "v: cache (may be overwritten later by a store in block entry)\nw: cache (may be overwritten later by a store in block entry)"
    assert "cache" in str(Overwrite(callee, CFG(callee), False)).split("\n")[1]
