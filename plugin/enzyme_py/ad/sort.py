"""``qsort`` (and GNU ``qsort_r``) -- and libc++'s out-of-line ``std::sort`` of
floating-point values -- on memory that carries derivatives.

Sorting moves whole elements: almost everywhere its derivative is the permutation it
applied (whatever the comparator reads, active values included).  So the derivative code
sorts in a way that records the permutation, and moves the shadow the same way:

- ``__enzyme_py_sort_perm(base, n, size, cmp) -> perm`` (``_sort_perm_r(..., cmp,
  arg)`` for ``qsort_r``, whose comparator takes ``arg``): copies the elements into a
  scratch array with their index appended (the comparator sees each element at the start
  of a record, as it would in place), ``qsort``s the records with ``cmp``, copies the
  elements back and returns the ``n`` source indices (``perm[i]``: where the element now
  at ``i`` came from; a malloc'd array);
- ``__enzyme_py_permute(sh, n, size, perm)``: ``sh[i] = old sh[perm[i]]`` (the shadow
  follows the primal; forward mode does this to each tangent lane);
- ``__enzyme_py_unpermute(sh, n, size, perm)``: ``sh[perm[i]] = old sh[i]``: the reverse
  sweep moves the adjoints back, then frees ``perm`` (which the forward sweep taped).

libc++ compiles ``std::sort`` of float, double and long double into the shared library
(``std::__1::__sort<__less<T>&, T*>(first, last, comp)``, an extern template), so a C++
program built against libc++ calls it where libstdc++'s would inline the algorithm.  It
is the same operation: ``sort_operands`` turns its arguments into qsort's (``first``,
``(last - first) / sizeof(T)``, ``sizeof(T)`` and a generated comparator by ``<``,
``__enzyme_py_less_<T>``); the primal sort then runs on qsort, which gives the same
array (equal elements are equal values).
"""

from __future__ import annotations

from ..analysis.effects import libcxx_sort_element
from ..ir import types as T
from ..ir.values import ConstantInt

__all__ = ["aug_qsort", "rev_qsort", "fwd_qsort", "sort_operands"]

_I64 = T.i64


def _memcpy(e):
    return e.declare("llvm.memcpy.p0.p0.i64", T.void, [T.ptr, T.ptr, _I64, T.i1])


def _malloc(module, e, fn, nbytes, what):
    from .runtime import _check
    p = e.call(e.declare("malloc", T.ptr, [_I64]), [nbytes])
    # malloc(0) may return null: ask for at least one byte
    _check(module, e, fn, p, nbytes, what)
    return p


def _loop(e, fn, n, body):
    """``for (i = 0; i < n; i++) body(i)`` at the emitter's position (the end of a
    block); ``body`` emits straight-line code.  Continues after the loop."""
    pre = e.block
    loop, done = fn.append_basic_block("loop"), fn.append_basic_block("done")
    e.cbranch(e.icmp("eq", n, ConstantInt(_I64, 0)), done, loop)
    e.position_at_end(loop)
    i = e.phi(_I64)
    body(i)
    i1 = e.binop("add", i, ConstantInt(_I64, 1))
    e.cbranch(e.icmp("ult", i1, n), loop, done)
    i.add_incoming(ConstantInt(_I64, 0), pre)
    i.add_incoming(i1, e.block)
    e.position_at_end(done)


def _sort_perm(module, with_arg=False):
    from .emit import Emitter
    from .runtime import _new
    name = "__enzyme_py_sort_perm_r" if with_arg else "__enzyme_py_sort_perm"
    fn, new = _new(module, name, T.ptr, [T.ptr, _I64, _I64, T.ptr] + [T.ptr] * with_arg)
    if not new:
        return fn
    e = Emitter(module)
    base, n, size, cmp = fn.args[:4]
    e.position_at_end(fn.append_basic_block("entry"))
    false = ConstantInt(T.i1, 0)
    # records of round_up(size + 8, 16) bytes: the element, then its index
    stride = e.binop("and", e.binop("add", size, ConstantInt(_I64, 8 + 15)),
                     ConstantInt(_I64, -16))
    nb = e.binop("add", e.binop("mul", n, stride), ConstantInt(_I64, 1))
    tmp = _malloc(module, e, fn, nb, "sorting (qsort)")

    def pack(i):
        rec = e.gep_bytes(tmp, e.binop("mul", i, stride))
        e.call(_memcpy(e), [rec, e.gep_bytes(base, e.binop("mul", i, size)), size, false])
        e.store(i, e.gep_bytes(rec, size), 1)
    _loop(e, fn, n, pack)
    if with_arg:    # GNU qsort_r: the comparator's third argument
        qsort = e.declare("qsort_r", T.void, [T.ptr, _I64, _I64, T.ptr, T.ptr])
        e.call(qsort, [tmp, n, stride, cmp, fn.args[4]])
    else:
        qsort = e.declare("qsort", T.void, [T.ptr, _I64, _I64, T.ptr])
        e.call(qsort, [tmp, n, stride, cmp])
    perm = _malloc(module, e, fn, e.binop("add", e.binop("mul", n, ConstantInt(_I64, 8)),
                                          ConstantInt(_I64, 1)), "sorting (qsort)")

    def unpack(i):
        rec = e.gep_bytes(tmp, e.binop("mul", i, stride))
        e.call(_memcpy(e), [e.gep_bytes(base, e.binop("mul", i, size)), rec, size, false])
        src = e.load(_I64, e.gep_bytes(rec, size), 1)
        e.store(src, e.gep_bytes(perm, e.binop("mul", i, ConstantInt(_I64, 8))), 8)
    _loop(e, fn, n, unpack)
    e.call(e.declare("free", T.void, [T.ptr]), [tmp])
    e.ret(perm)
    return fn


def _permute(module, inverse):
    from .emit import Emitter
    from .runtime import _new
    name = "__enzyme_py_unpermute" if inverse else "__enzyme_py_permute"
    fn, new = _new(module, name, T.void, [T.ptr, _I64, _I64, T.ptr])
    if not new:
        return fn
    e = Emitter(module)
    sh, n, size, perm = fn.args
    e.position_at_end(fn.append_basic_block("entry"))
    false = ConstantInt(T.i1, 0)
    total = e.binop("mul", n, size)
    old = _malloc(module, e, fn, e.binop("add", total, ConstantInt(_I64, 1)),
                  "sorting (qsort)")
    e.call(_memcpy(e), [old, sh, total, false])

    def move(i):
        j = e.load(_I64, e.gep_bytes(perm, e.binop("mul", i, ConstantInt(_I64, 8))), 8)
        at_i, at_j = e.binop("mul", i, size), e.binop("mul", j, size)
        if inverse:
            e.call(_memcpy(e), [e.gep_bytes(sh, at_j), e.gep_bytes(old, at_i), size, false])
        else:
            e.call(_memcpy(e), [e.gep_bytes(sh, at_i), e.gep_bytes(old, at_j), size, false])
    _loop(e, fn, n, move)
    e.call(e.declare("free", T.void, [T.ptr]), [old])
    e.ret()
    return fn


def _i64(e, v):
    return v if v.type == _I64 else e.cast("zext", v, _I64)


def _less(module, ty):
    """``int __enzyme_py_less_<T>(const void *a, const void *b)``: qsort's comparator for
    ``std::__less<T>``, ``(x > y) - (x < y)``."""
    from .emit import Emitter
    from .runtime import _new
    fn, new = _new(module, "__enzyme_py_less_" + ty.kind, T.i32, [T.ptr, T.ptr])
    if not new:
        return fn
    e = Emitter(module)
    e.position_at_end(fn.append_basic_block("entry"))
    x, y = (e.load(ty, a) for a in fn.args)
    gt, lt = (e.cast("zext", e.fcmp(p, x, y), T.i32) for p in ("ogt", "olt"))
    e.ret(e.binop("sub", gt, lt))
    return fn


def sort_operands(module, e, name, args, comparator=True):
    """qsort's ``(base, n, size, cmp)`` (i64 counts) for a call of the ``sort`` kind:
    qsort's own (``qsort_r``'s, with its comparator's argument after them), or for
    libc++'s ``std::__sort(first, last, comp)`` of T: ``first``, ``(last - first) /
    sizeof(T)``, ``sizeof(T)`` and ``__enzyme_py_less_<T>`` (None unless
    ``comparator``)."""
    elem = libcxx_sort_element(name)
    if elem is None:
        base, n, size, cmp = args[:4]
        return (base, _i64(e, n), _i64(e, size), cmp) + tuple(args[4:5] if comparator else ())
    ty = {"double": T.double, "float": T.float, "x86_fp80": T.x86_fp80}[elem]
    size = ConstantInt(_I64, module.datalayout.size_in_bytes(ty))
    first, last = args[0], args[1]
    span = e.binop("sub", e.cast("ptrtoint", last, _I64), e.cast("ptrtoint", first, _I64))
    n = e.binop("udiv", span, size, flags=("exact",))
    return first, n, size, (_less(module, ty) if comparator else None)


def aug_qsort(gen, inst, A):
    """Reverse mode, forward sweep: sort recording the permutation, permute the shadow,
    keep the permutation for the reverse sweep."""
    e, module = gen.e, gen.ctx.module
    e.position_before(A)
    ops = sort_operands(module, e, inst.callee_name, A.args)
    perm = e.call(_sort_perm(module, len(ops) == 5), list(ops))
    base, n, size = ops[:3]
    e.call(_permute(module, False), [gen._sh_aug(inst.args[0], inst), n, size, perm])
    A.erase()
    gen.vmap[inst] = perm
    gen.sorted[inst] = perm


def rev_qsort(gen, inst, b):
    """Reverse sweep: move the adjoints back to where the elements came from."""
    e, module = gen.e, gen.ctx.module
    perm = gen._cached(("perm", inst), gen.sorted[inst], T.ptr, inst.parent, b)
    # the operands that say how many elements: qsort's n and size, std::__sort's ends
    used = (0, 1) if libcxx_sort_element(inst.callee_name) else (1, 2)
    args = [gen.primal(a, b) if k in used else None for k, a in enumerate(inst.args[:4])]
    _, n, size, _ = sort_operands(module, e, inst.callee_name, args[:4], comparator=False)
    e.call(_permute(module, True), [gen.shadow(inst.args[0], b), n, size, perm])
    e.call(e.declare("free", T.void, [T.ptr]), [perm])


def fwd_qsort(fgen, inst, A):
    """Forward mode: sort recording the permutation; each tangent lane follows."""
    e, module = fgen.e, fgen.ctx.module
    e.position_before(A)
    ops = sort_operands(module, e, inst.callee_name, A.args)
    perm = e.call(_sort_perm(module, len(ops) == 5), list(ops))
    n, size = ops[1:3]
    for s in fgen.S(inst.args[0], inst):
        e.call(_permute(module, False), [s, n, size, perm])
    e.call(e.declare("free", T.void, [T.ptr]), [perm])
    A.erase()
    fgen.vmap[inst] = perm
