"""Golden tests of the byte-offset type analysis (analysis/typetree.py) on small IR:
what each pointer points at, offset by offset, through GEPs with constant and variable
indices, pointers kept in memory, copies, calls and returns, TBAA and hints."""

from __future__ import annotations

import pytest

from enzyme_py.analysis.typetree import MemoryTypes
from enzyme_py.ir import parse_module

DL = 'target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"\n'


def _types(body: str):
    m = parse_module(DL + body, lazy=False)
    return m, MemoryTypes(m)


def _value(m, fn, name):
    f = m.get_function(fn)
    for a in f.args:
        if a.name == name:
            return a
    for i in f.instructions():
        if i.name == name:
            return i
    raise KeyError(name)


VECTORS = r"""
%Vec = type { i32, ptr }

; a vector of Vecs indexed by i: the buffer is periodic with 16 bytes; the doubles behind
; each Vec's data pointer are typed by the store in @set
define void @set(ptr %vs, i64 %i, i64 %j, double %x) {
  %v = getelementptr %Vec, ptr %vs, i64 %i
  %dp = getelementptr %Vec, ptr %v, i64 0, i32 1
  %d = load ptr, ptr %dp
  %e = getelementptr double, ptr %d, i64 %j
  store double %x, ptr %e
  ret void
}

; a copy between two buffers reached only through the data pointers: no typed access to
; either is visible here
define void @copy(ptr %a, ptr %b, i64 %n) {
  %ap = getelementptr i8, ptr %a, i64 8
  %bp = getelementptr i8, ptr %b, i64 8
  %ad = load ptr, ptr %ap
  %bd = load ptr, ptr %bp
  call void @llvm.memmove.p0.p0.i64(ptr %ad, ptr %bd, i64 %n, i1 false)
  ret void
}

define void @main(ptr %vs, i64 %k) {
  %v = getelementptr inbounds i8, ptr %vs, i64 16
  call void @copy(ptr %v, ptr %vs, i64 24)
  call void @set(ptr %vs, i64 %k, i64 %k, double 1.0)
  %n = getelementptr %Vec, ptr %vs, i64 0, i32 0
  store i32 3, ptr %n
  ret void
}

declare void @llvm.memmove.p0.p0.i64(ptr, ptr, i64, i1)
"""


def test_pointers_kept_in_memory_are_followed_with_offsets_and_periods():
    m, t = _types(VECTORS)
    vs = _value(m, "main", "vs")
    assert t.tree(vs) == "{0+16k: int, 8+16k: ptr {0+8k: double}}"
    # the copy's operands: loaded pointers, typed only through the unification
    ad = _value(m, "copy", "ad")
    assert t.tree(ad) == "{0+8k: double}"
    assert t.kinds(ad, 0, 24) == {"double"}
    # the Vec array's bytes: an int at 0, a pointer at 8, in every 16 bytes
    assert t.kinds(vs, 0, 4) == {"int"}
    assert t.kinds(vs, 8, 8) == {"ptr"}
    assert t.kinds(vs, 16, 4) == {"int"}
    assert t.kinds(vs, 4, 4) == set()   # padding
    assert t.kinds(vs) == {"int", "ptr"}


STRIDES = r"""
; an array of { double, i64, ptr } walked the way -O2 spells it: a byte GEP by i*24
define double @sum(ptr %a, i64 %i) {
  %o = mul nsw i64 %i, 24
  %p = getelementptr inbounds i8, ptr %a, i64 %o
  %x = load double, ptr %p
  %q = getelementptr inbounds i8, ptr %p, i64 8
  %n = load i64, ptr %q
  %r = getelementptr inbounds i8, ptr %p, i64 16
  %s = load ptr, ptr %r
  %f = load float, ptr %s
  ret double %x
}

; two pointers 8 bytes apart merged by a phi: only offsets modulo 8 are known
define void @walk(ptr %b, i1 %c) {
entry:
  %b8 = getelementptr inbounds i8, ptr %b, i64 8
  br i1 %c, label %l, label %r
l:
  br label %r
r:
  %p = phi ptr [ %b, %entry ], [ %b8, %l ]
  store double 0.0, ptr %p
  ret void
}
"""


def test_strides_of_multiplied_indices_and_phis_of_shifted_pointers():
    m, t = _types(STRIDES)
    assert t.tree(_value(m, "sum", "a")) == "{0+24k: double, 8+24k: int, 16+24k: ptr {0: float}}"
    assert t.tree(_value(m, "sum", "q")) == "{0+24k: int, 8+24k: ptr {0: float}, 16+24k: double}"
    assert t.tree(_value(m, "walk", "b")) == "{0+8k: double}"


CALLS = r"""
%S = type { double, ptr }

@table = global [2 x double] zeroinitializer
@holder = global %S { double 1.0, ptr @table }

; an accessor returning a pointer it loads; the caller stores through the result
define ptr @data(ptr %s) {
  %p = getelementptr %S, ptr %s, i64 0, i32 1
  %d = load ptr, ptr %p
  ret ptr %d
}

define void @use(ptr %s, i64 %i) {
  %d = call ptr @data(ptr %s)
  %e = getelementptr i64, ptr %d, i64 %i
  %v = load i64, ptr %e, !tbaa !1
  ret void
}

define void @hint(ptr %m) {
  call void @__enzyme_float(ptr %m, i64 8)
  ret void
}

define void @entry() {
  call void @use(ptr @holder, i64 1)
  %m = call ptr @malloc(i64 8)
  call void @hint(ptr %m)
  ret void
}

declare ptr @malloc(i64)
declare void @__enzyme_float(ptr, i64)

!1 = !{!2, !2, i64 0}
!2 = !{!"double", !3, i64 0}
!3 = !{!"omnipotent char", !4, i64 0}
!4 = !{!"Simple C/C++ TBAA"}
"""


def test_calls_returns_globals_tbaa_and_hints():
    m, t = _types(CALLS)
    # the global's initialiser puts @table behind @holder's pointer field; the integer
    # load TBAA calls double counts as a double
    assert t.tree(m.get_global("holder")) == "{0: double, 8: ptr {0+8k: double}}"
    assert t.tree(_value(m, "use", "d")) == "{0+8k: double}"
    assert t.tree(_value(m, "entry", "m")) == "{0: float, 4: float}"


def test_unanalysed_values_are_unknown():
    m, t = _types(CALLS)
    from enzyme_py.ir.values import Argument
    from enzyme_py.ir import types as T
    stray = Argument(T.PointerType(0), "x", None, 0, "")
    assert t.kinds(stray) == set()
    assert t.tree(stray) == "{}"


@pytest.mark.parametrize("size,want", [(8, {"double"}), (16, {"double", "ptr"}),
                                       (None, {"double", "ptr"})])
def test_ranges_of_a_non_periodic_object(size, want):
    m, t = _types(CALLS)
    assert t.kinds(m.get_global("holder"), 0, size) == want


HELPERS = r"""
; std::forward / std::__to_address: a helper that returns its argument, called on an
; array of doubles and on an array of ints.  Analysed once per call site, it does not
; merge the two arrays (a global unification would type both `double|int`).
define ptr @fwd(ptr %p) {
  ret ptr %p
}

define void @main(ptr %d, ptr %i, i64 %k) {
  %a = call ptr @fwd(ptr %d)
  %b = call ptr @fwd(ptr %i)
  %ae = getelementptr double, ptr %a, i64 %k
  store double 1.0, ptr %ae
  %be = getelementptr i32, ptr %b, i64 %k
  store i32 1, ptr %be
  ret void
}
"""


def test_small_helpers_are_analysed_per_call_site():
    m, t = _types(HELPERS)
    assert t.kinds(_value(m, "main", "d")) == {"double"}
    assert t.kinds(_value(m, "main", "i")) == {"int"}
    # a question about the helper's own value joins its call sites
    assert t.kinds(_value(m, "fwd", "p")) == {"double", "int"}
    assert t.tree(_value(m, "fwd", "p")) == "{0+8k: double} | {0+4k: int}"


CODE = r"""
%Op = type { ptr, ptr }

; a constructor keeping a function pointer beside a data pointer (valarray::apply's
; _FunBase at -O0): what the function-pointer field points at is code
define void @op_init(ptr %op, ptr %data, ptr %fn) {
  store ptr %data, ptr %op
  %f = getelementptr %Op, ptr %op, i64 0, i32 1
  store ptr %fn, ptr %f
  ret void
}

define double @run(ptr %x) {
  %op = alloca %Op
  call void @op_init(ptr %op, ptr %x, ptr @sq)
  %v = load double, ptr %x
  ret double %v
}

define double @sq(double %t) {
  %r = fmul double %t, %t
  ret double %r
}
"""


def test_function_pointers_point_at_code():
    m, t = _types(CODE)
    assert t.is_code(_value(m, "op_init", "fn"))
    assert not t.is_code(_value(m, "op_init", "data"))
    assert t.kinds(_value(m, "op_init", "data")) == {"double"}


def _nested_constructors(depth: int) -> str:
    """An object {i64, vec, vec, fn} built the way C++ builds one at -O0: each member
    vector by a chain of ``depth`` small constructors (vector, _Vector_base, _Vector_impl,
    the allocator, ...), the innermost storing the buffer's pointer; the function pointer
    stored by the object's own constructor."""
    chain = "".join(f"""
define void @ctor{k}(ptr %p, ptr %buf) {{
  call void @ctor{k + 1}(ptr %p, ptr %buf)
  ret void
}}""" for k in range(depth - 1))
    return chain + f"""
define void @ctor{depth - 1}(ptr %p, ptr %buf) {{
  store ptr %buf, ptr %p
  ret void
}}

define void @object(ptr %o, ptr %fn) {{
  %w = getelementptr i8, ptr %o, i64 8
  %wb = call ptr @malloc(i64 64)
  call void @ctor0(ptr %w, ptr %wb)
  %b = getelementptr i8, ptr %o, i64 32
  %bb = call ptr @malloc(i64 64)
  call void @ctor0(ptr %b, ptr %bb)
  %f = getelementptr i8, ptr %o, i64 56
  store ptr %fn, ptr %f
  ret void
}}

define double @use(i64 %k) {{
  %o = alloca [64 x i8]
  call void @object(ptr %o, ptr @sq)
  %wp = getelementptr i8, ptr %o, i64 8
  %w = load ptr, ptr %wp
  %e = getelementptr double, ptr %w, i64 %k
  store double 1.0, ptr %e
  %bp = getelementptr i8, ptr %o, i64 32
  %bv = load ptr, ptr %bp
  %v = load double, ptr %bv
  ret double %v
}}

define double @sq(double %t) {{
  %r = fmul double %t, %t
  ret double %r
}}

declare ptr @malloc(i64)
"""


@pytest.mark.parametrize("depth", [3, 10])
def test_members_built_by_deeply_nested_helpers_stay_apart(depth):
    # Before: past six helpers deep the innermost constructor's parameter stood for
    # both members, the object became periodic with 24 bytes, and the function pointer
    # at 56 (= 8 mod 24) shared the first vector's field: "code" mixed with doubles
    # ("a pointer without a shadow ... is mixed" on a C++ layer class at -O0).
    m, t = _types(_nested_constructors(depth))
    fn = _value(m, "object", "fn")
    assert t.is_code(fn)
    assert t.kinds(fn) == set()
    assert t.tree(_value(m, "object", "o")) == \
        "{8: ptr {0+8k: double}, 32: ptr {0: double}, 56: ptr}"


def test_an_access_can_be_left_out_of_its_own_question():
    m, t = _types("""
define void @f(ptr %p, ptr %q, i64 %x) {
  %o = atomicrmw xchg ptr %p, i64 %x monotonic, align 8
  %c = getelementptr i8, ptr %q, i64 8
  %a = atomicrmw add ptr %c, i32 1 monotonic, align 4
  %n = load i32, ptr %c, align 4
  store ptr null, ptr %q
  ret void
}""")
    f = m.get_function("f")
    xchg, add = [i for i in f.instructions() if i.opcode == "atomicrmw"]
    p, q = f.args[0], f.args[1]
    assert t.kinds(p, 0, 8) == {"int"}
    assert t.kinds(p, 0, 8, exclude=xchg) == set()       # nothing else says what p holds
    assert t.kinds(q, 8, 4, exclude=add) == {"int"}      # the load of the count does
    assert t.kinds(q, exclude=add) == {"int", "ptr"}


# A string kept in an object beside a double (libc++'s short string: a length byte, the
# characters inline from byte 1, then -- in a node holding it -- a double at 24): the
# terminating zero stored at `buf + len` is a byte at an offset not known.  Folded with
# period 1, the node would hold every kind at every offset; its single-byte accesses are
# the class's "anywhere" facts instead, and the node keeps its fields.  Bytes of a double
# written through a byte pointer still meet the double.
BYTES_IN_AN_OBJECT = r"""
define void @terminate(ptr %node, i64 %len) {
  store i8 8, ptr %node
  %buf = getelementptr inbounds i8, ptr %node, i64 1
  %end = getelementptr inbounds i8, ptr %buf, i64 %len
  store i8 0, ptr %end
  %size = getelementptr inbounds i8, ptr %node, i64 8
  store i64 3, ptr %size
  %data = getelementptr inbounds i8, ptr %node, i64 16
  store ptr null, ptr %data
  %val = getelementptr inbounds i8, ptr %node, i64 24
  store double 1.0, ptr %val
  ret void
}

define void @scribble(ptr %d, i64 %i) {
  store double 2.0, ptr %d
  %b = getelementptr inbounds i8, ptr %d, i64 %i
  %v = load i8, ptr %b
  %w = add i8 %v, 1
  store i8 %w, ptr %b
  ret void
}

define void @walk(ptr %d, i64 %i) {
  store double 2.0, ptr %d
  %b = getelementptr inbounds i8, ptr %d, i64 %i
  %c = load i16, ptr %b
  ret void
}
"""


def test_single_bytes_at_unknown_offsets_do_not_fold_a_class():
    m, t = _types(BYTES_IN_AN_OBJECT)
    node = _value(m, "terminate", "node")
    assert t.tree(node) == "{0: int, 8: int, 16: ptr, 24: double, *: int}"
    assert t.kinds(node, 24, 8) == {"double", "int"}
    assert t.kinds(node, 16, 8) == {"ptr", "int"}
    # the byte pointer itself: anywhere in its class
    assert t.kinds(_value(m, "terminate", "end"), 0, 1) == {"int", "ptr", "double"}
    b = _value(m, "scribble", "b")
    assert t.kinds(b, 0, 1) == {"double", "int"}
    # (a wider access through a byte-indexed pointer folds the class, as before)
    assert t.tree(_value(m, "walk", "d")) == "{0+1k: double|int}"
