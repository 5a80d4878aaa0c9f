"""Reverse mode, the reverse sweep: the adjoint visitor.  ``diffe_P`` visits P's
blocks in reverse; per instruction it asks the value context (``ReverseGen`` in
``reverse.py``) for the primal values it needs (recomputed or read back from the cache)
and for shadows, accumulates adjoints by the rule registry (``rules.py``, ``kinds.py``,
the call effects of ``analysis/effects.py``), reverses calls, and replays the control
flow."""

from __future__ import annotations

from ..analysis.activity import floatish
from ..ir import types as T
from ..ir.instructions import (Alloca, AtomicRMW, BinaryOp, Br, Call, Cast, ExtractElement,
                               ExtractValue, Freeze, GEP, InsertElement, InsertValue, Load, Phi,
                               Ret, Select, ShuffleVector, Store, Switch, UnaryOp)
from ..ir.values import ConstantAggregate, ConstantInt, Poison, Undef, Value
from . import mpi
from .dispatch import Dispatched
from .sort import rev_qsort
from .emit import Lazy, zero
from .errors import NoDerivativeError
from . import openmp
from .kinds import visitor as _visitor
from .libc import copy_adjoint, memset0, strided_copy_adjoint, unless_own_shadow
from .rules import (ATOMICS, BINARY, UNARY, contribution, libm_rule, reduction_rule,
                    struct_math_rule)
from .reverse_common import (_effect_kind, _is_const, _mem_intrinsic)


def select_arms_only(blocks) -> set:
    """The instructions of ``blocks`` whose value is used only as a chosen operand of
    selects (not their condition), directly or through other such instructions: values
    a select may discard (the largest such set)."""
    insts = [i for b in blocks for i in b.instructions if i.uses]
    spec = set(insts)
    changed = True
    while changed:
        changed = False
        for i in insts:
            if i in spec and not all(
                    isinstance(u.user, Select) and u.index in (1, 2) or u.user in spec
                    or u.user.is_debug_use for u in i.uses):
                spec.discard(i)
                changed = True
    return spec


def branch_speculated(cfg) -> set:
    """The instructions whose every use is on a path their own block may not take: the
    user's block (for a phi, the incoming edge's block) does not post-dominate theirs
    -- LLVM hoisted them out of a guard (``if (lambda <= 0) return ...; k * log(lambda)``
    becomes ``llvm.log`` in the loop's preheader, computed at ``lambda = 0`` too) -- or
    every user is such an instruction.  Where the guarded path is not taken their
    adjoint is zero, which ``log``'s rule would turn into 0 * inf = NaN (round BX)."""
    from ..analysis.cfg import post_dominators
    from ..ir.instructions import Phi
    pdom = post_dominators(cfg)
    insts = [i for b in cfg.rpo for i in b.instructions if i.uses and not i.type.is_void]
    spec = set()
    for i in insts:
        home = i.parent
        blocks = []
        for u in i.uses:
            user = u.user
            if user.is_debug_use:
                continue
            if isinstance(user, Phi):
                blocks.append(user.operand(u.index + 1))    # (value, block) pairs
            else:
                blocks.append(user.parent)
        if blocks and all(ub is not home and not pdom.dominates(ub, home) for ub in blocks):
            spec.add(i)
    changed = True
    while changed:
        changed = False
        for i in insts:
            if i not in spec and all(u.user in spec or u.user.is_debug_use for u in i.uses):
                spec.add(i)
                changed = True
    return spec


def _poison_lanes(v) -> bool:
    """Whether the constant ``v`` is a vector with a poison or undef lane."""
    if isinstance(v, (Poison, Undef)):
        return v.type.is_vector
    return isinstance(v, ConstantAggregate) and v.type.is_vector \
        and any(isinstance(x, (Poison, Undef)) for x in v.operands)


def poison_lane_users(blocks) -> set:
    """The vector instructions of ``blocks`` whose operands may have poison lanes --
    constants with poison or undef lanes (LLVM's SLP and Eigen's partial packets leave
    them: ``fdiv <1.0, poison>, %x``), shuffles with undefined mask lanes, and what is
    computed from them.  The primal never reads those lanes, but the reverse sweep's
    rules multiply each lane's adjoint by primal values: 0 x poison is poison, and
    lane-moving adjoints (a shuffle's) carry it into lanes that matter; LLVM then
    folds the gradient to anything (d/dp 0 instead of -0.11 in Eigen's 4x4 inverse at
    -O2).  Their contributions take the strong-zero form: a zero lane of the adjoint
    contributes zero, whatever the primal lane holds."""
    may = set()
    insts = [i for b in blocks for i in b.instructions]
    changed = True
    while changed:
        changed = False
        for i in insts:
            if i in may or not i.type.is_vector:
                continue
            ops = i.operands[:2] if isinstance(i, ShuffleVector) else i.operands
            if any(o in may or _poison_lanes(o) for o in ops) or isinstance(i, ShuffleVector) \
                    and any(isinstance(x, (Poison, Undef)) for x in i.operand(2).operands):
                may.add(i)
                changed = True
    return {i for i in insts if i.type.is_fp_or_fp_vector and i.type.is_vector and (
        i in may or any(o in may or _poison_lanes(o) for o in i.operands))}


class AdjointSweep:
    """Fills ``gen.rev`` (``gen``: the ``ReverseGen`` value context, whose
    ``_open_reverse`` made its blocks): the adjoint visitor and control-flow replay."""

    def __init__(self, gen):
        self.gen = gen
        self.ctx, self.e, self.P, self.act, self.cfg, self.loops, self.ow = (
            gen.ctx, gen.e, gen.P, gen.act, gen.cfg, gen.loops, gen.ow)

    def build(self):
        """Visit the primal's blocks in reverse into the reverse function's blocks
        (``ReverseGen._open_reverse``), return the adjoints of ``out`` arguments, then
        write back what undone stores had left."""
        gen, e = self.gen, self.e
        self.dphi = {}
        self.speculated = select_arms_only(self.cfg.rpo) | poison_lane_users(self.cfg.rpo) \
            | branch_speculated(self.cfg)
        self.replays = {}       # undone store -> (slot, address slot, type)
        for b in reversed(self.cfg.rpo):
            e.position_at_end(gen.rbody[b])
            for inst in reversed(b.instructions):
                self._rev_inst(inst, b)
            self._rev_terminator(b)
        e.position_at_end(gen.rret)
        outs = []
        for a in gen.out_args:
            if a not in self.act.active:
                outs.append(zero(a.type))
                continue
            d = e.load(a.type, gen._slot(a))
            if a.type.is_fp_or_fp_vector:
                d = e.fadd(d, zero(a.type))  # an adjoint nobody added to is -0.0: report +0.0
            outs.append(d)
        agg = Undef(gen.out_type)
        for k, v in enumerate(outs):
            agg = e.insertvalue(agg, v, [k])
        e.ret(agg)
        self._rev_replay()

    def _rev_restore(self, inst, b):
        """Undo the store ``inst`` (``Overwrite.restores``): what it left goes to a slot
        that ``_rev_replay`` writes back when the reverse sweep is done."""
        gen = self.gen
        e, ty = self.e, inst.operand(0).type
        pp = gen.primal(inst.operand(1), b)
        old = gen._cached(("old", inst), gen.restore_old[inst], ty, b, b)
        fin, addr = Alloca(ty), Alloca(T.ptr)
        gen.rentry.insert(0, fin)
        gen.rentry.insert(0, addr)
        gen.rentry.append(Store(fin, addr))   # not executed: write back to the slot itself
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
                    e.position_before(self.gen.rret.terminator)
                    e.store(e.load(ty, fin), e.load(T.ptr, addr), inst.align)

    def _rev_inst(self, inst, b):
        """The adjoint of ``inst``, by the visitor its kind has in ``ADJOINT`` (the kinds
        ``kinds.INSTRUCTIONS`` gives a rule).  A kind without one emits nothing: it is
        inactive, or ``kinds.check`` already refused it where it touches derivatives."""
        visit = _visitor(ADJOINT, inst)
        if visit is not None:
            visit(self, inst, b)
        elif inst in self.act.active:
            raise NoDerivativeError(f"no derivative rule for '{inst.opcode}'",
                                    location=self.ctx.err_loc(inst))

    def _visit_phi(self, inst, b):
        if inst in self.act.active:
            self.dphi[inst] = self.gen._take(inst)

    def _visit_ret(self, inst, b):
        v = inst.value
        if self.gen.ret_active and v is not None and v in self.act.active:
            self.gen._add(v, self.gen.dret)

    def _visit_control(self, inst, b):
        """Branches: replayed by ``_rev_terminator`` when the block's reverse is done."""

    def _visit_store(self, inst, b):
        gen, e = self.gen, self.e
        v, p = inst.operand(0), inst.operand(1)
        if p in self.act.shadowed and floatish(v.type):
            sp = gen.shadow(p, b)
            if p in self.act.own_ptrs:
                sp, _ = gen.own_guard(p, sp, b)    # (reads zero there, stores zero)
            t = e.load(v.type, sp, inst.align)
            e.store(zero(v.type), sp, inst.align)
            if v in self.act.active:
                gen._add(v, t)
        elif inst in gen.float_copies:
            # an integer copy of a double (float): its adjoint moves back to the source
            load, ty = gen.float_copies[inst]
            sp, ss = gen.shadow(p, b), gen.shadow(load.operand(0), b)
            t = e.load(ty, sp, inst.align)
            e.store(zero(ty), sp, inst.align)
            e.store(e.fadd(e.load(ty, ss, load.align), t), ss, load.align)
        if inst in self.ow.restores:
            self._rev_restore(inst, b)

    def _visit_load(self, inst, b):
        gen, e = self.gen, self.e
        if inst not in self.act.active:
            return
        d = gen._take(inst)
        p = inst.operand(0)
        sp = gen.shadow(p, b)
        if p in self.act.own_ptrs:
            # the shadow may be the primal memory (Activity._own_merges): there, add
            # nothing -- the scratch slot keeps its zeros
            sp, own = gen.own_guard(p, sp, b)
            t = e.load(inst.type, sp, inst.align)
            e.store(e.select(own, zero(inst.type), e.fadd(t, d)), sp, inst.align)
            return
        if gen.parallel and not openmp.is_private(p):
            openmp.accumulate(e, sp, d, inst.align)   # other threads add there too
            return
        t = e.load(inst.type, sp, inst.align)
        e.store(e.fadd(t, d), sp, inst.align)

    def _visit_alloca(self, inst, b):
        gen = self.gen
        if inst in self.act.shadowed and inst not in gen.stack_shadow:
            self.e.call(gen._rt("__enzyme_py_shadow_free"), [gen.shadow(inst, b)])

    def _visit_call(self, inst, b):
        self._rev_call(inst, b)

    def _visit_atomic(self, inst, b):
        self._rev_atomic(inst, b, inst in self.act.active)

    def _visit_pointer(self, inst, b):
        """A GEP (or a pointer cast): no adjoint; its shadow is made where a shadow is
        needed (``ReverseGen.shadow``)."""

    def _strong_zero(self, inst):
        """Whether a zero adjoint of ``inst`` contributes exactly zero (``rules.contribution``):
        with ``-fenzyme-strong-zero``, and always for a value computed only for a select
        that may discard it -- LLVM flattens ``c ? 0 : a*b / (a+b)`` into a select that
        computes the division whatever ``c`` is, and where the select discards it (a = b
        = 0, a flux limiter at a flat state) its adjoint is 0, which the division's rule
        would turn into 0/0 = NaN -- or only for a path it may not take
        (``branch_speculated``)."""
        return self.ctx.strong_zero or inst in self.speculated

    # the value instructions: the adjoint ``d`` of an active result goes to the operands
    def _active(self, inst):
        """The adjoint of ``inst``'s result, taken from its slot; None when inactive."""
        return self.gen._take(inst) if inst in self.act.active else None

    def _visit_arith(self, inst, b):
        d = self._active(inst)
        if d is None:
            return
        gen, e = self.gen, self.e
        rule = (BINARY if isinstance(inst, BinaryOp) else UNARY).get(inst.opcode)
        if rule is None:
            raise NoDerivativeError(f"no derivative rule for '{inst.opcode}'",
                                    location=self.ctx.err_loc(inst))
        x = gen._lazy_ops(inst, b)
        if isinstance(inst, UnaryOp):
            gen._add(inst.operand(0), rule[0](e, x, None, d))
            return
        r = Lazy(lambda: gen.primal(inst, b), inst.type)
        for k, op in enumerate(inst.operands):
            if op in self.act.active:
                gen._add(op, contribution(rule[k], e, x, r, d, self._strong_zero(inst)))

    def _visit_cast(self, inst, b):
        d = self._active(inst)
        if d is None:
            return
        src = inst.operand(0)
        if src not in self.act.active:
            return
        if inst.opcode in ("fpext", "fptrunc"):
            back = "fptrunc" if inst.opcode == "fpext" else "fpext"
            self.gen._add(src, self.e.cast(back, d, src.type))
        elif inst.opcode == "bitcast" and floatish(src.type):
            self.gen._add(src, self.e.cast("bitcast", d, src.type))
        else:
            raise NoDerivativeError(f"no derivative rule for cast '{inst.opcode}' of an "
                                    "active value", location=self.ctx.err_loc(inst))

    def _visit_select(self, inst, b):
        d = self._active(inst)
        if d is None:
            return
        gen, e, ops = self.gen, self.e, inst.operands
        c = gen.primal(ops[0], b)
        z = zero(inst.type)
        if ops[1] in self.act.active:
            gen._add(ops[1], e.select(c, d, z))
        if ops[2] in self.act.active:
            gen._add(ops[2], e.select(c, zero(inst.type), d))

    def _visit_extractvalue(self, inst, b):
        d = self._active(inst)
        if d is not None:
            ops = inst.operands
            self.gen._add(ops[0], self.e.insertvalue(zero(ops[0].type), d, inst.indices))

    def _visit_insertvalue(self, inst, b):
        d = self._active(inst)
        if d is None:
            return
        gen, e, ops = self.gen, self.e, inst.operands
        if ops[1] in self.act.active:
            gen._add(ops[1], e.extractvalue(d, inst.indices))
        if ops[0] in self.act.active:
            gen._add(ops[0], e.insertvalue(d, zero(ops[1].type), inst.indices))

    def _visit_extractelement(self, inst, b):
        d = self._active(inst)
        if d is not None:
            gen, ops = self.gen, inst.operands
            gen._add(ops[0], self.e.insertelement(zero(ops[0].type), d, gen.primal(ops[1], b)))

    def _visit_insertelement(self, inst, b):
        d = self._active(inst)
        if d is None:
            return
        gen, e, ops = self.gen, self.e, inst.operands
        idx = gen.primal(ops[2], b)
        if ops[1] in self.act.active:
            gen._add(ops[1], e.extractelement(d, idx))
        if ops[0] in self.act.active:
            gen._add(ops[0], e.insertelement(d, zero(ops[1].type), idx))

    def _visit_shufflevector(self, inst, b):
        d = self._active(inst)
        if d is not None:
            self._rev_shuffle(inst, d)

    def _visit_freeze(self, inst, b):
        d = self._active(inst)
        if d is not None:
            self.gen._add(inst.operand(0), d)

    def _rev_atomic(self, inst, b, active):
        """``old = atomicrmw op p, v`` is ``old = *p; *p = *p op v`` (rules.ATOMICS):
        reverse the store (v's adjoint from p's shadow, which an exchange zeroes), then
        the load (old's adjoint into p's shadow, atomically: other threads may add to
        the same shadow in their reverse sweeps)."""
        gen = self.gen
        act, e = self.act, self.e
        p, v = inst.operands
        if p not in act.shadowed or not floatish(v.type):
            return
        adj_v, replaces = ATOMICS[inst.operation]
        sp = gen.shadow(p, b)
        d_old = gen._take(inst) if active else zero(v.type)
        if replaces:
            t = e.atomicrmw("xchg", sp, d_old, "monotonic", inst.align)
        else:
            t = e.load(v.type, sp, inst.align)
            if active:
                e.atomicrmw("fadd", sp, d_old, "monotonic", inst.align)
        if v in act.active:
            gen._add(v, adj_v(e, t))

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
            self.gen._add(a, acc[0])
        if bvec in self.act.active:
            self.gen._add(bvec, acc[1])

    def _rev_call(self, inst, b):
        gen = self.gen
        act, e = self.act, self.e
        name = inst.callee_name or ""
        args = inst.args
        ekind = _effect_kind(name)
        if ekind in ("nomem", "mirror") or openmp.rev_call(self.gen, inst, b):
            return
        if ekind == "mpi" and not mpi.user_rule(self.gen, inst):
            mpi.rev_call(self.gen, inst, b)
            return
        if self.ctx.hooks is not None and self.ctx.hooks.rev_call(self.gen, inst, b):
            return
        if inst in self.gen.sorted:
            rev_qsort(self.gen, inst, b)
            return
        if ekind == "alloc":
            if inst in self.gen.out_shadows:      # posix_memalign
                sh = gen._cached(("out", inst), gen.out_shadows[inst], T.ptr, inst.parent, b)
                e.call(gen._rt("__enzyme_py_shadow_free"), [sh])
            elif inst in act.shadowed:
                sh = gen.shadow(inst, b)
                if name == "realloc" and args[0] in act.shadowed:
                    # the block's first min(old, new) bytes moved: their adjoints move back
                    # (whatever they hold: the old shadow is not used after the realloc,
                    # and the forward sweep copied it into the new one)
                    old = gen.shadow(args[0], b)
                    if inst in gen.realloc_moved:   # (a plain block: its bytes copied)
                        m = gen._cached(("moved", inst), gen.realloc_moved[inst], T.i64,
                                        inst.parent, b)
                    else:
                        osz = e.call(gen._rt("__enzyme_py_shadow_size"), [old])
                        n = gen.primal(args[1], b)
                        n = n if n.type == T.i64 else e.cast("zext", n, T.i64)
                        m = e.select(e.icmp("ult", osz, n), osz, n)
                    memcpy = e.declare("llvm.memcpy.p0.p0.i64", T.void,
                                       [T.ptr, T.ptr, T.i64, T.i1])
                    e.call(memcpy, [old, sh, m, ConstantInt(T.i1, 0)])
                if inst in gen.maybe_freed_blocks:      # (freed if the program did)
                    e.call(gen._rt("__enzyme_py_escaping_release"), [sh])
                elif inst not in gen.escaping_blocks:   # (else the caller frees it)
                    e.call(gen._rt("__enzyme_py_shadow_free"), [sh])
            return
        if ekind in ("free", "typehint"):
            return
        if inst in self.gen.write_sizes:
            # the call overwrote these bytes with data that carries no derivative
            for k, n in self.gen.write_sizes.get(inst, ()):
                if n.is_instruction:
                    n = gen._cached(("wr", inst, k), n, T.i64, inst.parent, b)
                memset0(e, gen.shadow(args[k], b), n.clone() if _is_const(n) else n)
        mem = _mem_intrinsic(name)
        if mem is not None:
            kind = self.gen.mem_kind.get(inst)
            if args[0] not in act.shadowed or kind in (None, "int", "ptr"):
                return
            n = gen.primal(args[2], b)
            if n.type != T.i64:
                n = e.cast("zext", n, T.i64)
            if mem == "memset":
                memset = e.declare("llvm.memset.p0.i64", T.void, [T.ptr, T.i8, T.i64, T.i1])
                ds = gen.shadow(args[0], b)
                if inst in gen.mem_maybe_int:
                    n = unless_own_shadow(e, ds, gen.primal(args[0], b), n)
                e.call(memset, [ds, ConstantInt(T.i8, 0), n, ConstantInt(T.i1, 0)])
            elif args[1] not in act.shadowed:
                # Copied from memory without a shadow (constant data): the
                # destination's adjoint goes nowhere, it is only consumed (of a struct
                # with pointers: only the floats' bytes)
                memset = e.declare("llvm.memset.p0.i64", T.void, [T.ptr, T.i8, T.i64, T.i1])
                runs = gen.mem_fields[inst] if kind == "mixed" \
                    and inst not in gen.mem_strides else [(0, None, n)]
                ds = gen.shadow(args[0], b)
                p = gen.primal(args[0], b) if inst in gen.mem_maybe_int else None
                for off, _k, size in runs:
                    size = size if isinstance(size, Value) else ConstantInt(T.i64, size)
                    if p is not None:
                        size = unless_own_shadow(e, ds, p, size)
                    e.call(memset, [e.gep_bytes(ds, off), ConstantInt(T.i8, 0), size,
                                    ConstantInt(T.i1, 0)])
            elif kind in ("fields", "mixed"):
                # a struct copy mixing double and float fields (and pointers, whose
                # shadows the forward sweep copied): field runs by layout
                ds, ss = gen.shadow(args[0], b), gen.shadow(args[1], b)
                stride = gen.mem_strides.get(inst)
                for off, k, size in gen.mem_fields[inst]:
                    ty = T.double if k == "double" else T.float
                    if stride is not None:      # the same fields in each of n structs
                        strided_copy_adjoint(e, self.ctx.module, ty, ds, ss, n, stride, off,
                                             size, overlap=mem == "memmove")
                        continue
                    copy_adjoint(e, self.ctx.module, ty, e.gep_bytes(ds, off),
                                 e.gep_bytes(ss, off), ConstantInt(T.i64, size), overlap=False)
            else:
                ty = T.double if kind == "double" else T.float
                copy_adjoint(e, self.ctx.module, ty, gen.shadow(args[0], b),
                             gen.shadow(args[1], b), n, overlap=mem == "memmove")
            return
        g = gen.replaced_calls.get(inst)
        if g is not None:
            call_args = []
            for a, k in zip(args, g.kinds):
                call_args.append(gen.primal(a, b))
                if k == "dup":
                    call_args.append(gen.shadow(a, b))
            if g.ret_active:
                call_args.append(gen._take(inst))
            call_args.append(gen.tape_rev)
            res = g.call_rev(self.gen, b, call_args) if isinstance(g, Dispatched) \
                else e.call(g.rev, call_args)
            for j, a in enumerate(g.out_args):
                actual = args[a.index]
                if actual in act.active:
                    gen._add(actual, e.extractvalue(res, [j]))
            return
        if inst not in act.active:
            return
        two = struct_math_rule(name)
        if two is not None:     # modf/sincos/frexp: the adjoints of both results
            if args[0] in act.active:
                r = Lazy(lambda: gen.primal(inst, b), inst.type)
                gen._add(args[0], two[1][0](e, gen._lazy_ops(inst, b), r, gen._take(inst)))
            return
        found = libm_rule(name) or reduction_rule(name)
        if found is None:
            return  # inactive known call (printf...) checked in the forward sweep
        base, rule = found
        d = gen._take(inst)
        x = gen._lazy_ops(inst, b)
        r = Lazy(lambda: gen.primal(inst, b), inst.type)
        if base in ("sin", "cos") and args and args[0] in act.active:
            # d sin(x) = cos(x) dx: the primal's own cos(x) of the same operand and
            # type in this block (sin and cos of one angle go together: rotations)
            # instead of a second libm call in the reverse sweep
            other = "cos" if base == "sin" else "sin"
            for sib in b.instructions:
                if isinstance(sib, Call) and sib is not inst and sib.type == inst.type \
                        and sib.args and sib.args[0] is args[0] \
                        and (libm_rule(sib.callee_name or "") or (None,))[0] == other:
                    t = e.fmul(d, gen.primal(sib, b))
                    gen._add(args[0], t if base == "sin" else e.fneg(t))
                    return
        for k, a in enumerate(args):
            if a in act.active and k < len(rule) and rule[k] is not None:
                gen._add(a, contribution(rule[k], e, x, r, d, self._strong_zero(inst)))

    def _rev_terminator(self, b):
        gen = self.gen
        e = self.e
        preds = self.cfg.preds[b]
        if not preds:
            e.br(gen.rret)
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
                    gen._add(v, self.dphi[phi])
            if lp_h is not None:
                if p in lp_h.blocks:     # back edge: the previous iteration
                    k = e.load(T.i64, gen.rc[lp_h])
                    e.store(e.binop("sub", k, ConstantInt(T.i64, 1)), gen.rc[lp_h])
                else:                    # preheader edge: the loop is done
                    gen.leave_points.append((lp_h, blk))
            # loops the forward edge p -> b leaves: the reverse sweep enters them at
            # their last iteration (outermost first)
            entered = []
            lp = self.loops.loop_of(p)
            while lp is not None and b not in lp.blocks:
                entered.append(lp)
                lp = lp.parent
            for lp in reversed(entered):
                last = gen._cached(("iv", lp), gen.aiv[lp], T.i64, lp.header, b, here=True)
                e.store(last, gen.rc[lp])
                gen.enter_points.append((lp, blk))
            e.br(gen.rpop[p])

        if len(preds) == 1:
            edge(gen.rbody[b], preds[0])
            return
        blocks = [gen.rev.append_basic_block(f"rev.{b.name or 'bb'}.from{k}")
                  for k in range(len(preds))]
        outside = [k for k, p in enumerate(preds) if lp_h is None or p not in lp_h.blocks]
        e.position_at_end(gen.rbody[b])
        if lp_h is not None and len(preds) == 2 and len(outside) == 1:
            # a loop header: iteration 0 came from the preheader, the others from the latch
            k = e.load(T.i64, gen.rc[lp_h])
            first = e.icmp("eq", k, ConstantInt(T.i64, 0))
            e.cbranch(first, blocks[outside[0]], blocks[1 - outside[0]])
        else:
            idx = gen._cached(("pred", b), gen.pred_phi[b], T.i64, b, b)
            e.switch(idx, blocks[0], [(ConstantInt(T.i64, k), blocks[k])
                                      for k in range(1, len(preds))])
        for k, p in enumerate(preds):
            edge(blocks[k], p)


# The adjoint visitor of each instruction kind ``kinds.INSTRUCTIONS`` gives a rule
# (test_kinds checks that every such kind has one, here and in forward mode).
ADJOINT = {
    Phi: AdjointSweep._visit_phi,
    Ret: AdjointSweep._visit_ret,
    Br: AdjointSweep._visit_control,
    Switch: AdjointSweep._visit_control,
    Store: AdjointSweep._visit_store,
    Load: AdjointSweep._visit_load,
    Alloca: AdjointSweep._visit_alloca,
    Call: AdjointSweep._visit_call,
    AtomicRMW: AdjointSweep._visit_atomic,
    GEP: AdjointSweep._visit_pointer,
    BinaryOp: AdjointSweep._visit_arith,
    UnaryOp: AdjointSweep._visit_arith,
    Cast: AdjointSweep._visit_cast,
    Select: AdjointSweep._visit_select,
    ExtractValue: AdjointSweep._visit_extractvalue,
    InsertValue: AdjointSweep._visit_insertvalue,
    ExtractElement: AdjointSweep._visit_extractelement,
    InsertElement: AdjointSweep._visit_insertelement,
    ShuffleVector: AdjointSweep._visit_shufflevector,
    Freeze: AdjointSweep._visit_freeze,
}

