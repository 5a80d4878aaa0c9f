"""Reverse mode: for a function P and an activity signature, emit

    augmented_P(args..., shadows..., tape) -> P's result      (forward sweep)
    diffe_P(args..., shadows..., [dret], tape) -> {adjoints}   (reverse sweep)

The forward sweep is P with shadow computations (shadow GEPs, shadow
allocations, shadow pointer stores), an iteration counter per loop, and a store
of every value the reverse sweep needs and can neither recompute (pure
instructions, loop induction variables, loads the overwrite analysis proves
unchanged, or unchanged once the reverse sweep has undone the stores it names: the
forward saves what each of those overwrites, the reverse puts it back and, at its end,
writes back what they left) nor find elsewhere.  Those values live per loop
iteration in buffers sized from the trip count (grown for while loops; appended to one
buffer per call for inner loops whose trip count depends on the outer ones) or,
outside loops, in a fixed-size frame (see ``cache.py``).  The reverse sweep visits blocks in
reverse, recomputes, accumulates adjoints (in allocas that mem2reg promotes) and
replays the control flow: loop headers by their counters, other merges from
cached predecessor indices.  The frame is pushed on the tape (a LIFO stack)
when the augmented function returns and popped on entry to the reverse one;
calls to defined functions use the callee's augmented/reverse pair on the same
tape, so recursion needs nothing special.

This module holds the module-wide state (``Context``) and ``ReverseGen``, the value
context of one generated pair (Enzyme's GradientUtils), which runs its parts, each an
object holding it: the forward sweep (``augmented.py``), the adjoint visitor
(``adjoint.py``), the cache (``cache_emit.py``; its layout is ``cache.py``); helpers
they share are in ``reverse_common.py``.
"""

from __future__ import annotations

from ..analysis.activity import Activity, pointer_aggregate, struct_return_origin
from ..analysis.cfg import CFG, dominators, find_loops, is_reducible
from ..analysis.globals import read_only_twin, shadow_constant
from ..analysis.overwrite import Overwrite
from ..errors import InternalError
from ..ir import metadata as md
from ..ir import types as T
from ..ir.attributes import Attributes, add_group
from ..ir.builder import IRBuilder
from ..ir.instructions import (Alloca, BinaryOp, Br, Call, Cast, GEP, Load, Phi, Ret,
                               Store)
from ..ir.values import (Argument, ConstantInt, ConstantNull, Poison, Undef, ZeroInit)
from .cache import CacheLayout, ensure_preheaders
from .emit import (Emitter, Lazy, acc_zero, keep_byval, loaded_own_shadow,
                   made_of_own_shadows, no_pointer_set_yet, returns_own_shadows,
                   scratch_sink)
from .errors import ADError, inst_location, struct_return_error
from .reverse_common import _PURE, _defined, _is_const, _float_data_global, _mutable_data_global
from .runtime import runtime_function
from .rules import libm_rule, reduction_rule
from .adjoint import AdjointSweep
from .augmented import AugmentedForward, null_arguments
from .cache_emit import CacheEmission
from .combine import combine_adjoint_adds

_STRIP_ATTRS = ("optnone", "noinline", "readnone", "readonly", "writeonly", "argmemonly",
                "inaccessiblememonly", "inaccessiblemem_or_argmemonly", "speculatable",
                "nofree", "willreturn", "nosync", "norecurse", "mustprogress", "alwaysinline",
                "cold", "hot", "minsize", "optsize", "naked", "nocallback")


class Context:
    """Module-wide state: generated function pairs (memoized per activity) and a
    work queue, attribute groups for generated functions."""

    def __init__(self, module, names=None, log=None):
        self.module = module
        self.names = names or {}   # clone -> original name (for messages)
        self.gens: dict = {}
        self.queue: list = []
        self.log = log or (lambda s: None)
        self.stats = {"instructions": 0, "functions": 0, "dropped": 0, "locals": 0}
        self.hooks = None  # custom.CallHooks: registered gradients, inactive functions
        self.shadow_globals: dict = {}  # global -> its shadow global (analysis/globals.py)
        self.returns_unified: set = set()  # functions unify_returns has made single-exit
        self.strong_zero = False  # -fenzyme-strong-zero: see rules.contribution
        self._cache_scopes = None   # cache_scope: key -> its scope list; made on first use

    def attrs_for(self, fn) -> str:
        """An attribute group like ``fn``'s (target-cpu/features...) minus the
        attributes that generated code would violate (``memory(...)``, those of
        ``_STRIP_ATTRS``); ``nounwind`` when ``fn`` has it, inline or in its group."""
        inline = Attributes.parse(fn.fn_attrs)
        key = inline.groups[0] if inline.groups else None
        body = Attributes.parse(self.module.attribute_groups.get(key, "{ }") if key else "")
        body = body.without("memory", *_STRIP_ATTRS)
        if body.has("nounwind") or inline.has("nounwind"):
            body = body.without("uwtable").with_("nounwind")
        elif not body:
            # a primal that may throw (C++): its derivatives may too, and keep unwind
            # tables so that the exception reaches the guard at the call site
            # (unwind.guarded), which aborts with a message
            body = body.with_('"enzyme_py"')
        return add_group(self.module, body)

    def get(self, fn, kinds, ret_active, stable_args=False, noalias_args=frozenset(),
            parallel=False, const_fields=frozenset(), own_args=frozenset()):
        """``stable_args``: the caller keeps the memory behind the arguments unchanged
        until the reverse function has run (an ``__enzyme_autodiff`` call site), so
        loads from it may be recomputed in the reverse sweep; or the set of argument
        indices for which it does.  ``noalias_args``: arguments that alias no other
        (see ``Overwrite``).  ``parallel``: the code runs on several threads at once
        (an OpenMP region, see ``openmp.py``).  ``const_fields``: fields of the
        arguments' memory that hold pointers without a shadow
        (``Activity.callee_const_fields``).  ``own_args``: arguments whose shadow may
        be the primal memory (``Activity.callee_own_args``)."""
        key = (fn, tuple(kinds), ret_active, stable_args, noalias_args, parallel,
               const_fields, own_args)
        g = self.gens.get(key)
        if g is None:
            g = self.gens[key] = ReverseGen(self, fn, list(kinds), ret_active, stable_args)
            g.const_fields = const_fields
            g.own_args = own_args
            g.noalias_args = noalias_args
            g.parallel = parallel
            self.queue.append(g)
        return g

    def run(self):
        while self.queue:
            g = self.queue.pop()
            g.generate()

    def err_loc(self, inst):
        return inst_location(inst, self.names)

    def cache_scope(self, key=None) -> str:
        """The alias scope (a ``!{!scope}`` list) of a part of the cache memory that
        only the generated cache loads and stores touch.  ``key`` None: the frames and
        the tape (shared by every generated function: frames of nested calls live on
        one tape); otherwise one loop's buffers (``(function, loop)``: memory that
        function allocates for that loop alone).  Every other memory access of a
        generated function is ``!noalias`` to its cache scopes, and cache accesses to
        the function's other parts, so LLVM may keep cached values and shadow pointers
        in registers across shadow stores, promote a record slot written in an inner
        loop out of it, and vectorise the loops."""
        if self._cache_scopes is None:
            self._cache_scopes, self._noalias_lists = {}, {}
            self._cache_dom = md.add_self_referencing(self.module,
                                                      md.MDString("enzyme_py.cache"))
        scopes = self._cache_scopes
        ref = scopes.get(key)
        if ref is None:
            name = "enzyme_py.cache" if key is None else f"enzyme_py.cache.loop{len(scopes)}"
            scope = md.add_self_referencing(self.module, self._cache_dom, md.MDString(name))
            ref = scopes[key] = str(md.add(self.module, md.MDNode((scope,))))
        return ref

    def noalias_with_cache(self, existing, refs) -> str:
        """A ``!noalias`` list: ``existing`` (a list reference or None) plus the scopes
        of the ``cache_scope`` lists ``refs``."""
        key = (existing, tuple(refs))
        got = self._noalias_lists.get(key)
        if got is None:
            scopes = [op for r in refs for op in md.node(self.module, r).operands]
            if existing is None:
                items = []
            else:
                old = md.node(self.module, existing)
                if not isinstance(old, md.MDNode) or old.distinct:
                    return existing  # not a plain list: leave it as it is
                items = list(old.operands)
            if not items and len(refs) == 1:
                got = refs[0]
            else:
                got = str(md.add(self.module, md.MDNode(tuple(items + scopes))))
            self._noalias_lists[key] = got
        return got

    def fname(self, fn):
        return self.names.get(fn, fn.name)

    def call_original(self, call) -> None:
        """A call in generated code that carries no derivative goes to the program's own
        function rather than its private copy, which drops what the AD pass cannot
        differentiate -- an exception thrown and caught inside (``unwind.py``) would
        otherwise escape from the copy and abort the run."""
        callee = call.called_function
        name = self.names.get(callee) if callee is not None else None
        orig = self.module.get_function(name) if name is not None else None
        if orig is not None:
            call.callee = orig



def unsupported_return(site, fn, name):
    """Reverse mode seeds the adjoint of a float or double result; a function returning
    several floating-point values in one (``double complex``, a struct, a vector) would
    get none: refuse instead of returning zeros."""
    from .errors import inst_location
    raise ADError(f"'{name}' returns {fn.return_type} (a complex number, a struct or a "
                  "vector of floating-point values); reverse mode can only seed the "
                  "derivative of a float or double result", location=inst_location(site.call),
                  hint="return the parts through a pointer argument passed with enzyme_dup "
                       "(its shadow is the seed), or differentiate a wrapper that returns "
                       "one double (e.g. creal(f(x)))")



def unify_returns(fn):
    """Make ``fn`` have a single ``ret`` block (our clone, so editing is fine)."""
    rets = [b for b in fn.blocks if isinstance(b.terminator, Ret)]
    if len(rets) <= 1:
        return
    exit_ = fn.append_basic_block("enzyme.exit")
    rt = fn.return_type
    phi = None
    if not rt.is_void:
        phi = Phi(rt)
        exit_.append(phi)
    for b in rets:
        r = b.terminator
        if phi is not None:
            phi.add_incoming(r.value, b)
        r.erase()
        b.append(Br(exit_))
    exit_.append(Ret(phi) if phi is not None else Ret())



class ReverseGen:
    """The augmented forward and reverse function of one primal function for one
    activity signature (``Context.get``), and the value context the parts that build
    them share -- Enzyme's GradientUtils: the primal's analyses (CFG, loops,
    activity, overwrite), the map from the primal's values to the forward sweep's
    (``vmap``) and to their shadows there (``_sh_aug``), and in the reverse sweep a
    primal value (``primal``: recomputed or read back from the cache), a shadow
    (``shadow``) and the adjoint slots (``_add``, ``_take``).  The parts, each an
    object holding this context: the forward sweep (``augmented.AugmentedForward``),
    the adjoint visitor and control-flow replay (``adjoint.AdjointSweep``) and the
    cache emission (``cache_emit.CacheEmission``; its layout is ``cache.py``).  Rules
    elsewhere (calls, MPI, OpenMP, custom rules) receive this object."""

    def __init__(self, ctx: Context, primal, kinds, ret_active, stable_args=False):
        self.ctx, self.P, self.kinds, self.ret_active = ctx, primal, kinds, ret_active
        self.stable_args = stable_args
        self.sorted = {}   # qsort call -> its permutation (sort.py)
        self.parallel = False
        self.region_root = False   # the body of an OpenMP parallel region (openmp.py)
        m = ctx.module
        aug_params, rev_params = [], []
        for a, k in zip(primal.args, kinds):
            aug_params.append(a.type)
            if k == "dup":
                aug_params.append(T.ptr)
        rev_params = list(aug_params)
        aug_params.append(T.ptr)
        rt = primal.return_type
        self.ret_shadow = rt.is_pointer or pointer_aggregate(rt)
        aug_rt = T.StructType([rt, rt]) if self.ret_shadow else rt
        if ret_active:
            rev_params.append(rt)
        rev_params.append(T.ptr)
        self.out_args = [a for a, k in zip(primal.args, kinds) if k == "out"]
        self.out_type = T.StructType([a.type for a in self.out_args])
        base = ctx.fname(primal)
        attrs = ctx.attrs_for(primal)
        # (a variadic function's augmented forward takes the call's variadic arguments
        # after its own: its va_start reads them)
        self.aug = m.add_function(f"augmented_{base}",
                                  T.FunctionType(aug_rt, aug_params,
                                                 primal.function_type.varargs),
                                  linkage="internal", fn_attrs=attrs)
        self.rev = m.add_function(f"diffe_{base}", T.FunctionType(self.out_type, rev_params),
                                  linkage="internal", fn_attrs=attrs)
        keep_byval(primal, self.aug, kinds)
        # (not the reverse function: it never reads a by-value argument -- the overwrite
        # analysis counts it as the augmented call's own memory, kept on the tape -- and
        # the pointer its caller passes there may be a local of a frame that has returned:
        # a copy would read a dead frame)

    # ------------------------------------------------------------------ setup
    def generate(self):
        P = self.P
        if P not in self.ctx.returns_unified:
            self.ctx.returns_unified.add(P)
            unify_returns(P)
        self._analyse_cfg()
        hooks = self.ctx.hooks
        self.act = Activity(P, self.kinds, inactive=hooks.inactive_fns if hooks else (),
                            shadow_globals=self.ctx.shadow_globals,
                            ret_active=self.ret_active,
                            const_fields=getattr(self, "const_fields", frozenset()),
                            own_args=getattr(self, "own_args", frozenset()),
                            entry=P in getattr(self.ctx, "entries", ()),
                            null_args=null_arguments(P, self.ctx))
        exits = [b for b in self.cfg.rpo if isinstance(b.terminator, Ret)]
        self.exit = exits[0] if exits else None
        self.ctx.stats["instructions"] += sum(len(b.instructions) for b in self.cfg.rpo)
        self.ctx.stats["functions"] += 1
        self.ctx.stats["dropped"] += len(self.act.pruned)
        self.ctx.stats["locals"] += len(self.act.locals_without_shadow)
        self.e = Emitter(self.ctx.module)
        AugmentedForward(self).build()
        self._open_reverse()
        AdjointSweep(self).build()
        CacheEmission(self).finalize()
        if self.region_root:   # the body of a parallel region: see combine.py
            combine_adjoint_adds(self.ctx.module, self.rev,
                                 lambda i: i in self.cache_insts or i in self.cache_calls)

    def _analyse_cfg(self):
        P = self.P
        self.cfg = CFG(P)
        self.dom = dominators(self.cfg)
        self.loops = find_loops(self.cfg, self.dom)
        if ensure_preheaders(P, self.cfg, self.loops):
            self.cfg = CFG(P)
            self.dom = dominators(self.cfg)
            self.loops = find_loops(self.cfg, self.dom)
        if not is_reducible(self.cfg, self.dom):
            raise ADError(f"'{self.ctx.fname(P)}' has irreducible control flow (a cycle with "
                          "several entries); not supported",
                          hint="restructure the goto-based loop")
        self.ow = Overwrite(P, self.cfg, self.stable_args,
                            pure=lambda n: libm_rule(n) is not None
                            or reduction_rule(n) is not None,
                            noalias_args=getattr(self, "noalias_args", frozenset()))

    def _arg_maps(self, fn, with_tape=True):
        prim, shad, i = {}, {}, 0
        for a, k in zip(self.P.args, self.kinds):
            prim[a] = fn.args[i]
            i += 1
            if k == "dup":
                shad[a] = fn.args[i]
                i += 1
        return prim, shad, i


    def _rt(self, name, ty=None):
        return runtime_function(self.ctx.module, name, ty, owner=self.ctx.fname(self.P))

    def _global_shadow(self, c):
        """The shadow of a constant pointer into a global: its shadow global, or the
        zero twin of a read-only table of floats (writable: the reverse sweep adds
        into it); else None."""
        return shadow_constant(c, self.ctx.shadow_globals) \
            or read_only_twin(c, self.ctx.module, writable=True)

    def _own_shadow(self, c) -> bool:
        """A constant pointer that is its own shadow: null, or a pointer into no
        writable data that holds floats or pointers, no read-only floats and no global
        with a shadow global (a function, a vtable, read-only or float-free data)."""
        return isinstance(c, (ConstantNull, Undef, Poison)) or c.type.is_pointer \
            and not _mutable_data_global(c) and not _float_data_global(c) \
            and shadow_constant(c, self.ctx.shadow_globals) is None

    def _sh_aug(self, v, where):
        s = self.sh_aug.get(v)
        if s is not None:
            return s
        if isinstance(v, (ConstantNull, Undef, Poison, ZeroInit)):
            return v.clone()
        sg = None if v.is_instruction else self._global_shadow(v)
        if sg is not None:
            return sg
        if not v.is_instruction and not isinstance(v, Argument) and self._own_shadow(v):
            # a function, read-only or float-free global: its "shadow" is itself, no
            # adjoint can be accumulated there
            return v
        if no_pointer_set_yet(v):
            # a struct of pointers being built, no pointer field set yet: see forward.py
            return self.vmap.get(v, v)
        if v not in self.act.shadowed and (made_of_own_shadows(v, self._own_shadow)
                                           or returns_own_shadows(v, self._own_shadow)
                                           or loaded_own_shadow(v, self._own_shadow)):
            return self.vmap.get(v, v)   # vtables, functions, null + n, {NULL, r}
        if v.type.is_pointer and v not in self.act.shadowed:
            if where in self.act.own_merges and v in self.act.own_sources:
                # constant data chosen beside memory with a shadow: its own "shadow",
                # every access through the merge checks (Activity._own_merges)
                return self.vmap.get(v, v)
            from ..analysis.types import carries_no_derivative
            if carries_no_derivative(v):
                # points at integers only (a C++ key passed by reference, kept in a
                # std::tuple by std::map::operator[]) or at code: no adjoint is ever
                # accumulated through it, so the primal pointer serves as its shadow
                return self.vmap.get(v, v)
            origin = struct_return_origin(v)
            if origin is not None:   # (a struct a callee returns, pointers beside floats)
                raise struct_return_error(origin, self.ctx.err_loc(where))
            # Never the primal pointer: adjoints accumulated through that "shadow"
            # would land in the program's own memory.
            raise ADError("a pointer without a shadow (constant data: a global, an "
                          "enzyme_const argument, or a pointer loaded from one) is mixed "
                          "with pointers that have shadows (stored into differentiated "
                          "memory, merged by a phi/select, or returned)",
                          location=self.ctx.err_loc(where),
                          hint="pass that memory with enzyme_dup and a shadow, or copy the "
                               "constant data into a local array first")
        if isinstance(v, Call) and v.called_function is not None and not v.type.is_pointer:
            raise struct_return_error(self.ctx.fname(v.called_function),
                                      self.ctx.err_loc(where))
        raise ADError("a pointer that may carry derivatives has no shadow",
                      location=self.ctx.err_loc(where),
                      hint="pass the pointer with enzyme_dup and a shadow")

    def _open_reverse(self):
        """The reverse function's skeleton: its argument maps, entry block, and per
        primal block a pop block (cache reads), a head (recomputed primal values) and
        a body (adjoints), the return block; then the cache's and loops' state."""
        R = self.rev
        prim, shad, i = self._arg_maps(R)
        self.prim_rev, self.sh_rev_args = prim, shad
        self.dret = R.args[i] if self.ret_active else None   # the result's adjoint
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
        self.cache_insts = {}   # cache load/store -> its level (see _tag_cache_accesses)
        self._rev_cache_setup()

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
        h = IRBuilder(self.rhead[b])   # recomputed values go to the head of b's reverse
        ity = step.type
        if ity.width < 64:
            k = h.trunc(k, ity)
        elif ity.width > 64:
            k = h.zext(k, ity)
        off = h.mul(k, self.primal(step, b))
        s0 = base(start)
        if kind == "int":
            return h.add(s0, off)
        return h.gep(nxt.source_type, s0, [off])

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
        sg = None if p.is_instruction else self._global_shadow(p)
        if sg is not None:
            return sg
        if p not in self.act.shadowed:
            if p in self.act.own_sources:
                return self.primal(p, b)    # see _sh_aug
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
        if isinstance(p, (GEP, Cast)) and p.opcode != "inttoptr":
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

    def own_guard(self, p, sp, b):
        """For an access through ``p`` (``Activity.own_ptrs``) with shadow address
        ``sp``: (the address to use, whether the shadow is the primal memory) -- a
        zeroed scratch slot where it is (nothing may be written to that memory, and
        what is read there must be zero)."""
        from .errors import ADError
        if self.parallel:
            raise ADError("a pointer without a shadow (constant data) is chosen beside "
                          "pointers that have shadows inside a parallel region",
                          location=self.ctx.err_loc(p) if p.is_instruction else None,
                          hint="pass that memory with enzyme_dup and a shadow")
        e = self.e
        own = e.icmp("eq", sp, self.primal(p, b))
        return e.select(own, self.sink(), sp), own

    def sink(self):
        """The reverse function's zeroed scratch slot (see ``own_guard``)."""
        got = getattr(self, "_sink", None)
        if got is None:
            got = self._sink = scratch_sink(self.ctx.module, self.rev)
        return got

    def _lazy_ops(self, inst, b):
        return [Lazy((lambda v=v: self.primal(v, b)), v.type) for v in inst.operands]
