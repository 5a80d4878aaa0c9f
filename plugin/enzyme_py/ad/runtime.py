"""Support functions emitted into the module on demand (internal linkage):

- the tape, a LIFO byte stack ``{ptr data, i64 size, i64 cap}`` grown with realloc:
  ``__enzyme_py_tape_reserve(tape, n) -> ptr`` (push n bytes) and
  ``__enzyme_py_tape_pop(tape, n) -> ptr`` (pop n bytes);
- ``__enzyme_py_cache_reserve(state, i, rec) -> ptr``: the buffer of a while loop's
  per-iteration cache, ``state = {ptr data, i64 capacity}``, grown (realloc) so that
  record ``i`` (of ``rec`` bytes) fits;
- ``__enzyme_py_cache_bump(state, n, hint) -> i64``: appends ``n`` bytes to a buffer
  shared by every execution of an inner loop (``cache.py``), ``state = {ptr data, i64
  capacity, i64 used}``, and returns their byte offset; a buffer too small is replaced
  by one of at least twice the size, and at least ``*hint`` bytes (the first from
  ``__enzyme_py_cache_alloc``, the next ones by ``realloc`` of that block).  ``hint``
  (a global of the call site, updated with an atomic max) remembers the largest size
  asked for, so that the next gradient takes
  one block of the final size from the pool at once, instead of growing through
  fresh blocks whose pages fault in on every call;
- ``__enzyme_py_cache_alloc(n) -> ptr`` / ``__enzyme_py_cache_free(p)``: the
  buffers of counted loops' caches.  Freed buffers of ``POOL_MIN`` bytes or more go
  to a small pool (``POOL_SLOTS``
  slots, taken and returned with atomic exchanges, so threads may share it) that the
  next gradient reuses: a large buffer that went back to the system would be
  page-faulted in again on every call (glibc mmaps and unmaps blocks over its
  threshold, and trims the heap top), which costs more than the AD itself;
- cache blocks under ``ARENA_MAX`` bytes (a helper's loop caches, one per call of the
  helper) come from the calling thread's arena, a stack of blocks in one chunk taken
  from the pool and given back when the arena is empty (see
  :func:`.runtime_pool._arena`);
- ``__enzyme_py_shadow_alloc(n)`` / ``_free`` / ``_size`` / ``_realloc``: shadows of
  heap blocks (zeroed; large ones from the same pool); ``_alloc_aligned(n, a)``: one
  aligned to ``a`` bytes (more than 16: the shadow of a local declared
  ``aligned(32)``, of ``aligned_alloc(32, n)``, which AVX loads require), a zeroed
  block whose header's capacity field holds minus its offset from the raw block;
- ``__enzyme_py_memcpy_adj_<T>(dshadow, sshadow, nbytes)``: the reverse of a memcpy
  of T data (``ds[i] += dd[i]; dd[i] = 0``); ``__enzyme_py_memmove_adj_<T>``: the same
  for ranges that may overlap (a memmove): it walks the elements in the order that
  reads every destination adjoint before an addition can land on it;
- ``__enzyme_py_strided_copy`` / ``__enzyme_py_strided_adj_<T>(d, s, nbytes, stride,
  off, len)``: the same bytes of every element of an array of structs (a memcpy of
  ``n`` structs mixing pointers and floats): copied (the pointers' shadows), or their
  adjoints moved back (the floats');
- ``__enzyme_py_escaping_add`` / ``_mark`` / ``_release``: the registry of shadows
  that may be handed to the caller (:mod:`.runtime_escape`);
- ``__enzyme_py_digamma`` (for the tgamma/lgamma rules).

Derivative code that is itself differentiated (a function calling
``__enzyme_autodiff`` passed to ``__enzyme_fwddiff``: higher-order derivatives) must
not take its buffers from the pool: the outer transformation would have to see
through its atomic exchanges on a global.  :func:`unpool` rewrites the calls to the
pooled functions as plain ``malloc``/``calloc``/``free`` (same block layout), which
the outer transformation differentiates like any other allocation.

Every allocation checks its result: out of memory prints ``enzyme: out of memory
growing the tape of f: N bytes`` (``growing the cache``, ``allocating the cache``,
``allocating a shadow``) on stderr and calls ``abort()`` (``__enzyme_py_out_of_memory``),
instead of a null dereference inside the gradient.  The functions that allocate come
in one variant per generated function (``owner``, the name of the differentiated
function: ``__enzyme_py_tape_reserve.f``), so that the message names it.
"""

from __future__ import annotations

from ..ir import types as T
from ..ir.values import ConstantFP, ConstantInt, ConstantNull

TAPE_TYPE = T.StructType([T.ptr, T.i64, T.i64])
# the runtime functions that allocate, and what their message says they were doing
_ALLOCATING = {
    "__enzyme_py_tape_reserve": "growing the tape",
    "__enzyme_py_cache_reserve": "growing the cache",
    "__enzyme_py_cache_alloc": "allocating the cache",
    "__enzyme_py_cache_bump": "growing the cache",
    "__enzyme_py_shadow_alloc": "allocating a shadow",
    "__enzyme_py_shadow_alloc_aligned": "allocating a shadow",
    "__enzyme_py_shadow_realloc": "allocating a shadow",
}
POOL_SLOTS = 8
POOL_MIN = 1 << 16   # smaller blocks bypass the pool: malloc's own caches serve them
ARENA_MAX = 4096     # cache blocks under this come from the thread's arena


def _new(module, name, ret, params, attrs="nounwind"):
    fn = module.get_function(name)
    if fn is not None:
        return fn, False
    fn = module.add_function(name, T.FunctionType(ret, params), linkage="internal",
                             fn_attrs=attrs, unique=False)
    return fn, True


OUT_OF_MEMORY = "__enzyme_py_out_of_memory"


def runtime_base(name: str) -> str:
    """The runtime function whose variant is called ``name``
    (``__enzyme_py_cache_alloc.f`` -> ``__enzyme_py_cache_alloc``)."""
    return name.split(".", 1)[0] if name.startswith("__enzyme_py_") else name


POOLED = ("__enzyme_py_cache_alloc", "__enzyme_py_cache_free", "__enzyme_py_shadow_alloc",
          "__enzyme_py_shadow_alloc_aligned",
          "__enzyme_py_shadow_free", "__enzyme_py_shadow_realloc", "__enzyme_py_cache_bump")


def unpool(fn) -> None:
    """Rewrite, in ``fn``, each call to a pooled runtime function (``POOLED``) as the
    same operation on plain ``malloc``/``calloc``/``free`` with the same block layout,
    inline, so that a transformation of ``fn`` sees allocations it knows."""
    from ..ir.instructions import Call
    from ..ir.values import ConstantNull
    from .emit import Emitter
    module = fn.parent
    e = Emitter(module)
    i64 = T.i64
    calls = [i for i in fn.instructions() if isinstance(i, Call)
             and i.called_function is not None
             and runtime_base(i.called_function.name) in POOLED]

    def shadow_alloc(n):
        # the pooled layout: 16-byte header {i64 capacity = 0 (not pooled), i64 size}
        calloc = e.declare("calloc", T.ptr, [i64, i64])
        raw = e.call(calloc, [e.binop("add", n, ConstantInt(i64, 16)), ConstantInt(i64, 1)])
        e.store(n, e.gep_bytes(raw, 8), 8)
        return e.gep_bytes(raw, 16)

    for c in calls:
        name = runtime_base(c.called_function.name)
        e.position_before(c)
        args = c.args
        if name == "__enzyme_py_cache_alloc":
            r = e.call(e.declare("malloc", T.ptr, [i64]), [args[0]])
        elif name == "__enzyme_py_cache_free":
            r = e.call(e.declare("free", T.void, [T.ptr]), [args[0]])
        elif name in ("__enzyme_py_shadow_alloc", "__enzyme_py_shadow_alloc_aligned"):
            # (an aligned one as a plain block: code differentiated again is not
            # where AVX-aligned accesses go)
            r = shadow_alloc(args[0])
        elif name == "__enzyme_py_cache_bump":
            # the buffer grows by realloc (capacity doubled when the n bytes do not fit)
            st, n = args[:2]
            used = e.load(i64, e.gep_bytes(st, 16), 8)
            need = e.binop("add", used, n)
            cap = e.load(i64, e.gep_bytes(st, 8), 8)
            c2 = e.binop("shl", cap, ConstantInt(i64, 1))
            nc = e.select(e.icmp("ugt", need, cap),
                          e.select(e.icmp("ult", c2, need), need, c2), cap)
            p = e.call(e.declare("realloc", T.ptr, [T.ptr, i64]), [e.load(T.ptr, st, 8), nc])
            e.store(p, st, 8)
            e.store(nc, e.gep_bytes(st, 8), 8)
            e.store(need, e.gep_bytes(st, 16), 8)
            r = used
        elif name == "__enzyme_py_shadow_free":
            p = args[0]
            null = ConstantNull(T.ptr)
            raw = e.select(e.icmp("eq", p, null), null, e.gep_bytes(p, -16))
            r = e.call(e.declare("free", T.void, [T.ptr]), [raw])
        else:   # __enzyme_py_shadow_realloc
            old, n = args
            r = shadow_alloc(n)
            osz = e.call(runtime_function(module, "__enzyme_py_shadow_size"), [old])
            m = e.select(e.icmp("ult", osz, n), osz, n)
            memcpy = e.declare("llvm.memcpy.p0.p0.i64", T.void, [T.ptr, T.ptr, i64, T.i1])
            e.call(memcpy, [r, old, m, ConstantInt(T.i1, 0)])
        if not c.type.is_void:
            c.replace_all_uses_with(r)
        c.erase()
    _typed_frame_copies(fn)


def _frame_fields(frame):
    """{byte offset: type} of the stores into the byte array ``frame`` (an alloca), or
    None when it is used otherwise than by stores at constant offsets and memcpys."""
    from ..ir.instructions import GEP, Call, Store
    fields = {}
    for u in frame.uses:
        i = u.user
        if isinstance(i, Store) and i.operand(1) is frame and i.operand(0) is not frame:
            if fields.setdefault(0, i.operand(0).type) != i.operand(0).type:
                return None
        elif isinstance(i, GEP) and i.source_type == T.i8 and len(i.indices) == 1 \
                and isinstance(i.indices[0], ConstantInt) and i.operand(0) is frame:
            for w in i.uses:
                st = w.user
                if not (isinstance(st, Store) and st.operand(1) is i
                        and st.operand(0) is not i):
                    return None
                ty = st.operand(0).type
                if fields.setdefault(i.indices[0].value, ty) != ty:
                    return None
        elif not (isinstance(i, Call) and (i.callee_name or "").startswith("llvm.memcpy")
                  and i.args[1] is frame and i.args[0] is not frame):
            return None
    return fields


def _typed_frame_copies(fn) -> None:
    """A generated augmented forward pushes its frame (a byte array of cached
    integers, pointers and floats) on the tape with one memcpy; a transformation of
    it would have to know what each byte holds.  Copy field by field, each with its
    own type, instead (the reverse reads the fields from the tape with their types)."""
    from ..ir.instructions import Alloca, Call
    from .emit import Emitter
    e = Emitter(fn.parent)
    for c in [i for i in fn.instructions() if isinstance(i, Call)
              and (i.callee_name or "").startswith("llvm.memcpy")]:
        dst, src, n = c.args[:3]
        if not (isinstance(src, Alloca) and src.allocated_type.is_array
                and src.allocated_type.element == T.i8 and isinstance(n, ConstantInt)):
            continue
        fields = _frame_fields(src)
        if fields is None:
            continue
        dl = fn.parent.datalayout
        spans = sorted((off, off + dl.store_size(ty)) for off, ty in fields.items())
        if any(a[1] > b[0] for a, b in zip(spans, spans[1:])) \
                or (spans and spans[-1][1] > n.value):
            continue
        e.position_before(c)
        for off, ty in sorted(fields.items()):
            v = e.load(ty, e.gep_bytes(src, off) if off else src, 8)
            e.store(v, e.gep_bytes(dst, off) if off else dst, 8)
        c.erase()


def _string(module, text: str):
    """A private constant C string (memoized by content)."""
    from ..ir.values import ConstantString
    data = text.encode() + b"\0"
    name = "__enzyme_py_str." + "".join(c if c.isalnum() else "_" for c in text[:40])
    body = "".join(chr(b) if 32 <= b < 127 and b not in (34, 92) else f"\\{b:02X}"
                   for b in data)
    for g in module.global_variables:
        if g.name.startswith(name) and isinstance(g.initializer, ConstantString) \
                and g.initializer.text == f'"{body}"':
            return g
    ty = T.ArrayType(T.i8, len(data))
    return module.add_global(name, ty, ConstantString(ty, f'"{body}"'), constant=True,
                             linkage="private", align=1)


def _out_of_memory(module):
    """``__enzyme_py_out_of_memory(what, n)``: ``enzyme: out of memory <what>: <n>
    bytes`` on stderr (snprintf into a stack buffer and write(2): no allocation), then
    ``abort()``."""
    from .emit import Emitter
    fn, new = _new(module, OUT_OF_MEMORY, T.void, [T.ptr, T.i64],
                   "noinline cold noreturn nounwind")
    if not new:
        return fn
    e = Emitter(module)
    what, n = fn.args
    e.position_at_end(fn.append_basic_block("entry"))
    size = 512
    buf = e.alloca(T.ArrayType(T.i8, size), align=16)
    snprintf = e.declare("snprintf", T.i32, [T.ptr, T.i64, T.ptr], varargs=True)
    fmt = _string(module, "enzyme: out of memory %s: %llu bytes\n")
    k = e.call(snprintf, [buf, ConstantInt(T.i64, size), fmt, what, n])
    k = e.select(e.icmp("slt", k, ConstantInt(T.i32, 0)), ConstantInt(T.i32, 0), k)
    k = e.select(e.icmp("sgt", k, ConstantInt(T.i32, size - 1)),
                 ConstantInt(T.i32, size - 1), k)
    write = e.declare("write", T.i64, [T.i32, T.ptr, T.i64])
    e.call(write, [ConstantInt(T.i32, 2), buf, e.cast("zext", k, T.i64)])
    e.call(e.declare("abort", T.void, []), [], fn_attrs="noreturn nounwind")
    e.unreachable()
    return fn


def _aligned_calloc(e, n, a, check=None):
    """A zeroed shadow of ``n`` bytes aligned to ``a`` (a power of two, at least 16) with
    the 16-byte header {capacity, size} before it; the capacity holds minus the offset
    of the aligned pointer from the raw block (see :func:`_raw_block`)."""
    i64 = T.i64
    calloc = e.declare("calloc", T.ptr, [i64, i64])
    nb = e.binop("add", e.binop("add", n, a), ConstantInt(i64, 16))
    raw = e.call(calloc, [nb, ConstantInt(i64, 1)])
    if check is not None:
        check(raw, nb)
    # the first address past the header that is a multiple of a
    start = e.binop("add", e.cast("ptrtoint", raw, i64), ConstantInt(i64, 16))
    mask = e.binop("sub", a, ConstantInt(i64, 1))
    off = e.binop("add", ConstantInt(i64, 16), e.binop("and", e.binop("sub", a, e.binop(
        "and", start, mask)), mask))
    p = e.gep_bytes(raw, off)
    e.store(e.binop("sub", ConstantInt(i64, 0), off), e.gep_bytes(p, -16), 8)
    e.store(n, e.gep_bytes(p, -8), 8)
    return p


def _raw_block(e, s, cap):
    """The block to free for the shadow ``s`` that is not pooled (header capacity
    ``cap`` <= 0): ``s - 16``, or ``s + cap`` for an aligned one."""
    return e.select(e.icmp("slt", cap, ConstantInt(T.i64, 0)), e.gep_bytes(s, cap),
                    e.gep_bytes(s, -16))


def _check(module, e, fn, p, nbytes, what):
    """After an allocation ``p`` of ``nbytes`` in ``fn``: a null ``p`` reports ``what``
    and aborts; the emitter continues in the non-null block."""
    from ..ir.values import ConstantNull
    ok, oom = fn.append_basic_block("ok"), fn.append_basic_block("oom")
    e.cbranch(e.icmp("eq", p, ConstantNull(T.ptr)), oom, ok)
    e.position_at_end(oom)
    e.call(_out_of_memory(module), [_string(module, what), nbytes])
    e.unreachable()
    e.position_at_end(ok)


def runtime_function(module, name, ty=None, owner=None):
    """The runtime function ``name`` (for type ``ty`` where it has variants); for the
    functions that allocate, the variant whose out-of-memory message names ``owner``."""
    from .emit import Emitter, type_suffix
    from .runtime_escape import NAMES as ESCAPING, escaping_function
    from .runtime_pool import _cache_pool
    if name in ESCAPING:
        return escaping_function(module, name, _new)
    e = Emitter(module)
    i64 = T.i64
    what = _ALLOCATING.get(name)
    if what is not None:
        base = name
        if owner is not None:
            what += f" of {owner}"
            name = f"{name}.{owner}"
    if what is not None and base == "__enzyme_py_tape_reserve":
        fn, new = _new(module, name, T.ptr, [T.ptr, i64], "alwaysinline nounwind")
        if not new:
            return fn
        t, n = fn.args
        entry, grow, fast = (fn.append_basic_block(x) for x in ("entry", "grow", "fast"))
        e.position_at_end(entry)
        szp = e.gep_bytes(t, 8)
        sz = e.load(i64, szp, 8)
        capp = e.gep_bytes(t, 16)
        cap = e.load(i64, capp, 8)
        new_sz = e.binop("add", sz, n)
        ok = e.icmp("ule", new_sz, cap)
        e.cbranch(ok, fast, grow)
        e.position_at_end(grow)
        c2 = e.binop("shl", cap, ConstantInt(i64, 1))
        c3 = e.binop("add", c2, e.binop("add", new_sz, ConstantInt(i64, 256)))
        data = e.load(T.ptr, t, 8)
        realloc = e.declare("realloc", T.ptr, [T.ptr, i64])
        nd = e.call(realloc, [data, c3])
        _check(module, e, fn, nd, c3, what)
        e.store(nd, t, 8)
        e.store(c3, capp, 8)
        e.br(fast)
        e.position_at_end(fast)
        d = e.load(T.ptr, t, 8)
        p = e.gep_bytes(d, sz)
        e.store(new_sz, szp, 8)
        e.ret(p)
        return fn
    if name == "__enzyme_py_tape_pop":
        fn, new = _new(module, name, T.ptr, [T.ptr, i64], "alwaysinline nounwind")
        if not new:
            return fn
        t, n = fn.args
        e.position_at_end(fn.append_basic_block("entry"))
        szp = e.gep_bytes(t, 8)
        sz = e.load(i64, szp, 8)
        new_sz = e.binop("sub", sz, n)
        e.store(new_sz, szp, 8)
        d = e.load(T.ptr, t, 8)
        e.ret(e.gep_bytes(d, new_sz))
        return fn
    if what is not None and base == "__enzyme_py_cache_reserve":
        fn, new = _new(module, name, T.ptr, [T.ptr, i64, i64], "alwaysinline nounwind")
        if not new:
            return fn
        st, i, rec = fn.args
        entry, grow, fast = (fn.append_basic_block(x) for x in ("entry", "grow", "fast"))
        e.position_at_end(entry)
        capp = e.gep_bytes(st, 8)
        cap = e.load(i64, capp, 8)
        e.cbranch(e.icmp("ult", i, cap), fast, grow)
        e.position_at_end(grow)
        c2 = e.binop("add", e.binop("shl", cap, ConstantInt(i64, 1)), ConstantInt(i64, 16))
        need = e.binop("add", i, ConstantInt(i64, 1))
        nc = e.select(e.icmp("ult", c2, need), need, c2)
        realloc = e.declare("realloc", T.ptr, [T.ptr, i64])
        nbytes = e.binop("mul", nc, rec)
        nd = e.call(realloc, [e.load(T.ptr, st, 8), nbytes])
        _check(module, e, fn, nd, nbytes, what)
        e.store(nd, st, 8)
        e.store(nc, capp, 8)
        e.br(fast)
        e.position_at_end(fast)
        e.ret(e.load(T.ptr, st, 8))
        return fn
    if what is not None and base == "__enzyme_py_cache_alloc":
        return _cache_pool(module, e, base, name, what)
    if what is not None and base == "__enzyme_py_cache_bump":
        fn, new = _new(module, name, i64, [T.ptr, i64, T.ptr], "alwaysinline nounwind")
        if not new:
            return fn
        st, n, hint = fn.args
        entry, grow, fast = (fn.append_basic_block(x) for x in ("entry", "grow", "fast"))
        e.position_at_end(entry)
        usedp = e.gep_bytes(st, 16)
        used = e.load(i64, usedp, 8)
        need = e.binop("add", used, n)
        capp = e.gep_bytes(st, 8)
        cap = e.load(i64, capp, 8)
        e.cbranch(e.icmp("ugt", need, cap), grow, fast)
        e.position_at_end(grow)
        c2 = e.binop("shl", cap, ConstantInt(i64, 1))
        nc = e.select(e.icmp("ult", c2, need), need, c2)
        nc = e.select(e.icmp("ult", nc, ConstantInt(i64, 4096)), ConstantInt(i64, 4096), nc)
        before = e.atomicrmw("umax", hint, nc, "monotonic", 8)
        nc = e.select(e.icmp("ult", nc, before), before, nc)
        from ..ir.values import ConstantNull
        old = e.load(T.ptr, st, 8)
        first, more, have = (fn.append_basic_block(x) for x in ("first", "more", "have"))
        e.cbranch(e.icmp("eq", old, ConstantNull(T.ptr)), first, more)
        # the first block may come from the pool (the hint asks for the final size)
        e.position_at_end(first)
        p1 = e.call(runtime_function(module, "__enzyme_py_cache_alloc", owner=owner), [nc])
        e.br(have)
        # a larger one: realloc of the block with its header (glibc moves large blocks
        # with mremap: no copy, no second block alive beside the first)
        e.position_at_end(more)
        nb = e.binop("add", nc, ConstantInt(i64, 16))
        raw = e.call(e.declare("realloc", T.ptr, [T.ptr, i64]), [e.gep_bytes(old, -16), nb])
        _check(module, e, fn, raw, nb, what)
        e.store(nc, raw, 8)
        p2 = e.gep_bytes(raw, 16)
        e.br(have)
        e.position_at_end(have)
        p = e.phi(T.ptr)
        p.add_incoming(p1, first)
        p.add_incoming(p2, p2.parent)
        e.store(p, st, 8)
        # a block from the pool may be larger than asked for: its header says how large
        e.store(e.load(i64, e.gep_bytes(p, -16), 8), capp, 8)
        e.br(fast)
        e.position_at_end(fast)
        e.store(need, usedp, 8)
        e.ret(used)
        return fn
    if name == "__enzyme_py_cache_free":
        return _cache_pool(module, e, name)
    for kind in ("memmove", "memcpy"):
        if name.startswith(f"__enzyme_py_{kind}_adj"):
            return _copy_adjoint(module, e, kind, ty)
    if name.startswith("__enzyme_py_strided_"):
        return _strided(module, e, ty, move="_move_" in name)
    if what is not None and base == "__enzyme_py_shadow_alloc":
        # zeroed shadow memory after a 16-byte header {i64 capacity, i64 size}: blocks
        # of POOL_MIN bytes or more come from the cache-buffer pool (capacity >
        # 0) and are zeroed with memset, since a fresh calloc of that size is an mmap
        # that page-faults on every call; smaller ones are calloc'd (capacity 0).
        fn, new = _new(module, name, T.ptr, [i64])
        if not new:
            return fn
        (n,) = fn.args
        entry, big, small = (fn.append_basic_block(x) for x in ("entry", "big", "small"))
        e.position_at_end(entry)
        e.cbranch(e.icmp("uge", n, ConstantInt(i64, POOL_MIN)), big, small)
        e.position_at_end(big)
        p = e.call(runtime_function(module, "__enzyme_py_cache_alloc", owner=owner), [n])
        e.store(n, e.gep_bytes(p, -8), 8)
        memset = e.declare("llvm.memset.p0.i64", T.void, [T.ptr, T.i8, i64, T.i1])
        e.call(memset, [p, ConstantInt(T.i8, 0), n, ConstantInt(T.i1, 0)])
        e.ret(p)
        e.position_at_end(small)
        calloc = e.declare("calloc", T.ptr, [i64, i64])
        nb = e.binop("add", n, ConstantInt(i64, 16))
        raw = e.call(calloc, [nb, ConstantInt(i64, 1)])
        _check(module, e, fn, raw, nb, what)
        e.store(n, e.gep_bytes(raw, 8), 8)
        e.ret(e.gep_bytes(raw, 16))
        return fn
    if what is not None and base == "__enzyme_py_shadow_alloc_aligned":
        fn, new = _new(module, name, T.ptr, [i64, i64])
        if not new:
            return fn
        n, a = fn.args
        e.position_at_end(fn.append_basic_block("entry"))
        raw = _aligned_calloc(e, n, a, lambda p, nb: _check(module, e, fn, p, nb, what))
        e.ret(raw)
        return fn
    if name == "__enzyme_py_shadow_free":
        fn, new = _new(module, name, T.void, [T.ptr])
        if not new:
            return fn
        (s,) = fn.args
        entry, yes, pooled, plain, done = (
            fn.append_basic_block(x) for x in ("entry", "free", "pooled", "plain", "done"))
        e.position_at_end(entry)
        from ..ir.values import ConstantNull
        e.cbranch(e.icmp("eq", s, ConstantNull(T.ptr)), done, yes)
        e.position_at_end(yes)
        cap = e.load(i64, e.gep_bytes(s, -16), 8)
        e.cbranch(e.icmp("sgt", cap, ConstantInt(i64, 0)), pooled, plain)
        e.position_at_end(pooled)
        e.call(runtime_function(module, "__enzyme_py_cache_free"), [s])
        e.br(done)
        e.position_at_end(plain)
        free = e.declare("free", T.void, [T.ptr])
        e.call(free, [_raw_block(e, s, cap)])
        e.br(done)
        e.position_at_end(done)
        e.ret()
        return fn
    if name == "__enzyme_py_shadow_size":
        fn, new = _new(module, name, i64, [T.ptr])
        if not new:
            return fn
        (s,) = fn.args
        entry, yes, done = (fn.append_basic_block(x) for x in ("entry", "some", "done"))
        e.position_at_end(entry)
        from ..ir.values import ConstantNull
        e.cbranch(e.icmp("eq", s, ConstantNull(T.ptr)), done, yes)
        e.position_at_end(yes)
        sz = e.load(i64, e.gep_bytes(s, -8), 8)
        e.br(done)
        e.position_at_end(done)
        e.ret(e.phi(i64, [(ConstantInt(i64, 0), entry), (sz, yes)]))
        return fn
    if what is not None and base == "__enzyme_py_shadow_realloc":
        # a fresh shadow holding a copy of the old one's first min(old, n) bytes;
        # the old shadow stays alive for the reverse sweep
        fn, new = _new(module, name, T.ptr, [T.ptr, i64])
        if not new:
            return fn
        old, n = fn.args
        e.position_at_end(fn.append_basic_block("entry"))
        alloc = runtime_function(module, "__enzyme_py_shadow_alloc", owner=owner)
        size = runtime_function(module, "__enzyme_py_shadow_size")
        p = e.call(alloc, [n])
        osz = e.call(size, [old])
        m = e.select(e.icmp("ult", osz, n), osz, n)
        memcpy = e.declare("llvm.memcpy.p0.p0.i64", T.void, [T.ptr, T.ptr, i64, T.i1])
        e.call(memcpy, [p, old, m, ConstantInt(T.i1, 0)])
        e.ret(p)
        return fn
    if name == "__enzyme_py_digamma":
        full = f"__enzyme_py_digamma_{type_suffix(ty)}"
        fn, new = _new(module, full, ty, [ty])
        if not new:
            return fn
        (x,) = fn.args
        entry, loop, tail = (fn.append_basic_block(n) for n in ("entry", "loop", "tail"))
        c = lambda v: e.const(v, ty)  # noqa: E731
        e.position_at_end(entry)
        e.cbranch(e.fcmp("olt", x, c(6.0)), loop, tail)
        e.position_at_end(loop)
        rv = e.phi(ty)
        xv = e.phi(ty)
        r1 = e.binop("fsub", rv, e.binop("fdiv", c(1.0), xv))
        x1 = e.binop("fadd", xv, c(1.0))
        e.cbranch(e.fcmp("olt", x1, c(6.0)), loop, tail)
        xv.add_incoming(x, entry)
        xv.add_incoming(x1, loop)
        rv.add_incoming(c(0.0), entry)
        rv.add_incoming(r1, loop)
        e.position_at_end(tail)
        rt = e.phi(ty, [(c(0.0), entry), (r1, loop)])
        xt = e.phi(ty, [(x, entry), (x1, loop)])
        f = e.binop("fdiv", c(1.0), e.binop("fmul", xt, xt))
        poly = e.binop("fsub", c(1 / 240), e.binop("fmul", f, c(1 / 132)))
        poly = e.binop("fsub", c(1 / 252), e.binop("fmul", f, poly))
        poly = e.binop("fsub", c(1 / 120), e.binop("fmul", f, poly))
        poly = e.binop("fsub", c(1 / 12), e.binop("fmul", f, poly))
        s = e.binop("fsub", e.libm("log", xt), e.binop("fdiv", c(0.5), xt))
        s = e.binop("fsub", s, e.binop("fmul", f, poly))
        e.ret(e.binop("fadd", rt, s))
        return fn
    raise KeyError(name)


def _copy_adjoint(module, e, kind, ty):
    """``__enzyme_py_<kind>_adj_<ty>(dst, src, nbytes)``: the adjoint of copying
    ``nbytes`` of ``ty`` elements: each destination adjoint is added to its source's and
    zeroed.  For ``memmove`` the regions may overlap: when the source lies above the
    destination, element i's source is the destination of a later element, whose adjoint
    must be taken first, so the walk goes down; otherwise up (``memcpy`` always up)."""
    from .emit import type_suffix
    i64 = T.i64
    fn, new = _new(module, f"__enzyme_py_{kind}_adj_{type_suffix(ty)}", T.void,
                   [T.ptr, T.ptr, i64])
    if not new:
        return fn
    dd, ds, nb = fn.args
    entry, loop, exit_ = (fn.append_basic_block(x) for x in ("entry", "loop", "exit"))
    size = module.datalayout.store_size(ty)
    e.position_at_end(entry)
    n = e.binop("udiv", nb, ConstantInt(i64, size))
    first, step = ConstantInt(i64, 0), ConstantInt(i64, 1)
    if kind == "memmove":
        down = e.icmp("ult", e.cast("ptrtoint", dd, i64), e.cast("ptrtoint", ds, i64))
        first = e.select(down, e.binop("sub", n, ConstantInt(i64, 1)), first)
        step = e.select(down, ConstantInt(i64, -1), step)
    e.cbranch(e.icmp("eq", n, ConstantInt(i64, 0)), exit_, loop)
    e.position_at_end(loop)
    i = e.phi(i64)
    k = e.phi(i64)
    pd = e.gep(ty, dd, [i])
    ps = e.gep(ty, ds, [i])
    a = e.load(ty, pd)
    e.store(ConstantFP(ty, 0.0), pd)
    b = e.load(ty, ps)
    e.store(e.binop("fadd", b, a), ps)
    i1 = e.binop("add", i, step)
    k1 = e.binop("add", k, ConstantInt(i64, 1))
    e.cbranch(e.icmp("ult", k1, n), loop, exit_)
    k.add_incoming(ConstantInt(i64, 0), entry)
    k.add_incoming(k1, loop)
    i.add_incoming(first, entry)
    i.add_incoming(i1, loop)
    e.position_at_end(exit_)
    e.ret()
    return fn


def _strided(module, e, ty, move=False):
    """``__enzyme_py_strided_copy(d, s, nbytes, stride, off, len)`` (``ty`` None):
    copies ``len`` bytes at ``off`` in every ``stride``-byte element of the ``nbytes``
    at ``s`` to ``d``; ``__enzyme_py_strided_adj_<ty>`` (same arguments): the reverse of
    copying those bytes as ``ty`` data (``__enzyme_py_memcpy_adj_<ty>`` per element).
    The copy of an array of structs holding pointers and floats, ``n * sizeof *p``
    bytes: the forward sweep moves the pointers' shadows, the reverse the floats'
    adjoints, field run by field run.  ``__enzyme_py_strided_move_adj_<ty>``: the same
    for a memmove, whose ranges may overlap: the elements are taken downwards where
    the destination lies below the source (``_copy_adjoint``'s order);
    ``__enzyme_py_strided_move_copy``: the copy for a memmove (records shifted along
    an array), downwards where the destination lies above the source."""
    from .emit import type_suffix
    i64 = T.i64
    name = f"__enzyme_py_strided_{'move_' if move else ''}copy" if ty is None \
        else f"__enzyme_py_strided_{'move_' if move else ''}adj_{type_suffix(ty)}"
    fn, new = _new(module, name, T.void, [T.ptr, T.ptr, i64, i64, i64, i64])
    if not new:
        return fn
    d, s, nb, stride, off, size = fn.args
    each = _copy_adjoint(module, e, "memcpy", ty) if ty is not None else \
        e.declare("llvm.memcpy.p0.p0.i64", T.void, [T.ptr, T.ptr, i64, T.i1])
    entry, loop, exit_ = (fn.append_basic_block(x) for x in ("entry", "loop", "exit"))
    e.position_at_end(entry)
    count = e.binop("udiv", nb, stride)
    first, step = ConstantInt(i64, 0), stride
    if move:
        # (the copy itself goes down where the destination lies above the source; its
        # reverse, the other way)
        down = e.icmp("ult" if ty is not None else "ugt",
                      e.cast("ptrtoint", d, i64), e.cast("ptrtoint", s, i64))
        last = e.binop("mul", e.binop("sub", count, ConstantInt(i64, 1)), stride)
        first = e.select(down, last, first)
        step = e.select(down, e.binop("sub", ConstantInt(i64, 0), stride), stride)
    e.cbranch(e.icmp("eq", count, ConstantInt(i64, 0)), exit_, loop)
    e.position_at_end(loop)
    at = e.phi(i64)
    k = e.phi(i64)
    o = e.binop("add", at, off)
    pd, ps = e.gep_bytes(d, o), e.gep_bytes(s, o)
    e.call(each, [pd, ps, size] + ([ConstantInt(T.i1, 0)] if ty is None else []))
    nxt = e.binop("add", at, step)
    k1 = e.binop("add", k, ConstantInt(i64, 1))
    e.cbranch(e.icmp("ult", k1, count), loop, exit_)
    at.add_incoming(first, entry)
    at.add_incoming(nxt, loop)
    k.add_incoming(ConstantInt(i64, 0), entry)
    k.add_incoming(k1, loop)
    e.position_at_end(exit_)
    e.ret()
    return fn


def _unset_shadow_branch(module, name):
    """``ptr name(ptr shadow, ptr primal)``, internal, returning ``shadow`` -- except
    where ``shadow`` is null and ``primal`` is not: the emitter is left there for the
    caller to fill in (the pair (function, emitter); the emitter None where the function
    exists already)."""
    from .emit import Emitter
    fn = module.get_function(name)
    if fn is not None:
        return fn, None
    fn = module.add_function(name, T.FunctionType(T.ptr, [T.ptr, T.ptr]),
                             linkage="internal", fn_attrs="noinline nounwind")
    s, p = fn.args
    e = Emitter(module)
    entry, unset, ok = (fn.append_basic_block(n) for n in ("entry", "unset", "ok"))
    e.position_at_end(entry)
    e.cbranch(e.binop("and", e.icmp("eq", s, ConstantNull(T.ptr)),
                      e.icmp("ne", p, ConstantNull(T.ptr))), unset, ok)
    e.position_at_end(ok)
    e.ret(s)
    e.position_at_end(unset)
    return fn, e


def zero_shadow_holder(module, g, plain: bool):
    """The internal global that holds the zeroed shadow :func:`fill_shadow_check` made
    for the block in the pointer variable ``g`` during the current derivative call
    (``plain``: a ``calloc`` block, forward mode's kind; else a shadow block of
    ``__enzyme_py_shadow_alloc``), or null; the call sites free it after the call."""
    from ..ir.values import ConstantNull as Null
    name = _zero_holder_name(g, plain)
    h = module.get_global(name)
    if h is None:
        h = module.add_global(name, T.ptr, Null(T.ptr), linkage="internal", align=8,
                              unique=False)
    return h


def _zero_holder_name(g, plain: bool) -> str:
    return f"__enzyme_py_zero_shadow{'_plain' if plain else ''}.{g.name}"


def fill_shadow_check(module, g, shadow_global, plain: bool):
    """``ptr (ptr shadow, ptr primal)``: the shadow to use for the pointer just read from
    the variable ``g`` (``analysis.globals.heap_block_only``: it only ever holds
    blocks of malloc/calloc/realloc): ``shadow``, or -- where the derivative call has
    not stored a block with a shadow there yet (``shadow`` null, ``primal`` not: a
    workspace the program or an earlier derivative call allocated) -- a zeroed block of
    the primal block's size (``malloc_usable_size``), stored into ``shadow_global`` and
    into :func:`zero_shadow_holder`: what the block held before this call carries no
    derivative in it."""
    fn, e = _unset_shadow_branch(module, f"__enzyme_py_fill_shadow"
                                 f"{'_plain' if plain else ''}.{g.name}")
    if e is None:
        return fn
    n = e.call(e.declare("malloc_usable_size", T.i64, [T.ptr]), [fn.args[1]])
    if plain:
        z = e.call(e.declare("calloc", T.ptr, [T.i64, T.i64]), [ConstantInt(T.i64, 1), n])
        _check(module, e, fn, z, n, "allocating a shadow")
    else:
        z = e.call(runtime_function(module, "__enzyme_py_shadow_alloc"), [n])
    e.store(z, shadow_global, 8)
    e.store(z, zero_shadow_holder(module, g, plain), 8)
    e.ret(z)
    return fn


def free_zero_shadows(e, module, shadows) -> None:
    """After a derivative call (at the emitter): free the zeroed shadows
    :func:`fill_shadow_check` made during it for the pointer variables with shadow
    globals ``shadows`` (global -> its shadow global).  A forward-mode (``calloc``)
    one goes only where its shadow global still holds it: the program's ``free`` or
    ``realloc`` of the block freed it already."""
    from ..ir.values import ConstantNull as Null
    for g, sg in shadows.items():
        for plain in (False, True):
            h = module.get_global(_zero_holder_name(g, plain))
            if h is None:
                continue
            z = e.load(T.ptr, h, 8)
            if plain:
                z = e.select(e.icmp("eq", e.load(T.ptr, sg, 8), z), z, Null(T.ptr))
                e.call(e.declare("free", T.void, [T.ptr]), [z])
            else:
                e.call(runtime_function(module, "__enzyme_py_shadow_free"), [z])
            e.store(Null(T.ptr), h, 8)


def unset_shadow_check(module, g):
    """``ptr (ptr shadow, ptr primal)``: ``shadow``, after stopping the program with a
    message when the pointer held by the global ``g`` -- which has a shadow global
    because the differentiated code stores a block it allocates into it -- was read
    before that store in this derivative call (``shadow`` null where ``primal`` is
    not): the block the caller left there has no shadow (where ``g`` only ever holds
    blocks of the C library's allocator, :func:`fill_shadow_check` gives it one)."""
    fn, e = _unset_shadow_branch(module, f"__enzyme_py_unset_shadow.{g.name}")
    if e is None:
        return fn
    msg = (f"enzyme: the pointer in global '{g.name}' was read by the derivative before "
           "the differentiated code stored a pointer with a shadow there (a block it "
           "allocates, or an enzyme_dup argument): what was left in it before this "
           "derivative call, by the program or an earlier derivative call, has no shadow "
           "(set the global inside the differentiated function, or pass that memory as "
           "an argument with enzyme_dup); aborting\n")
    write = e.declare("write", T.i64, [T.i32, T.ptr, T.i64])
    e.call(write, [ConstantInt(T.i32, 2), _string(module, msg),
                   ConstantInt(T.i64, len(msg.encode()))])
    e.call(e.declare("abort", T.void, []), [], fn_attrs="noreturn nounwind")
    e.unreachable()
    return fn
