"""The C library's searches -- ``bsearch``, ``lfind``, ``lsearch`` -- in differentiated code.

Each returns a pointer into the array it searched (or null), and ``lsearch`` appends the
key when it is missing: a pointer into memory that may carry derivatives, whose shadow
must point at the same element of the array's shadow, and a copy of the key whose
derivative must follow it.  Before differentiation, calls to these functions in the
functions being differentiated are redirected to reference implementations written here
(the textbook loops, glibc's order of comparisons), which the AD pass then
differentiates through their bodies like any other code: the returned pointer is
``base + i * size``, so its shadow is the shadow base advanced the same way, and the
appended key is a ``memcpy``.  The comparator is called through its pointer as the
library would call it; its integer result carries no derivative.

At -O2 glibc's headers define ``bsearch`` inline, so only ``-O0`` code calls it; the
others are always calls.  A call whose signature is not the C library's (another ABI,
a user function of the same name with another type) is left alone.
"""

from __future__ import annotations

from ..ir import types as T
from ..ir.instructions import Call
from ..ir.values import ConstantInt, ConstantNull

__all__ = ["redirect_search_calls", "comparators"]

_I64 = T.i64
# name -> the C signature: (key, base, nmemb or &nmemb, size, compar)
_SIGNATURES = {
    "bsearch": [T.ptr, T.ptr, _I64, _I64, T.ptr],
    "lfind": [T.ptr, T.ptr, T.ptr, _I64, T.ptr],
    "lsearch": [T.ptr, T.ptr, T.ptr, _I64, T.ptr],
}
_COMPAR = T.FunctionType(T.i32, [T.ptr, T.ptr])


def _element(e, base, i, size):
    return e.gep(T.i8, base, [e.binop("mul", i, size)])


def _bsearch(e, fn, key, base, n, size, cmp):
    """``l = 0, u = n; while (l < u) { mid = (l + u) / 2; r = cmp(key, base + mid * size);
    if (r == 0) return that; r < 0 ? u = mid : l = mid + 1; } return NULL``"""
    entry = e.block
    head, body, step, found, missing = (fn.append_basic_block(b) for b in
                                        ("head", "body", "step", "found", "missing"))
    e.br(head)
    e.position_at_end(head)
    lo, hi = e.phi(_I64), e.phi(_I64)
    lo.add_incoming(ConstantInt(_I64, 0), entry)
    hi.add_incoming(n, entry)
    e.cbranch(e.icmp("ult", lo, hi), body, missing)
    e.position_at_end(body)
    mid = e.binop("lshr", e.binop("add", lo, hi), ConstantInt(_I64, 1))
    p = _element(e, base, mid, size)
    r = e.call(cmp, [key, p], fnty=_COMPAR)
    e.cbranch(e.icmp("eq", r, ConstantInt(T.i32, 0)), found, step)
    e.position_at_end(step)
    below = e.icmp("slt", r, ConstantInt(T.i32, 0))
    lo.add_incoming(e.select(below, lo, e.binop("add", mid, ConstantInt(_I64, 1))), step)
    hi.add_incoming(e.select(below, mid, hi), step)
    e.br(head)
    e.position_at_end(found)
    e.ret(p)
    e.position_at_end(missing)
    e.ret(ConstantNull(T.ptr))


def _lfind(e, fn, key, base, nmemb, size, cmp, append):
    """``for (i = 0; i < *nmemb; i++) if (cmp(key, base + i * size) == 0) return that;``
    then NULL, or (``lsearch``) the key copied to the end, ``++*nmemb``, and its place."""
    entry = e.block
    n = e.load(_I64, nmemb, align=8)
    head, body, step, found, missing = (fn.append_basic_block(b) for b in
                                        ("head", "body", "step", "found", "missing"))
    e.br(head)
    e.position_at_end(head)
    i = e.phi(_I64)
    i.add_incoming(ConstantInt(_I64, 0), entry)
    e.cbranch(e.icmp("ult", i, n), body, missing)
    e.position_at_end(body)
    p = _element(e, base, i, size)
    r = e.call(cmp, [key, p], fnty=_COMPAR)
    e.cbranch(e.icmp("eq", r, ConstantInt(T.i32, 0)), found, step)
    e.position_at_end(step)
    i.add_incoming(e.binop("add", i, ConstantInt(_I64, 1)), step)
    e.br(head)
    e.position_at_end(found)
    e.ret(p)
    e.position_at_end(missing)
    if not append:
        e.ret(ConstantNull(T.ptr))
        return
    end = _element(e, base, n, size)
    memcpy = e.declare("llvm.memcpy.p0.p0.i64", T.void, [T.ptr, T.ptr, _I64, T.i1])
    e.call(memcpy, [end, key, size, ConstantInt(T.i1, 0)])
    e.store(e.binop("add", n, ConstantInt(_I64, 1)), nmemb, align=8)
    e.ret(end)


def _reference(module, name):
    from .emit import Emitter
    rname = f"_enzymepy_{name}"
    fn = module.get_function(rname)
    if fn is not None:
        return fn
    fn = module.add_function(rname, T.FunctionType(T.ptr, _SIGNATURES[name]),
                             linkage="internal", fn_attrs="nounwind", unique=False)
    e = Emitter(module)
    e.position_at_end(fn.append_basic_block("entry"))
    key, base, n, size, cmp = fn.args
    if name == "bsearch":
        _bsearch(e, fn, key, base, n, size, cmp)
    else:
        _lfind(e, fn, key, base, n, size, cmp, name == "lsearch")
    return fn


def _searches(call) -> bool:
    params = _SIGNATURES.get(call.callee_name or "")
    ft = call.function_type
    return params is not None and not ft.varargs and list(ft.params) == params \
        and ft.ret == T.ptr


def comparators(call):
    """The functions the library search ``call`` may call as its comparator (none where
    ``call`` is no search): the function passed, or where a pointer is passed, every
    function of the comparator's type whose address the program takes."""
    if not _searches(call):
        return []
    cmp = call.args[4]
    if getattr(cmp, "is_function", False):
        return [] if cmp.is_declaration else [cmp]
    from ..analysis.callgraph import address_taken
    return [f for f in call.function.parent.functions
            if not f.is_declaration and f.function_type == _COMPAR and address_taken(f)]


def redirect_search_calls(fn) -> int:
    """In ``fn`` (a private copy about to be differentiated), call the reference
    searches instead of the C library's; return how many calls were redirected."""
    module = fn.parent
    n = 0
    for inst in list(fn.instructions()):
        if not isinstance(inst, Call):
            continue
        if not _searches(inst):
            continue
        ref = _reference(module, inst.callee_name)
        inst.callee = ref
        inst.function_type = ref.function_type
        n += 1
    return n
