"""Reverse mode, the cache: where each value the reverse sweep reads back lives (the
frame, a loop's buffer, a buffer hoisted before an outer loop or appended across
its executions), the addresses of its slots in both sweeps, and the alias scopes
that keep cache memory apart from the program's (the layout itself is ``cache.py``).
Runs last: the sweeps have asked for every cached value (``ReverseGen._cached``)."""

from __future__ import annotations

from ..errors import InternalError
from ..ir import types as T
from ..ir.instructions import (Alloca, Call, Load, Phi, Store)
from ..ir.values import ConstantInt, ConstantNull, Undef, ZeroInit
from .cache import appended_buffers, emit_trip_bound
from .runtime import runtime_function
from .reverse_common import (_MappedCount, _mem_intrinsic)


class CacheEmission:
    """Lays out the cache slots the sweeps asked ``gen`` (a ``ReverseGen``) for, then
    fills in the addresses of the cache loads and stores in both functions."""

    def __init__(self, gen):
        self.gen = gen
        self.ctx, self.e, self.P, self.act, self.cfg, self.loops, self.ow = (
            gen.ctx, gen.e, gen.P, gen.act, gen.cfg, gen.loops, gen.ow)

    def _def_point(self, v):
        """The instruction before which a store of the forward value ``v`` goes."""
        from ..ir.instructions import Invoke as _Invoke
        if isinstance(v, _Invoke):
            nd = v.normal_dest
            return self.aug_setup_end.get(nd) or nd.first_non_phi
        # At the end of the defining block rather than right after the definition: a
        # store of a loop-carried phi before the value that feeds it next iteration
        # keeps the loop vectoriser from treating the phi as a first-order recurrence.
        blk = v.parent
        term = blk.terminator
        k = blk.index_of(term)
        prev = blk.instructions[k - 1] if k > 0 else None
        if not (isinstance(prev, Call) and prev.tail == "musttail"):
            return term
        if isinstance(v, Phi):
            return self.aug_setup_end.get(blk) or blk.first_non_phi
        return blk.instructions[blk.index_of(v) + 1]

    def _aug_addr(self, slot):
        e, lp = self.e, slot.level
        if lp is None:
            base = self.frame_aug
        else:
            rec = T.ArrayType(T.i8, self.gen.cache.size[lp])
            base = e.gep(rec, self.abuf[lp], [self.gen.aiv[lp]])
        return e.gep_bytes(base, slot.offset) if slot.offset else base

    def _rev_addr(self, slot):
        gen = self.gen
        e, lp = self.e, slot.level
        if lp is None:
            base = self.frame_rev
        else:
            rec = T.ArrayType(T.i8, gen.cache.size[lp])
            buf = e.load(T.ptr, gen.rbuf[lp])
            base = e.gep(rec, buf, [e.load(T.i64, gen.rc[lp])])
        return e.gep_bytes(base, slot.offset) if slot.offset else base

    def _plan_hoisted_buffers(self):
        """{loop L: loop H}: L's per-iteration buffer is one allocation per execution of
        H's preheader (H an ancestor of L), sized by the product of the trip-count
        bounds of H and of the loops down to L, instead of one malloc per iteration of
        L's parent.  H is the outermost ancestor at whose preheader all those bounds
        can be computed (their operands are defined outside H)."""
        loops = self.loops.loops
        needs = {lp: self.gen.cache.has_buffer(lp) for lp in loops}
        for lp in sorted(loops, key=lambda x: -x.depth):   # a child's buffer pointer
            if needs[lp] and lp.parent is not None:          # lives in its parent's record
                needs[lp.parent] = True

        def computable(lp, h):
            tc = lp.count
            if tc is None or tc.phi.type.width > 64:
                return False
            a, b, _ = tc.distance()
            return all(not (v.is_instruction and v.parent in h.blocks) for v in (a, b))

        plan = {}
        for lp in loops:
            if not needs[lp] or lp.count is None:
                continue
            chain, best, h = [lp], None, lp.parent
            while h is not None and h.preheader is not None:
                chain.append(h)
                if not all(computable(x, h) for x in chain):
                    break
                best, h = h, h.parent
            if best is not None:
                plan[lp] = best
        return plan

    def _hoisted_buffer(self, lp, rec, state=None):
        """Forward: allocate the buffer of ``lp`` (hoisted to ``H = self.hoist[lp]``) in
        H's preheader, and return the pointer to the records of the current
        execution of ``lp`` (computed in lp's preheader).  With ``state`` (an appended
        buffer, ``cache.appended_buffers``) the allocation is a bump of that buffer, and
        the result is (pointer, byte offset of the records in the buffer)."""
        gen = self.gen
        e, i64 = self.e, T.i64
        h = self.hoist[lp]
        chain = []
        x = lp
        while x is not h:
            chain.append(x)
            x = x.parent
        chain.append(h)
        chain.reverse()                                      # H, ..., lp
        e.position_before(gen.vmap[h.preheader].terminator)
        bounds = [emit_trip_bound(e, _MappedCount(x.count, gen.vmap)) for x in chain]
        total = ConstantInt(i64, rec)
        for nb in bounds:
            total = e.binop("mul", total, nb)
        if state is not None:
            base = e.call(gen._rt("__enzyme_py_cache_bump"),
                          [state, total, self.appended_hint[lp]])
            big = e.load(T.ptr, state, 8)
        else:
            big = e.call(gen._rt("__enzyme_py_cache_alloc"), [total])
            bigslot = gen.cache.slots[(("big", lp), h.parent)]
            gen.cache_insts[e.store(big, self._aug_addr(bigslot), 8)] = bigslot.level
        e.position_before(gen.vmap[lp.preheader].terminator)
        lin = gen.aiv[h]
        for x, nb in zip(chain[1:-1], bounds[1:-1], strict=True):
            lin = e.binop("add", e.binop("mul", lin, nb), gen.aiv[x])
        off = e.binop("mul", e.binop("mul", lin, bounds[-1]), ConstantInt(i64, rec))
        if state is not None:
            off = e.binop("add", base, off)
            return e.gep_bytes(big, off), off
        return e.gep_bytes(big, off)

    def _appended_buffer(self, lp, rec):
        """Forward: the records of this execution of ``lp`` appended to the buffer that
        every execution of it shares (``cache.appended_buffers``): (pointer, offset)."""
        gen = self.gen
        e, i64 = self.e, T.i64
        st_ty = T.StructType([T.ptr, i64, i64])
        state = Alloca(st_ty, align=8)
        entry = gen.aug.blocks[0]
        entry.insert(0, Store(ZeroInit(st_ty), state, align=8))
        entry.insert(0, state)
        self.appended_state[lp] = state
        self.appended_hint[lp] = self.ctx.module.add_global(
            f"__enzyme_py_cache_hint.{self.ctx.fname(self.P)}", i64, ConstantInt(i64, 0),
            linkage="internal", align=8)
        if lp in self.hoist:
            return self._hoisted_buffer(lp, rec, state)
        e.position_before(gen.vmap[lp.preheader].terminator)
        n = emit_trip_bound(e, _MappedCount(lp.count, gen.vmap))
        off = e.call(gen._rt("__enzyme_py_cache_bump"),
                     [state, e.binop("mul", n, ConstantInt(i64, rec)), self.appended_hint[lp]])
        return e.gep_bytes(e.load(T.ptr, state, 8), off), off

    def finalize(self):
        gen = self.gen
        e, m = self.e, self.ctx.module
        cache = gen.cache
        gen.cache_calls = set()   # calls that touch only cache memory (frees of buffers)
        self.hoist = self._plan_hoisted_buffers()
        found = appended_buffers(self.loops.loops, self.hoist,
                                 cache.needs_buffer(self.loops.loops))
        # in the loops' order (a set of loops iterates in address order: the cache
        # layout, and so the generated IR, changed from one build to the next)
        self.appended = dict.fromkeys(lp for lp in self.loops.loops if lp in found)
        self.appended_state, self.appended_hint = {}, {}
        for lp, h in self.hoist.items():
            if lp not in self.appended:
                cache.slot(("big", lp), h.parent, T.ptr, None, special=True)
        for lp in self.appended:
            cache.slot(("grow", lp), None, T.ptr, None, special=True)
        cache.assign_offsets(self.loops.loops, self.appended)
        why = cache.explain({ld: r for ld, r in self.ow.reason.items()
                             if not self.ow.verdict[ld]})
        self.ctx.log(f"cache of {self.ctx.fname(self.P)}: " + (str(cache) or "nothing")
                     + (f"\n    {why}" if why else ""))
        i64 = T.i64
        # -- reverse: entering a loop loads its buffer pointer; leaving frees it
        for lp, blk in gen.enter_points:
            if cache.has_buffer(lp):
                e.position_before(blk.terminator)
                s = cache.slots[(("buf", lp), lp.parent)]
                ld = e.load(s.ty, ConstantNull(T.ptr), 8)   # address filled in below
                gen.cache_insts[ld] = s.level
                gen.placeholders.append((ld, s))
                if lp in self.appended:     # an offset in the buffer whose address
                    gs = cache.slots[(("grow", lp), None)]       # the frame keeps
                    base = e.load(T.ptr, ConstantNull(T.ptr), 8)
                    gen.cache_insts[base] = None
                    gen.placeholders.append((base, gs))
                    ld = e.gep_bytes(base, ld)
                e.store(ld, gen.rbuf[lp])
        free = e.declare("free", T.void, [T.ptr])
        for lp, blk in gen.leave_points:
            if cache.has_buffer(lp) and lp not in self.hoist and lp not in self.appended:
                e.position_before(blk.terminator)
                counted = lp.count is not None and lp.count.phi.type.width <= 64
                gen.cache_calls.add(e.call(gen._rt("__enzyme_py_cache_free") if counted
                                           else free, [e.load(T.ptr, gen.rbuf[lp])]))
            for inner, h in self.hoist.items():
                if h is lp and inner not in self.appended:
                    e.position_before(blk.terminator)
                    ld = e.load(T.ptr, ConstantNull(T.ptr), 8)
                    bs = cache.slots[(("big", inner), h.parent)]
                    gen.cache_insts[ld] = bs.level
                    gen.placeholders.append((ld, bs))
                    e.call(gen._rt("__enzyme_py_cache_free"), [ld])
        # -- forward: the frame, the loop buffers, the stores
        aug_entry = gen.aug.blocks[0]
        fsize = cache.size.get(None, 0)
        self.frame_aug = None
        if fsize:
            self.frame_aug = Alloca(T.ArrayType(T.i8, fsize), align=16)
            aug_entry.insert(0, self.frame_aug)
        self.abuf = {}
        self.aug_setup_end = {}
        for lp in sorted(self.loops.loops, key=lambda x: x.depth):
            if not cache.has_buffer(lp):
                continue
            rec = cache.size[lp]
            bufslot = cache.slots[(("buf", lp), lp.parent)]
            ph = gen.vmap[lp.preheader]
            hdr = gen.vmap[lp.header]
            n = None
            if lp in self.appended:
                self.abuf[lp], off = self._appended_buffer(lp, rec)
                gen.cache_insts[e.store(off, self._aug_addr(bufslot), 8)] = bufslot.level
                continue
            if lp in self.hoist:
                self.abuf[lp] = self._hoisted_buffer(lp, rec)
                gen.cache_insts[e.store(self.abuf[lp], self._aug_addr(bufslot), 8)] = bufslot.level
                continue
            if lp.count is not None:
                e.position_before(ph.terminator)
                n = emit_trip_bound(e, _MappedCount(lp.count, gen.vmap))
            if n is not None:
                buf = e.call(gen._rt("__enzyme_py_cache_alloc"),
                             [e.binop("mul", n, ConstantInt(i64, rec))])
                self.abuf[lp] = buf
                gen.cache_insts[e.store(buf, self._aug_addr(bufslot), 8)] = bufslot.level
            else:
                # while loop: a buffer that grows (realloc) as the iterations go
                st = Alloca(T.StructType([T.ptr, i64]), align=8)
                aug_entry.insert(0, st)
                e.position_before(ph.terminator)
                e.store(ZeroInit(T.StructType([T.ptr, i64])), st, 8)
                first = hdr.first_non_phi
                e.position_before(first)
                buf = e.call(gen._rt("__enzyme_py_cache_reserve"),
                             [st, gen.aiv[lp], ConstantInt(i64, rec)])
                self.abuf[lp] = buf
                gen.cache_insts[e.store(buf, self._aug_addr(bufslot), 8)] = bufslot.level
                # stores of the header's phis go after the buffer is known
                self.aug_setup_end[hdr] = first
        for slot in list(cache.slots.values()):
            if slot.special:
                continue
            v = slot.aug_value
            if not v.is_instruction:
                raise InternalError("a cached value is not an instruction")
            e.position_before(self._def_point(v))
            gen.cache_insts[e.store(v, self._aug_addr(slot), 8)] = slot.level
        # -- reverse: fill in the cache addresses
        self.frame_rev = None
        e.position_at_end(gen.rentry)
        if fsize:
            pop = runtime_function(m, "__enzyme_py_tape_pop")
            self.frame_rev = e.call(pop, [gen.tape_rev, ConstantInt(i64, fsize)])
        for ld, slot in gen.placeholders:
            e.position_before(ld)
            ld.set_operand(0, self._rev_addr(slot))
        # -- reverse: appended buffers are freed when the reverse sweep returns
        for lp in self.appended:
            e.position_before(gen.rret.terminator)
            ld = e.load(T.ptr, self._rev_addr(cache.slots[(("grow", lp), None)]), 8)
            gen.cache_insts[ld] = None
            e.call(gen._rt("__enzyme_py_cache_free"), [ld])
        # -- forward: push the frame when returning
        if fsize and gen.exit is not None:
            ret = gen.vmap[gen.exit].terminator
            e.position_before(ret)
            for lp, state in self.appended_state.items():  # appended buffers' addresses
                gs = cache.slots[(("grow", lp), None)]
                gen.cache_insts[e.store(e.load(T.ptr, state, 8), self._aug_addr(gs), 8)] = None
            reserve = gen._rt("__enzyme_py_tape_reserve")
            p = e.call(reserve, [gen.tape_aug, ConstantInt(i64, fsize)])
            memcpy = e.declare("llvm.memcpy.p0.p0.i64", T.void, [T.ptr, T.ptr, i64, T.i1])
            gen.cache_insts[e.call(memcpy, [p, self.frame_aug, ConstantInt(i64, fsize),
                                            ConstantInt(T.i1, 0)])] = None
        for b in self.cfg.rpo:
            e.position_at_end(gen.rpop[b])
            e.br(gen.rhead[b])
            e.position_at_end(gen.rhead[b])
            e.br(gen.rbody[b])
        e.position_at_end(gen.rentry)
        if gen.exit is None:
            e.ret(Undef(gen.out_type))
        else:
            e.br(gen.rpop[gen.exit])
        self._tag_cache_accesses()

    def _tag_cache_accesses(self):
        """Cache loads/stores get the alias scope of their level's memory (the frame
        and tape, or one loop's buffers) and are ``!noalias`` to the function's other
        levels; every other load, store and memory intrinsic of the two functions is
        ``!noalias`` to all of them (see ``Context.cache_scope``)."""
        gen = self.gen
        if not gen.cache_insts:
            return
        ctx = self.ctx
        levels = sorted(set(gen.cache_insts.values()), key=lambda lp: -1 if lp is None
                        else self.loops.loops.index(lp))
        scope = {lp: ctx.cache_scope(None if lp is None else (self.gen, lp)) for lp in levels}
        every = [scope[lp] for lp in levels]
        others = {lp: [scope[x] for x in levels if x is not lp] for lp in levels}
        for fn in (gen.aug, gen.rev):
            for blk in fn.blocks:
                for inst in blk.instructions:
                    if inst in gen.cache_insts:
                        lp = gen.cache_insts[inst]
                        inst.set_metadata("alias.scope", scope[lp])
                        if others[lp]:
                            inst.set_metadata("noalias", ctx.noalias_with_cache(
                                inst.get_metadata("noalias"), others[lp]))
                    elif isinstance(inst, (Load, Store)) or (
                            isinstance(inst, Call) and _mem_intrinsic(inst.callee_name or "")
                            and (inst.callee_name or "").startswith("llvm.")):
                        inst.set_metadata("noalias", ctx.noalias_with_cache(
                            inst.get_metadata("noalias"), every))


