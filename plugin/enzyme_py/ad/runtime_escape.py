"""The registry of shadows that may be handed to the caller: which of them the program
freed during the derivative call.

A block the differentiated code allocates and stores into an argument's memory or a
global (MATLAB Coder's ``emxEnsureCapacity`` growing an output ``emxArray``) may be
the caller's after the call -- or be freed by the program later in the same call (a
second growth frees the first new block).  Where the code frees pointers it reads from
memory, which of the two happens is known only at run time.  Such a block's shadow is
a plain ``calloc`` block, as the caller's ``free`` wants it, registered here:

- ``__enzyme_py_escaping_add(shadow)`` (the forward sweep, at the allocation);
- ``__enzyme_py_escaping_mark(shadow)`` (the forward sweep, before the program frees
  a pointer it read from memory: the freed block's shadow, ignored when it is not
  registered -- a block of the caller's);
- ``__enzyme_py_escaping_release(shadow)`` (the reverse sweep, at the allocation's
  adjoint): frees the shadow if it was marked, else leaves it to the caller; either
  way it leaves the registry, so that nothing outlives the derivative call.

The registry is the calling thread's (``thread_local``): an open-addressing hash table
``{ptr slots, i64 capacity (a power of two, or 0), i64 filled}`` of 16-byte slots
``{ptr key, i64 freed}``; a released key leaves a tombstone (key 1), and the table is
rebuilt, without them, at twice the size when half its slots are filled.  A block
freed by another thread than the one that allocated it is not seen freed: its shadow
leaks, it is not freed twice.
"""

from __future__ import annotations

from ..ir import types as T
from ..ir.values import ConstantInt, ConstantNull, ZeroInit

NAMES = ("__enzyme_py_escaping_add", "__enzyme_py_escaping_mark",
         "__enzyme_py_escaping_release")
_TOMB = 1
_FIB = -7046029254386353131     # 0x9E3779B97F4A7C15 as a signed i64


def _table(module):
    ty = T.StructType([T.ptr, T.i64, T.i64])
    g = module.get_global("__enzyme_py_escaping")
    if g is None:
        g = module.add_global("__enzyme_py_escaping", ty, ZeroInit(ty),
                              linkage="internal thread_local", align=8, unique=False)
    return g


def _home(e, key, cap):
    """The first slot index to probe for ``key`` in a table of ``cap`` slots."""
    i64 = T.i64
    h = e.binop("mul", e.binop("lshr", e.cast("ptrtoint", key, i64), ConstantInt(i64, 4)),
                ConstantInt(i64, _FIB))
    return e.binop("and", e.binop("lshr", h, ConstantInt(i64, 29)),
                   e.binop("sub", cap, ConstantInt(i64, 1)))


def _find(module, e, new):
    """``__enzyme_py_escaping_find(key) -> ptr``: its slot, or null."""
    i64 = T.i64
    fn, fresh = new(module, "__enzyme_py_escaping_find", T.ptr, [T.ptr])
    if not fresh:
        return fn
    (key,) = fn.args
    entry, probe, hit, next_, found, none = (
        fn.append_basic_block(x) for x in ("entry", "probe", "hit", "next", "found", "none"))
    t = _table(module)
    e.position_at_end(entry)
    slots = e.load(T.ptr, t, 8)
    cap = e.load(i64, e.gep_bytes(t, 8), 8)
    home = _home(e, key, cap)
    e.cbranch(e.icmp("eq", cap, ConstantInt(i64, 0)), none, probe)
    e.position_at_end(probe)
    i = e.phi(i64, [(home, entry)])
    slot = e.gep_bytes(slots, e.binop("shl", i, ConstantInt(i64, 4)))
    k = e.load(T.ptr, slot, 8)
    e.cbranch(e.icmp("eq", k, key), found, hit)
    e.position_at_end(hit)
    e.cbranch(e.icmp("eq", k, ConstantNull(T.ptr)), none, next_)
    e.position_at_end(next_)
    i.add_incoming(_next(e, i, cap), next_)
    e.br(probe)
    e.position_at_end(found)
    e.ret(slot)
    e.position_at_end(none)
    e.ret(ConstantNull(T.ptr))
    return fn


def _next(e, i, cap):
    i64 = T.i64
    return e.binop("and", e.binop("add", i, ConstantInt(i64, 1)),
                   e.binop("sub", cap, ConstantInt(i64, 1)))


def _insert(e, fn, slots, cap, key, flag):
    """Store ``{key, flag}`` in the first empty or dead slot from ``key``'s home; the
    builder ends in the block after it.  Returns whether the slot was empty (i1)."""
    i64 = T.i64
    here = e.basic_block
    probe, next_, put = (fn.append_basic_block(x) for x in ("ins.probe", "ins.next", "ins.put"))
    home = _home(e, key, cap)
    e.br(probe)
    e.position_at_end(probe)
    i = e.phi(i64, [(home, here)])
    slot = e.gep_bytes(slots, e.binop("shl", i, ConstantInt(i64, 4)))
    k = e.load(T.ptr, slot, 8)
    ki = e.cast("ptrtoint", k, i64)
    e.cbranch(e.icmp("ule", ki, ConstantInt(i64, _TOMB)), put, next_)
    e.position_at_end(next_)
    i.add_incoming(_next(e, i, cap), next_)
    e.br(probe)
    e.position_at_end(put)
    e.store(key, slot, 8)
    e.store(flag, e.gep_bytes(slot, 8), 8)
    return e.icmp("eq", ki, ConstantInt(i64, 0))


def _grow(module, e, fn, t):
    """At the end of the current block: rebuild the table at twice the size (at least
    64 slots) with its live keys only; the builder ends in the block after it."""
    from .runtime import _check
    i64 = T.i64
    grow = e.basic_block
    copy, move, step, copied = (fn.append_basic_block(x) for x in
                                ("copy", "move", "step", "copied"))
    old = e.load(T.ptr, t, 8)
    cap = e.load(i64, e.gep_bytes(t, 8), 8)
    c2 = e.binop("shl", cap, ConstantInt(i64, 1))
    ncap = e.select(e.icmp("ult", c2, ConstantInt(i64, 64)), ConstantInt(i64, 64), c2)
    calloc = e.declare("calloc", T.ptr, [i64, i64])
    nslots = e.call(calloc, [ncap, ConstantInt(i64, 16)])
    _check(module, e, fn, nslots, e.binop("shl", ncap, ConstantInt(i64, 4)),
           "growing the registry of escaping shadows")
    grow = e.basic_block            # (_check may have split it)
    e.cbranch(e.icmp("eq", cap, ConstantInt(i64, 0)), copied, copy)
    e.position_at_end(copy)
    j = e.phi(i64, [(ConstantInt(i64, 0), grow)])
    live = e.phi(i64, [(ConstantInt(i64, 0), grow)])
    slot = e.gep_bytes(old, e.binop("shl", j, ConstantInt(i64, 4)))
    k = e.load(T.ptr, slot, 8)
    e.cbranch(e.icmp("ugt", e.cast("ptrtoint", k, i64), ConstantInt(i64, _TOMB)), move, step)
    e.position_at_end(move)
    _insert(e, fn, nslots, ncap, k, e.load(i64, e.gep_bytes(slot, 8), 8))
    live_m = e.binop("add", live, ConstantInt(i64, 1))
    moved = e.basic_block
    e.br(step)
    e.position_at_end(step)
    live1 = e.phi(i64, [(live, copy), (live_m, moved)])
    j1 = e.binop("add", j, ConstantInt(i64, 1))
    j.add_incoming(j1, step)
    live.add_incoming(live1, step)
    e.cbranch(e.icmp("ult", j1, cap), copy, copied)
    e.position_at_end(copied)
    nlive = e.phi(i64, [(ConstantInt(i64, 0), grow), (live1, step)])
    e.call(e.declare("free", T.void, [T.ptr]), [old])
    e.store(nslots, t, 8)
    e.store(ncap, e.gep_bytes(t, 8), 8)
    e.store(nlive, e.gep_bytes(t, 16), 8)


def escaping_function(module, name, new):
    """The registry function ``name`` (one of ``NAMES``), emitted on first use; ``new``
    is ``runtime._new``."""
    from .emit import Emitter
    e = Emitter(module)
    i64 = T.i64
    t = _table(module)
    if name == "__enzyme_py_escaping_add":
        fn, fresh = new(module, name, T.void, [T.ptr])
        if not fresh:
            return fn
        (key,) = fn.args
        entry, grow, add = (fn.append_basic_block(x) for x in ("entry", "grow", "add"))
        e.position_at_end(entry)
        cap = e.load(i64, e.gep_bytes(t, 8), 8)
        filled = e.load(i64, e.gep_bytes(t, 16), 8)
        full = e.icmp("uge", e.binop("shl", e.binop("add", filled, ConstantInt(i64, 1)),
                                     ConstantInt(i64, 1)), cap)
        e.cbranch(full, grow, add)
        e.position_at_end(grow)
        _grow(module, e, fn, t)
        e.br(add)
        e.position_at_end(add)
        slots = e.load(T.ptr, t, 8)
        cap = e.load(i64, e.gep_bytes(t, 8), 8)
        was_empty = _insert(e, fn, slots, cap, key, ConstantInt(i64, 0))
        fp = e.gep_bytes(t, 16)
        e.store(e.binop("add", e.load(i64, fp, 8), e.cast("zext", was_empty, i64)), fp, 8)
        e.ret()
        return fn
    find = _find(module, e, new)
    fn, fresh = new(module, name, T.void, [T.ptr])
    if not fresh:
        return fn
    (key,) = fn.args
    entry, hit, done = (fn.append_basic_block(x) for x in ("entry", "hit", "done"))
    e.position_at_end(entry)
    slot = e.call(find, [key])
    e.cbranch(e.icmp("eq", slot, ConstantNull(T.ptr)), done, hit)
    e.position_at_end(hit)
    if name == "__enzyme_py_escaping_mark":
        e.store(ConstantInt(i64, 1), e.gep_bytes(slot, 8), 8)
        e.br(done)
    elif name == "__enzyme_py_escaping_release":
        drop = fn.append_basic_block("drop")
        freed = e.load(i64, e.gep_bytes(slot, 8), 8)
        e.store(e.cast("inttoptr", ConstantInt(i64, _TOMB), T.ptr), slot, 8)
        e.cbranch(e.icmp("ne", freed, ConstantInt(i64, 0)), drop, done)
        e.position_at_end(drop)
        e.call(e.declare("free", T.void, [T.ptr]), [key])
        e.br(done)
    else:
        raise KeyError(name)
    e.position_at_end(done)
    e.ret()
    return fn
