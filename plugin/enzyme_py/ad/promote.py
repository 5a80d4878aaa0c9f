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
from ..ir.instructions import Br, Call, Cast, Invoke, Load, Phi, Select

__all__ = ["call_target", "promote_call_sites", "split_chosen_targets"]


def call_target(call):
    """The first argument of an ``__enzyme_*`` call (after an ``sret`` result), without
    its casts: the function differentiated where it is one; None where there is none."""
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
    t = call_target(call)
    if t is None or not getattr(t, "is_function", False):
        return True
    for a in call.args:
        while isinstance(a, Cast):
            a = a.operand(0)
        if isinstance(a, Load) and a.type.is_int and not a.operand(0).is_global:
            return True     # maybe a marker that went through a local variable
    return False


def _passed_in(call) -> bool:
    """Whether the function ``call`` differentiates is a parameter of the function
    holding it, a file-local one that only direct calls use (each of which may pass a
    function known there)."""
    from ..ir.instructions import Alloca, Store
    t = call_target(call)
    f = call.function
    if isinstance(t, Load) and isinstance(t.operand(0), Alloca):    # (-O0: a local)
        stores = [u.user for u in t.operand(0).uses
                  if isinstance(u.user, Store) and u.index == 1]
        t = stores[0].operand(0) if len(stores) == 1 else None
    return t is not None and t.is_argument and t.parent is f \
        and f.linkage in ("internal", "private", "linkonce_odr") and bool(f.uses) \
        and all(isinstance(u.user, (Call, Invoke)) and u.user.called_function is f
                for u in f.uses)


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
    # a holder that gets the function differentiated as a parameter (a template
    # `grad(F f, ...)` at -O0) is inlined into its callers, which pass the function
    inlined = {c.function for c, _ in found if _unresolved(c) and _passed_in(c)}
    fns: list = []
    while work:
        f = work.pop()
        if f is None or f in fns:
            continue
        fns.append(f)
        if _always_inline(module, f) or f in inlined:
            work.extend(u.user.function for u in f.uses if isinstance(u.user, (Call, Invoke)))
    if not fns:
        return False
    for f in fns:
        # drop optnone (kept: noinline), inline or through a copy of its group
        f.fn_attrs = str(stripped(module, f.fn_attrs, "optnone"))
    for f in inlined:
        f.fn_attrs = str(stripped(module, f.fn_attrs, "noinline").with_("alwaysinline"))
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


def _chosen_functions(t, limit=8):
    """The functions a ``select``/``phi`` tree of constant functions chooses between
    (in first-seen order), or None when some leaf is not a function."""
    out, work, seen = [], [t], set()
    while work:
        v = work.pop(0)
        if v in seen:
            continue
        seen.add(v)
        while isinstance(v, Cast):
            v = v.operand(0)
        if getattr(v, "is_function", False):
            if v not in out:
                out.append(v)
        elif isinstance(v, Select):
            work += v.operands[1:]
        elif isinstance(v, Phi):
            work += [x for x, _ in v.incoming]
        else:
            return None
        if len(out) > limit:
            return None
    return out


def split_chosen_targets(found) -> bool:
    """Call sites whose function is chosen between functions by ``select``s or ``phi``s
    become one call site per function again: ``if (fn == f1) call f1 ... else call fk``
    (the results joined by a phi).  LLVM's CFG simplification merges ``if (c) d =
    __enzyme_autodiff((void *)f2, x); else d = __enzyme_autodiff((void *)f1, x);`` into
    one call on ``select c, @f2, @f1`` (or a phi of them) at -O2.  Returns whether
    anything changed."""
    from ..ir.builder import IRBuilder
    changed = False
    for call, _ in found:
        t = call_target(call)
        if not isinstance(call, Call) or not isinstance(t, (Select, Phi)):
            continue
        fns = _chosen_functions(t)
        if not fns:
            continue
        i = next(k for k, a in enumerate(call.args) if a is t or
                 isinstance(a, Cast) and a.operand(0) is t)
        blk = call.parent
        fn = blk.parent
        invoke = isinstance(call, Invoke)
        if invoke:
            # (a C++ caller with objects to destroy on unwinding: each arm invokes its
            # function, returning to a join that goes on to the normal destination)
            normal, unwind = call.normal_dest, call.unwind_dest
            call.remove_from_parent()
            join = fn.insert_basic_block(fn.blocks.index(blk) + 1, "enzyme.site.join")
            join.append(Br(normal))
            for phi in normal.phis:
                for k, (_, pb) in enumerate(phi.incoming):
                    if pb is blk:
                        phi.set_incoming_block(k, join)
        else:
            join = blk.split_after(call)
        b = IRBuilder()
        b.debug_loc = call.get_metadata("dbg")
        test, results = blk, []
        for k, f in enumerate(fns):
            arm = fn.insert_basic_block(fn.blocks.index(join), f"enzyme.site.{f.name}")
            c = call.clone({})
            c.set_arg(i, f)
            arm.append(c)
            if invoke:
                c.set_operand(c.num_operands - 3, join)
                for phi in unwind.phis:
                    v = next((x for x, pb in phi.incoming if pb is blk), None)
                    if v is not None:
                        phi.add_incoming(v, arm)
            else:
                arm.append(Br(join))
            results.append((c, arm))
            b.position_at_end(test)
            if k + 1 < len(fns):
                nxt = fn.insert_basic_block(fn.blocks.index(join), "enzyme.site.test")
                b.cbranch(b.icmp("eq", t, f), arm, nxt)
                test = nxt
            else:
                b.br(arm)
        if invoke:
            for phi in unwind.phis:
                phi.remove_incoming(blk)
        if call.uses:
            phi = Phi(call.type, results)
            join.insert(0, phi)
            call.replace_all_uses_with(phi)
        call.erase()
        changed = True
    return changed
