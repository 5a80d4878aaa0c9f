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
"""

from __future__ import annotations

from ..analysis.globals import shadow_constant
from ..analysis.activity import Activity, floatish, pointer_aggregate, struct_return_origin
from ..analysis.effects import call_effect
from ..analysis.cfg import CFG, dominators, find_loops, is_reducible
from ..analysis.overwrite import Overwrite
from ..errors import InternalError
from ..ir import types as T
from ..ir.instructions import (Alloca, AtomicRMW, BinaryOp, Br, Call, Cast, ExtractElement,
                               ExtractValue,
                               FCmp, Freeze, GEP, ICmp, InsertElement, InsertValue, Invoke,
                               Load, Phi, Ret, Select, ShuffleVector, Store, Switch, UnaryOp,
                               Unreachable)
from ..ir.values import Argument, ConstantInt, ConstantNull, Poison, Undef, ZeroInit
from . import mpi
from .cache import CacheLayout, appended_buffers, emit_trip_bound, ensure_preheaders
from .dispatch import Dispatched, is_indirect, resolve
from .sort import aug_qsort, rev_qsort
from .emit import Emitter, Lazy, acc_zero, copy_body, no_pointer_set_yet, zero
from .errors import ADError, NoDerivativeError, inst_location, struct_return_error
from .kinds import check as check_kind
from . import openmp
from .libc import copy_adjoint, memset0, shadowed_writes, written
from .rules import ATOMICS, BINARY, UNARY, libm_rule, reduction_rule
from .runtime import runtime_function

_PURE = (BinaryOp, UnaryOp, Cast, GEP, ICmp, FCmp, Select, ExtractValue, InsertValue,
         ExtractElement, InsertElement, ShuffleVector, Freeze)

_STRIP_ATTRS = ("optnone", "noinline", "readnone", "readonly", "writeonly", "argmemonly",
                "inaccessiblememonly", "inaccessiblemem_or_argmemonly", "speculatable",
                "nofree", "willreturn", "nosync", "norecurse", "mustprogress", "alwaysinline",
                "cold", "hot", "minsize", "optsize", "naked", "nocallback")


def _is_const(v):
    return v.is_constant and not v.is_global


def _effect_kind(name):
    eff = call_effect(name)
    return eff.kind if eff is not None else None


def _mem_intrinsic(name):
    k = _effect_kind(name)
    return k if k in ("memcpy", "memmove", "memset") else None


def _round8(n):
    return (n + 7) // 8 * 8


class Context:
    """Module-wide state: generated function pairs (memoized per activity) and a
    work queue, attribute groups for generated functions."""

    def __init__(self, module, names=None, log=None):
        self.module = module
        self.names = names or {}   # clone -> original name (for messages)
        self.gens: dict = {}
        self.queue: list = []
        self.log = log or (lambda s: None)
        self._attr_groups: dict = {}
        self.stats = {"instructions": 0, "functions": 0}
        self.hooks = None  # custom.CallHooks: registered gradients, inactive functions
        self.shadow_globals: dict = {}  # global -> its shadow global (analysis/globals.py)

    def attrs_for(self, fn) -> str:
        """An attribute group like ``fn``'s (target-cpu/features...) minus the
        attributes that generated code would violate."""
        import re
        m = re.search(r"#(\d+)", fn.fn_attrs or "")
        key = m.group(1) if m else None
        inline_nounwind = re.search(r"(?<![\w\"])nounwind(?![\w\"])",
                                    fn.fn_attrs or "") is not None
        if (key, inline_nounwind) in self._attr_groups:
            return self._attr_groups[(key, inline_nounwind)]
        groups = self.module.attribute_groups
        text = groups.get(key, "{ }") if key else "{ }"
        body = text.strip()[1:-1]
        # drop memory(...) and the stripped words (outside quotes)
        body = re.sub(r"\bmemory\([^)]*\)", "", body)
        toks = re.findall(r'"[^"]*"(?:="[^"]*")?|\S+', body)
        if "nounwind" in toks or inline_nounwind:
            toks = [t for t in toks if t not in _STRIP_ATTRS and not t.startswith("uwtable")]
            toks.append("nounwind")
        else:
            # a primal that may throw (C++): its derivatives may too, and keep unwind
            # tables so that the exception reaches the guard at the call site
            # (unwind.guarded), which aborts with a message
            toks = [t for t in toks if t not in _STRIP_ATTRS] or ['"enzyme_py"']
        n = max((int(k) for k in groups if k.isdigit()), default=-1) + 1
        groups[str(n)] = "{ " + " ".join(toks) + " }"
        self._attr_groups[(key, inline_nounwind)] = f"#{n}"
        return f"#{n}"

    def get(self, fn, kinds, ret_active, stable_args=False, noalias_args=frozenset(),
            parallel=False):
        """``stable_args``: the caller keeps the memory behind the arguments unchanged
        until the reverse function has run (an ``__enzyme_autodiff`` call site), so
        loads from it may be recomputed in the reverse sweep; or the set of argument
        indices for which it does.  ``noalias_args``: arguments that alias no other
        (see ``Overwrite``).  ``parallel``: the code runs on several threads at once
        (an OpenMP region, see ``openmp.py``)."""
        key = (fn, tuple(kinds), ret_active, stable_args, noalias_args, parallel)
        g = self.gens.get(key)
        if g is None:
            g = self.gens[key] = ReverseGen(self, fn, list(kinds), ret_active, stable_args)
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
        scopes = getattr(self, "_cache_scopes", None)
        if scopes is None:
            scopes = self._cache_scopes = {}
            self._noalias_lists = {}
            md = self.module.metadata
            dom = self._cache_dom = self.module.add_metadata("!{}")
            md[dom[1:]] = f'distinct !{{{dom}, !"enzyme_py.cache"}}'
        ref = scopes.get(key)
        if ref is None:
            md = self.module.metadata
            scope = self.module.add_metadata("!{}")
            name = "enzyme_py.cache" if key is None else f"enzyme_py.cache.loop{len(scopes)}"
            md[scope[1:]] = f'distinct !{{{scope}, {self._cache_dom}, !"{name}"}}'
            ref = scopes[key] = self.module.add_metadata(f"!{{{scope}}}")
        return ref

    def noalias_with_cache(self, existing, refs) -> str:
        """A ``!noalias`` list: ``existing`` (a list reference or None) plus the scopes
        of the ``cache_scope`` lists ``refs``."""
        key = (existing, tuple(refs))
        got = self._noalias_lists.get(key)
        if got is None:
            import re
            scopes = [self.module.metadata[r[1:]].strip()[2:-1] for r in refs]
            if existing is None:
                items = []
            else:
                text = self.module.metadata.get(existing[1:], "") \
                    if existing.startswith("!") else ""
                m = re.fullmatch(r"\s*!\{(.*)\}\s*", text)
                if m is None:
                    return existing  # not a plain list: leave it as it is
                items = [x.strip() for x in m.group(1).split(",") if x.strip()]
            if not items and len(refs) == 1:
                got = refs[0]
            else:
                got = self.module.add_metadata("!{" + ", ".join(items + scopes) + "}")
            self._noalias_lists[key] = got
        return got

    def fname(self, fn):
        return self.names.get(fn, fn.name)


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


_prepared: set[int] = set()


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
    def __init__(self, ctx: Context, primal, kinds, ret_active, stable_args=False):
        self.ctx, self.P, self.kinds, self.ret_active = ctx, primal, kinds, ret_active
        self.stable_args = stable_args
        self.parallel = False
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
        self.aug = m.add_function(f"augmented_{base}", T.FunctionType(aug_rt, aug_params),
                                  linkage="internal", fn_attrs=attrs)
        self.rev = m.add_function(f"diffe_{base}", T.FunctionType(self.out_type, rev_params),
                                  linkage="internal", fn_attrs=attrs)

    # ------------------------------------------------------------------ setup
    def generate(self):
        P = self.P
        if id(P) not in _prepared:
            _prepared.add(id(P))
            unify_returns(P)
        self._analyse_cfg()
        hooks = self.ctx.hooks
        self.act = Activity(P, self.kinds, inactive=hooks.inactive_fns if hooks else (),
                            shadow_globals=self.ctx.shadow_globals)
        exits = [b for b in self.cfg.rpo if isinstance(b.terminator, Ret)]
        self.exit = exits[0] if exits else None
        self.ctx.stats["instructions"] += sum(len(b.instructions) for b in self.cfg.rpo)
        self.ctx.stats["functions"] += 1
        self.e = Emitter(self.ctx.module)
        self._build_aug()
        self._build_rev()
        self._finalize()

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

    # ------------------------------------------------------------- forward
    def _build_aug(self):
        P, aug, act = self.P, self.aug, self.act
        prim, shad, i = self._arg_maps(aug)
        self.tape_aug = aug.args[i]
        vmap = dict(prim)
        copy_body(P, aug, vmap)
        self.vmap = vmap
        self.sh_aug = dict(shad)
        self.restore_old = {}
        self.replaced_calls = {}
        e = self.e
        pending_phis = []
        for b in self.cfg.rpo:
            for inst in list(b.instructions):
                A = vmap[inst]
                check_kind(inst, act, lambda i=inst: self.ctx.err_loc(i))
                if isinstance(inst, Invoke):
                    continue   # not involved (check_kind)
                if isinstance(inst, Call):
                    self._aug_call(inst, A)
                elif isinstance(inst, AtomicRMW):
                    self._aug_atomic(inst)
                if inst in act.shadowed and not isinstance(inst, Argument):
                    self._aug_shadow_def(inst, A, pending_phis)
                if isinstance(inst, Store):
                    self._aug_store(inst, A)
                    if inst in self.ow.restores:   # the value it overwrites (overwrite.py)
                        old = Load(inst.operand(0).type, A.operand(1), align=inst.align)
                        old.insert_before(A)
                        self.restore_old[inst] = old
        if self.ret_shadow:
            for b in self.cfg.rpo:
                r = b.terminator
                if isinstance(r, Ret) and r.value is not None:
                    ar = vmap[r]
                    e.at_before(ar)
                    pv = ar.value
                    sv = self._sh_aug(r.value, r) if r.value in self.act.shadowed or not (
                        r.value.is_instruction or isinstance(r.value, Argument)) \
                        else ZeroInit(r.value.type)  # callers see an unshadowed result
                    agg = e.insertvalue(Undef(self.aug.return_type), pv, [0])
                    agg = e.insertvalue(agg, sv, [1])
                    ar.set_operand(0, agg)
        for inst, S in pending_phis:
            for v, blk in inst.incoming:
                S.add_incoming(self._sh_aug(v, inst), vmap[blk])
        # predecessor index for blocks with several predecessors
        self.pred_phi = {}
        for b in self.cfg.rpo:
            preds = self.cfg.preds[b]
            if len(preds) > 1:
                ab = vmap[b]
                phi = Phi(T.i64)
                ab.insert(0, phi)
                for u in ab.uses:
                    user = u.user
                    if user.is_instruction and user.is_terminator and user.parent is not None:
                        pb = user.parent
                        src = next((p for p in preds if vmap[p] is pb), None)
                        k = preds.index(src) if src is not None else 0
                        phi.add_incoming(ConstantInt(T.i64, k), pb)
                self.pred_phi[b] = phi
        self._aug_loop_counters()
        self._stack_shadows()

    def _aug_loop_counters(self):
        """An i64 counter per loop, 0 on entry, +1 per iteration (header executions)."""
        vmap = self.vmap
        self.aiv = {}
        for lp in self.loops.loops:
            h = vmap[lp.header]
            iv = Phi(T.i64)
            h.insert(0, iv)
            nxt = BinaryOp("add", iv, ConstantInt(T.i64, 1), flags=("nuw", "nsw"))
            nxt.insert_before(h.first_non_phi)
            for p in self.cfg.preds[lp.header]:
                iv.add_incoming(nxt if p in lp.blocks else ConstantInt(T.i64, 0), vmap[p])
            self.aiv[lp] = iv

    def _stack_shadows(self):
        """Shadows of allocas outside loops that the forward sweep never touches (only
        adjoints go there, in the reverse sweep) become allocas of the reverse function."""
        self.stack_shadow = {}
        self.stack_shadow_src = []
        for b in self.cfg.rpo:
            if self.loops.in_loop(b):
                continue
            for inst in b.instructions:
                if not isinstance(inst, Alloca) or inst not in self.act.shadowed:
                    continue
                if inst.count is not None and not isinstance(inst.count, ConstantInt):
                    continue
                S = self.sh_aug.get(inst)
                web = _dead_pointer_web(S)
                if web is None:
                    continue
                for x in web:
                    x.drop_all_references()
                for x in web:
                    x.remove_from_parent()
                for k in [k for k, v in self.sh_aug.items() if v in web]:
                    del self.sh_aug[k]
                self.stack_shadow_src.append(inst)

    def _rt(self, name, ty=None):
        return runtime_function(self.ctx.module, name, ty, owner=self.ctx.fname(self.P))

    def _sh_aug(self, v, where):
        s = self.sh_aug.get(v)
        if s is not None:
            return s
        if isinstance(v, (ConstantNull, Undef, Poison, ZeroInit)):
            return v.clone()
        sg = None if v.is_instruction else shadow_constant(v, self.ctx.shadow_globals)
        if sg is not None:
            return sg
        if v.type.is_pointer and not v.is_instruction and not isinstance(v, Argument) \
                and not _mutable_data_global(v):
            # a function, read-only or float-free global: its "shadow" is itself, no
            # adjoint can be accumulated there
            return v
        if no_pointer_set_yet(v):
            # a struct of pointers being built, no pointer field set yet: see forward.py
            return self.vmap.get(v, v)
        if v.type.is_pointer and v not in self.act.shadowed:
            from ..analysis.types import holds_only_integers
            if holds_only_integers(v):
                # points at integers only (a C++ key passed by reference, kept in a
                # std::tuple by std::map::operator[]): no adjoint is ever accumulated
                # through it, so the primal pointer serves as its shadow
                return self.vmap.get(v, v)
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

    def _aug_shadow_def(self, inst, A, pending_phis):
        e, vmap = self.e, self.vmap
        if isinstance(inst, (GEP, Cast)):
            S = A.clone({})
            S.metadata = []
            S.set_operand(0, self._sh_aug(inst.operand(0), inst))
            S.name = None
            S.insert_after(A)
        elif isinstance(inst, Phi):
            S = Phi(inst.type)
            S.insert_after(A)
            pending_phis.append((inst, S))
        elif isinstance(inst, ExtractValue):
            S = ExtractValue(self._sh_aug(inst.operand(0), inst), inst.indices)
            S.insert_after(A)
        elif isinstance(inst, InsertValue):
            # a struct of pointers (std::pair<node *, node *>): shadow pointers where the
            # primal has pointers, the primal integers elsewhere
            val = inst.operand(1)
            sv = self._sh_aug(val, inst) if val.type.is_pointer \
                or pointer_aggregate(val.type) else A.operand(1)
            S = InsertValue(self._sh_aug(inst.operand(0), inst), sv, inst.indices)
            S.insert_after(A)
        elif isinstance(inst, Select):
            S = Select(A.operand(0), self._sh_aug(inst.operand(1), inst),
                       self._sh_aug(inst.operand(2), inst))
            S.insert_after(A)
        elif isinstance(inst, Load):
            S = Load(inst.type, self._sh_aug(inst.operand(0), inst), align=inst.align)
            S.insert_after(A)
        elif isinstance(inst, Alloca):
            dl = self.ctx.module.datalayout
            size = ConstantInt(T.i64, dl.size_in_bytes(inst.allocated_type))
            nxt = A.parent.instructions[A.parent.index_of(A) + 1]
            e.at_before(nxt)
            if inst.count is not None:
                n = vmap[inst.count] if inst.count in vmap else inst.count.clone()
                if n.type != T.i64:
                    n = e.cast("sext" if n.type.width < 64 else "trunc", n, T.i64)
                size = e.binop("mul", n, size)
            S = e.call_fn(self._rt("__enzyme_py_shadow_alloc"), [size])
        elif isinstance(inst, Call):
            name = inst.callee_name or ""
            if inst in self.replaced_calls:
                # the augmented callee returned {primal, shadow}
                self.sh_aug[inst] = self.ret_shadows[inst]
                return
            if inst in getattr(self, "mirrored", {}):
                self.sh_aug[inst] = self.mirrored[inst]
                return
            eff = call_effect(name)
            if eff is None or eff.kind != "alloc" or eff.out is not None:
                raise ADError(f"call to '{name}' returns a pointer that may carry derivatives; "
                              "not supported yet", location=self.ctx.err_loc(inst),
                              hint="inline the function or return through an argument")
            nxt = A.parent.instructions[A.parent.index_of(A) + 1]
            e.at_before(nxt)
            args = A.args
            if eff.frees is not None and inst.args[eff.frees] in self.act.shadowed:
                S = e.call_fn(self._rt("__enzyme_py_shadow_realloc"),
                              [self._sh_aug(inst.args[eff.frees], inst), args[1]])
            else:
                # (a realloc of a block without a shadow held constant data: zero adjoint)
                S = e.call_fn(self._rt("__enzyme_py_shadow_alloc"),
                              [written(e, None, eff.size, args, A)])
        else:
            origin = struct_return_origin(inst)
            if origin is not None:
                raise struct_return_error(origin, self.ctx.err_loc(inst))
            raise ADError(f"no shadow rule for '{inst.opcode}' producing a pointer",
                          location=self.ctx.err_loc(inst))
        self.sh_aug[inst] = S

    def _aug_store(self, inst, A):
        v, p = inst.operand(0), inst.operand(1)
        if p in self.act.shadowed:
            if v.type.is_pointer or pointer_aggregate(v.type):
                if v not in self.act.shadowed and (v.is_instruction or isinstance(v, Argument)) \
                        and not self.act.may_hold_shadowed_pointers(p):
                    return  # a local that only ever holds pointers without shadows
                sv = self._sh_aug(v, inst)
                st = Store(sv, self._sh_aug(p, inst), align=inst.align)
                st.insert_after(A)
            elif not floatish(v.type) and v.is_instruction and isinstance(v, Load) \
                    and v.operand(0) in self.act.shadowed and v.type.is_int \
                    and v.type.width >= 32 and not self._int_by_layout(v):
                from ..analysis.types import memory_kinds
                kinds = memory_kinds([v.operand(0), p])
                w = v.type.width
                if kinds and "float-other" not in kinds and not (
                        w == 32 and "float" in kinds or w == 64 and "double" in kinds
                        or w not in (32, 64) and kinds & {"double", "float"}):
                    # no floating-point value of this width there: an integer (a C++
                    # key) or a pointer (an iterator copied at -O0); for pointers, the
                    # same copy of the shadow bytes
                    if "ptr" in kinds and w == 64:
                        sv = Load(v.type, self._sh_aug(v.operand(0), inst), align=v.align)
                        sv.insert_after(A)
                        Store(sv, self._sh_aug(p, inst), align=inst.align).insert_after(sv)
                    return
                raise ADError("an integer-typed copy of memory that may hold floating-point "
                              "values (type analysis could not tell)",
                              location=self.ctx.err_loc(inst),
                              hint="copy the values with their own type, or use memcpy")
        elif v in self.act.active and not (self.ctx.hooks and self.ctx.hooks.inactive_store(p)):
            origin = struct_return_origin(p)
            if origin is not None:
                raise struct_return_error(origin, self.ctx.err_loc(inst), stored=True)
            raise ADError("an active value is stored into memory that has no shadow "
                          "(an enzyme_const argument, or a global that gets no shadow "
                          "global: one holding pointers or defined outside the program)",
                          location=self.ctx.err_loc(inst),
                          hint="pass that memory with enzyme_dup and a shadow; for a "
                               "global holding pointers (a static node pool), allocate the "
                               "nodes with malloc or keep them in a local array")

    def _int_by_layout(self, load):
        """Whether the declared layout of the struct/array a load reads from says its
        bytes are integer fields (a struct copy split per field by SROA)."""
        from ..analysis.types import layout_kinds
        dl = self.ctx.module.datalayout
        kinds = layout_kinds(load.operand(0), dl.store_size(load.type), dl)
        return kinds == {"int"}

    def _callee_kinds(self, inst):
        act = self.act
        kinds = []
        for a in inst.args:
            if a.type.is_pointer and a in act.shadowed:
                kinds.append("dup")
            elif floatish(a.type) and a in act.active:
                kinds.append("out")
            else:
                kinds.append("const")
        return kinds

    def _aug_atomic(self, inst):
        p, v = inst.operands
        if p not in self.act.shadowed and v in self.act.active:
            raise ADError("an active value is added into memory that has no shadow (a "
                          "global, or an enzyme_const argument)",
                          location=self.ctx.err_loc(inst),
                          hint="pass that memory with enzyme_dup and a shadow")

    def _aug_call(self, inst, A):
        act = self.act
        name = inst.callee_name or ""
        if openmp.aug_call(self, inst, A):
            return
        eff = call_effect(name)
        ekind = eff.kind if eff is not None else None
        if ekind in ("nomem", "free", "typehint"):
            return
        if ekind == "mpi" and not mpi.user_rule(self, inst):
            mpi.aug_call(self, inst, A)
            return
        if ekind == "mirror":
            # a pointer-structure call (red-black tree): the same call on the shadows
            if any(a in act.shadowed for a in inst.args):
                c = A.clone({})
                c.metadata, c.name = [], None
                for k, a in enumerate(inst.args):
                    if a.type.is_pointer:
                        c.set_arg(k, self._sh_aug(a, inst))
                c.insert_after(A)
                self.mirrored = getattr(self, "mirrored", {})
                self.mirrored[inst] = c
            return
        if ekind == "alloc":
            if eff.out is not None and inst.args[eff.out] in act.shadowed:
                # posix_memalign: a shadow block, stored where the pointer goes
                self.e.at_before(A.parent.instructions[A.parent.index_of(A) + 1])
                S = self.e.call_fn(self._rt("__enzyme_py_shadow_alloc"),
                                   [A.args[eff.size[1]]])
                self.e.store(S, self._sh_aug(inst.args[eff.out], inst), 8)
                self.out_shadows = getattr(self, "out_shadows", {})
                self.out_shadows[inst] = S
            return
        args = inst.args
        involved = any(a in act.active or a in act.shadowed for a in args) \
            or inst in act.active or inst in act.shadowed \
            or act.touches_shadow_globals(inst.called_function)
        if ekind == "sort":
            if args[0] in act.shadowed:
                aug_qsort(self, inst, A)   # ad/sort.py
            return
        mem = _mem_intrinsic(name)
        if mem is not None:
            if args[0] in act.shadowed:
                kind = self._mem_kind(inst)
                self.mem_kind = getattr(self, "mem_kind", {})
                self.mem_kind[inst] = kind
                if kind in ("ptr", "zero"):
                    if mem != "memset" and args[1] not in act.shadowed:
                        raise ADError(
                            "memcpy of pointers from memory without a shadow into memory "
                            "that has one", location=self.ctx.err_loc(inst),
                            hint="pass the source with enzyme_dup, or copy the data the "
                                 "pointers point to instead")
                    c = A.clone({})
                    c.set_operand(0, self._sh_aug(args[0], inst))
                    if mem != "memset":
                        c.set_operand(1, self._sh_aug(args[1], inst))
                    c.insert_after(A)
            return
        if eff is not None and eff.writes:
            ws = shadowed_writes(inst, lambda v: v in act.shadowed, self.ctx.err_loc(inst))
            if ws:
                self.e.at_before(A.parent.instructions[A.parent.index_of(A) + 1])
                self.write_sizes = getattr(self, "write_sizes", {})
                self.write_sizes[inst] = [(k, written(self.e, k, size, A.args, A))
                                          for k, size in ws]
            if inst not in act.active:
                return
        if not involved:
            return
        if self.ctx.hooks is not None and self.ctx.hooks.aug_call(self, inst, A):
            return
        callee = inst.called_function
        pairs = None
        if callee is None and is_indirect(inst):
            # through a function pointer or a vtable: every candidate (ad/dispatch.py)
            pairs = resolve(self.ctx, inst, self.ctx.err_loc(inst))
            callee = pairs[0][1]
        if callee is not None and not callee.is_declaration:
            kinds = self._callee_kinds(inst)
            ret_active = floatish(inst.type) and inst in act.active
            if self.parallel:
                # other threads may write what the arguments point to meanwhile: the
                # caller's overwrite facts do not carry into the callee
                facts = (False, frozenset())
            else:
                facts = (self.ow.callee_stable.get(inst, False),
                         self.ow.callee_noalias.get(inst, frozenset()))
            g = self.ctx.get(callee, kinds, ret_active, *facts, parallel=self.parallel)
            if pairs is not None:
                self.e.at_before(A)
                g = Dispatched(self, inst, pairs,
                               [self.ctx.get(c, kinds, ret_active, *facts,
                                             parallel=self.parallel)
                                for _, c in pairs])
            new_args = [a for a, _ in zip(A.args, kinds)]
            call_args = []
            for orig, a, k in zip(args, new_args, kinds):
                call_args.append(a)
                if k == "dup":
                    call_args.append(self._sh_aug(orig, inst))
            call_args.append(self.tape_aug)
            c = Call(g.aug.function_type, g.aug if pairs is None else g.aug_callee, call_args)
            c.insert_before(A)
            if g.ret_shadow:
                pv = ExtractValue(c, [0])
                pv.insert_after(c)
                sv = ExtractValue(c, [1])
                sv.insert_after(pv)
                self.ret_shadows = getattr(self, "ret_shadows", {})
                self.ret_shadows[inst] = sv
                A.replace_all_uses_with(pv)
                c = pv
            else:
                A.replace_all_uses_with(c)
            A.erase()
            self.vmap[inst] = c
            self.replaced_calls[inst] = g
            return
        if libm_rule(name) is not None or reduction_rule(name) is not None:
            return
        if ekind in ("inactive", "writes"):
            return
        if callee is None:
            raise NoDerivativeError("indirect call with active arguments cannot be "
                                    "differentiated", location=self.ctx.err_loc(inst),
                                    hint="call the function directly")
        raise NoDerivativeError(
            f"cannot differentiate call to external function '{name}': no definition and no "
            "derivative rule", location=self.ctx.err_loc(inst),
            hint=f"make the definition of '{name}' visible (same program / LTO), or register "
                 f"a custom gradient (void *__enzyme_register_gradient_{name}[3] = "
                 f"{{{name}, {name}_aug, {name}_rev}}), or mark it inactive "
                 f"(__enzyme_inactivefn); see enzyme.h")

    def _mem_kind(self, inst):
        """What the memory moved by memcpy/memset holds: 'double', 'float', 'ptr', 'int';
        'zero' for a memset of zeros over anything else (the shadow is zeroed in both
        sweeps)."""
        from ..analysis.types import memory_kinds
        kinds = memory_kinds([inst.args[0]] + ([inst.args[1]] if len(inst.args) > 3 else []))
        # Zeroing memory (C++ value-initialisation, a hash table's new buckets): whatever
        # it holds, its shadow is zeroed too -- null shadow pointers, and adjoints of the
        # floats dropped (the reverse of a store of constants drops them as well, so doing
        # it already in the forward sweep changes nothing)
        zeroing = _mem_intrinsic(inst.callee_name or "") == "memset" \
            and isinstance(inst.args[1], ConstantInt) and inst.args[1].value == 0
        if not kinds and zeroing:
            return "zero"
        if not kinds:
            name = _mem_intrinsic(inst.callee_name or "")
            raise ADError(f"{name} into memory that carries derivatives, but type analysis "
                          "cannot tell what the memory holds (no typed access to it is "
                          "visible)", location=self.ctx.err_loc(inst),
                          hint="say what it holds before the copy: __enzyme_double(ptr, "
                               "bytes) (or __enzyme_float/__enzyme_integer/__enzyme_pointer; "
                               "see enzyme.h)")
        if kinds == {"int"}:
            return "int"
        kinds.discard("int")
        if kinds in ({"double"}, {"float"}, {"ptr"}):
            return next(iter(kinds))
        mem = _mem_intrinsic(inst.callee_name or "")
        if kinds == {"double", "float"}:
            if mem == "memset":
                return "double"   # the shadow's bytes are zeroed whatever they hold
            fields = self._float_fields(inst) if mem == "memcpy" else None
            if fields is None:
                raise ADError(f"{mem} over memory that mixes double and float values, and "
                              "the layout of the bytes it moves is not visible (not a "
                              "copy of whole fields of one struct or array type)",
                              location=self.ctx.err_loc(inst),
                              hint="copy the fields one by one, or assign the struct")
            self.mem_fields = getattr(self, "mem_fields", {})
            self.mem_fields[inst] = fields
            return "fields"
        if len(kinds) == 1:
            raise ADError(f"memcpy/memset of {next(iter(kinds))} values is not supported",
                          location=self.ctx.err_loc(inst), hint="copy the values one by one")
        if zeroing:
            return "zero"    # fields of several types (a C++ object)
        raise ADError("memcpy/memset over memory that mixes floating-point values and "
                      "pointers is not supported yet", location=self.ctx.err_loc(inst),
                      hint="copy the fields one by one")

    def _float_fields(self, inst):
        """A struct copy (memcpy of a constant size) by the declared layout of either
        side: the (offset, 'double'/'float', bytes) runs of its floating-point fields."""
        from ..analysis.types import float_fields, tbaa_struct_fields
        n = inst.args[2]
        if not isinstance(n, ConstantInt):
            return None
        dl = self.ctx.module.datalayout
        for p in inst.args[:2]:
            got = float_fields(p, n.value, dl)
            if got is not None:
                return got
        return tbaa_struct_fields(inst, n.value)

    # ------------------------------------------------------------- reverse
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
            e.at_end(self.rbody[b])
            self.cur = b
            for inst in reversed(b.instructions):
                self._rev_inst(inst, b)
            self._rev_terminator(b)
        e.at_end(self.rret)
        outs = []
        for a in self.out_args:
            if a not in self.act.active:
                outs.append(zero(a.type))
                continue
            d = e.load(a.type, self._slot(a))
            if a.type.is_fp_or_fp_vector:
                d = e.add(d, zero(a.type))  # an adjoint nobody added to is -0.0: report +0.0
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
        e.store(e.add(t, x), s)

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
            e.at_end(self.rentry)
            memset = e.declare("llvm.memset.p0.i64", T.void, [T.ptr, T.i8, T.i64, T.i1])
            e.call_fn(memset, [a, ConstantInt(T.i8, 0), ConstantInt(T.i64, n),
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
                    e.at_before(self.rret.terminator)
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
                e.store(e.add(t, d), sp, inst.align)
            return
        if isinstance(inst, Alloca):
            if inst in act.shadowed and inst not in self.stack_shadow:
                e.call_fn(self._rt("__enzyme_py_shadow_free"), [self.shadow(inst, b)])
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
                    self._add(op, rule[k](e, x, r, d))
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
            acc[src] = e.insertelement(acc[src], e.add(cur, x), ConstantInt(T.i32, m % n))
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
                e.call_fn(self._rt("__enzyme_py_shadow_free"), [sh])
            elif inst in act.shadowed:
                sh = self.shadow(inst, b)
                if name == "realloc" and args[0] in act.shadowed:
                    # the block's first min(old, new) bytes moved: their adjoints move back
                    # (whatever they hold: the old shadow is not used after the realloc,
                    # and the forward sweep copied it into the new one)
                    old = self.shadow(args[0], b)
                    osz = e.call_fn(self._rt("__enzyme_py_shadow_size"), [old])
                    n = self.primal(args[1], b)
                    n = n if n.type == T.i64 else e.cast("zext", n, T.i64)
                    m = e.select(e.icmp("ult", osz, n), osz, n)
                    memcpy = e.declare("llvm.memcpy.p0.p0.i64", T.void,
                                       [T.ptr, T.ptr, T.i64, T.i1])
                    e.call_fn(memcpy, [old, sh, m, ConstantInt(T.i1, 0)])
                e.call_fn(self._rt("__enzyme_py_shadow_free"), [sh])
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
                e.call_fn(memset, [self.shadow(args[0], b), ConstantInt(T.i8, 0), n,
                                   ConstantInt(T.i1, 0)])
            elif args[1] not in act.shadowed:
                # Copied from memory without a shadow (constant data): the
                # destination's adjoint goes nowhere, it is only consumed.
                memset = e.declare("llvm.memset.p0.i64", T.void, [T.ptr, T.i8, T.i64, T.i1])
                e.call_fn(memset, [self.shadow(args[0], b), ConstantInt(T.i8, 0), n,
                                   ConstantInt(T.i1, 0)])
            elif kind == "fields":
                # a struct copy mixing double and float fields: field runs by layout
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
                else e.call_fn(g.rev, call_args)
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
                    t = e.mul(d, self.primal(sib, b))
                    self._add(args[0], t if base == "sin" else e.neg(t))
                    return
        for k, a in enumerate(args):
            if a in act.active and k < len(rule) and rule[k] is not None:
                self._add(a, rule[k](e, x, r, d))

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
            e.at_end(blk)
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
        e.at_end(self.rbody[b])
        if lp_h is not None and len(preds) == 2 and len(outside) == 1:
            # a loop header: iteration 0 came from the preheader, the others from the latch
            k = e.load(T.i64, self.rc[lp_h])
            first = e.icmp("eq", k, ConstantInt(T.i64, 0))
            e.cbr(first, blocks[outside[0]], blocks[1 - outside[0]])
        else:
            idx = self._cached(("pred", b), self.pred_phi[b], T.i64, b, b)
            e.switch(idx, blocks[0], [(ConstantInt(T.i64, k), blocks[k])
                                      for k in range(1, len(preds))])
        for k, p in enumerate(preds):
            edge(blocks[k], p)

    # ------------------------------------------------------------- caches
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
            rec = T.ArrayType(T.i8, self.cache.size[lp])
            base = e.insert(GEP(rec, self.abuf[lp], [self.aiv[lp]]))
        return e.gep_bytes(base, slot.offset) if slot.offset else base

    def _rev_addr(self, slot):
        e, lp = self.e, slot.level
        if lp is None:
            base = self.frame_rev
        else:
            rec = T.ArrayType(T.i8, self.cache.size[lp])
            buf = e.load(T.ptr, self.rbuf[lp])
            base = e.insert(GEP(rec, buf, [e.load(T.i64, self.rc[lp])]))
        return e.gep_bytes(base, slot.offset) if slot.offset else base

    def _plan_hoisted_buffers(self):
        """{loop L: loop H}: L's per-iteration buffer is one allocation per execution of
        H's preheader (H an ancestor of L), sized by the product of the trip-count
        bounds of H and of the loops down to L, instead of one malloc per iteration of
        L's parent.  H is the outermost ancestor at whose preheader all those bounds
        can be computed (their operands are defined outside H)."""
        loops = self.loops.loops
        needs = {lp: self.cache.has_buffer(lp) for lp in loops}
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
        e, i64 = self.e, T.i64
        h = self.hoist[lp]
        chain = []
        x = lp
        while x is not h:
            chain.append(x)
            x = x.parent
        chain.append(h)
        chain.reverse()                                      # H, ..., lp
        e.at_before(self.vmap[h.preheader].terminator)
        bounds = [emit_trip_bound(e, _MappedCount(x.count, self.vmap)) for x in chain]
        total = ConstantInt(i64, rec)
        for nb in bounds:
            total = e.binop("mul", total, nb)
        if state is not None:
            base = e.call_fn(self._rt("__enzyme_py_cache_bump"),
                             [state, total, self.appended_hint[lp]])
            big = e.load(T.ptr, state, 8)
        else:
            big = e.call_fn(self._rt("__enzyme_py_cache_alloc"), [total])
            bigslot = self.cache.slots[(("big", lp), h.parent)]
            self.cache_insts[e.store(big, self._aug_addr(bigslot), 8)] = bigslot.level
        e.at_before(self.vmap[lp.preheader].terminator)
        lin = self.aiv[h]
        for x, nb in zip(chain[1:-1], bounds[1:-1], strict=True):
            lin = e.binop("add", e.binop("mul", lin, nb), self.aiv[x])
        off = e.binop("mul", e.binop("mul", lin, bounds[-1]), ConstantInt(i64, rec))
        if state is not None:
            off = e.binop("add", base, off)
            return e.insert(GEP(T.i8, big, [off])), off
        return e.insert(GEP(T.i8, big, [off]))

    def _appended_buffer(self, lp, rec):
        """Forward: the records of this execution of ``lp`` appended to the buffer that
        every execution of it shares (``cache.appended_buffers``): (pointer, offset)."""
        e, i64 = self.e, T.i64
        st_ty = T.StructType([T.ptr, i64, i64])
        state = Alloca(st_ty, align=8)
        entry = self.aug.blocks[0]
        entry.insert(0, Store(ZeroInit(st_ty), state, align=8))
        entry.insert(0, state)
        self.appended_state[lp] = state
        self.appended_hint[lp] = self.ctx.module.add_global(
            f"__enzyme_py_cache_hint.{self.ctx.fname(self.P)}", i64, ConstantInt(i64, 0),
            linkage="internal", align=8)
        if lp in self.hoist:
            return self._hoisted_buffer(lp, rec, state)
        e.at_before(self.vmap[lp.preheader].terminator)
        n = emit_trip_bound(e, _MappedCount(lp.count, self.vmap))
        off = e.call_fn(self._rt("__enzyme_py_cache_bump"),
                        [state, e.binop("mul", n, ConstantInt(i64, rec)), self.appended_hint[lp]])
        return e.insert(GEP(T.i8, e.load(T.ptr, state, 8), [off])), off

    def _finalize(self):
        e, m = self.e, self.ctx.module
        cache = self.cache
        self.hoist = self._plan_hoisted_buffers()
        self.appended = appended_buffers(self.loops.loops, self.hoist,
                                         cache.needs_buffer(self.loops.loops))
        self.appended_state, self.appended_hint = {}, {}
        for lp, h in self.hoist.items():
            if lp not in self.appended:
                cache.slot(("big", lp), h.parent, T.ptr, None, special=True)
        for lp in self.appended:
            cache.slot(("grow", lp), None, T.ptr, None, special=True)
        cache.assign_offsets(self.loops.loops, self.appended)
        self.ctx.log(f"cache of {self.ctx.fname(self.P)}: " + (str(cache) or "nothing"))
        i64 = T.i64
        # -- reverse: entering a loop loads its buffer pointer; leaving frees it
        for lp, blk in self.enter_points:
            if cache.has_buffer(lp):
                e.at_before(blk.terminator)
                s = cache.slots[(("buf", lp), lp.parent)]
                ld = e.insert(Load(s.ty, ConstantNull(T.ptr), align=8))
                self.cache_insts[ld] = s.level
                self.placeholders.append((ld, s))
                if lp in self.appended:     # an offset in the buffer whose address
                    gs = cache.slots[(("grow", lp), None)]       # the frame keeps
                    base = e.insert(Load(T.ptr, ConstantNull(T.ptr), align=8))
                    self.cache_insts[base] = None
                    self.placeholders.append((base, gs))
                    ld = e.insert(GEP(T.i8, base, [ld]))
                e.store(ld, self.rbuf[lp])
        free = e.declare("free", T.void, [T.ptr])
        for lp, blk in self.leave_points:
            if cache.has_buffer(lp) and lp not in self.hoist and lp not in self.appended:
                e.at_before(blk.terminator)
                counted = lp.count is not None and lp.count.phi.type.width <= 64
                e.call_fn(self._rt("__enzyme_py_cache_free") if counted else free,
                          [e.load(T.ptr, self.rbuf[lp])])
            for inner, h in self.hoist.items():
                if h is lp and inner not in self.appended:
                    e.at_before(blk.terminator)
                    ld = e.insert(Load(T.ptr, ConstantNull(T.ptr), align=8))
                    bs = cache.slots[(("big", inner), h.parent)]
                    self.cache_insts[ld] = bs.level
                    self.placeholders.append((ld, bs))
                    e.call_fn(self._rt("__enzyme_py_cache_free"), [ld])
        # -- forward: the frame, the loop buffers, the stores
        aug_entry = self.aug.blocks[0]
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
            ph = self.vmap[lp.preheader]
            hdr = self.vmap[lp.header]
            n = None
            if lp in self.appended:
                self.abuf[lp], off = self._appended_buffer(lp, rec)
                self.cache_insts[e.store(off, self._aug_addr(bufslot), 8)] = bufslot.level
                continue
            if lp in self.hoist:
                self.abuf[lp] = self._hoisted_buffer(lp, rec)
                self.cache_insts[e.store(self.abuf[lp], self._aug_addr(bufslot), 8)] = bufslot.level
                continue
            if lp.count is not None:
                e.at_before(ph.terminator)
                n = emit_trip_bound(e, _MappedCount(lp.count, self.vmap))
            if n is not None:
                buf = e.call_fn(self._rt("__enzyme_py_cache_alloc"),
                                [e.binop("mul", n, ConstantInt(i64, rec))])
                self.abuf[lp] = buf
                self.cache_insts[e.store(buf, self._aug_addr(bufslot), 8)] = bufslot.level
            else:
                # while loop: a buffer that grows (realloc) as the iterations go
                st = Alloca(T.StructType([T.ptr, i64]), align=8)
                aug_entry.insert(0, st)
                e.at_before(ph.terminator)
                e.store(ZeroInit(T.StructType([T.ptr, i64])), st, 8)
                first = hdr.first_non_phi
                e.at_before(first)
                buf = e.call_fn(self._rt("__enzyme_py_cache_reserve"),
                                [st, self.aiv[lp], ConstantInt(i64, rec)])
                self.abuf[lp] = buf
                self.cache_insts[e.store(buf, self._aug_addr(bufslot), 8)] = bufslot.level
                # stores of the header's phis go after the buffer is known
                self.aug_setup_end[hdr] = first
        for slot in list(cache.slots.values()):
            if slot.special:
                continue
            v = slot.aug_value
            if not v.is_instruction:
                raise InternalError("a cached value is not an instruction")
            e.at_before(self._def_point(v))
            self.cache_insts[e.store(v, self._aug_addr(slot), 8)] = slot.level
        # -- reverse: fill in the cache addresses
        self.frame_rev = None
        e.at_end(self.rentry)
        if fsize:
            pop = runtime_function(m, "__enzyme_py_tape_pop")
            self.frame_rev = e.call_fn(pop, [self.tape_rev, ConstantInt(i64, fsize)])
        for ld, slot in self.placeholders:
            e.at_before(ld)
            ld.set_operand(0, self._rev_addr(slot))
        # -- reverse: appended buffers are freed when the reverse sweep returns
        for lp in self.appended:
            e.at_before(self.rret.terminator)
            ld = e.insert(Load(T.ptr, self._rev_addr(cache.slots[(("grow", lp), None)]),
                               align=8))
            self.cache_insts[ld] = None
            e.call_fn(self._rt("__enzyme_py_cache_free"), [ld])
        # -- forward: push the frame when returning
        if fsize and self.exit is not None:
            ret = self.vmap[self.exit].terminator
            e.at_before(ret)
            for lp, state in self.appended_state.items():  # appended buffers' addresses
                gs = cache.slots[(("grow", lp), None)]
                self.cache_insts[e.store(e.load(T.ptr, state, 8), self._aug_addr(gs), 8)] = None
            reserve = self._rt("__enzyme_py_tape_reserve")
            p = e.call_fn(reserve, [self.tape_aug, ConstantInt(i64, fsize)])
            memcpy = e.declare("llvm.memcpy.p0.p0.i64", T.void, [T.ptr, T.ptr, i64, T.i1])
            self.cache_insts[e.call_fn(memcpy, [p, self.frame_aug, ConstantInt(i64, fsize),
                                                ConstantInt(T.i1, 0)])] = None
        for b in self.cfg.rpo:
            e.at_end(self.rpop[b])
            e.br(self.rhead[b])
            e.at_end(self.rhead[b])
            e.br(self.rbody[b])
        e.at_end(self.rentry)
        if self.exit is None:
            e.ret(Undef(self.out_type))
        else:
            e.br(self.rpop[self.exit])
        self._tag_cache_accesses()

    def _tag_cache_accesses(self):
        """Cache loads/stores get the alias scope of their level's memory (the frame
        and tape, or one loop's buffers) and are ``!noalias`` to the function's other
        levels; every other load, store and memory intrinsic of the two functions is
        ``!noalias`` to all of them (see ``Context.cache_scope``)."""
        if not self.cache_insts:
            return
        ctx = self.ctx
        levels = sorted(set(self.cache_insts.values()), key=lambda lp: -1 if lp is None
                        else self.loops.loops.index(lp))
        scope = {lp: ctx.cache_scope(None if lp is None else (self, lp)) for lp in levels}
        every = [scope[lp] for lp in levels]
        others = {lp: [scope[x] for x in levels if x is not lp] for lp in levels}
        for fn in (self.aug, self.rev):
            for blk in fn.blocks:
                for inst in blk.instructions:
                    if inst in self.cache_insts:
                        lp = self.cache_insts[inst]
                        inst.set_metadata("alias.scope", scope[lp])
                        if others[lp]:
                            inst.set_metadata("noalias", ctx.noalias_with_cache(
                                inst.get_metadata("noalias"), others[lp]))
                    elif isinstance(inst, (Load, Store)) or (
                            isinstance(inst, Call) and _mem_intrinsic(inst.callee_name or "")
                            and (inst.callee_name or "").startswith("llvm.")):
                        inst.set_metadata("noalias", ctx.noalias_with_cache(
                            inst.get_metadata("noalias"), every))



class _MappedCount:
    """A TripCount whose start/bound refer to the augmented function's values."""

    def __init__(self, tc, vmap):
        self._tc, self._vmap = tc, vmap
        self.phi, self.step, self.pred, self.compared = tc.phi, tc.step, tc.pred, tc.compared
        self.signed = tc.signed

    def distance(self):
        a, b, extra = self._tc.distance()
        return self._map(a), self._map(b), extra

    def _map(self, v):
        if _is_const(v):
            return v.clone()
        return self._vmap.get(v, v)


def _mutable_data_global(v):
    """Whether ``v`` (a constant pointer) points into a writable global that may hold
    floating-point values or pointers: adjoints must never be accumulated there."""
    from ..ir.module import GlobalVariable
    from ..analysis.activity import has_pointer
    for _ in range(16):
        if v.is_global or not v.operands:
            break
        v = v.operand(0)
    return isinstance(v, GlobalVariable) and not v.is_constant and (
        floatish(v.value_type) or has_pointer(v.value_type))


def _dead_pointer_web(S):
    """``S`` and the GEPs/casts derived from it when nothing else uses them, else None."""
    if S is None or not S.is_instruction:
        return None
    web, work = [], [S]
    seen = set()
    while work:
        v = work.pop()
        if v in seen:
            continue
        seen.add(v)
        web.append(v)
        for u in v.uses:
            user = u.user
            if isinstance(user, (GEP, Cast)) and u.index == 0 and user.type.is_pointer:
                work.append(user)
            else:
                return None
    return web


def _defined(c):
    """``c`` with poison/undef (whole, or vector lanes of a constant) replaced by zero."""
    from ..ir.values import ConstantAggregate
    if isinstance(c, (Poison, Undef)):
        return zero(c.type)
    if isinstance(c, ConstantAggregate) and c.type.is_vector and any(
            isinstance(x, (Poison, Undef)) for x in c.operands):
        return ConstantAggregate(c.type, [zero(x.type) if isinstance(x, (Poison, Undef))
                                          else x.clone() for x in c.operands])
    return c
