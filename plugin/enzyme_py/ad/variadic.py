"""Variadic functions the differentiated code calls, with their arguments in memory.

A variadic function reads its arguments through a ``va_list``: ``va_start`` points it
at the registers the caller passed them in (saved by the callee) and at the caller's
stack area, and each ``va_arg`` -- which clang expands inline on x86-64 -- reads from
one or the other.  Neither the registers nor that stack area has a shadow, so an active
``double`` passed through ``...`` (a penalty ``sum_terms(3, a, b, c)``, a logger handed
the energy) had no derivative path: a compile error, in real Enzyme too.

On the System V x86-64 ABI the stack area alone can carry every argument: a ``va_list``
whose register offsets say "all used" (``gp_offset`` 48, ``fp_offset`` 176) makes every
``va_arg`` read the next 8-byte slot of ``overflow_arg_area``, as for a call with more
arguments than registers.  So each copy of a variadic function the differentiated code
calls directly (and only so) becomes a function of its fixed parameters and one more,
a pointer to the arguments' slots; its ``va_start`` stores those offsets and that
pointer; each call stores its variadic arguments into a local array of slots and
passes the array.  The values read are the same bytes as before, now read from a
local of the caller, whose shadow carries their derivatives both ways like any
local's.  (``reg_save_area`` points at the slots too, never read: the pointers the
expanded ``va_arg`` merges then all come from the slots.)  A ``va_list`` handed on to
another function (``vsum(n, ap)``, ``vfprintf``) is read the same way by it.

Arguments take the places the ABI gives them there: 8-byte slots, 16-byte aligned for
``long double`` and ``__int128``, a struct passed ``byval`` copied in whole, field by
field in the fields' types (a struct of two doubles, which clang passes as two doubles,
lands in two slots: what ``va_arg`` of the struct reads).  A call on a path that
returns no more calls the original function, which runs as the program's.  Left as
they are (and refused where derivatives pass): other targets, calls through pointers,
``va_arg`` instructions clang did not expand.
"""

from __future__ import annotations

from ..analysis.activity import underlying_object
from ..ir import types as T
from ..ir.attributes import named_type
from ..ir.instructions import Alloca, Call, Invoke
from ..ir.values import Argument, ConstantInt
from .abi import _direct_calls
from .emit import Emitter

__all__ = ["expand_variadics"]

_GP_USED, _FP_USED = 48, 176       # SysV: the offsets past the last register slot
_SLOT = 8


def expand_variadics(module, copies) -> int:
    """Give each variadic copy among ``copies`` (original -> copy) its arguments in a
    caller's array of slots (see the module docstring); return how many were changed.
    A call on a path that returns no more (``std::to_string`` formatting a value for a
    throw) calls the original instead: it runs as the program's (``unwind.py``)."""
    if not _sysv_x86_64(module):
        return 0
    from ..analysis.activity import doomed_blocks
    original = {c: f for f, c in copies.items()}
    doomed: dict = {}
    n = 0
    for fn in copies.values():
        if fn.is_declaration or not fn.function_type.varargs:
            continue
        fn.materialize()
        calls = _direct_calls(fn)
        if not calls or not _expandable(fn, calls):
            continue
        kept = []
        for c in calls:
            caller = c.parent.parent
            if caller not in doomed:
                doomed[caller] = doomed_blocks(caller)
            if c.parent in doomed[caller] and original.get(fn) is not None:
                c.callee = original[fn]
            else:
                kept.append(c)
        if kept:
            _expand(module, fn, kept)
            n += 1
    return n


def _sysv_x86_64(module) -> bool:
    triple = getattr(module, "triple", "") or ""
    return triple.startswith("x86_64") and "windows" not in triple


def _expandable(fn, calls) -> bool:
    """The body uses ``va_start`` on its own locals only (no ``va_arg`` instruction),
    and every call's variadic arguments have a place in the slots (``_layout``)."""
    starts = [i for i in fn.instructions() if isinstance(i, Call)
              and (i.callee_name or "").startswith("llvm.va_start")]
    if not starts or any(not isinstance(underlying_object(i.args[0]), Alloca)
                         for i in starts):
        return False
    if any(i.opcode == "va_arg" for i in fn.instructions()):
        return False
    fixed = len(fn.function_type.params)
    return all(_layout(fn.parent, c, fixed) is not None for c in calls)


def _layout(module, call, fixed):
    """Where ``call``'s variadic arguments go in the stack area, as the ABI lays them
    out there: ``[(argument, offset, byval)]`` -- ``byval`` None, or for a struct
    passed ``byval`` its type and ``_leaves`` (copied field by field) -- and the area's
    size; None for an argument it does not take."""
    dl = module.datalayout
    out, at = [], 0
    for k, a in enumerate(call.args[fixed:], fixed):
        attrs = call.arg_attrs[k] if k < len(call.arg_attrs) else ""
        ty = named_type(attrs, "byval", module) if "byval" in attrs else a.type
        if ty is None or ty.is_struct and "byval" not in attrs \
                or ty.is_array and "byval" not in attrs:
            return None     # (an aggregate passed as a value: not what clang emits)
        size, align = dl.size_in_bytes(ty), max(_SLOT, dl.abi_alignment(ty))
        at = -(-at // align) * align
        out.append((a, at, (ty, _leaves(dl, ty)) if "byval" in attrs else None))
        at += -(-size // _SLOT) * _SLOT
    return out, at


def _expand(module, fn, calls) -> None:
    fixed = list(fn.function_type.params)
    new = T.FunctionType(fn.function_type.ret, fixed + [T.ptr], False)
    fn.function_type = new
    slots = Argument(T.ptr, "va.slots", fn, len(fn.args), "noundef")
    fn.args.append(slots)
    e = Emitter(module)
    for i in list(fn.instructions()):
        if not isinstance(i, Call):
            continue
        name = i.callee_name or ""
        if name.startswith("llvm.va_start"):
            ap = i.args[0]
            e.position_before(i)
            e.store(ConstantInt(T.i32, _GP_USED), ap, align=4)
            e.store(ConstantInt(T.i32, _FP_USED), e.gep_bytes(ap, 4), align=4)
            e.store(slots, e.gep_bytes(ap, 8), align=8)
            e.store(slots, e.gep_bytes(ap, 16), align=8)
            i.erase()
        elif name.startswith("llvm.va_end"):
            i.erase()
        elif name.startswith("llvm.va_copy"):
            e.position_before(i)
            memcpy = e.declare("llvm.memcpy.p0.p0.i64", T.void, [T.ptr, T.ptr, T.i64, T.i1])
            e.call(memcpy, [i.args[0], i.args[1], ConstantInt(T.i64, 24),
                            ConstantInt(T.i1, 0)])
            i.erase()
    for c in calls:
        _pass_in_slots(module, fn, c, len(fixed))


def _leaves(dl, ty, at=0, out=None, most=64):
    """The scalar fields of a struct passed ``byval`` as ``[(offset, type)]`` (copied one
    by one, in their types: the slots' memory mixes kinds a ``memcpy`` could not tell
    apart); [] past ``most`` fields (then one ``memcpy`` of its bytes)."""
    out = [] if out is None else out
    if ty.is_struct:
        for t, off in zip(ty.elements, dl.field_offsets(ty)):
            _leaves(dl, t, at + off, out, most)
    elif ty.is_array:
        step = dl.size_in_bytes(ty.element)
        for k in range(min(ty.count, most + 1)):
            _leaves(dl, ty.element, at + k * step, out, most)
    else:
        out.append((at, ty))
    return out if len(out) <= most else []


def _pass_in_slots(module, fn, call, fixed) -> None:
    """Store ``call``'s variadic arguments into a local array of slots and call ``fn``
    with its fixed arguments and the array."""
    places, size = _layout(module, call, fixed)
    caller = call.parent.parent
    e = Emitter(module)
    e.position_at_start(caller.blocks[0])
    buf = e.alloca(T.ArrayType(T.i64, max(size // _SLOT, 1)), align=16, name="va.slots")
    e.position_before(call)
    dl = module.datalayout
    for a, at, byval in places:
        if byval is None:
            e.store(a, e.gep_bytes(buf, at), align=_SLOT)
            continue
        ty, fields = byval
        if not fields:
            memcpy = e.declare("llvm.memcpy.p0.p0.i64", T.void, [T.ptr, T.ptr, T.i64, T.i1])
            e.call(memcpy, [e.gep_bytes(buf, at), a, ConstantInt(T.i64, dl.size_in_bytes(ty)),
                            ConstantInt(T.i1, 0)])
        for off, t in fields:
            e.store(e.load(t, e.gep_bytes(a, off)), e.gep_bytes(buf, at + off))
    args = call.args[:fixed] + [buf]
    attrs = call.arg_attrs[:fixed] + ["noundef"] if call.arg_attrs else [""] * len(args)
    if isinstance(call, Invoke):    # (C++: libstdc++'s __to_xstring may throw)
        repl = e.invoke(fn, args, call.normal_dest, call.unwind_dest, fn_attrs=call.fn_attrs)
        repl.arg_attrs, repl.ret_attrs = attrs, call.ret_attrs
    else:
        repl = e.call(fn, args, fn_attrs=call.fn_attrs, arg_attrs=attrs,
                      ret_attrs=call.ret_attrs)
    repl.metadata = list(call.metadata)
    call.replace_all_uses_with(repl)
    call.erase()
