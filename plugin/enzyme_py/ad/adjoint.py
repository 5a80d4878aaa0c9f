"""Reverse mode, the reverse sweep: ``diffe_P`` visits P's blocks in reverse,
recomputes or reads back the primal values it needs (``primal``), finds shadows
(``shadow``), accumulates adjoints by the rule registry, reverses calls and replays
the control flow.  Part of ``ReverseGen`` (``reverse.py``)."""

from __future__ import annotations

from ..analysis.globals import shadow_constant
from ..analysis.activity import floatish
from ..errors import InternalError
from ..ir import types as T
from ..ir.instructions import (Alloca, AtomicRMW, BinaryOp, Br, Call, Cast, ExtractElement,
                               ExtractValue, Freeze, GEP, InsertElement, InsertValue, Load, Phi,
                               Ret, Select, ShuffleVector, Store, Switch, UnaryOp, Unreachable)
from ..ir.values import Argument, ConstantInt, ConstantNull, Poison, Undef, Value
from . import mpi
from .cache import CacheLayout
from .dispatch import Dispatched
from .sort import rev_qsort
from .emit import Lazy, acc_zero, zero
from .errors import NoDerivativeError
from . import openmp
from .libc import copy_adjoint, memset0
from .rules import ATOMICS, BINARY, UNARY, contribution, libm_rule, reduction_rule
from .reverse_common import (_PURE, _defined, _effect_kind, _is_const, _mem_intrinsic,
                             _mutable_data_global)


class AdjointSweep:
    """Builds ``self.rev``: the adjoint visitor and control-flow replay."""

    def _build_rev(self):
        R, e = self.rev, self.e
        prim, shad, i = self._arg_maps(R)
        self.prim_rev, self.sh_rev_args = prim, shad
        self.dret = R.args[i] if self.ret_active else None
        self.tape_rev = R.args[-1]
        self.rentry = R.append_basic_block("entry")
        self.rpop, self.rhead, self.rbody = {}, {}, {}
        for b in self.cfg.rpo:
            nm = b.name or "bb"
            self.rpop[b] = R.append_basic_block(f"rev.{nm}")
            self.rhead[b] = R.append_basic_block(f"rev.{nm}.head")
            self.rbody[b] = R.append_basic_block(f"rev.{nm}.body")
        self.rret = R.append_basic_block("rev.return")
        self.slots = {}
        self.memo = {}
        self.dphi = {}
        self.cache_insts = {}   # cache load/store -> its level (see _tag_cache_accesses)
        self.replays = {}       # undone store -> (slot, address slot, type)
        self._rev_cache_setup()
        for b in reversed(self.cfg.rpo):
            e.position_at_end(self.rbody[b])
            self.cur = b
            for inst in reversed(b.instructions):
                self._rev_inst(inst, b)
            self._rev_terminator(b)
        e.position_at_end(self.rret)
        outs = []
        for a in self.out_args:
            if a not in self.act.active:
                outs.append(zero(a.type))
                continue
            d = e.load(a.type, self._slot(a))
            if a.type.is_fp_or_fp_vector:
                d = e.fadd(d, zero(a.type))  # an adjoint nobody added to is -0.0: report +0.0
            outs.append(d)
        agg = Undef(self.out_type)
        for k, v in enumerate(outs):
            agg = e.insertvalue(agg, v, [k])
        e.ret(agg)
        self._rev_replay()

    # adjoint slots
    def _slot(self, v):
        s = self.slots.get(v)
        if s is None:
            s = Alloca(v.type)
            self.rentry.insert(0, s)
            st = Store(acc_zero(v.type), s)
            self.rentry.append(st)
            self.slots[v] = s
        return s

    def _take(self, v):
        e = self.e
        s = self._slot(v)
        t = e.load(v.type, s)
        e.store(acc_zero(v.type), s)
        return t

    def _add(self, v, x):
        if v not in self.act.active or x is None:
            return
        e = self.e
        s = self._slot(v)
        t = e.load(v.type, s)
        e.store(e.fadd(t, x), s)

    # values in the reverse sweep
    def _rev_cache_setup(self):
        dl = self.ctx.module.datalayout
        self.cache = CacheLayout(dl)
        self.placeholders = []    # (load in the reverse function, Slot)
        self.enter_points = []    # (loop, edge block): the reverse sweep enters the loop
        self.leave_points = []    # (loop, edge block): ... and leaves it (free its buffer)
        self.rc, self.rbuf = {}, {}
        for lp in self.loops.loops:
            self.rc[lp] = Alloca(T.i64)
            self.rentry.insert(0, self.rc[lp])
            self.rbuf[lp] = Alloca(T.ptr)
            self.rentry.insert(0, self.rbuf[lp])
        e = self.e
        for inst in self.stack_shadow_src:
            a = Alloca(inst.allocated_type, inst.count.clone() if inst.count is not None
                       else None, align=max(inst.align or 1, 16))
            self.rentry.insert(0, a)
            n = dl.size_in_bytes(inst.allocated_type) * (inst.count.value
                                                         if inst.count is not None else 1)
            e.position_at_end(self.rentry)
            memset = e.declare("llvm.memset.p0.i64", T.void, [T.ptr, T.i8, T.i64, T.i1])
            e.call(memset, [a, ConstantInt(T.i8, 0), ConstantInt(T.i64, n),
                            ConstantInt(T.i1, 0)])
            self.stack_shadow[inst] = a

    def _level(self, def_block, use_block):
        """The innermost loop containing both blocks (None: the frame)."""
        lp = self.loops.loop_of(def_block)
        while lp is not None and use_block not in lp.blocks:
            lp = lp.parent
        return lp

    def _cached(self, key, aug_value, ty, def_block, b, here=False):
        """A load, in the reverse of block ``b``, of a value the forward sweep stores
        when it computes it (``aug_value``, in ``def_block``).  The address is filled
        in by ``_finalize``; ``here``: at the emitter's position instead of the top of
        ``b``'s reverse."""
        level = self._level(def_block, b)
        mk = ("c", key, b)
        if not here:
            v = self.memo.get(mk)
            if v is not None:
                return v
        slot = self.cache.slot(key, level, ty, aug_value)
        ld = Load(ty, ConstantNull(T.ptr), align=8)
        self.cache_insts[ld] = slot.level
        if here:
            self.e.insert(ld)
        else:
            self.rpop[b].append(ld)
            self.memo[mk] = ld
        self.placeholders.append((ld, slot))
        return ld

    def _rc(self, lp, b):
        """The reverse sweep's iteration number of loop ``lp`` in the reverse of ``b``."""
        k = ("rc", lp, b)
        v = self.memo.get(k)
        if v is None:
            v = self.memo[k] = Load(T.i64, self.rc[lp])
            self.rpop[b].append(v)
        return v

    def _induction(self, phi, b, base):
        """``start + k * step`` for an induction phi of a loop containing ``b`` (k: the
        iteration number), with ``base(start)`` mapping the start value (primal or
        shadow); None when ``phi`` is not one."""
        lp = self.loops.loop_of(phi.parent)
        if lp is None or lp.header is not phi.parent or b not in lp.blocks \
                or len(lp.latches) != 1 or lp.preheader is None or len(phi.incoming) != 2:
            return None
        start = phi.incoming_for(lp.preheader)
        nxt = phi.incoming_for(lp.latches[0])
        if start is None or nxt is None:
            return None

        def invariant(v):
            return not (v.is_instruction and v.parent in lp.blocks)

        if isinstance(nxt, BinaryOp) and nxt.opcode == "add" and nxt.operand(0) is phi \
                and phi.type.is_int and invariant(nxt.operand(1)):
            step = nxt.operand(1)
            kind = "int"
        elif isinstance(nxt, GEP) and nxt.operand(0) is phi and len(nxt.indices) == 1 \
                and invariant(nxt.indices[0]) and not phi.type.is_vector:
            step = nxt.indices[0]
            kind = "gep"
        else:
            return None
        k = self._rc(lp, b)
        blk = self.rhead[b]
        ity = step.type
        if ity.width < 64:
            k = blk.append(Cast("trunc", k, ity))
        elif ity.width > 64:
            k = blk.append(Cast("zext", k, ity))
        off = blk.append(BinaryOp("mul", k, self.primal(step, b)))
        s0 = base(start)
        if kind == "int":
            return blk.append(BinaryOp("add", s0, off))
        return blk.append(GEP(nxt.source_type, s0, [off]))

    def _cache_leaves(self, v, b, out, depth=0):
        """The values recomputing ``v`` in the reverse of ``b`` would read from the cache
        (stops counting at 2)."""
        if len(out) > 1 or _is_const(v) or v.is_global or isinstance(v, Argument) \
                or ("p", v, b) in self.memo and not isinstance(self.memo[("p", v, b)], Load):
            return out
        if isinstance(v, _PURE) and depth < 8:
            for op in v.operands:
                self._cache_leaves(op, b, out, depth + 1)
            return out
        if isinstance(v, Phi) and self._is_induction(v, b):
            return out
        if isinstance(v, Load) and self.ow.can_recompute(v):
            return self._cache_leaves(v.operand(0), b, out, depth + 1)
        out.add(v)
        return out

    def _is_induction(self, phi, b):
        lp = self.loops.loop_of(phi.parent)
        if lp is None or lp.header is not phi.parent or b not in lp.blocks \
                or len(lp.latches) != 1 or lp.preheader is None or len(phi.incoming) != 2:
            return False
        nxt = phi.incoming_for(lp.latches[0])
        return isinstance(nxt, (BinaryOp, GEP)) and nxt.num_operands > 1 \
            and nxt.operand(0) is phi

    def primal(self, v, b):
        if _is_const(v):
            return v.clone()
        if v.is_global:
            return v
        if isinstance(v, Argument):
            return self.prim_rev[v]
        key = ("p", v, b)
        got = self.memo.get(key)
        if got is not None:
            return got
        if isinstance(v, _PURE) and len(self._cache_leaves(v, b, set())) > 1:
            # recomputing would read several cached values: cache this one instead
            got = self._cached(("p", v), self.vmap[v], v.type, v.parent, b)
            self.memo[key] = got
            return got
        if isinstance(v, _PURE):
            c = v.clone({})
            c.metadata, c.name, c.dbg_records = [], None, []
            for u in c.operand_uses:
                # poison lanes become zeros: the adjoint of a lane nobody uses is 0, and
                # 0 * poison would be poison
                c.set_operand(u.index, _defined(self.primal(u.value, b)))
            self.rhead[b].append(c)
            self.memo[key] = c
            return c
        if isinstance(v, Phi):
            got = self._induction(v, b, lambda s: self.primal(s, b))
            if got is not None:
                self.memo[key] = got
                return got
        if isinstance(v, Load) and self.ow.can_recompute(v):
            c = Load(v.type, self.primal(v.operand(0), b), align=v.align)
            self.rhead[b].append(c)
            self.memo[key] = c
            return c
        got = self._cached(("p", v), self.vmap[v], v.type, v.parent, b)
        self.memo[key] = got
        return got

    def shadow(self, p, b):
        if isinstance(p, Argument):
            s = self.sh_rev_args.get(p)
            if s is None:
                raise InternalError("argument without shadow")
            return s
        if isinstance(p, (ConstantNull, Undef, Poison)):
            return p.clone()
        sg = None if p.is_instruction else shadow_constant(p, self.ctx.shadow_globals)
        if sg is not None:
            return sg
        if p not in self.act.shadowed:
            if p.is_instruction or isinstance(p, Argument) or _mutable_data_global(p):
                # the primal pointer is never a shadow (see _sh_aug)
                raise InternalError("no shadow for a pointer without one",
                                    location=self.ctx.err_loc(p) if p.is_instruction
                                    else f"in function '{self.ctx.fname(self.P)}'")
            return self.primal(p, b)
        key = ("s", p, b)
        got = self.memo.get(key)
        if got is not None:
            return got
        if p in self.stack_shadow:
            return self.stack_shadow[p]
        if isinstance(p, Phi):
            got = self._induction(p, b, lambda s: self.shadow(s, b))
            if got is not None:
                self.memo[key] = got
                return got
        if isinstance(p, (GEP, Cast)):
            c = p.clone({})
            c.metadata, c.name, c.dbg_records = [], None, []
            c.set_operand(0, self.shadow(p.operand(0), b))
            for u in c.operand_uses[1:]:
                c.set_operand(u.index, self.primal(u.value, b))
            self.rhead[b].append(c)
            self.memo[key] = c
            return c
        got = self._cached(("s", p), self.sh_aug[p], T.ptr, p.parent, b)
        self.memo[key] = got
        return got

    def _rev_restore(self, inst, b):
        """Undo the store ``inst`` (``Overwrite.restores``): what it left goes to a slot
        that ``_rev_replay`` writes back when the reverse sweep is done."""
        e, ty = self.e, inst.operand(0).type
        pp = self.primal(inst.operand(1), b)
        old = self._cached(("old", inst), self.restore_old[inst], ty, b, b)
        fin, addr = Alloca(ty), Alloca(T.ptr)
        self.rentry.insert(0, fin)
        self.rentry.insert(0, addr)
        self.rentry.append(Store(fin, addr))   # not executed: write back to the slot itself
        e.store(e.load(ty, pp, inst.align), fin)
        e.store(pp, addr)
        e.store(old, pp, inst.align)
        self.replays[inst] = (fin, addr, ty)

    def _rev_replay(self):
        """Write back, in forward order, what each undone store had left."""
        e = self.e
        for b in self.cfg.rpo:
            for inst in b.instructions:
                if inst in self.replays:
                    fin, addr, ty = self.replays[inst]
                    e.position_before(self.rret.terminator)
                    e.store(e.load(ty, fin), e.load(T.ptr, addr), inst.align)

    def _lazy_ops(self, inst, b):
        return [Lazy((lambda v=v: self.primal(v, b)), v.type) for v in inst.operands]

    def _rev_inst(self, inst, b):
        act, e = self.act, self.e
        active = inst in act.active
        if isinstance(inst, Phi):
            if active:
                self.dphi[inst] = self._take(inst)
            return
        if isinstance(inst, Ret):
            v = inst.value
            if self.ret_active and v is not None and v in act.active:
                self._add(v, self.dret)
            return
        if isinstance(inst, (Br, Switch, Unreachable)):
            return
        if isinstance(inst, Store):
            v, p = inst.operand(0), inst.operand(1)
            if p in act.shadowed and floatish(v.type):
                sp = self.shadow(p, b)
                t = e.load(v.type, sp, inst.align)
                e.store(zero(v.type), sp, inst.align)
                if v in act.active:
                    self._add(v, t)
            if inst in self.ow.restores:
                self._rev_restore(inst, b)
            return
        if isinstance(inst, Load):
            if active:
                d = self._take(inst)
                sp = self.shadow(inst.operand(0), b)
                if self.parallel and not openmp.is_private(inst.operand(0)):
                    openmp.accumulate(e, sp, d, inst.align)   # other threads add there too
                    return
                t = e.load(inst.type, sp, inst.align)
                e.store(e.fadd(t, d), sp, inst.align)
            return
        if isinstance(inst, Alloca):
            if inst in act.shadowed and inst not in self.stack_shadow:
                e.call(self._rt("__enzyme_py_shadow_free"), [self.shadow(inst, b)])
            return
        if isinstance(inst, Call):
            self._rev_call(inst, b)
            return
        if isinstance(inst, AtomicRMW):
            self._rev_atomic(inst, b, active)
            return
        if not active:
            return
        d = self._take(inst)
        ops = inst.operands
        if isinstance(inst, BinaryOp):
            rule = BINARY.get(inst.opcode)
            if rule is None:
                raise NoDerivativeError(f"no derivative rule for '{inst.opcode}'",
                                        location=self.ctx.err_loc(inst))
            x = self._lazy_ops(inst, b)
            r = Lazy(lambda: self.primal(inst, b), inst.type)
            for k, op in enumerate(ops):
                if op in act.active:
                    self._add(op, contribution(rule[k], e, x, r, d, self.ctx.strong_zero))
        elif isinstance(inst, UnaryOp):
            rule = UNARY[inst.opcode]
            self._add(ops[0], rule[0](e, self._lazy_ops(inst, b), None, d))
        elif isinstance(inst, Cast):
            src = ops[0]
            if src in act.active:
                if inst.opcode in ("fpext", "fptrunc"):
                    back = "fptrunc" if inst.opcode == "fpext" else "fpext"
                    self._add(src, e.cast(back, d, src.type))
                elif inst.opcode == "bitcast" and floatish(src.type):
                    self._add(src, e.cast("bitcast", d, src.type))
                else:
                    raise NoDerivativeError(f"no derivative rule for cast '{inst.opcode}' of an "
                                            "active value", location=self.ctx.err_loc(inst))
        elif isinstance(inst, Select):
            c = self.primal(ops[0], b)
            z = zero(inst.type)
            if ops[1] in act.active:
                self._add(ops[1], e.select(c, d, z))
            if ops[2] in act.active:
                self._add(ops[2], e.select(c, zero(inst.type), d))
        elif isinstance(inst, ExtractValue):
            self._add(ops[0], e.insertvalue(zero(ops[0].type), d, inst.indices))
        elif isinstance(inst, InsertValue):
            if ops[1] in act.active:
                self._add(ops[1], e.extractvalue(d, inst.indices))
            if ops[0] in act.active:
                self._add(ops[0], e.insertvalue(d, zero(ops[1].type), inst.indices))
        elif isinstance(inst, ExtractElement):
            self._add(ops[0], e.insertelement(zero(ops[0].type), d, self.primal(ops[1], b)))
        elif isinstance(inst, InsertElement):
            idx = self.primal(ops[2], b)
            if ops[1] in act.active:
                self._add(ops[1], e.extractelement(d, idx))
            if ops[0] in act.active:
                self._add(ops[0], e.insertelement(d, zero(ops[1].type), idx))
        elif isinstance(inst, ShuffleVector):
            self._rev_shuffle(inst, d)
        elif isinstance(inst, Freeze):
            self._add(ops[0], d)
        else:
            raise NoDerivativeError(f"no derivative rule for '{inst.opcode}'",
                                    location=self.ctx.err_loc(inst))

    def _rev_atomic(self, inst, b, active):
        """``old = atomicrmw op p, v`` is ``old = *p; *p = *p op v`` (rules.ATOMICS):
        reverse the store (v's adjoint from p's shadow, which an exchange zeroes), then
        the load (old's adjoint into p's shadow, atomically: other threads may add to
        the same shadow in their reverse sweeps)."""
        act, e = self.act, self.e
        p, v = inst.operands
        if p not in act.shadowed or not floatish(v.type):
            return
        adj_v, replaces = ATOMICS[inst.operation]
        sp = self.shadow(p, b)
        d_old = self._take(inst) if active else zero(v.type)
        if replaces:
            t = e.insert(AtomicRMW("xchg", sp, d_old, "monotonic", align=inst.align))
        else:
            t = e.load(v.type, sp, inst.align)
            if active:
                e.insert(AtomicRMW("fadd", sp, d_old, "monotonic", align=inst.align))
        if v in act.active:
            self._add(v, adj_v(e, t))

    def _rev_shuffle(self, inst, d):
        from ..ir.values import ConstantAggregate, ZeroInit
        e = self.e
        a, bvec, mask = inst.operands
        n = a.type.count
        if isinstance(mask, ZeroInit):
            lanes = [0] * inst.type.count
        elif isinstance(mask, ConstantAggregate):
            lanes = [getattr(m, "value", None) for m in mask.operands]
        else:
            raise NoDerivativeError("shufflevector with an unusual mask",
                                    location=self.ctx.err_loc(inst))
        acc = {0: zero(a.type), 1: zero(a.type)}
        for j, m in enumerate(lanes):
            if m is None:
                continue
            src = 0 if m < n else 1
            x = e.extractelement(d, ConstantInt(T.i32, j))
            cur = e.extractelement(acc[src], ConstantInt(T.i32, m % n))
            acc[src] = e.insertelement(acc[src], e.fadd(cur, x), ConstantInt(T.i32, m % n))
        if a in self.act.active:
            self._add(a, acc[0])
        if bvec in self.act.active:
            self._add(bvec, acc[1])

    def _rev_call(self, inst, b):
        act, e = self.act, self.e
        name = inst.callee_name or ""
        args = inst.args
        ekind = _effect_kind(name)
        if ekind in ("nomem", "mirror") or openmp.rev_call(self, inst, b):
            return
        if ekind == "mpi" and not mpi.user_rule(self, inst):
            mpi.rev_call(self, inst, b)
            return
        if self.ctx.hooks is not None and self.ctx.hooks.rev_call(self, inst, b):
            return
        if inst in getattr(self, "sorted", {}):
            rev_qsort(self, inst, b)
            return
        if ekind == "alloc":
            if inst in getattr(self, "out_shadows", {}):      # posix_memalign
                sh = self._cached(("out", inst), self.out_shadows[inst], T.ptr, inst.parent, b)
                e.call(self._rt("__enzyme_py_shadow_free"), [sh])
            elif inst in act.shadowed:
                sh = self.shadow(inst, b)
                if name == "realloc" and args[0] in act.shadowed:
                    # the block's first min(old, new) bytes moved: their adjoints move back
                    # (whatever they hold: the old shadow is not used after the realloc,
                    # and the forward sweep copied it into the new one)
                    old = self.shadow(args[0], b)
                    osz = e.call(self._rt("__enzyme_py_shadow_size"), [old])
                    n = self.primal(args[1], b)
                    n = n if n.type == T.i64 else e.cast("zext", n, T.i64)
                    m = e.select(e.icmp("ult", osz, n), osz, n)
                    memcpy = e.declare("llvm.memcpy.p0.p0.i64", T.void,
                                       [T.ptr, T.ptr, T.i64, T.i1])
                    e.call(memcpy, [old, sh, m, ConstantInt(T.i1, 0)])
                e.call(self._rt("__enzyme_py_shadow_free"), [sh])
            return
        if ekind in ("free", "typehint"):
            return
        if inst in getattr(self, "write_sizes", {}):
            # the call overwrote these bytes with data that carries no derivative
            for k, n in getattr(self, "write_sizes", {}).get(inst, ()):
                if n.is_instruction:
                    n = self._cached(("wr", inst, k), n, T.i64, inst.parent, b)
                memset0(e, self.shadow(args[k], b), n.clone() if _is_const(n) else n)
        mem = _mem_intrinsic(name)
        if mem is not None:
            kind = getattr(self, "mem_kind", {}).get(inst)
            if args[0] not in act.shadowed or kind in (None, "int", "ptr"):
                return
            n = self.primal(args[2], b)
            if n.type != T.i64:
                n = e.cast("zext", n, T.i64)
            if mem == "memset":
                memset = e.declare("llvm.memset.p0.i64", T.void, [T.ptr, T.i8, T.i64, T.i1])
                e.call(memset, [self.shadow(args[0], b), ConstantInt(T.i8, 0), n,
                                ConstantInt(T.i1, 0)])
            elif args[1] not in act.shadowed:
                # Copied from memory without a shadow (constant data): the
                # destination's adjoint goes nowhere, it is only consumed (of a struct
                # with pointers: only the floats' bytes)
                memset = e.declare("llvm.memset.p0.i64", T.void, [T.ptr, T.i8, T.i64, T.i1])
                runs = self.mem_fields[inst] if kind == "mixed" else [(0, None, n)]
                for off, _k, size in runs:
                    e.call(memset, [e.gep_bytes(self.shadow(args[0], b), off), ConstantInt(T.i8, 0),
                                    size if isinstance(size, Value) else
                                    ConstantInt(T.i64, size), ConstantInt(T.i1, 0)])
            elif kind in ("fields", "mixed"):
                # a struct copy mixing double and float fields (and pointers, whose
                # shadows the forward sweep copied): field runs by layout
                ds, ss = self.shadow(args[0], b), self.shadow(args[1], b)
                for off, k, size in self.mem_fields[inst]:
                    copy_adjoint(e, self.ctx.module, T.double if k == "double" else T.float,
                                 e.gep_bytes(ds, off), e.gep_bytes(ss, off),
                                 ConstantInt(T.i64, size), overlap=False)
            else:
                ty = T.double if kind == "double" else T.float
                copy_adjoint(e, self.ctx.module, ty, self.shadow(args[0], b),
                             self.shadow(args[1], b), n, overlap=mem == "memmove")
            return
        g = self.replaced_calls.get(inst)
        if g is not None:
            call_args = []
            for a, k in zip(args, g.kinds):
                call_args.append(self.primal(a, b))
                if k == "dup":
                    call_args.append(self.shadow(a, b))
            if g.ret_active:
                call_args.append(self._take(inst))
            call_args.append(self.tape_rev)
            res = g.call_rev(self, b, call_args) if isinstance(g, Dispatched) \
                else e.call(g.rev, call_args)
            for j, a in enumerate(g.out_args):
                actual = args[a.index]
                if actual in act.active:
                    self._add(actual, e.extractvalue(res, [j]))
            return
        if inst not in act.active:
            return
        found = libm_rule(name) or reduction_rule(name)
        if found is None:
            return  # inactive known call (printf...) checked in the forward sweep
        base, rule = found
        d = self._take(inst)
        x = self._lazy_ops(inst, b)
        r = Lazy(lambda: self.primal(inst, b), inst.type)
        if base in ("sin", "cos") and args and args[0] in act.active:
            # d sin(x) = cos(x) dx: the primal's own cos(x) of the same operand and
            # type in this block (sin and cos of one angle go together: rotations)
            # instead of a second libm call in the reverse sweep
            other = "cos" if base == "sin" else "sin"
            for sib in b.instructions:
                if isinstance(sib, Call) and sib is not inst and sib.type == inst.type \
                        and sib.args and sib.args[0] is args[0] \
                        and (libm_rule(sib.callee_name or "") or (None,))[0] == other:
                    t = e.fmul(d, self.primal(sib, b))
                    self._add(args[0], t if base == "sin" else e.fneg(t))
                    return
        for k, a in enumerate(args):
            if a in act.active and k < len(rule) and rule[k] is not None:
                self._add(a, contribution(rule[k], e, x, r, d, self.ctx.strong_zero))

    def _rev_terminator(self, b):
        e = self.e
        preds = self.cfg.preds[b]
        if not preds:
            e.br(self.rret)
            return
        phis = [p for p in b.phis if p in self.dphi]
        lp_h = self.loops.loop_of(b)
        if lp_h is not None and lp_h.header is not b:
            lp_h = None

        def edge(blk, p):
            e.position_at_end(blk)
            for phi in phis:
                v = phi.incoming_for(p)
                if v is not None:
                    self._add(v, self.dphi[phi])
            if lp_h is not None:
                if p in lp_h.blocks:     # back edge: the previous iteration
                    k = e.load(T.i64, self.rc[lp_h])
                    e.store(e.binop("sub", k, ConstantInt(T.i64, 1)), self.rc[lp_h])
                else:                    # preheader edge: the loop is done
                    self.leave_points.append((lp_h, blk))
            # loops the forward edge p -> b leaves: the reverse sweep enters them at
            # their last iteration (outermost first)
            entered = []
            lp = self.loops.loop_of(p)
            while lp is not None and b not in lp.blocks:
                entered.append(lp)
                lp = lp.parent
            for lp in reversed(entered):
                last = self._cached(("iv", lp), self.aiv[lp], T.i64, lp.header, b, here=True)
                e.store(last, self.rc[lp])
                self.enter_points.append((lp, blk))
            e.br(self.rpop[p])

        if len(preds) == 1:
            edge(self.rbody[b], preds[0])
            return
        blocks = [self.rev.append_basic_block(f"rev.{b.name or 'bb'}.from{k}")
                  for k in range(len(preds))]
        outside = [k for k, p in enumerate(preds) if lp_h is None or p not in lp_h.blocks]
        e.position_at_end(self.rbody[b])
        if lp_h is not None and len(preds) == 2 and len(outside) == 1:
            # a loop header: iteration 0 came from the preheader, the others from the latch
            k = e.load(T.i64, self.rc[lp_h])
            first = e.icmp("eq", k, ConstantInt(T.i64, 0))
            e.cbranch(first, blocks[outside[0]], blocks[1 - outside[0]])
        else:
            idx = self._cached(("pred", b), self.pred_phi[b], T.i64, b, b)
            e.switch(idx, blocks[0], [(ConstantInt(T.i64, k), blocks[k])
                                      for k in range(1, len(preds))])
        for k, p in enumerate(preds):
            edge(blocks[k], p)

