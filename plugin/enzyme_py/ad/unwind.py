"""C++ exceptions in differentiated code.

Derivative code does not unwind.  The private copies of the functions to differentiate
are rewritten before the AD generators see them (:func:`strip_invokes`): every
``invoke`` becomes a ``call`` followed by a branch to its normal destination, and the
landing pads, cleanups and ``resume`` blocks that only the unwind edges reached are
deleted.  So the normal path is differentiated like any other code, and the derivative
of a run that did not throw is exact.

A throw at run time inside a derivative (``__cxa_throw`` in differentiated code, or an
exception out of a library function it calls: ``std::bad_alloc`` from ``operator new``,
``std::length_error`` from a vector) must not unwind into the caller with the tape and
the shadows half built.  Generated functions whose primal may unwind (no ``nounwind``)
keep unwind tables (see ``reverse.Context.attrs_for``), and the call site calls them
through a guard (:func:`guarded`): a wrapper that ``invoke``s the generated function and
whose landing pad catches everything, prints ``enzyme: an exception was thrown inside
the derivative of 'f' ...`` on stderr and calls ``abort()``.  A try/catch inside the
differentiated function does not catch it either (its landing pad is gone): the run is
aborted the same way.

Code on a path that returns no more -- it ends in a throw, ``abort()``, ``exit()`` --
delivers no derivative either: the run that takes it aborts.  Its primal still runs
(the message of the exception is built, the error is printed), so
:func:`primal_on_doomed_paths` passes the values that reach calls there through an
inactive identity (``__enzyme_py_primal.*``): the calls are the program's own, with
no derivative of what they do (``std::to_string(x)`` of an active ``x``, a variadic
error reporter handed one).
"""

from __future__ import annotations

from ..ir import types as T
from ..ir.attributes import resolved
from ..ir.instructions import Br, Call, Invoke
from ..ir.values import ConstantInt, ConstantNull

__all__ = ["strip_invokes", "primal_on_doomed_paths", "PRIMAL", "may_unwind", "is_guarded",
           "guarded", "personality_of"]

UNWOUND = "__enzyme_py_unwound"
PRIMAL = "__enzyme_py_primal."     # the inactive identities (one per type)


def strip_invokes(fn) -> bool:
    """Replace each ``invoke`` of ``fn`` by a ``call`` and a branch to its normal
    destination; delete the blocks no longer reachable (landing pads, cleanups).
    Returns whether anything changed."""
    invokes = [b.terminator for b in fn.blocks if isinstance(b.terminator, Invoke)]
    if not invokes:
        return False
    for inv in invokes:
        blk = inv.parent
        c = Call(inv.function_type, inv.callee, inv.args, flags=inv.flags, cc=inv.cc,
                 ret_attrs=inv.ret_attrs, arg_attrs=inv.arg_attrs, fn_attrs=inv.fn_attrs,
                 bundles=inv.bundle_operands)
        c.metadata = list(inv.metadata)
        c.insert_before(inv)
        if inv.uses:
            inv.replace_all_uses_with(c)
        normal, unwind = inv.normal_dest, inv.unwind_dest
        for phi in unwind.phis:
            phi.remove_incoming(blk)
        inv.dbg_records, recs = [], inv.dbg_records
        inv.erase()
        br = Br(normal)
        blk.append(br)
        br.dbg_records = recs
    _remove_unreachable(fn)
    return True


def primal_on_doomed_paths(fn) -> int:
    """In the blocks of ``fn`` from which no ``ret`` is reached, pass each floating-point
    or pointer argument of a call (not of a lifetime or debug marker) through the
    inactive identity of its type: the call runs as the program's, its derivative is
    not needed.  Returns how many arguments were passed so."""
    from ..analysis.activity import doomed_blocks, floatish
    doomed = doomed_blocks(fn)
    n = 0
    for b in fn.blocks:
        if b not in doomed:
            continue
        for inst in list(b.instructions):
            name = inst.callee_name or "" if isinstance(inst, Call) else None
            if name is None or name.startswith(("llvm.lifetime.", "llvm.dbg.", PRIMAL)):
                continue
            for k, a in enumerate(inst.args):
                if (a.type.is_pointer or floatish(a.type)) and (
                        getattr(a, "is_instruction", False)
                        or getattr(a, "is_argument", False)):
                    c = Call(_identity(fn.parent, a.type).function_type,
                             _identity(fn.parent, a.type), [a])
                    c.insert_before(inst)
                    inst.set_arg(k, c)
                    n += 1
    return n


def _identity(module, ty):
    """``__enzyme_py_primal.<type>``: returns its argument; marked inactive by the
    caller of the rewrites (``ad.transform_module``), inlined after differentiation."""
    name = PRIMAL + "".join(c if c.isalnum() else "_" for c in str(ty))
    fn = module.get_function(name)
    if fn is not None:
        return fn
    fn = module.add_function(name, T.FunctionType(ty, [ty]), linkage="internal",
                             fn_attrs="alwaysinline nounwind willreturn memory(none)",
                             unique=False)
    bb = fn.append_basic_block("entry")
    from .emit import Emitter
    e = Emitter(module)
    e.position_at_end(bb)
    e.ret(fn.args[0])
    return fn


def _remove_unreachable(fn) -> None:
    seen, work = set(), [fn.entry_block]
    while work:
        b = work.pop()
        if b in seen:
            continue
        seen.add(b)
        work.extend(b.successors)
    dead = [b for b in fn.blocks if b not in seen]
    if not dead:
        return
    for b in dead:
        for s in b.successors:
            if s in seen:
                for phi in s.phis:
                    while phi.incoming_for(b) is not None:
                        phi.remove_incoming(b)
    for b in dead:
        for inst in b.instructions:
            for r in inst.dbg_records:
                r.drop_all_references()
            inst.dbg_records = []
            inst.drop_all_references()
    for b in dead:
        b.erase()
    # a phi left with one incoming value is fine for LLVM; nothing else to fix


def may_unwind(module, fn) -> bool:
    """Whether ``fn``'s attributes allow it to unwind (no ``nounwind``)."""
    return not resolved(module, fn.fn_attrs).has("nounwind")


def personality_of(module):
    """The C++ personality function the program uses (``__gxx_personality_v0``), or
    None for a program without exceptions."""
    gxx = module.get_function("__gxx_personality_v0")
    if gxx is not None:
        return gxx
    for f in module.functions:
        p = f.personality
        if p is not None and getattr(p, "is_function", False):
            return p
    return None


def _unwound(module):
    """``__enzyme_py_unwound(msg, len)``: write the message to stderr, abort."""
    from .emit import Emitter
    fn = module.get_function(UNWOUND)
    if fn is not None:
        return fn
    fn = module.add_function(UNWOUND, T.FunctionType(T.void, [T.ptr, T.i64]),
                             linkage="internal", fn_attrs="noinline cold noreturn nounwind",
                             unique=False)
    e = Emitter(module)
    e.position_at_end(fn.append_basic_block("entry"))
    write = e.declare("write", T.i64, [T.i32, T.ptr, T.i64])
    e.call(write, [ConstantInt(T.i32, 2), fn.args[0], fn.args[1]])
    e.call(e.declare("abort", T.void, []), [], fn_attrs="noreturn nounwind")
    e.unreachable()
    return fn


def is_guarded(module, fn) -> bool:
    """Whether calls of functions generated for ``fn`` go through a guard
    (:func:`guarded`): the guard is a function of its own."""
    return may_unwind(module, fn) and personality_of(module) is not None


def guarded(module, fn, what: str):
    """``fn`` itself when it cannot unwind; else a wrapper of the same type that calls
    it and aborts with a message naming ``what`` when an exception comes out."""
    if not is_guarded(module, fn):
        return fn   # (no C++ runtime in the program: nothing can throw a C++ exception)
    pers = personality_of(module)
    name = f"{fn.name}.guard"
    g = module.get_function(name)
    if g is not None:
        return g
    from .emit import Emitter
    from .runtime import _string
    g = module.add_function(name, fn.function_type, linkage="internal",
                            fn_attrs="noinline", unique=False)
    g.personality = pers
    e = Emitter(module)
    entry, ok, lp = (g.append_basic_block(n) for n in ("entry", "ok", "lp"))
    e.position_at_end(entry)
    inv = e.invoke(fn, list(g.args), ok, lp)
    e.position_at_end(ok)
    e.ret(None if fn.return_type.is_void else inv)
    e.position_at_end(lp)
    e.landingpad(T.StructType([T.ptr, T.i32]), clauses=[("catch", ConstantNull(T.ptr))])
    msg = (f"enzyme: an exception was thrown inside the derivative of '{what}'; derivative "
           "code cannot unwind (the derivative of a run that throws is not defined): "
           "aborting\n")
    data = msg.encode()
    e.call(_unwound(module), [_string(module, msg), ConstantInt(T.i64, len(data))],
           fn_attrs="noreturn nounwind")
    e.unreachable()
    return g



