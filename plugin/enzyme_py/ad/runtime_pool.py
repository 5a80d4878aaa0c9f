"""The cache-buffer pool and the per-thread arena of :mod:`runtime`: the bodies of
``__enzyme_py_cache_alloc`` / ``__enzyme_py_cache_free`` (:func:`_cache_pool`), the
thread's arena of small cache blocks (:func:`_arena`, its alloc/free paths and
``__enzyme_py_cache_arena_pop``), and the function registered with ``atexit`` that
empties both (``__enzyme_py_cache_pool_drain_fn``).  The sizes (``POOL_SLOTS``,
``POOL_MIN``, ``ARENA_MAX``) are :mod:`runtime`'s; :func:`runtime.runtime_function`
calls :func:`_cache_pool`.
"""

from __future__ import annotations

from ..ir import types as T
from ..ir.values import ConstantInt
from .runtime import ARENA_MAX, POOL_MIN, POOL_SLOTS, _check, _new, runtime_function

_ARENA_FLAG = -(1 << 63)   # header bit 63: an arena block; bit 62: freed
_ARENA_DEAD = 1 << 62


def _cache_pool(module, e, name, full=None, what=None):
    """Blocks carry a 16-byte header holding their capacity; the pool is an array of
    ``POOL_SLOTS`` block pointers (null: empty).  Blocks under :data:`POOL_MIN` bytes
    never enter it: each pool visit costs atomic exchanges over its slots, more than
    malloc/free of a small block (a cache of a few hundred bytes allocated per call of
    a helper was 8% of LSTM's gradient)."""
    from .emit import loop_latch
    from ..ir.values import ConstantNull, ZeroInit
    i64 = T.i64
    pool_ty = T.ArrayType(T.ptr, POOL_SLOTS)
    pool = module.get_global("__enzyme_py_cache_pool")
    if pool is None:
        pool = module.add_global("__enzyme_py_cache_pool", pool_ty, ZeroInit(pool_ty),
                                 linkage="internal", align=8, unique=False)
    null = ConstantNull(T.ptr)
    if name == "__enzyme_py_cache_alloc":
        fn, new = _new(module, full, T.ptr, [i64])
        if not new:
            return fn
        (n,) = fn.args
        entry, sized, loop, have, reuse, put_back, nxt, fresh = (
            fn.append_basic_block(x) for x in ("entry", "sized", "loop", "have", "reuse",
                                              "putback", "next", "fresh"))
        e.position_at_end(entry)
        arena = fn.append_basic_block("arena")
        e.cbranch(e.icmp("ult", n, ConstantInt(i64, ARENA_MAX)), arena, sized)
        _arena_alloc(module, e, fn, n, arena, fresh)
        e.position_at_end(sized)
        e.cbranch(e.icmp("ult", n, ConstantInt(i64, POOL_MIN)), fresh, loop)
        e.position_at_end(loop)
        i = e.phi(i64)
        slot = e.gep(pool_ty, pool, [ConstantInt(i64, 0), i])
        p = e.atomicrmw("xchg", slot, null, "acquire", 8)
        e.cbranch(e.icmp("eq", p, null), nxt, have)
        e.position_at_end(have)
        cap = e.load(i64, p, 8)
        e.cbranch(e.icmp("uge", cap, n), reuse, put_back)
        e.position_at_end(reuse)
        e.ret(e.gep_bytes(p, 16))
        e.position_at_end(put_back)                               # too small: back in its slot
        r = e.cmpxchg(slot, null, p, "acq_rel", "acquire", 8)
        done = e.extractvalue(r, [1])
        drop = fn.append_basic_block("drop")
        e.cbranch(done, nxt, drop)
        e.position_at_end(drop)
        free = e.declare("free", T.void, [T.ptr])
        e.call(free, [p])
        e.br(nxt)
        loop_latch(e, i, POOL_SLOTS, sized, nxt, loop, fresh)
        malloc = e.declare("malloc", T.ptr, [i64])
        nb = e.binop("add", n, ConstantInt(i64, 16))
        raw = e.call(malloc, [nb])
        _check(module, e, fn, raw, nb, what)
        e.store(n, raw, 8)
        e.ret(e.gep_bytes(raw, 16))
        return fn
    fn, new = _new(module, name, T.void, [T.ptr])
    if not new:
        return fn
    (q,) = fn.args
    entry, start, loop, nxt, out, done = (
        fn.append_basic_block(x) for x in ("entry", "start", "loop", "next", "out", "done"))
    e.position_at_end(entry)
    e.cbranch(e.icmp("eq", q, null), done, start)
    e.position_at_end(start)
    raw = e.gep_bytes(q, -16)
    capf = e.load(i64, raw, 8)
    afree, sized = fn.append_basic_block("arena"), fn.append_basic_block("sized")
    e.cbranch(e.icmp("slt", capf, ConstantInt(i64, 0)), afree, sized)
    _arena_free(module, e, fn, q, afree, done)
    e.position_at_end(sized)
    e.cbranch(e.icmp("ult", capf, ConstantInt(i64, POOL_MIN)), out, loop)
    e.position_at_end(loop)
    i = e.phi(i64)
    slot = e.gep(pool_ty, pool, [ConstantInt(i64, 0), i])
    r = e.cmpxchg(slot, null, raw, "acq_rel", "acquire", 8)
    pooled = fn.append_basic_block("pooled")
    e.cbranch(e.extractvalue(r, [1]), pooled, nxt)
    # the first block pooled registers (atexit) the function that empties the pool
    e.position_at_end(pooled)
    _register_drain(module, e, fn, done)
    loop_latch(e, i, POOL_SLOTS, sized, nxt, loop, out)
    free = e.declare("free", T.void, [T.ptr])
    e.call(free, [raw])
    e.br(done)
    e.position_at_end(done)
    e.ret()
    return fn


def _arena(module):
    """The calling thread's arena of small cache blocks: ``{ptr chunk, i64 top, i64 cap,
    i64 last}`` (``thread_local``), and the chunk size the next one should have.

    Small caches (a helper's loop caches, allocated on every call of the helper) live
    from the forward sweep to the reverse sweep, so thousands of them are alive at
    once; from malloc they grow the heap and, freed, let glibc trim it, so that every
    gradient page-faults the same memory in again (half of LSTM's gradient time).  The
    arena stacks them in one chunk from the pool instead: a block is ``{ptr arena,
    i64 previous block + 1, i64 size | bit 63 (| bit 62 once freed)}`` before its data.
    Freeing marks the block; the owner thread then pops every marked block from the top
    (sweeps free in reverse order, so that is all of them; a split-mode tape freed out
    of order waits for the blocks above it), and an empty arena returns its chunk to
    the pool.  A block another thread frees is only marked (atomically); its owner pops
    it.  A block that does not fit in the chunk comes from malloc, and the next chunk
    is twice the size that would have fit."""
    from ..ir.values import ZeroInit
    ty = T.StructType([T.ptr, T.i64, T.i64, T.i64])
    a = module.get_global("__enzyme_py_cache_arena")
    if a is None:
        a = module.add_global("__enzyme_py_cache_arena", ty, ZeroInit(ty),
                              linkage="internal thread_local", align=8, unique=False)
    want = module.get_global("__enzyme_py_cache_arena_want")
    if want is None:
        want = module.add_global("__enzyme_py_cache_arena_want", T.i64,
                                 ConstantInt(T.i64, POOL_MIN), linkage="internal",
                                 align=8, unique=False)
    return a, want


def _arena_alloc(module, e, fn, n, block, fresh):
    """The arena path of ``__enzyme_py_cache_alloc`` (``n`` < ARENA_MAX), from ``block``;
    a block that does not fit goes on to ``fresh`` (malloc)."""
    from ..ir.values import ConstantNull
    i64 = T.i64
    a, want = _arena(module)
    get, have, over, fit = (fn.append_basic_block(x) for x in
                            ("arena.get", "arena.have", "arena.over", "arena.fit"))
    e.position_at_end(block)
    chunk = e.load(T.ptr, a, 8)
    e.cbranch(e.icmp("eq", chunk, ConstantNull(T.ptr)), get, have)
    e.position_at_end(get)                       # a chunk from the pool (fn with n >= POOL_MIN)
    w = e.load(i64, want, 8, ordering="monotonic")
    c = e.call(fn, [w])
    e.store(c, a, 8)
    e.store(ConstantInt(i64, 0), e.gep_bytes(a, 8), 8)
    e.store(e.load(i64, e.gep_bytes(c, -16), 8), e.gep_bytes(a, 16), 8)
    e.store(ConstantInt(i64, 0), e.gep_bytes(a, 24), 8)
    got = fn.append_basic_block("arena.got")
    _register_drain(module, e, fn, got)
    e.position_at_end(got)
    e.br(have)
    e.position_at_end(have)
    ch = e.phi(T.ptr, [(c, got), (chunk, block)])
    top = e.load(i64, e.gep_bytes(a, 8), 8)
    size = e.binop("and", e.binop("add", n, ConstantInt(i64, 32 + 15)), ConstantInt(i64, -16))
    nt = e.binop("add", top, size)
    e.cbranch(e.icmp("ugt", nt, e.load(i64, e.gep_bytes(a, 16), 8)), over, fit)
    e.position_at_end(over)
    e.atomicrmw("umax", want, e.binop("shl", nt, ConstantInt(i64, 1)), "monotonic", 8)
    e.br(fresh)
    e.position_at_end(fit)
    b = e.gep_bytes(ch, top)
    e.store(a, b, 8)
    e.store(e.load(i64, e.gep_bytes(a, 24), 8), e.gep_bytes(b, 8), 8)
    e.store(e.binop("or", n, ConstantInt(i64, _ARENA_FLAG)), e.gep_bytes(b, 16), 8)
    e.store(e.binop("add", top, ConstantInt(i64, 1)), e.gep_bytes(a, 24), 8)
    e.store(nt, e.gep_bytes(a, 8), 8)
    e.ret(e.gep_bytes(b, 32))


def _arena_free(module, e, fn, q, block, done):
    """The arena path of ``__enzyme_py_cache_free`` (``fn``) for the block ``q``: mark it
    freed; in the thread that owns it, pop what can be popped."""
    i64 = T.i64
    a, _ = _arena(module)
    mine = fn.append_basic_block("arena.mine")
    e.position_at_end(block)
    owner = e.load(T.ptr, e.gep_bytes(q, -32), 8)
    e.atomicrmw("or", e.gep_bytes(q, -16), ConstantInt(i64, _ARENA_DEAD), "monotonic", 8)
    e.cbranch(e.icmp("eq", owner, a), mine, done)
    e.position_at_end(mine)
    e.call(_arena_pop(module, fn), [])
    e.br(done)


def _arena_pop(module, cache_free):
    """``__enzyme_py_cache_arena_pop()``: pop the freed blocks from the top of the calling
    thread's arena; an empty arena returns its chunk to the pool (``cache_free``).  Also
    run at exit (before the pool is drained), for blocks other threads freed last."""
    from ..ir.values import ConstantNull
    from .emit import Emitter
    fn, new = _new(module, "__enzyme_py_cache_arena_pop", T.void, [])
    if not new:
        return fn
    i64 = T.i64
    a, _ = _arena(module)
    e = Emitter(module)
    entry, pop, chk, popit, empty, release, done = (
        fn.append_basic_block(x) for x in ("entry", "pop", "check", "popit", "empty",
                                           "release", "done"))
    e.position_at_end(entry)
    e.cbranch(e.icmp("eq", e.load(T.ptr, a, 8), ConstantNull(T.ptr)), done, pop)
    e.position_at_end(pop)
    last = e.load(i64, e.gep_bytes(a, 24), 8)
    e.cbranch(e.icmp("eq", last, ConstantInt(i64, 0)), empty, chk)
    e.position_at_end(chk)
    off = e.binop("sub", last, ConstantInt(i64, 1))
    blk = e.gep_bytes(e.load(T.ptr, a, 8), off)
    f = e.load(i64, e.gep_bytes(blk, 16), 8, ordering="monotonic")
    dead = e.binop("and", f, ConstantInt(i64, _ARENA_DEAD))
    e.cbranch(e.icmp("eq", dead, ConstantInt(i64, 0)), empty, popit)
    e.position_at_end(popit)
    e.store(off, e.gep_bytes(a, 8), 8)
    e.store(e.load(i64, e.gep_bytes(blk, 8), 8), e.gep_bytes(a, 24), 8)
    e.br(pop)
    e.position_at_end(empty)
    top = e.load(i64, e.gep_bytes(a, 8), 8)
    e.cbranch(e.icmp("eq", top, ConstantInt(i64, 0)), release, done)
    e.position_at_end(release)                   # empty: the chunk goes back to the pool
    ch = e.load(T.ptr, a, 8)
    e.store(ConstantNull(T.ptr), a, 8)
    e.call(cache_free, [ch])
    e.br(done)
    e.position_at_end(done)
    e.ret()
    return fn


def _register_drain(module, e, fn, cont):
    """In ``fn``, at the emitter's block: register (atexit, once per process) the
    function that empties the arena of the exiting thread and the pool; go on to
    ``cont``."""
    flag = module.get_global("__enzyme_py_cache_pool_drain")
    if flag is None:
        flag = module.add_global("__enzyme_py_cache_pool_drain", T.i32,
                                 ConstantInt(T.i32, 0), linkage="internal", align=4,
                                 unique=False)
    old = e.atomicrmw("xchg", flag, ConstantInt(T.i32, 1), "monotonic", 4)
    reg = fn.append_basic_block("register")
    e.cbranch(e.icmp("eq", old, ConstantInt(T.i32, 0)), reg, cont)
    e.position_at_end(reg)
    atexit = e.declare("atexit", T.i32, [T.ptr])
    e.call(atexit, [_pool_drain(module)])
    e.br(cont)


def _pool_drain(module):
    """``__enzyme_py_cache_pool_drain_fn()``: at exit, pop the exiting thread's arena
    (its chunk goes to the pool when empty), then free the pooled blocks."""
    from ..ir.values import ConstantNull
    from .emit import Emitter
    fn, new = _new(module, "__enzyme_py_cache_pool_drain_fn", T.void, [])
    if not new:
        return fn
    e = Emitter(module)
    pool_ty = T.ArrayType(T.ptr, POOL_SLOTS)
    pool = module.get_global("__enzyme_py_cache_pool")
    free = e.declare("free", T.void, [T.ptr])
    e.position_at_end(fn.append_basic_block("entry"))
    if module.get_global("__enzyme_py_cache_arena") is not None:
        e.call(_arena_pop(module, runtime_function(module, "__enzyme_py_cache_free")), [])
    for k in range(POOL_SLOTS):
        slot = e.gep(pool_ty, pool, [ConstantInt(T.i64, 0), ConstantInt(T.i64, k)])
        p = e.atomicrmw("xchg", slot, ConstantNull(T.ptr), "acquire", 8)
        e.call(free, [p])
    e.ret()
    return fn
