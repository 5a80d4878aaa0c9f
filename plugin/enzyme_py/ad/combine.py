"""OpenMP reverse sweep: adjoint additions combined per thread before they reach
shared memory.

The reverse of a parallel region adds adjoints into memory other threads also add
to with atomic additions (``openmp.accumulate``).  x86 has no atomic floating-point
add: each is a compare-and-exchange loop, and when every iteration adds into the same
few adjoints (the parameters of a likelihood summed over data points, read by every
thread), the threads fight over those cache lines and the gradient gets slower with
more threads.

Here the reverse function of a region's body keeps a small direct-mapped table on its
thread's stack, ``TABLE`` slots of ``{address, pending sum}`` for aligned doubles.  An
adjoint addition into an address adds to its slot; a slot taken by another address is
first flushed (one atomic addition of its sum).  Additions commute, so deferring them
changes nothing but rounding; what must not happen is a read or write of an address
while its sum is still pending.  So, in that function:

* an aligned ``double`` load or store of memory that is neither the function's own
  stack nor the cache first flushes that address's slot (a probe: one compare);
* any other access that may touch shadow memory (other float types, a store of
  something else, memory intrinsics, atomics that are not additions), any call that
  may read memory (other generated functions, the runtime's barriers, locks and
  tickets), and the return flush the whole table.

Every sum reaches memory before the thread can synchronise with another (barriers,
locks and the region's end are calls or the return), which is when the program's own
order lets another thread read what this one wrote.  Other accesses of the pass's own
making (cache, tape, private allocas) cannot touch shadows, and pure math calls read
nothing.
"""

from __future__ import annotations

from ..analysis.activity import underlying_object
from ..analysis.effects import call_effect
from ..ir import types as T
from ..ir.instructions import Alloca, AtomicRMW, Call, CmpXchg, Load, Ret, Store
from ..ir.values import ConstantInt, ConstantNull
from .emit import Emitter, loop_latch
from .runtime import _new

TABLE = 1024                       # slots (16 KB on the thread's stack); a power of two
_SLOT = T.StructType([T.ptr, T.double])


def _slot_of(e, table, q):
    """The slot of address q: its double index modulo TABLE (direct-mapped: up to
    TABLE consecutive doubles, or the same column of three neighbouring rows of up to
    TABLE/3 doubles, get distinct slots)."""
    h = e.binop("and", e.binop("lshr", e.cast("ptrtoint", q, T.i64), ConstantInt(T.i64, 3)),
                ConstantInt(T.i64, TABLE - 1))
    slot = e.gep(_SLOT, table, [h])
    return slot, e.gep(_SLOT, slot, [ConstantInt(T.i32, 0), ConstantInt(T.i32, 1)])


def _add_fn(m):
    """``combine_add(table, q, d)``: the slot of q gets d; another address there is
    flushed first."""
    fn, new = _new(m, "__enzyme_py_combine_add", T.void, [T.ptr, T.ptr, T.double],
                   attrs="alwaysinline nounwind")
    if not new:
        return fn
    table, q, d = fn.args
    e = Emitter(m)
    entry, hit, miss, evict, put = (fn.append_basic_block(x) for x in
                                    ("entry", "hit", "miss", "evict", "put"))
    e.position_at_end(entry)
    slot, val = _slot_of(e, table, q)
    a = e.load(T.ptr, slot, 8)
    e.cbranch(e.icmp("eq", a, q), hit, miss)
    e.position_at_end(hit)
    e.store(e.fadd(e.load(T.double, val, 8), d), val, 8)
    e.ret()
    e.position_at_end(miss)
    e.cbranch(e.icmp("eq", a, ConstantNull(T.ptr)), put, evict)
    e.position_at_end(evict)
    e.atomicrmw("fadd", a, e.load(T.double, val, 8), "monotonic", 8)
    e.br(put)
    e.position_at_end(put)
    e.store(q, slot, 8)
    e.store(d, val, 8)
    e.ret()
    return fn


def _probe_fn(m):
    """``combine_probe(table, q)``: a sum pending for q goes to memory."""
    fn, new = _new(m, "__enzyme_py_combine_probe", T.void, [T.ptr, T.ptr],
                   attrs="alwaysinline nounwind")
    if not new:
        return fn
    table, q = fn.args
    e = Emitter(m)
    entry, hit, done = (fn.append_basic_block(x) for x in ("entry", "hit", "done"))
    e.position_at_end(entry)
    slot, val = _slot_of(e, table, q)
    e.cbranch(e.icmp("eq", e.load(T.ptr, slot, 8), q), hit, done)
    e.position_at_end(hit)
    e.atomicrmw("fadd", q, e.load(T.double, val, 8), "monotonic", 8)
    e.store(ConstantNull(T.ptr), slot, 8)
    e.br(done)
    e.position_at_end(done)
    e.ret()
    return fn


def _flush_fn(m):
    """``combine_flush(table)``: every pending sum goes to memory."""
    fn, new = _new(m, "__enzyme_py_combine_flush", T.void, [T.ptr])
    if not new:
        return fn
    (table,) = fn.args
    e = Emitter(m)
    entry, loop, hit, nxt, done = (fn.append_basic_block(x) for x in
                                   ("entry", "loop", "hit", "next", "done"))
    e.position_at_end(entry)
    e.br(loop)
    e.position_at_end(loop)
    i = e.phi(T.i64)
    slot = e.gep(_SLOT, table, [i])
    a = e.load(T.ptr, slot, 8)
    e.cbranch(e.icmp("eq", a, ConstantNull(T.ptr)), nxt, hit)
    e.position_at_end(hit)
    val = e.gep(_SLOT, slot, [ConstantInt(T.i32, 0), ConstantInt(T.i32, 1)])
    e.atomicrmw("fadd", a, e.load(T.double, val, 8), "monotonic", 8)
    e.store(ConstantNull(T.ptr), slot, 8)
    e.br(nxt)
    loop_latch(e, i, TABLE, entry, nxt, loop, done)
    e.ret()
    return fn


def _combined_add(inst) -> bool:
    """An adjoint addition the table may take: ``atomicrmw fadd double``, aligned, whose
    old value nothing reads (any other atomic gets a flush before it)."""
    return (isinstance(inst, AtomicRMW) and inst.operation == "fadd"
            and inst.type == T.double and (inst.align or 0) >= 8 and not inst.volatile
            and not inst.uses)


def _reads_nothing(call) -> bool:
    """Calls that touch no memory a pending sum could be for: intrinsics without memory,
    pure math, and the runtime's cache and tape functions."""
    name = call.callee_name or ""
    if name.startswith(("__enzyme_py_cache_", "__enzyme_py_tape_")):
        return True
    if name.startswith("llvm."):
        return not any(w in name for w in ("memcpy", "memmove", "memset", "masked",
                                           "gather", "scatter"))
    eff = call_effect(name)
    return eff is not None and eff.kind in ("math", "nomem") and not eff.writes


def _private_intrinsic(call) -> bool:
    """A memcpy/memmove/memset of the function's own stack only."""
    return (call.callee_name or "").startswith("llvm.mem") and all(
        isinstance(underlying_object(a), Alloca) for a in call.args if a.type.is_pointer)


def combine_adjoint_adds(m, fn, private_or_cache) -> bool:
    """Rewrite the reverse function ``fn`` (of module ``m``) of a region's body as
    described above.
    ``private_or_cache(inst)``: whether a load, store or call touches only cache memory.
    Returns whether any addition was combined (else ``fn`` is left as it was)."""
    insts = list(fn.instructions())
    if not any(_combined_add(i) for i in insts):
        return False
    add, probe, flush = _add_fn(m), _probe_fn(m), _flush_fn(m)
    e = Emitter(m)
    entry = fn.blocks[0]
    first = next(i for i in entry.instructions if not isinstance(i, Alloca))
    e.position_before(first)
    table = e.alloca(T.ArrayType(_SLOT, TABLE), align=16)
    memset = e.declare("llvm.memset.p0.i64", T.void, [T.ptr, T.i8, T.i64, T.i1])
    e.call(memset, [table, ConstantInt(T.i8, 0), ConstantInt(T.i64, TABLE * 16),
                    ConstantInt(T.i1, 0)])
    for inst in insts:
        if _combined_add(inst):
            e.position_before(inst)
            e.call(add, [table, inst.operand(0), inst.operand(1)])
            inst.erase()
        elif isinstance(inst, (Load, Store)):
            ptr = inst.operand(0 if isinstance(inst, Load) else 1)
            ty = inst.type if isinstance(inst, Load) else inst.operand(0).type
            if private_or_cache(inst) or isinstance(underlying_object(ptr), Alloca):
                continue
            e.position_before(inst)
            if ty == T.double and (inst.align or 0) >= 8:
                e.call(probe, [table, ptr])
            elif isinstance(inst, Store) or ty.is_float or ty.is_vector:
                e.call(flush, [table])
            # (integer and pointer loads: no double adjoint lives in such memory)
        elif isinstance(inst, (AtomicRMW, CmpXchg)) or isinstance(inst, Ret) or (
                isinstance(inst, Call) and not _reads_nothing(inst)
                and not private_or_cache(inst) and not _private_intrinsic(inst)):
            e.position_before(inst)
            e.call(flush, [table])
    return True
