"""The rewrites made before differentiation, in the order they run.

Each private copy about to be differentiated (``ad.transform_module`` makes them) goes
through the list below.  Every rewrite is exact -- the same values, the same bytes read
and written at the same points -- and changes nothing where its pattern is absent;
together they give the generators code in the forms they differentiate: calls that do
not unwind, calls on paths that return no more as the program's own (no derivative),
pointer masks as offsets, Eigen's SSE/AVX inline assembly as the IR it computes,
the C library's complex functions as real arithmetic and its
searches as loops, SIMD memory operations lane by lane, sign masks as
``fneg``/``fabs``, floats and pointers moved as integers (also merged by phis and
selects, and stored into integer slots) back in their own types.  (More run on a whole
set of copies, beside this list: ``variadic.expand_variadics`` first -- variadic
functions given their arguments in memory -- then ``abi.retype_float_abi`` -- unions
of a double passed as an ``i64`` across calls -- and after it ``align_locals`` --
locals as aligned as the vector accesses of the copies, so that their shadows are
aligned where they are -- and ``typed_copies.split_integer_copies``, which needs the
type analysis of all the copies.)
``-v`` prints how many changes each made.
"""

from __future__ import annotations

from importlib import import_module

from ..ir import types as T

__all__ = ["REWRITES", "run_rewrites", "align_locals"]

# (what it rewrites, module, function): each function takes one function and returns
# how many changes it made (or whether it changed anything)
REWRITES = (
    ("invokes (derivative code does not unwind)", "unwind", "strip_invokes"),
    ("call arguments on paths that return no more", "unwind", "primal_on_doomed_paths"),
    ("by-value parameters copied into locals", "rewrites", "copy_byval_params"),
    ("pointer masks as offsets", "rewrites", "ptrmask_as_offsets"),
    ("known x86 inline assembly (SSE/AVX min, max, FMA)", "inline_asm", "inline_asm_as_ir"),
    ("complex library calls", "complex", "redirect_complex_calls"),
    ("library searches (bsearch, lfind, lsearch)", "search", "redirect_search_calls"),
    ("masked vector memory, horizontal adds", "simd", "lower_simd"),
    ("sign masks on float bits", "sign_bits", "rewrite_sign_masks"),
    ("floats stored as integers", "typed_copies", "retype_float_stores"),
    ("floats moved as integer lanes", "typed_copies", "retype_float_lanes"),
    ("floats merged as integers", "typed_copies", "retype_float_merges"),
    ("pointers moved as integers", "typed_copies", "retype_pointer_moves"),
)


def run_rewrites(fn, counts: dict) -> None:
    """Apply every rewrite of ``REWRITES`` to ``fn``, in order; add to ``counts``
    (what -> number of changes)."""
    for what, module, name in REWRITES:
        got = getattr(import_module(f".{module}", __package__), name)(fn)
        counts[what] = counts.get(what, 0) + int(got or 0)


def copy_byval_params(fn) -> int:
    """Make each by-value parameter of ``fn`` (``byval(T)``: the function's own copy of
    the caller's object) a local that the function fills from the parameter on entry
    and uses instead -- what ``byval`` means, spelled out.  Its derivative then follows
    the copy like any local's: the adjoints gathered in the local's shadow go back to
    the caller's shadow where the copy is undone, and a pointer the function advances
    in its copy (``q.c++`` in a struct it got by value, called twice) stays out of the
    caller's shadow, in both sweeps of reverse mode -- which a private shadow made by
    each sweep separately got wrong (the forward sweep's shadow pointers, cached for
    the reverse, pointed into its own frame).  Returns how many were copied."""
    from ..ir.instructions import Alloca
    from ..ir.values import ConstantInt
    from .emit import Emitter, attr_type
    n = 0
    for a in fn.args:
        ty = attr_type(a, "byval")
        if ty is None or not a.uses:
            continue
        e = Emitter(fn.parent)
        e.position_at_start(fn.blocks[0])
        local = Alloca(ty, align=16)
        e.insert(local)
        uses = list(a.uses)
        memcpy = e.declare("llvm.memcpy.p0.p0.i64", T.void, [T.ptr, T.ptr, T.i64, T.i1])
        size = fn.parent.datalayout.size_in_bytes(ty)
        e.call(memcpy, [local, a, ConstantInt(T.i64, size), ConstantInt(T.i1, 0)])
        for u in uses:
            u.user.set_operand(u.index, local)
        n += 1
    return n


def ptrmask_as_offsets(fn) -> int:
    """``llvm.ptrmask(p, m)`` (a pointer aligned down: ``va_arg`` of a ``long double``,
    ``__builtin_align_down``) as ``p`` plus the offset the mask takes off --
    ``(ptrtoint p & m) - ptrtoint p`` bytes -- the same address from the same object,
    which the generators follow like any offset: the shadow moves by as much.
    Returns how many were rewritten."""
    from ..ir.instructions import Call
    from .emit import Emitter
    n = 0
    for inst in [i for i in fn.instructions() if isinstance(i, Call)
                 and (i.callee_name or "").startswith("llvm.ptrmask.p0.")]:
        p, m = inst.args
        e = Emitter(fn.parent)
        e.position_before(inst)
        at = e.cast("ptrtoint", p, m.type)
        off = e.binop("sub", e.binop("and", at, m), at)
        inst.replace_all_uses_with(e.gep(T.i8, p, [off]))
        inst.erase()
        n += 1
    return n


def align_locals(functions) -> int:
    """Give the locals of ``functions`` (the private copies) at least the alignment of
    the widest-aligned vector access among them, when that is 16 bytes or more; return
    how many were raised.  Shadows of locals are aligned to 16 (heap blocks, the
    reverse function's allocas) or as the local is declared; a local declared
    ``align 8`` may then sit at 8 mod 16 where its shadow sits at 0, and code that
    checks the primal's address at run time before aligned vector loads -- Eigen's
    packet loops peel to an aligned start -- made aligned loads of the shadow at an
    unaligned address: a crash in Eigen's LLT (round U).  Same alignment, same
    offsets: the shadow is aligned wherever the primal is."""
    from ..ir.instructions import Alloca, Load, Store
    want = 0
    for f in functions:
        for i in f.instructions():
            if isinstance(i, (Load, Store)):
                ty = i.type if isinstance(i, Load) else i.operand(0).type
                if ty.is_vector and (i.align or 0) >= 16:
                    want = max(want, min(i.align, 64))
    n = 0
    if want:
        for f in functions:
            for i in f.instructions():
                if isinstance(i, Alloca) and (i.align or 0) < want \
                        and f.parent.datalayout.size_in_bytes(i.allocated_type) >= 16:
                    i.align = want
                    n += 1
    return n


def describe(counts: dict) -> str:
    """``-v``'s line: the rewrites that changed something, with their counts."""
    done = [f"{what} {n}" for what, n in counts.items() if n]
    return "rewrites before AD: " + (", ".join(done) if done else "none applied")
