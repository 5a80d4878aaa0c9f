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

This module holds the module-wide state (``Context``) and puts ``ReverseGen``
together from its parts: the forward sweep (``augmented.py``), the reverse sweep
(``adjoint.py``), the cache (``cache_emit.py``; its layout is ``cache.py``), and what
they share (``reverse_common.py``).
"""

from __future__ import annotations

from ..analysis.activity import Activity, pointer_aggregate
from ..analysis.cfg import CFG, dominators, find_loops, is_reducible
from ..analysis.overwrite import Overwrite
from ..ir import types as T
from ..ir.attributes import Attributes, add_group
from ..ir.instructions import Br, Phi, Ret
from .cache import ensure_preheaders
from .emit import Emitter
from .errors import ADError, inst_location
from .rules import libm_rule, reduction_rule
from .adjoint import AdjointSweep
from .augmented import AugmentedForward
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



class ReverseGen(AugmentedForward, AdjointSweep, CacheEmission):
    """The augmented forward and reverse function of one primal function for one
    activity signature (``Context.get``): the forward sweep (``augmented.py``), the
    reverse sweep (``adjoint.py``) and their cache (``cache_emit.py``)."""

    def __init__(self, ctx: Context, primal, kinds, ret_active, stable_args=False):
        self.ctx, self.P, self.kinds, self.ret_active = ctx, primal, kinds, ret_active
        self.stable_args = stable_args
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
        self.aug = m.add_function(f"augmented_{base}", T.FunctionType(aug_rt, aug_params),
                                  linkage="internal", fn_attrs=attrs)
        self.rev = m.add_function(f"diffe_{base}", T.FunctionType(self.out_type, rev_params),
                                  linkage="internal", fn_attrs=attrs)

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
                            ret_active=self.ret_active)
        exits = [b for b in self.cfg.rpo if isinstance(b.terminator, Ret)]
        self.exit = exits[0] if exits else None
        self.ctx.stats["instructions"] += sum(len(b.instructions) for b in self.cfg.rpo)
        self.ctx.stats["functions"] += 1
        self.ctx.stats["dropped"] += len(self.act.pruned)
        self.ctx.stats["locals"] += len(self.act.locals_without_shadow)
        self.e = Emitter(self.ctx.module)
        self._build_aug()
        self._build_rev()
        self._finalize()
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

