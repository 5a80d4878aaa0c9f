"""Indirect calls (function pointers, C++ virtual calls) with active arguments.

enzyme-cc sees the whole program at link time, so the functions an indirect call can
reach are known: the **candidates** are the defined functions whose address the program
takes (a use other than as the callee of a direct call, outside the ``__enzyme_*``
registration globals: vtables, function-pointer tables, a pointer passed along) and whose
type fits the call (``analysis/callgraph.py``).  Each candidate is differentiated for the
call's activity (the same argument kinds for all, so their derivative functions share one
type), and the derivative code picks the one to call by comparing the primal function
pointer with each candidate's address at run time:

- reverse mode: the augmented forward calls the augmented function of the candidate the
  pointer names; the pointer is taped (a vtable slot may be gone by the time the reverse
  sweep runs: the object may have been deleted), and the reverse sweep calls the reverse
  function of the same candidate;
- forward mode: the tangent function of the candidate.

A pointer that is none of the candidates at run time (a function of the program's
libraries, whose body enzyme-cc does not see) stops the program with ``enzyme: an
indirect call in the derivative of 'f' reached a function that is not a candidate ...``
on stderr and ``abort()``.  An indirect call with active arguments for which the program
defines no candidate at all is a compile error.
"""

from __future__ import annotations

from ..analysis.callgraph import address_taken, callable_through, is_indirect
from ..ir import types as T
from ..ir.values import ConstantInt
from .errors import NoDerivativeError

__all__ = ["candidates", "is_indirect", "resolve", "Dispatched", "select_target",
           "has_rule", "rule_wrapper"]


def candidates(module, call) -> list:
    """The functions of ``module`` an indirect ``call`` may reach
    (``analysis.callgraph``): defined ones, and declared ones with a derivative rule
    (``sin`` in a table of libm functions; see ``rule_wrapper``), whose address the
    program takes."""
    out = []
    for f in module.functions:
        if f.name.startswith("__enzyme_") or not callable_through(f, call):
            continue
        if f.is_declaration and not has_rule(f):
            continue
        if address_taken(f):
            out.append(f)
    return out


def has_rule(fn) -> bool:
    """A declared function the generators have a derivative rule for (libm)."""
    from .rules import libm_rule
    return fn.is_declaration and libm_rule(fn.name) is not None


def rule_wrapper(module, fn, name=None):
    """An internal function with ``fn``'s type whose body calls ``fn`` directly: the
    private copy an indirect call's candidate needs (a body to differentiate; the
    direct call inside uses ``fn``'s rule), or the function a call site whose
    function has a rule differentiates (``callsite.through_rules``)."""
    from .emit import Emitter
    ft = fn.function_type
    w = module.add_function(name or f"{fn.name}.enzyme", ft, linkage="internal",
                            fn_attrs="nounwind")
    e = Emitter(module)
    e.position_at_end(w.append_basic_block("entry"))
    r = e.call(fn, list(w.args))
    e.ret(None if ft.ret == T.void else r)
    return w


def resolve(ctx, inst, where):
    """``[(original, clone)]`` for the indirect call ``inst`` of a differentiated function:
    the candidates and their private copies (the closure of the AD round includes them);
    a compile error when there is none."""
    clone_of = getattr(ctx, "clone_of", None) or {}
    pairs = [(f, clone_of[f]) for f in candidates(ctx.module, inst) if f in clone_of]
    if not pairs:
        raise NoDerivativeError(
            f"indirect call (type {inst.function_type}) with active arguments: the program "
            "defines no function of that type whose address it takes (nor takes the address "
            "of a library function with a derivative rule, such as sin), so the callee is a "
            "function enzyme-cc cannot see and cannot be differentiated",
            location=where,
            hint="call a function defined in the program (its body must be visible: same "
                 "program / LTO), or register a custom gradient for a direct wrapper")
    return pairs


def select_target(e, fp, targets, fallback):
    """``targets[k][1]`` where ``fp == targets[k][0]``, else ``fallback`` (a select
    chain the optimiser turns into compares and branches)."""
    v = fallback
    for orig, derived in reversed(targets):
        v = e.select(e.icmp("eq", fp, orig), derived, v)
    return v


def trap(module, fnty, caller: str, inst, ncand: int):
    """A function of type ``fnty`` that reports that the indirect call ``inst`` reached a
    function that is not a candidate, and aborts."""
    from .emit import Emitter
    from .runtime import _string
    msg = (f"enzyme: an indirect call in the derivative of '{caller}' reached a function "
           f"that is not one of the {ncand} candidate(s) (functions of type "
           f"{inst.function_type} whose address the program takes, defined in it or with "
           "a derivative rule): no derivative for it; aborting\n")
    name = "__enzyme_py_bad_target"
    fn = module.add_function(name, fnty, linkage="internal",
                             fn_attrs="noinline cold noreturn nounwind")
    e = Emitter(module)
    e.position_at_end(fn.append_basic_block("entry"))
    write = e.declare("write", T.i64, [T.i32, T.ptr, T.i64])
    e.call(write, [ConstantInt(T.i32, 2), _string(module, msg),
                   ConstantInt(T.i64, len(msg.encode()))])
    e.call(e.declare("abort", T.void, []), [], fn_attrs="noreturn nounwind")
    e.unreachable()
    return fn


class Dispatched:
    """What the reverse sweep needs of an indirect call the forward sweep dispatched:
    the same fields as a ReverseGen (one candidate's: all share kinds and types) and the
    reverse functions to pick from."""

    def __init__(self, gen, inst, pairs, gens):
        g0 = gens[0]
        self.kinds, self.ret_active, self.out_args = g0.kinds, g0.ret_active, g0.out_args
        self.ret_shadow = g0.ret_shadow
        self.aug, self.rev = g0.aug, g0.rev
        self.inst, self.pairs, self.gens = inst, pairs, gens
        self.caller = gen.ctx.fname(gen.P)
        module = gen.ctx.module
        self.aug_callee = select_target(
            gen.e, gen.vmap[inst.callee] if inst.callee in gen.vmap else inst.callee,
            [(o, g.aug) for (o, _), g in zip(pairs, gens)],
            trap(module, g0.aug.function_type, self.caller, inst, len(pairs)))

    def call_rev(self, gen, b, call_args):
        """The reverse call in the reverse of block ``b``: the taped pointer picks the
        candidate."""
        from ..ir.values import Argument
        inst, e = self.inst, gen.e
        fp = inst.callee
        if fp.is_instruction:
            fp = gen._cached(("fp", inst), gen.vmap[fp], T.ptr, fp.parent, b)
        elif isinstance(fp, Argument):
            fp = gen.primal(fp, b)
        module = gen.ctx.module
        target = select_target(e, fp, [(o, g.rev) for (o, _), g in zip(self.pairs, self.gens)],
                               trap(module, self.rev.function_type, self.caller, inst,
                                    len(self.pairs)))
        return e.call(target, call_args, fnty=self.rev.function_type)


def forward_target(fgen, inst, kinds):
    """Forward mode: the tangent function to call for the indirect call ``inst`` (a
    select on the primal pointer), with the first candidate's generator (for the
    types)."""
    ctx = fgen.ctx
    pairs = resolve(ctx.rctx, inst, fgen.ctx.err_loc(inst))
    act = fgen.act
    gens = [ctx.get(clone, kinds, fgen.W, const_fields=act.callee_const_fields(inst.args),
                    own_args=act.callee_own_args(inst.args)) for _, clone in pairs]
    fp = fgen.P_(inst.callee)
    module = ctx.module
    target = select_target(fgen.e, fp, [(o, g.fn) for (o, _), g in zip(pairs, gens)],
                           trap(module, gens[0].fn.function_type, ctx.fname(fgen.P), inst,
                                len(pairs)))
    return gens[0], target
