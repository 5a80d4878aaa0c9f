"""Promote what reaches an ``__enzyme_*`` call through memory before the call is read.

Calls written directly (``__enzyme_autodiff((void *)f, enzyme_dup, x, dx)``) show
``ptr @f`` and ``load i32, ptr @enzyme_dup`` as arguments at any -O level.  Calls built
by templates — ``<enzyme/utils>``'s ``enzyme::autodiff``, whose always_inline helpers
pass the function and the markers through parameters and tuples — show that only once
the helpers are inlined and their locals promoted to registers, which clang does at
-O1 and above but not at -O0 (it inlines, then leaves allocas, stores and memcpys).

So when some call site's function is not a constant, or an argument is loaded from
local memory, the functions holding such calls (and, through always_inline functions,
their callers) lose ``optnone`` and get the always-inliner, SROA and instcombine — no
global optimisation, so ``load @enzyme_dup`` is never folded to a constant.
"""

from __future__ import annotations

from ..ir.attributes import Attributes, resolved, stripped
from ..ir.instructions import Call, Cast, Invoke, Load

__all__ = ["promote_call_sites"]


def _target(call):
    args = call.args
    i = 1 if call.arg_attrs and Attributes.parse(call.arg_attrs[0]).has("sret") else 0
    if i >= len(args):
        return None
    t = args[i]
    while isinstance(t, Cast) or (t.is_constant and not t.is_global
                                  and getattr(t, "opcode", None) == "bitcast"):
        t = t.operand(0)
    return t


def _unresolved(call) -> bool:
    t = _target(call)
    if t is None or not getattr(t, "is_function", False):
        return True
    for a in call.args:
        while isinstance(a, Cast):
            a = a.operand(0)
        if isinstance(a, Load) and a.type.is_int and not a.operand(0).is_global:
            return True     # maybe a marker that went through a local variable
    return False


def _always_inline(module, fn) -> bool:
    return resolved(module, fn.fn_attrs).has("alwaysinline")


def promote_call_sites(module, found, log=lambda s: None, also=()) -> bool:
    """Promote the functions holding unresolved call sites of ``found`` (pairs of call
    and mode, from ``find_sites``) and those holding the instructions ``also`` (uses of
    an entry point as a value: a call through a local function pointer); returns
    whether the module was rewritten."""
    from .. import llvm
    from ..ir import parse_module
    from . import _swap_module, round_trip

    work = [c.function for c, _ in found if _unresolved(c)]
    work += [getattr(u, "function", None) for u in also]
    fns: list = []
    while work:
        f = work.pop()
        if f is None or f in fns:
            continue
        fns.append(f)
        if _always_inline(module, f):
            work.extend(u.user.function for u in f.uses if isinstance(u.user, (Call, Invoke)))
    if not fns:
        return False
    for f in fns:
        # drop optnone (kept: noinline), inline or through a copy of its group
        f.fn_attrs = str(stripped(module, f.fn_attrs, "optnone"))
    # the always-inliner needs the bodies of the always_inline functions they call
    work = list(fns)
    seen: set = set()
    while work:
        f = work.pop()
        if f in seen or f.is_declaration:
            continue
        seen.add(f)
        for inst in f.instructions():
            if isinstance(inst, (Call, Invoke)):
                c = inst.called_function
                if c is not None and not c.is_declaration and _always_inline(module, c):
                    work.append(c)
    names = [f.name for f in fns]
    text = round_trip(module, lambda t: llvm.promote_functions(t, names), log,
                      "call-site promotion")
    _swap_module(module, parse_module(text))
    log(f"promoted the locals of {len(fns)} function(s) holding __enzyme_* calls: "
        + ", ".join(f.name for f in fns))
    return True
