"""``qsort`` on memory that carries derivatives.

Sorting moves whole elements: almost everywhere its derivative is the permutation it
applied (whatever the comparator reads, active values included).  So the derivative code
sorts in a way that records the permutation, and moves the shadow the same way:

- ``__enzyme_py_sort_perm(base, n, size, cmp) -> perm``: copies the elements into a
  scratch array with their index appended (the comparator sees each element at the start
  of a record, as it would in place), ``qsort``s the records with ``cmp``, copies the
  elements back and returns the ``n`` source indices (``perm[i]``: where the element now
  at ``i`` came from; a malloc'd array);
- ``__enzyme_py_permute(sh, n, size, perm)``: ``sh[i] = old sh[perm[i]]`` (the shadow
  follows the primal; forward mode does this to each tangent lane);
- ``__enzyme_py_unpermute(sh, n, size, perm)``: ``sh[perm[i]] = old sh[i]``: the reverse
  sweep moves the adjoints back, then frees ``perm`` (which the forward sweep taped).
"""

from __future__ import annotations

from ..ir import types as T
from ..ir.values import ConstantInt

__all__ = ["aug_qsort", "rev_qsort", "fwd_qsort"]

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


def _sort_perm(module):
    from .emit import Emitter
    from .runtime import _new
    fn, new = _new(module, "__enzyme_py_sort_perm", T.ptr, [T.ptr, _I64, _I64, T.ptr])
    if not new:
        return fn
    e = Emitter(module)
    base, n, size, cmp = fn.args
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


def aug_qsort(gen, inst, A):
    """Reverse mode, forward sweep: sort recording the permutation, permute the shadow,
    keep the permutation for the reverse sweep."""
    e, module = gen.e, gen.ctx.module
    e.position_before(A)
    base, n, size, cmp = A.args
    n, size = _i64(e, n), _i64(e, size)
    perm = e.call(_sort_perm(module), [base, n, size, cmp])
    e.call(_permute(module, False), [gen._sh_aug(inst.args[0], inst), n, size, perm])
    A.erase()
    gen.vmap[inst] = perm
    gen.sorted = getattr(gen, "sorted", {})
    gen.sorted[inst] = perm


def rev_qsort(gen, inst, b):
    """Reverse sweep: move the adjoints back to where the elements came from."""
    e, module = gen.e, gen.ctx.module
    perm = gen._cached(("perm", inst), gen.sorted[inst], T.ptr, inst.parent, b)
    args = inst.args
    n, size = _i64(e, gen.primal(args[1], b)), _i64(e, gen.primal(args[2], b))
    e.call(_permute(module, True), [gen.shadow(args[0], b), n, size, perm])
    e.call(e.declare("free", T.void, [T.ptr]), [perm])


def fwd_qsort(fgen, inst, A):
    """Forward mode: sort recording the permutation; each tangent lane follows."""
    e, module = fgen.e, fgen.ctx.module
    e.position_before(A)
    base, n, size, cmp = A.args
    n, size = _i64(e, n), _i64(e, size)
    perm = e.call(_sort_perm(module), [base, n, size, cmp])
    for s in fgen.S(inst.args[0], inst):
        e.call(_permute(module, False), [s, n, size, perm])
    e.call(e.declare("free", T.void, [T.ptr]), [perm])
    A.erase()
    fgen.vmap[inst] = perm
