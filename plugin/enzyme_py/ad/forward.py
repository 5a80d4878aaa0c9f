"""Forward (tangent) mode, scalar and vector: for a function P, an activity
signature and a width N, emit

    fwddiffe_P(args..., with N tangents / shadows after each duplicated one)
        -> P's result                         (P returns an integer or nothing)
        -> {result, tangent_1 .. tangent_N}   (P returns a float or a pointer)

The body is P's, with each instruction followed by the N lanes of its tangent
(one scalar instruction per lane: the SLP vectorizer packs the lanes into SIMD
registers).  The tangent of each instruction and libm function comes from the
adjoint tables in :mod:`rules` (:func:`rules.tangent`): every adjoint there is
linear in the incoming adjoint, so the same expression maps tangents forward.
Pointers get shadows as in reverse mode: shadow GEPs, loads and phis; a shadow
``alloca`` (zeroed) per ``alloca`` and a zeroed shadow allocation per ``malloc``,
freed where the primal is freed.  No tape: the primal runs once.
"""

from __future__ import annotations

from ..analysis.globals import global_base, read_only_twin, shadow_constant
from ..analysis.activity import (Activity, address_source, floatish, has_pointer, pointer_aggregate,
                                 struct_return_origin, underlying_object)
from ..analysis.effects import call_effect, returns_text
from ..analysis.cfg import CFG
from ..ir import types as T
from ..ir.instructions import (Alloca, AtomicRMW, BinaryOp, Br, Call, Cast, ExtractElement,
                               ExtractValue, Freeze, GEP, InsertElement, InsertValue,
                               Invoke, Load, Phi, Ret, Select, ShuffleVector, Store, Switch,
                               UnaryOp)
from ..ir.module import Function, GlobalVariable
from ..ir.values import Argument, ConstantExpr, ConstantInt, ConstantNull, Poison, Undef, ZeroInit
from . import mpi, openmp
from .dispatch import forward_target, is_indirect
from .kinds import visitor as _visitor
from .sort import fwd_qsort
from .emit import (Emitter, copy_body, keep_byval, loaded_own_shadow, pointer_global_check,
                   shadow_address,
                   made_of_own_shadows, no_pointer_set_yet, passes_shadow, returns_own_shadows,
                   scratch_sink, sync_text_objects, zero)
from .augmented import (DECLARED_INT, carried_float, float_bytes_lost, merged_copy_of_floats,
                        mirrored_integer, null_arguments, null_at_every_call)
from .errors import (ADError, NoDerivativeError, external_call_error, indirect_call_error,
                     merged_copy_error, no_shadow_rule_error, struct_return_error,
                     unshadowed_atomic_error, unshadowed_store_error, check_copy_into_unshadowed,
                     check_const_pointers_copied,
                     check_pointer_escape)
from .kinds import check as check_kind, check_never
from .libc import fill_shadow, shadowed_writes, unless_own_shadow, written
from .rules import BINARY, UNARY, libm_rule, reduction_rule, struct_math_rule, tangent

__all__ = ["ForwardContext", "ForwardGen"]

# operands that carry data (the others are indices / masks / conditions)
_DATA_OPS = {ExtractValue: (0,), InsertValue: (0, 1), ExtractElement: (0,),
             InsertElement: (0, 1), ShuffleVector: (0, 1), Freeze: (0,)}


def _copied_into(v, shadowed, depth=4) -> bool:
    """Whether integer ``v`` is stored into memory with a shadow, directly or through
    selects (an integer-typed copy whose shadow bytes must be copied too) -- not into a
    field the source declares integer (``augmented.tag_declared_integers``: the primal
    integer goes there, as for any integer stored, and the source's shadow may be
    none: a key read through a ``std::tuple`` of references to constant data)."""
    for u in v.users:
        if isinstance(u, Store) and u.operand(0) is v and u.operand(1) in shadowed \
                and (u.get_metadata(DECLARED_INT) is None or carried_float(v, u)):
            return True
        if isinstance(u, Select) and u.operand(0) is not v and depth \
                and _copied_into(u, shadowed, depth - 1):
            return True
    return False


class ForwardContext:
    """Forward-mode functions, memoized per (function, activity, width); shares the
    reverse-mode context's names, attribute groups and the registry."""

    def __init__(self, rctx, registry):
        self.rctx, self.registry = rctx, registry
        self.module = rctx.module
        self.gens: dict = {}
        self.queue: list = []

    def get(self, fn, kinds, width=1, const_fields=frozenset(), own_args=frozenset()):
        """``const_fields``, ``own_args``: see ``reverse.Context.get``."""
        key = (fn, tuple(kinds), width, const_fields, own_args)
        g = self.gens.get(key)
        if g is None:
            g = self.gens[key] = ForwardGen(self, fn, list(kinds), width)
            g.const_fields = const_fields
            g.own_args = own_args
            self.queue.append(g)
        return g

    def run(self):
        while self.queue:
            self.queue.pop().generate()

    def err_loc(self, inst):
        return self.rctx.err_loc(inst)

    def fname(self, fn):
        return self.rctx.fname(fn)


class ForwardGen:
    def __init__(self, ctx: ForwardContext, primal, kinds, width):
        self.ctx, self.P, self.kinds, self.W = ctx, primal, kinds, width
        params = []
        for a, k in zip(primal.args, kinds):
            params.append(a.type)
            if k == "dup":
                params.extend([a.type] * width)
        rt = primal.return_type
        self.ret_pair = floatish(rt) or rt.is_pointer or pointer_aggregate(rt)
        fret = T.StructType([rt] * (1 + width)) if self.ret_pair else rt
        base = ctx.fname(primal)
        w = f"{width}" if width > 1 else ""
        self.fn = ctx.module.add_function(f"fwddiffe{w}_{base}",
                                          T.FunctionType(fret, params,
                                                         primal.function_type.varargs),
                                          linkage="internal",
                                          fn_attrs=ctx.rctx.attrs_for(primal))
        keep_byval(primal, self.fn, kinds, width)

    # ------------------------------------------------------------------ setup
    def generate(self):
        P, F, W = self.P, self.fn, self.W
        self.cfg = CFG(P)
        inactive = self.ctx.registry.inactive_fns
        self.act = Activity(P, self.kinds, inactive=inactive,
                            shadow_globals=self.ctx.rctx.shadow_globals,
                            const_fields=getattr(self, "const_fields", frozenset()),
                            own_args=getattr(self, "own_args", frozenset()),
                            entry=P in getattr(self.ctx.rctx, "entries", ()),
                            null_args=null_arguments(P, self.ctx.rctx))
        rstats = self.ctx.rctx.stats
        rstats["instructions"] += sum(len(b.instructions) for b in self.cfg.rpo)
        rstats["functions"] += 1
        rstats["dropped"] += len(self.act.pruned)
        rstats["locals"] += len(self.act.locals_without_shadow)
        self.e = Emitter(self.ctx.module)
        vmap, self.tan, self.sh = {}, {}, {}
        i = 0
        for a, k in zip(P.args, self.kinds):
            vmap[a] = F.args[i]
            i += 1
            if k == "dup":
                lanes = F.args[i:i + W]
                i += W
                (self.sh if a.type.is_pointer else self.tan)[a] = list(lanes)
        copy_body(P, F, vmap)
        self.vmap = vmap
        self.pending = []
        check_never(self.cfg.rpo, self.act, self.ctx.err_loc)
        for b in self.cfg.rpo:
            for inst in list(b.instructions):
                self._inst(inst, vmap[inst])
        for inst, lanes, shadow in self.pending:
            for v, blk in inst.incoming:
                vals = self.S(v, inst) if shadow else self.T(v)
                for phi, x in zip(lanes, vals):
                    phi.add_incoming(x, vmap[blk])

    # ------------------------------------------------------------ lookups
    def P_(self, v):
        return self.vmap.get(v, v)

    def T(self, v):
        """The W tangent lanes of a (float-typed) primal value; zeros if inactive."""
        got = self.tan.get(v)
        if got is not None:
            return got
        if v.type.is_pointer:
            return self.S(v, None)
        return [zero(v.type) for _ in range(self.W)]

    def S(self, v, where):
        """The W shadow lanes of a pointer."""
        got = self.sh.get(v)
        if got is not None:
            return got
        if isinstance(v, (ConstantNull, Undef, Poison, ZeroInit)):
            return [v.clone() for _ in range(self.W)]
        if not v.is_instruction and (isinstance(v, GlobalVariable) or isinstance(v, ConstantExpr)):
            zero_twin = read_only_twin(v, self.ctx.rctx.module, writable=False)
            if zero_twin is not None:
                return [zero_twin] * self.W
        sg = None if v.is_instruction else shadow_constant(v, self.ctx.rctx.shadow_globals)
        if sg is not None:
            # vector forward mode: lane k > 0 has a shadow global of its own
            g = global_base(v)
            return [sg] + [shadow_constant(v, {g: self._lane_global(g, k)})
                           for k in range(1, self.W)]
        if v not in self.act.shadowed:
            if where in self.act.own_merges and v in self.act.own_sources:
                return [self.P_(v)] * self.W    # its own "shadow": see Activity._own_merges
            if _own_tangentless(v):
                # no tangent can be read or written through it (a function, data without
                # floats, a vtable, an address made from an integer: MPI_IN_PLACE)
                return [v] * self.W
            if made_of_own_shadows(v, _own_tangentless) \
                    or returns_own_shadows(v, _own_tangentless) \
                    or loaded_own_shadow(v, _own_tangentless):
                return [self.P_(v)] * self.W   # vtables, functions, null + n, {NULL, r}
            if no_pointer_set_yet(v):
                # a struct of pointers being built (SROA's insertvalue chain from poison)
                # before any pointer field is set: the primal integers and poison
                # pointers are its shadow; the pointer fields get shadows as inserted
                return [self.P_(v)] * self.W
            from ..analysis.types import carries_no_derivative
            if carries_no_derivative(v):
                # points at integers only (a C++ key passed by reference) or at code: no
                # tangent is read or written through it, so the primal pointer serves as
                # its shadow
                return [self.P_(v)] * self.W
            origin = struct_return_origin(v)
            if origin is not None:   # (a struct a callee returns, pointers beside floats)
                raise struct_return_error(
                    origin, self.ctx.err_loc(where) if where is not None else None)
            # Never the primal pointer: tangents read through that "shadow" would be
            # the program's values, and tangents stored through it would overwrite them.
            raise ADError("a pointer without a shadow (constant data: a global, an "
                          "enzyme_const argument, or a pointer loaded from one) is mixed "
                          "with pointers that have shadows (stored into differentiated "
                          "memory, merged by a phi/select, passed or returned)",
                          location=self.ctx.err_loc(where) if where is not None else None,
                          hint="pass that memory with enzyme_dup and a shadow, or copy the "
                               "constant data into a local array first")
        if isinstance(v, Call) and v.called_function is not None and not v.type.is_pointer:
            raise struct_return_error(self.ctx.fname(v.called_function),
                                      self.ctx.err_loc(where) if where is not None else None)
        raise ADError("a pointer that may carry derivatives has no shadow",
                      location=self.ctx.err_loc(where) if where is not None else "?",
                      hint="pass the pointer with enzyme_dup and a shadow")

    def _next(self, A):
        blk = A.parent
        return blk.instructions[blk.index_of(A) + 1]

    # ------------------------------------------------------------ visitor
    def _inst(self, inst, A):
        """The tangent (or shadow) lanes of ``inst``, whose copy is ``A``, by the visitor
        its kind has in ``TANGENT`` (the kinds ``kinds.INSTRUCTIONS`` gives a rule); a
        kind without one is inactive, or ``kinds.check`` refused it already."""
        check_kind(inst, self.act, lambda: self.ctx.err_loc(inst))
        visit = _visitor(TANGENT, inst)
        if visit is not None:
            visit(self, inst, A)
        elif inst in self.act.shadowed:
            raise no_shadow_rule_error(inst, self.ctx.err_loc(inst))
        elif inst in self.act.active:
            raise NoDerivativeError(f"no derivative rule for '{inst.opcode}'",
                                    location=self.ctx.err_loc(inst))

    def _visit_none(self, inst, A):
        """Nothing to emit: branches (the copy branches as the primal does); an invoke
        ``kinds.check`` found not involved."""

    def _visit_ret(self, inst, A):
        if not self.ret_pair:
            return
        e = self.e
        e.position_before(A)
        v = inst.value
        agg = e.insertvalue(Undef(self.fn.return_type), A.value, [0])
        if pointer_aggregate(v.type):
            lanes = self.S(v, inst) if v in self.act.shadowed or v.is_constant \
                else [ZeroInit(v.type)] * self.W   # a result without shadows
        elif v.type.is_pointer and v not in self.act.shadowed \
                and (v.is_instruction or isinstance(v, Argument)):
            lanes = [ConstantNull(v.type)] * self.W    # callers see an unshadowed result
        else:
            lanes = self.S(v, inst) if v.type.is_pointer else self.T(v)
        for k, x in enumerate(lanes):
            agg = e.insertvalue(agg, x, [1 + k])
        A.set_operand(0, agg)

    def _visit_call(self, inst, A):
        self._call(inst, A)

    def _visit_phi(self, inst, A):
        act = self.act
        if inst in act.active or inst in act.shadowed:
            shadow = inst in act.shadowed
            lanes = []
            after = A
            for _ in range(self.W):
                p = Phi(inst.type)
                p.insert_after(after)
                after = p
                lanes.append(p)
            (self.sh if shadow else self.tan)[inst] = lanes
            self.pending.append((inst, lanes, shadow))

    def _visit_store(self, inst, A):
        self.e.position_before(self._next(A))
        self._store(inst, A)

    def _visit_atomic(self, inst, A):
        self.e.position_before(self._next(A))
        self._atomic(inst, A)

    def _visit_load(self, inst, A):
        act, e = self.act, self.e
        e.position_before(self._next(A))
        p = inst.operand(0)
        if p in act.shadowed:
            if inst in act.shadowed or inst in act.active:
                shadows = self.S(p, inst)
                if p in act.own_ptrs:   # tangents of zero where the shadow is the primal
                    shadows = [self._own_guard(p, s)[0] for s in shadows]
                lanes = [e.load(inst.type, s, inst.align) for s in shadows]
                # (lanes k > 0 read shadow globals of their own: vector mode keeps the
                # check that stops the program)
                check = pointer_global_check(self.ctx.module, inst,
                                             self.ctx.rctx.shadow_globals, plain=True,
                                             fill=self.W == 1)
                if check is not None:
                    lanes[0] = e.call(check, [lanes[0], A])
                (self.sh if inst in act.shadowed else self.tan)[inst] = lanes
            elif inst.type.is_int and _copied_into(inst, act.shadowed):
                # an integer-typed copy of memory that may hold floats: copy the shadow
                # (possibly chosen by a select, see _visit_select)
                self.tan[inst] = [e.load(inst.type, s, inst.align)
                                  for s in self.S(p, inst)]

    def _visit_alloca(self, inst, A):
        if inst in self.act.shadowed:
            self.e.position_before(self._next(A))
            self._alloca(inst, A)

    # value instructions: shadow lanes of a pointer result, tangent lanes of an active one
    def _lanes(self, inst, A, shadow=None, tangent=None):
        act = self.act
        if inst in act.shadowed:
            if shadow is None:
                raise no_shadow_rule_error(inst, self.ctx.err_loc(inst))
            self.e.position_before(self._next(A))
            self.sh[inst] = shadow(inst, A)
        elif inst in act.active:
            if tangent is None:
                raise NoDerivativeError(f"no derivative rule for '{inst.opcode}'",
                                        location=self.ctx.err_loc(inst))
            self.e.position_before(self._next(A))
            self.tan[inst] = tangent(inst, A)

    def _shadow_clone(self, inst, A):
        """A GEP or cast on each shadow of its pointer operand."""
        if isinstance(inst, Cast) and inst.opcode == "inttoptr":
            base = address_source(inst)
            return [shadow_address(self.e, inst, s, self.P_) for s in self.S(base, inst)]
        lanes = []
        for s in self.S(inst.operand(0), inst):
            c = A.clone({})
            c.metadata, c.name = [], None
            c.set_operand(0, s)
            lanes.append(self.e.insert(c))
        return lanes

    def _visit_gep(self, inst, A):
        self._lanes(inst, A, shadow=self._shadow_clone)

    def _visit_cast(self, inst, A):
        def tangent(inst, A):
            src = inst.operand(0)
            if inst.opcode in ("fpext", "fptrunc", "bitcast") and floatish(src.type):
                return [self.e.cast(inst.opcode, t, inst.type) for t in self.T(src)]
            raise NoDerivativeError(f"no derivative rule for cast '{inst.opcode}' of an "
                                    "active value", location=self.ctx.err_loc(inst))
        self._lanes(inst, A, self._shadow_clone, tangent)

    def _visit_select(self, inst, A):
        e = self.e
        self._lanes(inst, A,
                    lambda inst, A: [e.select(A.operand(0), x, y) for x, y in
                                     zip(self.S(inst.operand(1), inst),
                                         self.S(inst.operand(2), inst))],
                    lambda inst, A: [e.select(A.operand(0), x, y) for x, y in
                                     zip(self.T(inst.operand(1)), self.T(inst.operand(2)))])
        a, b = inst.operand(1), inst.operand(2)
        if inst.type.is_int and inst not in self.tan and a in self.tan and b in self.tan:
            # a choice between two integer-typed copies of memory with a shadow (iterators
            # at -O0, merged by InstCombine): the same choice between their shadow bytes
            e.position_before(self._next(A))
            self.tan[inst] = [e.select(A.operand(0), x, y)
                              for x, y in zip(self.tan[a], self.tan[b])]

    def _visit_extractvalue(self, inst, A):
        self._lanes(inst, A,
                    lambda inst, A: [self.e.extractvalue(x, inst.indices)
                                     for x in self.S(inst.operand(0), inst)],
                    self._data_lanes)

    def _visit_insertvalue(self, inst, A):
        def shadow(inst, A):
            # a struct of pointers: shadow pointers where the primal has pointers
            val = inst.operand(1)
            vals = self.S(val, inst) if val.type.is_pointer or pointer_aggregate(val.type) \
                else [A.operand(1)] * self.W
            return [self.e.insertvalue(x, y, inst.indices)
                    for x, y in zip(self.S(inst.operand(0), inst), vals)]
        self._lanes(inst, A, shadow, self._data_lanes)

    def _visit_data(self, inst, A):
        """Lane and field moves (vector elements, shuffles, freeze): the same move on
        the tangents."""
        self._lanes(inst, A, tangent=self._data_lanes)

    def _data_lanes(self, inst, A):
        ops, lanes = inst.operands, []
        for k in range(self.W):
            c = A.clone({})
            c.metadata, c.name = [], None
            for j in _DATA_OPS[type(inst)]:
                c.set_operand(j, self.T(ops[j])[k])
            lanes.append(self.e.insert(c))
        return lanes

    def _visit_arith(self, inst, A):
        def tangent(inst, A):
            ops = inst.operands
            rule = (BINARY if isinstance(inst, BinaryOp) else UNARY).get(inst.opcode)
            if rule is None:
                raise NoDerivativeError(f"no derivative rule for '{inst.opcode}'",
                                        location=self.ctx.err_loc(inst))
            return self._apply(rule, inst, [self.P_(o) for o in ops], A, ops)
        self._lanes(inst, A, tangent=tangent)

    def _apply(self, rule, inst, x, r, ops):
        """Each lane's tangent from an adjoint table entry (rules.tangent)."""
        act, out = self.act, []
        tans = [self.T(o) if o in act.active else None for o in ops]
        for k in range(self.W):
            dx = [t[k] if t is not None else None for t in tans]
            t = tangent(rule, self.e, x, r, dx, self.ctx.rctx.strong_zero)
            out.append(t if t is not None else zero(inst.type))
        return out

    def _store(self, inst, A):
        act, e = self.act, self.e
        v, p = inst.operand(0), inst.operand(1)
        if p in act.shadowed:
            if v.type.is_pointer and v not in act.shadowed \
                    and (v.is_instruction or isinstance(v, Argument)) \
                    and not act.may_hold_shadowed_pointers(p):
                return  # a local (or a field of one) that only holds pointers without shadows
            if v.type.is_pointer or pointer_aggregate(v.type):
                vals = self.S(v, inst)
            elif floatish(v.type) or v in self.tan:
                vals = self.T(v)
            elif isinstance(v, Cast) and v.opcode == "ptrtoint" and v.operand(0) in act.shadowed:
                # a pointer stored as an integer: its shadow, the same way (augmented.py)
                vals = [e.cast("ptrtoint", s, v.type) for s in self.S(v.operand(0), inst)]
            elif merged_copy_of_floats(v, p, act.shadowed, self.ctx.module.datalayout) \
                    is not None:
                raise merged_copy_error(self.ctx.err_loc(inst))
            elif float_bytes_lost(v, p, act):
                raise merged_copy_error(self.ctx.err_loc(inst), lost=True)
            elif mirrored_integer(inst):
                vals = [A.operand(0)] * len(self.S(p, inst))    # (a length, a flag)
            else:
                return
            for x, s in zip(vals, self.S(p, inst)):
                if p in act.own_ptrs:   # nothing written where the shadow is the primal
                    s, own = self._own_guard(p, s)
                    x = e.select(own, zero(x.type), x)
                e.store(x, s, inst.align)
        elif v in act.active and p not in act.unshadowed_locals:
            base = underlying_object(p)
            if base.is_global and base.name in self.ctx.registry.inactive_globals:
                return
            if self.P in getattr(self.ctx.rctx, "entries", ()) and act.write_only_argument(p):
                return      # an enzyme_const output nothing here reads back
            if null_at_every_call(p, self.P, act, self.ctx.rctx):
                return      # an optional output every caller passes as NULL
            raise unshadowed_store_error(p, self.ctx.err_loc(inst))
        elif float_bytes_lost(v, p, act):
            raise merged_copy_error(self.ctx.err_loc(inst), lost=True)
        else:
            check_pointer_escape(v, p, act, self.ctx.rctx, self.ctx.err_loc(inst), inst)

    def _atomic(self, inst, A):
        """``old = atomicrmw op p, v`` (op fadd, fsub or xchg: linear): the same operation
        on p's shadow with v's tangent; its result is old's tangent."""
        act, e = self.act, self.e
        p, v = inst.operands
        if p in act.shadowed and floatish(v.type):
            lanes = []
            for s, t in zip(self.S(p, inst), self.T(v)):
                c = A.clone({})
                c.metadata, c.name = [], None
                c.set_operand(0, s)
                c.set_operand(1, t)
                lanes.append(e.insert(c))
            if inst in act.active:
                self.tan[inst] = lanes
        elif v in act.active:
            raise unshadowed_atomic_error(self.ctx.err_loc(inst))

    def _lane_global(self, g, k):
        """The shadow global of scratch global ``g`` for lane ``k`` >= 1 (zeroed before
        each derivative call, like lane 0's)."""
        rctx = self.ctx.rctx
        got = rctx.shadow_lanes.get((g, k))
        if got is None:
            from ..analysis.globals import shadow_linkage
            from ..ir.values import ZeroInit
            got = rctx.shadow_lanes[(g, k)] = rctx.module.add_global(
                f"{g.name}.enzyme_shadow.{k}", g.value_type, ZeroInit(g.value_type),
                linkage=shadow_linkage(g), align=g.align or 16)
        return got

    def _own_guard(self, p, s):
        """As ``ReverseGen.own_guard``: the address for an access through ``p`` with
        shadow ``s``, and whether that shadow is the primal memory."""
        e = self.e
        own = e.icmp("eq", s, self.P_(p))
        sink = getattr(self, "_sink", None)
        if sink is None:
            sink = self._sink = scratch_sink(self.ctx.module, self.fn)
        return e.select(own, sink, s), own

    def _constant_pointer_shadows(self, inst, dst, k):
        """After a copy of a whole constant (a struct initialiser, ``cond_t c = {300.0,
        NU}``) into memory with a shadow, whose shadow bytes were zeroed: the pointers in
        it get their shadows there (a read-only table's zero twin, a function itself),
        so that code following them finds a tangent of zero -- not a null shadow."""
        from ..analysis.activity import constant_leaves
        for off, c in constant_leaves(inst, self.ctx.module.datalayout) or []:
            if c.type.is_pointer and not isinstance(c, (ConstantNull, Undef, Poison)):
                sh = self.S(c, inst)[k]
                self.e.store(sh, self.e.gep_bytes(dst, off) if off else dst, 8)

    def _memset0(self, p, n):
        e = self.e
        if n.type != T.i64:
            n = e.cast("zext", n, T.i64)
        memset = e.declare("llvm.memset.p0.i64", T.void, [T.ptr, T.i8, T.i64, T.i1])
        e.call(memset, [p, ConstantInt(T.i8, 0), n, ConstantInt(T.i1, 0)])

    def _alloca(self, inst, A):
        e, dl = self.e, self.ctx.module.datalayout
        size = ConstantInt(T.i64, dl.size_in_bytes(inst.allocated_type))
        n = None
        if inst.count is not None:
            n = self.P_(inst.count)
            n64 = n if n.type == T.i64 else e.cast("sext" if n.type.width < 64 else "trunc",
                                                  n, T.i64)
            size = e.binop("mul", n64, size)
        lanes = []
        for _ in range(self.W):
            s = Alloca(inst.allocated_type, n, align=inst.align)
            e.insert(s)
            self._memset0(s, size)
            lanes.append(s)
        self.sh[inst] = lanes

    # ------------------------------------------------------------ calls
    def _call(self, inst, A):
        act, e = self.act, self.e
        name = inst.callee_name or ""
        callee = inst.called_function
        orig = self.ctx.fname(callee) if callee is not None else name
        reg = self.ctx.registry
        args = inst.args
        eff = call_effect(name)
        ekind = eff.kind if eff is not None else None
        if ekind in ("nomem", "typehint") or openmp.fwd_call(self, inst, A):
            return
        nxt = self._next(A)
        e.position_before(nxt)
        if ekind == "mpi" and not mpi.user_rule(self, inst):
            mpi.fwd_call(self, inst, A)
            return
        if ekind == "sort":
            if args[0] in act.shadowed:
                fwd_qsort(self, inst, A)   # ad/sort.py
            return
        if ekind == "mirror":
            # a pointer-structure call (red-black tree): the same call on each lane's
            # shadows keeps the shadow structure linked like the primal one
            if any(a in act.shadowed for a in args):
                lanes = []
                for k in range(self.W):
                    c = A.clone({})
                    c.metadata, c.name = [], None
                    for j, a in enumerate(args):
                        if a.type.is_pointer:
                            c.set_arg(j, self.S(a, inst)[k])
                    lanes.append(e.insert(c))
                if inst in act.shadowed:
                    self.sh[inst] = lanes
            return
        if ekind == "alloc":
            if eff.out is not None:
                out = args[eff.out]
                if out in act.shadowed:   # posix_memalign: zeroed shadows stored alongside
                    for s in self.S(out, inst):
                        e.store(self._zeroed(A.args[eff.size[1]], A.args[eff.align]), s, 8)
            elif inst in act.shadowed:
                self._alloc(inst, A, name)
            return
        if eff is not None and eff.writes:
            # the bytes the call overwrote carry no derivative: zero their tangents
            for k, size in shadowed_writes(inst, lambda v: v in act.shadowed,
                                           self.ctx.err_loc(inst)):
                n = written(e, k, size, A.args, A)
                for s in self.S(args[k], inst):
                    if size[0] == "textptr":
                        fill_shadow(e, k, size, s, A.args[k], n)
                    else:
                        self._memset0(s, n)
        if ekind == "free":
            if args and args[0] in act.shadowed:
                free = e.declare("free", T.void, [T.ptr])
                p = self.P_(args[0])
                for s in self.S(args[0], inst):
                    # a block that is its own shadow (a std::string's characters, kept
                    # in an object that has a shadow) is freed once, by the program
                    e.call(free, [e.select(e.icmp("eq", s, p), ConstantNull(T.ptr), s)])
            return
        mem = ekind if ekind in ("memcpy", "memmove", "memset") else None
        if mem is not None:
            if mem != "memset":
                check_const_pointers_copied(inst, act, self.ctx.err_loc(inst))
            if args[0] in act.shadowed:
                dsts = self.S(args[0], inst)
                for k in range(self.W):
                    if mem != "memset" and args[1] in act.shadowed:
                        c = A.clone({})
                        c.metadata, c.name = [], None
                        c.set_operand(0, dsts[k])
                        c.set_operand(1, self.S(args[1], inst)[k])
                        e.insert(c)
                    else:
                        # (not where the shadow is the primal memory: libc.unless_own_shadow)
                        self._memset0(dsts[k], unless_own_shadow(e, dsts[k], self.P_(args[0]),
                                                                 self.P_(args[2])))
                        if mem == "memcpy":
                            self._constant_pointer_shadows(inst, dsts[k], k)
            elif mem != "memset":
                check_copy_into_unshadowed(
                    inst, act, self.ctx.err_loc(inst), reg.inactive_globals,
                    self.P in getattr(self.ctx.rctx, "entries", ())
                    and act.write_only_argument(args[0]))
            return
        if not self.act.involved(inst):
            self.ctx.rctx.call_original(A)
            return
        if returns_text(name):
            sync_text_objects(e, inst, A, lambda a: self.S(a, inst) if a in act.shadowed
                              else [])
            return
        if orig in reg.inactive_fns or ekind in ("inactive", "writes"):
            return
        rule = reg.derivatives.get(orig)
        if rule is not None:
            self._custom(inst, A, rule)
            return
        declared = callee is not None and callee.is_declaration
        red = reduction_rule(name, tangent=True) if declared else None
        if red is not None:     # llvm.vector.reduce.*: its own tangent rule
            if inst in act.active:
                x = [self.P_(a) for a in args]
                tans = [self.T(a) if a in act.active else None for a in args]
                lanes = []
                for k in range(self.W):
                    t = red[1](e, x, A, [ts[k] if ts is not None else None for ts in tans])
                    lanes.append(t if t is not None else zero(inst.type))
                self.tan[inst] = lanes
            return
        two = struct_math_rule(name) if declared else None
        if two is not None:     # modf/sincos/frexp: the tangents of both results
            if inst in act.active:
                x = [self.P_(a) for a in args]
                self.tan[inst] = [two[1][1](e, x, A, t) for t in self.T(args[0])]
            return
        found = reg.libm_for(orig)
        if found is None and (callee is None or declared):
            found = libm_rule(name)
        if found is not None:
            if inst in act.active:
                self.tan[inst] = self._apply(found[1], inst, [self.P_(a) for a in args], A,
                                             args)
            return
        if callee is not None and not callee.is_declaration and orig not in reg.gradients:
            self._defined(inst, A, callee)
            return
        if callee is None and is_indirect(inst):
            self._defined(inst, A, None)   # every candidate (ad/dispatch.py)
            return
        if callee is None:
            raise indirect_call_error(inst, self.ctx.err_loc(inst))
        if orig in reg.gradients:
            raise NoDerivativeError(
                f"'{orig}' has a reverse-mode rule (__enzyme_register_gradient_{orig}) but "
                "forward mode needs a forward one", location=self.ctx.err_loc(inst),
                hint=f"register void *__enzyme_register_derivative_{orig}[2] = "
                     f"{{(void*){orig}, (void*){orig}_fwd}};")
        raise external_call_error(name, self.ctx.err_loc(inst), forward=True)

    def _alloc(self, inst, A, name):
        e = self.e
        eff = call_effect(name)
        if eff.frees is not None and inst.args[eff.frees] in self.act.shadowed:
            realloc = e.declare("realloc", T.ptr, [T.ptr, T.i64])
            lanes = [e.call(realloc, [o, A.args[1]]) for o in self.S(inst.args[0], inst)]
        else:
            # (a realloc of a block without a shadow held constant data: zero tangents)
            n = written(e, None, eff.size, A.args, A)
            align = None if eff.align is None else A.args[eff.align]
            lanes = [self._zeroed(n, align) for _ in range(self.W)]
        self.sh[inst] = lanes

    def _zeroed(self, n, align=None):
        """A zeroed block of ``n`` bytes that ``free`` releases, aligned as the primal
        block is (``align``: a value, None for malloc's 16 -- an ``aligned_alloc(32,
        n)`` block is read by aligned AVX loads, and so is its shadow)."""
        e = self.e
        if align is None or isinstance(align, ConstantInt) and align.value <= 16:
            return e.call(e.declare("calloc", T.ptr, [T.i64, T.i64]),
                          [n, ConstantInt(T.i64, 1)])
        if align.type != T.i64:
            align = e.cast("zext", align, T.i64)
        # aligned_alloc wants a multiple of the alignment
        mask = e.binop("sub", align, ConstantInt(T.i64, 1))
        size = e.binop("and", e.binop("add", n, mask), e.binop("xor", mask,
                                                               ConstantInt(T.i64, -1)))
        p = e.call(e.declare("aligned_alloc", T.ptr, [T.i64, T.i64]), [align, size])
        self._memset0(p, n)
        return p

    def _custom(self, inst, A, rule):
        e, m = self.e, self.ctx.module
        fwd = m.get_function(rule.fns[1])
        args = inst.args
        lanes_out = []
        for k in range(self.W):
            call_args = []
            for a in args:
                call_args.append(self.P_(a))
                if a.type.is_pointer:
                    if isinstance(a, ConstantNull):
                        call_args.append(a.clone())     # an optional argument left out
                        continue
                    if a not in self.act.shadowed:
                        raise ADError(f"the forward rule of '{rule.name}' needs a shadow for "
                                      "every pointer argument; this one has none",
                                      location=self.ctx.err_loc(inst))
                    call_args.append(self.S(a, inst)[k])
                elif floatish(a.type):
                    call_args.append(self.T(a)[k])
            params = fwd.function_type.params
            if len(params) != len(call_args):
                raise ADError(f"the forward rule '{fwd.name}' in {rule.where} takes "
                              f"{len(params)} argument(s); EnzymePy passes {len(call_args)} "
                              "(each float or pointer argument followed by its tangent)",
                              location=self.ctx.err_loc(inst))
            c = e.call(fwd, [x if x.type == p or not (x.type.is_float and p.is_float)
                             else e.cast("fpext" if p.width > x.type.width else "fptrunc",
                                         x, p) for x, p in zip(call_args, params)])
            lanes_out.append(c)
        if inst in self.act.active:
            rty = fwd.function_type.ret
            if rty != inst.type:
                raise ADError(f"the forward rule '{fwd.name}' returns {rty}; '{rule.name}' "
                              f"returns {inst.type}", location=self.ctx.err_loc(inst))
            self.tan[inst] = lanes_out

    def _defined(self, inst, A, callee):
        act, e = self.act, self.e
        kinds = []
        for k, a in enumerate(inst.args):
            if passes_shadow(a, act, callee, k) or (floatish(a.type) and a in act.active):
                kinds.append("dup")
            else:
                kinds.append("const")
        if callee is not None and callee.function_type.varargs:
            kinds = kinds[:len(callee.args)]   # (``...``: see augmented._callee_kinds)
        e.position_before(A)
        if callee is None:
            g, target = forward_target(self, inst, kinds)
        else:
            g = self.ctx.get(callee, kinds, self.W,
                             const_fields=act.callee_const_fields(inst.args),
                             own_args=act.callee_own_args(inst.args))
            target = g.fn
        call_args = []
        for a, k in zip(inst.args, kinds):
            call_args.append(self.P_(a))
            if k == "dup":
                call_args.extend(self.S(a, inst) if a.type.is_pointer else self.T(a))
        if g.fn.function_type.varargs:
            call_args.extend(self.P_(a) for a in inst.args[len(kinds):])
        e.position_before(A)
        c = e.call(target, call_args, fnty=g.fn.function_type)
        if g.ret_pair:
            pv = e.extractvalue(c, [0])
            lanes = [e.extractvalue(c, [1 + k]) for k in range(self.W)]
            A.replace_all_uses_with(pv)
            if inst in act.shadowed:
                self.sh[inst] = lanes
            elif inst in act.active:
                self.tan[inst] = lanes
            new = pv
        else:
            if not A.type.is_void:
                A.replace_all_uses_with(c)
            new = c
        A.erase()
        self.vmap[inst] = new


def _own_tangentless(c) -> bool:
    """A constant pointer through which no tangent can be read or written, so it is
    its own shadow: null, a function, data without floats or pointers, a vtable, an
    address made from an integer (``MPI_IN_PLACE``)."""
    return isinstance(c, (ConstantNull, Undef, Poison, Function)) \
        or isinstance(c, GlobalVariable) and not floatish(c.value_type) \
        and not has_pointer(c.value_type) \
        or isinstance(c, ConstantExpr) and c.opcode == "inttoptr" or _vtable_like(c)


def _vtable_like(v) -> bool:
    """A constant pointer into read-only data without floating-point values whose
    pointers lead only to functions and to such data (a C++ vtable and its typeinfo):
    nothing loaded through it can carry a tangent."""
    if not v.is_constant or v.is_instruction or not v.type.is_pointer:
        return False
    for _ in range(16):
        if v.is_global or not v.operands:
            break
        v = v.operand(0)
    if not isinstance(v, GlobalVariable) or not v.is_constant or floatish(v.value_type):
        return False
    work, seen = [v.initializer] if v.initializer is not None else [], 0
    while work and seen < 256:
        c = work.pop()
        seen += 1
        if isinstance(c, Function):
            continue
        if isinstance(c, GlobalVariable):
            if c.initializer is None and c.name.startswith("_ZT"):
                continue    # the C++ runtime's vtables and typeinfo (declared only)
            if not c.is_constant or floatish(c.value_type) \
                    or c.initializer is None and has_pointer(c.value_type):
                return False
            continue
        work.extend(c.operands)
    return not work


# The tangent visitor of each instruction kind ``kinds.INSTRUCTIONS`` gives a rule
# (test_kinds checks that every such kind has one, here and in reverse mode).
TANGENT = {
    Invoke: ForwardGen._visit_none,
    Ret: ForwardGen._visit_ret,
    Br: ForwardGen._visit_none,
    Switch: ForwardGen._visit_none,
    Call: ForwardGen._visit_call,
    Phi: ForwardGen._visit_phi,
    Store: ForwardGen._visit_store,
    AtomicRMW: ForwardGen._visit_atomic,
    Load: ForwardGen._visit_load,
    Alloca: ForwardGen._visit_alloca,
    GEP: ForwardGen._visit_gep,
    Cast: ForwardGen._visit_cast,
    Select: ForwardGen._visit_select,
    ExtractValue: ForwardGen._visit_extractvalue,
    InsertValue: ForwardGen._visit_insertvalue,
    ExtractElement: ForwardGen._visit_data,
    InsertElement: ForwardGen._visit_data,
    ShuffleVector: ForwardGen._visit_data,
    Freeze: ForwardGen._visit_data,
    BinaryOp: ForwardGen._visit_arith,
    UnaryOp: ForwardGen._visit_arith,
}
