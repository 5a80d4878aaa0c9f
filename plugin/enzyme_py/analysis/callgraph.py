"""Which functions a call may reach.

enzyme-cc sees the whole program at link time, so an indirect call (a function
pointer, a C++ virtual call) can only reach a function whose address the program
takes -- a use other than as the callee of a direct call, outside the
``__enzyme_*`` registration globals, other than as the function an ``__enzyme_*``
call differentiates (that call becomes a call of the derivative): vtables,
function-pointer tables, a pointer passed along -- and whose type fits the call:
the call's own type, or, for a call through an unprototyped pointer (C's
``double (*)()``, f2c's ``D_fp``, which clang calls as ``double (ptr, ...)``), a
function without varargs whose parameters are the types of the arguments passed;
structs passed or returned through memory of the sizes the call passes (all are
``ptr`` in the type).
"""

from __future__ import annotations

from ..ir.instructions import Call

__all__ = ["address_taken", "callable_through", "indirect_targets", "is_indirect",
           "run_together"]


def is_indirect(call) -> bool:
    """A call through a pointer value (not a direct call, not inline asm)."""
    c = call.callee
    return call.called_function is None and c.type.is_pointer


def _registration(g) -> bool:
    return g.name.startswith("__enzyme_") or g.name in ("llvm.used", "llvm.compiler.used",
                                                       "llvm.global.annotations")


def address_taken(fn) -> bool:
    """Whether the program takes ``fn``'s address (see the module docstring)."""
    for u in fn.uses:
        user = u.user
        if isinstance(user, Call) and u.index == len(user.operands) - 1 \
                and user.called_function is fn:
            continue        # a direct call (the callee operand is the last one)
        if isinstance(user, Call) and u.index == 0 \
                and (user.callee_name or "").startswith("__enzyme_"):
            continue        # the function an entry point differentiates
        # a constant (vtable, table of pointers): find the global or instruction using it
        x, depth = user, 0
        while not (x.is_instruction or getattr(x, "is_global", False)) and x.uses \
                and depth < 16:
            x, depth = x.uses[0].user, depth + 1
        if getattr(x, "is_global", False) and not x.is_instruction and _registration(x):
            continue
        return True
    return False


def callable_through(fn, call) -> bool:
    """Whether the indirect ``call`` may reach ``fn`` by their types: the function
    types, and the sizes of the structs passed or returned through memory (``byval``,
    ``sret``: a 24-byte and a 72-byte struct both go as ``ptr``)."""
    ft, ct = fn.function_type, call.function_type
    if ft != ct and not (
            # an unprototyped call: typed from the (promoted) arguments it passes
            ct.varargs and not ft.varargs and ft.ret == ct.ret
            and [a.type for a in call.args] == list(ft.params)):
        return False
    return all(_in_memory(a.attrs, fn.parent) == _in_memory(attrs, call.function.parent)
               for a, attrs in zip(fn.args, call.arg_attrs or []))


def _in_memory(attrs, module):
    """The sizes of what a parameter's attributes say is passed or returned through
    memory: (byval bytes, sret bytes), None where absent."""
    if not attrs or ("byval(" not in attrs and "sret(" not in attrs):
        return (None, None)
    from ..ir.attributes import named_type
    dl = module.datalayout
    out = []
    for kind in ("byval", "sret"):
        t = named_type(attrs, kind, module)
        out.append(None if t is None else dl.size_in_bytes(t))
    return tuple(out)


def indirect_targets(module, call) -> list:
    """The defined functions of ``module`` the indirect ``call`` may reach."""
    # (the type first: asking a lazily parsed function for its body parses it)
    return [f for f in module.functions
            if not f.name.startswith("__enzyme_") and callable_through(f, call)
            and not f.is_declaration and address_taken(f)]


def run_together(fn, functions, entries) -> set:
    """The ``functions`` one call of an entry (among ``entries``) that runs ``fn`` may
    run: what the entries reaching ``fn`` call, directly or not -- all of
    ``functions`` where some call among them is indirect, or no entry reaches ``fn``."""
    functions = set(functions) or {fn}
    if any(isinstance(i, Call) and is_indirect(i)
           for f in functions for i in f.instructions()):
        return functions
    callees = {f: {i.called_function for i in f.instructions() if isinstance(i, Call)}
               for f in functions}

    def reach(f):
        out, work = set(), [f]
        while work:
            g = work.pop()
            if g in out or g not in functions:
                continue
            out.add(g)
            work.extend(callees[g])
        return out
    got = set()
    for entry in entries or [fn]:
        r = reach(entry)
        if fn in r:
            got |= r
    return got or functions
