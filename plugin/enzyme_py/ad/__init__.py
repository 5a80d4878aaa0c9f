"""The AD pass: recognise ``__enzyme_autodiff*`` calls, optimise private copies of
the functions to differentiate (AD on optimised IR), synthesise augmented-forward
and reverse functions, and lower the call sites.

Higher-order derivatives (a function calling ``__enzyme_autodiff`` passed to
``__enzyme_fwddiff``, or any other nesting) are lowered innermost first, in rounds:
once the inner call is replaced by calls to generated derivative functions, the
outer transformation differentiates those like any other code (their pooled buffers
rewritten as plain malloc/free, see :func:`runtime.unpool`).  A nesting without end
(a function that differentiates itself) is a compile error.

Compile time follows the differentiated code: function bodies are parsed when the
pass reaches them (a call site's holder, what it differentiates, transitively), and
the LLVM round trips of promotion and pre-AD optimisation see only those bodies —
the others go as declarations and come back verbatim (:func:`round_trip`).

Before differentiation the private copies get exact rewrites (the same bytes read and
written at the same points, in a form the generators understand): variadic functions
given their arguments in a caller's array (``variadic.py``), complex functions
redirected to real arithmetic (``complex.py``), masked vector memory and horizontal
additions lowered (``simd.py``), floats the ABI passes as integers given their type
back (``abi.py``), integer copies and lanes of floats typed (``typed_copies.py``); call
sites merged on a choice of functions are split first (``promote.py``).  The copies
drop their variable debug records (``-g`` changes no analysis) and keep their line
locations.

Options (``-fenzyme-NAME=VAL`` on the enzyme-cc command line):

``preopt=0``    differentiate the unoptimised functions (pre-AD optimisation off,
                for the ablation of the Enzyme paper); default 1.
"""

from __future__ import annotations

import re
import time

from ..ir.attributes import Attributes, stripped
from ..ir import types as T
from ..ir.instructions import Call
from ..analysis.effects import call_effect, libm_base

__all__ = ["transform_module", "check_options", "OPTIONS"]

OPTIONS = {
    "preopt": ("1", "0 = differentiate unoptimised IR (no pre-AD optimisation)"),
    "strong-zero": ("0", "1 = a zero adjoint or tangent contributes zero even through an "
                         "infinite or NaN partial derivative (0 x inf = 0)"),
    "clang-backend": ("1", "0 = llvmlite runs the final -O pipeline and code generation, "
                           "also where the clang's LLVM major is llvmlite's"),
}


def _callees(fn, registry):
    from .dispatch import candidates, is_indirect
    from .openmp import outlined_of
    from .search import comparators
    for inst in fn.instructions():
        if isinstance(inst, Call):
            c = inst.called_function
            if c is not None and not c.is_declaration and not registry.special(c.name):
                yield c
            elif c is not None:
                # a library search calls its comparator (the reference search.py
                # redirects it to calls it through its pointer)
                yield from (f for f in comparators(inst) if not registry.special(f.name))
            elif c is None and is_indirect(inst):
                # what a function pointer or a vtable may reach (ad/dispatch.py); one
                # with a rule, inactive or function-like gets a wrapper calling it
                # directly (below), so the call through the pointer follows its rule
                yield from candidates(fn.parent, inst)
            o = outlined_of(inst)   # the body of an OpenMP parallel region
            if o is not None and not o.is_declaration:
                yield o


def _math_calls_touch_no_memory(copies) -> None:
    """In the private copies: calls of libm functions that write no memory but
    ``errno`` (``exp``, ``log``, ``pow``...) get ``memory(none)``, as Enzyme's
    preprocessing marks them, so that LLVM may keep loads across them: a loop bound read
    from a global (``for (k = 0; k < K; k++)`` around ``exp``) is loaded once and the
    loop is counted instead of cached as a while loop.  Not when any copy reads
    ``errno`` (directly or through ``perror``: the calls' order against that read must
    stay), nor for ``lgamma``, which sets ``signgam``."""
    calls = [i for fn in copies for i in fn.instructions() if isinstance(i, Call)]
    if any(c.callee_name in ("__errno_location", "perror") for c in calls):
        return
    for c in calls:
        name = c.callee_name or ""
        eff = call_effect(name)
        if eff is None or eff.kind != "math" or eff.writes or name.startswith("llvm.") \
                or libm_base(name) == "lgamma":
            continue
        attrs = Attributes.parse(c.fn_attrs)
        if not attrs.has("memory"):
            c.fn_attrs = str(attrs.with_("memory(none)"))


_SINCOS = ("sincos", "sincosf", "sincosl")


def _sincos_as_intrinsic(copies) -> None:
    """``sincos(x, &s, &c)`` (GNU libm) in the copies being differentiated becomes
    ``{s, c} = llvm.sincos(x)`` and two stores: the intrinsic has rules for both results
    (``rules.STRUCT_MATH``), and LLVM lowers it to the same libm call.  (As a call that
    stores through two pointers, the derivatives of what it stores could not follow.)"""
    from .emit import Emitter, type_suffix
    for fn in copies:
        calls = [i for i in fn.instructions() if isinstance(i, Call)
                 and i.callee_name in _SINCOS and len(i.args) == 3
                 and i.args[0].type.is_float and i.type.is_void]
        if not calls:
            continue
        module = fn.parent
        e = Emitter(module)
        for c in calls:
            x, ps, pc = c.args
            ty = x.type
            pair = T.StructType([ty, ty])
            e.position_before(c)
            r = e.call(e.declare(f"llvm.sincos.{type_suffix(ty)}", pair, [ty]), [x])
            align = module.datalayout.abi_alignment(ty)
            e.store(e.extractvalue(r, [0]), ps, align)
            e.store(e.extractvalue(r, [1]), pc, align)
            c.erase()


def _refuse_foreign_block_addresses(clones) -> None:
    """A copy whose instructions take block addresses (a computed goto's table, which
    LLVM's optimisation puts into a phi: ``blockaddress(@run, %2)``) would jump to the
    original's blocks, and LLVM cannot even read the module back (a numbered block of
    a function defined earlier): the computed goto's compile error, before that."""
    from ..ir.instructions import IndirectBr
    from ..ir.values import BlockAddress
    from . import kinds
    from .errors import inst_location
    for f, c in clones.items():
        if c is f or not any(isinstance(o, BlockAddress)
                             for i in c.instructions() for o in i.operands):
            continue
        for inst in c.instructions():
            if isinstance(inst, IndirectBr):
                kinds.check(inst, None, inst_location(inst, {c: f.name}))


def _drop_debug_records(fn) -> None:
    """Remove the ``#dbg_*`` records of ``fn`` (a copy to differentiate)."""
    for inst in fn.instructions():
        for r in inst.dbg_records:
            r.drop_all_references()
        inst.dbg_records = []


def _strip_fn_attrs(module, fn) -> None:
    """A private copy may be optimised and inlined: no ``optnone``/``noinline``, inline
    or in its attribute group (which is replaced by a copy without them), and no
    ``comdat`` (it is internal)."""
    fn.fn_attrs = str(stripped(module, fn.fn_attrs, "optnone", "noinline").without("comdat"))


def _swap_module(module, new):
    module.__dict__.clear()
    module.__dict__.update(new.__dict__)
    for g in list(module.functions) + list(module.global_variables) + list(module.aliases):
        g.parent = module


def check_options(options: dict[str, str]) -> None:
    """A usage error for an unknown ``-fenzyme-NAME``, or a value other than 0 or 1 (all
    of them are switches: ``-fenzyme-strong-zero=no`` must not switch it on)."""
    from ..errors import UsageError
    unknown = set(options) - set(OPTIONS)
    if unknown:
        raise UsageError(f"unknown option -fenzyme-{sorted(unknown)[0]}",
                         hint="known: " + ", ".join(f"-fenzyme-{k}" for k in OPTIONS))
    for name, value in sorted(options.items()):
        if value not in ("0", "1"):
            raise UsageError(f"-fenzyme-{name}={value}: the value must be 0 or 1",
                             hint=f"-fenzyme-{name} (or =1) switches it on, "
                                  f"-fno-enzyme-{name} (or =0) off")


def transform_module(module, options: dict[str, str], log=lambda s: None) -> None:
    from .callsite import entry_uses_as_value, find_sites
    from .promote import promote_call_sites, split_chosen_targets
    from .registry import Registry

    check_options(options)
    from .libc import strip_type_hints
    found = find_sites(module)
    as_value = entry_uses_as_value(module)
    if not found and not as_value:
        strip_type_hints(module)
        return
    if promote_call_sites(module, found, log, also=[u for u, _ in as_value]):
        found = find_sites(module)
    if split_chosen_targets(found):     # select of two functions: two call sites again
        found = find_sites(module)
    Registry.read(module)  # check the registration globals before anything else
    # Higher-order derivatives: call sites are lowered innermost first, in rounds.  A
    # round takes the sites whose function (with everything it calls) holds no call
    # site still to lower; once lowered, a function that called __enzyme_autodiff calls
    # generated derivative functions, which the next round differentiates like any
    # other code.
    while found:
        _round(module, options, log)
        found = find_sites(module)
    _reject_entry_values(module)
    _define_markers(module)
    strip_type_hints(module)
    _drop_entry_declarations(module)
    _locate_calls(module)


def _locate_calls(module) -> None:
    """Every call to a defined function, in a function with debug info, has a source
    location: those the pass emitted without one get line 0 of the function (LLVM's
    "compiler-generated").  Inlining gives the callee's instructions the call's location
    as ``inlinedAt``; from a call without one they would keep their own function's
    scope, and the caller built with ``-g`` fails LLVM's checks ("!dbg attachment points
    at wrong subprogram") — a derivative function inlined into ``main``, with a custom
    rule's code inlined into it."""
    from ..ir import metadata as md
    from ..ir.instructions import Call
    for fn in module.functions:
        if not fn.is_materialized or fn.is_declaration:
            continue
        sp = dict(fn.attachments).get("dbg")
        if sp is None:
            continue
        line0 = None
        for inst in fn.instructions():
            if not isinstance(inst, Call) or inst.get_metadata("dbg") is not None:
                continue
            callee = inst.called_function
            if callee is None or callee.is_declaration:
                continue
            if line0 is None:
                line0 = str(md.add(module, md.MDSpecialized(
                    "DILocation", (("line", "0"), ("scope", sp)))))
            inst.set_metadata("dbg", line0)


def _reject_entry_values(module) -> None:
    """An entry point still used other than as a direct call once every call site is
    lowered (its address kept in memory or passed on) would be an undefined symbol at
    link time: say where it is used instead."""
    from ..ir.instructions import Instruction
    from .callsite import entry_uses_as_value, location
    from .errors import CallSiteError
    for user, name in entry_uses_as_value(module):
        where = location(user) if isinstance(user, Instruction) else (
            f"in the initializer of '{user.name}'" if getattr(user, "is_global", False)
            else None)
        raise CallSiteError(
            f"{name} is used as a value (its address taken, kept or passed on), not "
            "called: EnzymePy only lowers direct calls to the __enzyme_* entry points",
            location=where,
            hint=f"call {name}(...) directly, as declared in <enzyme/enzyme> or with "
                 "'extern double " + name + "(void *, ...);'")


def _drop_entry_declarations(module) -> None:
    """The entry points' declarations, unused once every call is lowered (they stayed
    in ``-S -emit-llvm`` output at -O0)."""
    from .callsite import ENTRY_PREFIXES, entry_name
    for fn in list(module.functions):
        # the name first: asking a lazily parsed function whether it has a body parses it
        if entry_name(fn.name).startswith(tuple(ENTRY_PREFIXES)) and not fn.uses \
                and fn.is_declaration:
            fn.erase()


def _ready(module, registry):
    """The call sites of this round: (call, mode) pairs whose function's closure holds
    no call site, in module order; all sites when none are nested."""
    from .callsite import entry_name, find_sites, location, parse_site
    found = find_sites(module)
    holders = {c.function for c, _ in found}
    ready = []
    cycle = None
    for c, mode in found:
        s = parse_site(c, mode)
        if s.mode == "batch":
            ready.append((c, mode))
            continue
        work, seen, inner = [s.fn], set(), None
        while work and inner is None:
            f = work.pop()
            if f in seen:
                continue
            seen.add(f)
            if f in holders:
                inner = f
            work.extend(_callees(f, registry))
        if inner is None:
            ready.append((c, mode))
        elif inner is c.function or cycle is None:
            cycle = (c, s.fn, inner)
    if not ready:
        from .errors import CallSiteError
        c, target, inner = cycle
        via = "" if target is inner else f" (through '{inner.name}')"
        raise CallSiteError(f"recursive nested derivative: {entry_name(c.callee_name or '')} "
                            f"of '{target.name}' in '{c.function.name}' differentiates code "
                            f"that calls an __enzyme_* entry point again{via}, without end",
                            location=location(c),
                            hint="higher-order derivatives nest a fixed number of times: "
                                 "write one function per level")
    return ready


def _site_keys(found) -> dict:
    """Call -> (its function's name, its rank among that function's call sites): the
    same key for the same site in a module printed and parsed again."""
    by_fn: dict = {}
    for c, _ in found:
        by_fn.setdefault(c.function, []).append(c)
    keys = {}
    for fn, calls in by_fn.items():
        pos = {id(i): n for n, i in enumerate(fn.instructions())}
        for rank, c in enumerate(sorted(calls, key=lambda c: pos[id(c)])):
            keys[c] = (fn.name, rank)
    return keys


def _round(module, options, log) -> None:
    from ..ir import parse_module
    from ..ir.instructions import IndirectBr
    from .callsite import find_sites, lower_forward, lower_site, parse_site, refresh, \
        through_rules
    from .custom import CallHooks
    from .forward import ForwardContext
    from .registry import Registry
    from .reverse import Context
    from .openmp import outlined_of, prepare as openmp_prepare
    from .runtime import OUT_OF_MEMORY, POOLED, runtime_base, unpool
    from .split import lower_split

    t0 = time.perf_counter()
    registry = Registry.read(module)
    found = _ready(module, registry)
    sites = [parse_site(c, mode) for c, mode in found]
    through_rules(sites, registry, module)
    # the functions to differentiate and everything they call, as private copies;
    # derivative code of an earlier round takes its buffers from plain malloc/free
    # instead of the pool (see runtime.unpool)
    work = [s.fn for s in sites if s.mode != "batch"]
    # (a function given to an entry point is differentiated through its body even where
    # calls to it are not: an inactive one asked for directly, as Enzyme does)
    entries = set(work)
    closure = []
    seen = set()
    while work:
        f = work.pop()
        if f in seen or runtime_base(f.name) in POOLED or f.name == OUT_OF_MEMORY:
            continue
        seen.add(f)
        closure.append(f)
        if f in entries or not registry.special(f.name):
            work.extend(_callees(f, registry))  # (not through a rule's function's body)
    clones = {}
    from .augmented import tag_declared_integers
    from .dispatch import has_rule, rule_wrapper
    for f in closure:
        if has_rule(f) or registry.special(f.name) and f not in entries:
            # a libm function, or one with a custom rule (inactive, function-like),
            # an indirect call may reach
            clones[f] = rule_wrapper(module, f)
            continue
        c = f.clone(f"{f.name}.enzyme", {})
        c.set_linkage("internal")
        c.prefix = re.sub(r"\b(dso_local|hidden|protected|default|dllexport)\b", "",
                          c.prefix).strip()
        c.prefix = ("internal " + c.prefix.replace("internal", "")).strip()
        _strip_fn_attrs(module, c)
        # the copy's variable records (#dbg_value, #dbg_declare: -g) go: they would be
        # uses of values for every analysis and rewrite, which -g must not change (round
        # BI); the copy keeps its line locations, which the messages cite
        _drop_debug_records(c)
        clones[f] = c
    _refuse_foreign_block_addresses(clones)
    _math_calls_touch_no_memory(list(clones.values()))
    _sincos_as_intrinsic(list(clones.values()))
    for c in clones.values():
        for inst in c.instructions():
            if isinstance(inst, Call):
                t = inst.called_function
                if t in clones and not (t.is_declaration or registry.special(t.name)):
                    inst.callee = clones[t]     # (a rule wrapper's callee stays)
                o = outlined_of(inst)
                if o in clones:
                    inst.set_arg(2, clones[o])
        unpool(c)
        tag_declared_integers(c)    # (at -O0: see augmented.mirrored_integer)
    from .variadic import expand_variadics
    expanded = expand_variadics(module, clones)     # see variadic.py
    names = {c.name: f.name for f, c in clones.items()}
    if options.get("preopt", "1") != "0":
        t1 = time.perf_counter()
        ready = {_site_keys(find_sites(module))[c] for c, _ in found}
        # a copy with a computed goto still jumps to the original's blocks (its
        # blockaddresses name the original): LLVM would fold that to `unreachable`;
        # left as it is, it is a compile error where it is differentiated (kinds)
        opt = [c.name for c in clones.values() if c.name in names and not any(
            isinstance(i, IndirectBr) for i in c.instructions())]
        _swap_module(module, parse_module(_optimize_reached(module, opt, log)))
        log(f"pre-AD optimisation of {len(names)} function(s): {time.perf_counter() - t1:.3f}s")
        registry = Registry.read(module)
        # the same call sites in the new module, found without walking (and so parsing
        # again) the original functions to differentiate
        keys = _site_keys(find_sites(module))
        found = [(c, mode) for c, mode in find_sites(module) if keys[c] in ready]
        if len(found) != len(ready):
            found = _ready(module, registry)
        sites = [parse_site(c, mode) for c, mode in found]
    clone_of = {}
    rename = {}
    from .abi import retype_float_abi
    from .rewrites import describe, run_rewrites
    # unions of a double passed as an i64: see abi.py
    retype_float_abi([module.get_function(c) for c in names])
    rewritten: dict = {"variadic functions given their arguments in memory": expanded}
    for cname, orig in names.items():
        cf = module.get_function(cname)
        run_rewrites(cf, rewritten)     # see rewrites.py
        clone_of[module.get_function(orig)] = cf
        rename[cf] = orig
        openmp_prepare(cf)
    from .unwind import PRIMAL
    registry.inactive_fns.update(f.name for f in module.functions
                                 if f.name.startswith(PRIMAL))     # see unwind.py
    # type analysis answers about the program (the copies to differentiate, what they
    # call) from the program alone, whatever derivative code this round has built by
    # the time it is asked: its answer no longer depends on which call site's code was
    # generated first (see typetree.MemoryTypes.of)
    module.typetree_scope = [f for f in module.functions
                             if f.is_materialized and not f.is_declaration]
    from .rewrites import align_locals
    rewritten["locals aligned for vector access"] = align_locals(list(clone_of.values()))
    from .typed_copies import retype_constant_stores, split_integer_copies
    split = split_integer_copies(module, list(clone_of.values()))   # see typed_copies.py
    if split:
        module.typetree_scope = list(module.typetree_scope)     # analysed again
    rewritten["integer copies of small structs"] = split
    constants = retype_constant_stores(module, list(clone_of.values()))
    if constants:
        module.typetree_scope = list(module.typetree_scope)
    rewritten["integer constants stored over floats"] = constants
    log(describe(rewritten))
    ctx = Context(module, rename, log)
    ctx.strong_zero = options.get("strong-zero", "0") != "0"
    ctx.clone_of = clone_of     # indirect calls dispatch to the candidates' copies
    # the functions the call sites differentiate that no differentiated code calls: their
    # enzyme_const arguments are the user's memory (Activity.write_only_argument)
    ctx.entries = {clone_of[s.fn] for s in sites if s.fn in clone_of}
    ctx.entries = {f for f in ctx.entries
                   if not any(isinstance(u.user, Call) and u.user.callee is f for u in f.uses)}
    ctx.hooks = CallHooks(registry)
    ctx.shadow_globals = _shadow_globals(module, list(clone_of.values()), registry,
                                         _entry_kinds(sites, clone_of), rename)
    ctx.same_object = _same_object_consts(sites, clone_of)   # see errors.check_pointer_escape
    ctx.private_consts = _private_consts(sites, clone_of)
    ctx.shadow_lanes = {}       # (global, lane >= 1) -> its shadow in vector forward mode
    fctx = ForwardContext(ctx, registry)
    plans = []
    for s in sites:
        kinds = ["const"] * len(s.fn.args)
        for b in s.bindings:
            kinds[b.index] = b.kind
        if s.mode == "batch":
            plans.append((s, None))
            continue
        primal = clone_of[s.fn]
        if s.mode == "forward":
            plans.append((s, fctx.get(primal, kinds, s.width)))
            continue
        from ..analysis.activity import floatish
        ret_active = (floatish(primal.return_type) and primal.return_type.is_float
                      and "enzyme_const_return" not in s.ret_markers)
        if not ret_active and floatish(primal.return_type) \
                and "enzyme_const_return" not in s.ret_markers:
            from .reverse import unsupported_return
            unsupported_return(s, primal, ctx.fname(primal))
        if s.mode == "reverse" and s.width > 1:
            from .rules import libm_rule
            from .vector import check_lanes_independent
            s.alias_checks = check_lanes_independent(primal, s,
                                                     pure=lambda n: libm_rule(n) is not None)
        plans.append((s, ctx.get(primal, kinds, ret_active, stable_args=s.mode == "reverse")))
    t2 = time.perf_counter()
    fctx.run()
    ctx.run()
    t3 = time.perf_counter()
    replaced: dict = {}
    combined: dict = {}
    for s, g in plans:
        if s.mode == "reverse":
            combined[id(g)] = combined.get(id(g), 0) + 1
    for s, g in plans:
        refresh(s, replaced)
        call = s.call
        _check_dup_globals(s, ctx.shadow_globals)
        if s.mode in ("reverse", "forward", "augment"):
            _free_zero_shadows(module, ctx.shadow_globals, call, after=False)
            _zero_shadow_globals(module, ctx.shadow_globals, call)
            _zero_shadow_globals(module, ctx.shadow_lanes, call)
        if s.mode in ("reverse", "forward"):
            _free_zero_shadows(module, ctx.shadow_globals, call, after=True)
        if s.mode == "forward":
            lower_forward(s, g, module)
        elif s.mode == "reverse":
            lower_site(s, g, module, sites=combined[id(g)])
        elif s.mode == "batch":
            from .vector import lower_batch
            lower_batch(s, module)
        else:
            lower_split(s, g, module, reverses={x.rev for x in ctx.gens.values()})
        if s.result is not None:
            replaced[call] = s.result
    for c in list(clone_of.values()):
        if not c.uses:
            c.erase()
    from .emit import byval_at_call_sites
    byval_at_call_sites(list(module.functions))
    module.__dict__.pop("typetree_scope", None)
    n = ctx.stats["instructions"]
    dt = t3 - t2
    log(f"AD: {len(sites)} call site(s), {ctx.stats['functions']} function(s), {n} "
        f"instructions differentiated in {dt:.3f}s ({n / dt if dt else 0:.0f} inst/s); "
        f"total {time.perf_counter() - t0:.3f}s")
    if ctx.stats["dropped"] or ctx.stats["locals"]:
        log(f"AD: backward activity: {ctx.stats['dropped']} active value(s) reach no output "
            f"(no derivative code), {ctx.stats['locals']} local(s)/block(s) need no shadow")


def _entry_kinds(sites, clone_of) -> dict:
    """Parameter of a differentiated copy -> its bindings' kinds over the call sites."""
    out: dict = {}
    for s in sites:
        fn = clone_of.get(s.fn)
        if fn is None or s.mode == "batch":
            continue
        kinds = ["const"] * len(fn.args)
        for b in s.bindings:
            kinds[b.index] = b.kind
        for arg, k in zip(fn.args, kinds):
            out.setdefault(arg, set()).add(k)
    return out


def _same_object_consts(sites, clone_of) -> set:
    """Pairs (frozensets) of a differentiated copy's parameters that a call site binds,
    ``enzyme_const`` both, to pointers into the same object: a context struct passed
    twice, written through one and read through the other -- and of such a parameter
    and the global a call site binds it to (``&ctx`` of a ``static`` context, read by
    name as ``ctx.theta``)."""
    from ..analysis.activity import underlying_object
    out: set = set()
    for s in sites:
        fn = clone_of.get(s.fn)
        if fn is None or s.mode == "batch":
            continue
        roots = [(fn.args[b.index], underlying_object(b.value)) for b in _const_pointers(s)]
        for i, (a, r) in enumerate(roots):
            out.update(frozenset((a, b)) for b, q in roots[i + 1:] if q is r)
            if getattr(r, "is_global", False):
                out.add(frozenset((a, r)))
    return out


def _const_pointers(site):
    return [b for b in site.bindings
            if b.kind == "const" and b.value is not None and b.value.type.is_pointer
            and (b.value.is_instruction or b.value.is_argument or b.value.is_global)]


def _private_consts(sites, clone_of) -> set:
    """The parameters of differentiated copies that every call site binds,
    ``enzyme_const``, to a local of its caller whose address goes nowhere but into
    that call (nor is stored, returned or passed elsewhere): no global can point at
    what they point to."""
    from ..analysis.activity import address_uses, underlying_object
    from ..ir.instructions import Alloca, Load, Store
    seen: dict = {}
    for s in sites:
        fn = clone_of.get(s.fn)
        if fn is None or s.mode == "batch":
            continue
        bound = {b.index: b for b in _const_pointers(s)}
        for a in fn.args:
            b = bound.get(a.index)
            r = underlying_object(b.value) if b is not None else None
            private = isinstance(r, Alloca) and all(
                isinstance(u.user, Load) or isinstance(u.user, Store) and u.index == 1
                or u.user is s.call or (getattr(u.user, "callee_name", None) or "").startswith(
                    ("llvm.lifetime.", "llvm.memset.", "llvm.memcpy."))
                for u in address_uses(r, set()))
            seen[a] = seen.get(a, True) and private
    return {a for a, private in seen.items() if private}


def _shadow_globals(module, functions, registry, entry_kinds, names) -> dict:
    """Shadow globals for the writable globals that hold active intermediates, or
    pointers to them (see analysis/globals.py): zero-initialised internal globals of
    the same type (thread-local for a thread-local one; ``names``: copy -> original
    name, for messages)."""
    from ..analysis.globals import scratch_globals, shadow_linkage, thread_local_in_parallel
    from ..ir.values import ZeroInit
    from .errors import ADError, inst_location
    out = {}
    for g in scratch_globals(functions, registry.inactive_globals, entry_kinds):
        inst = thread_local_in_parallel(g, functions)
        if inst is not None:
            raise ADError(f"the thread-local variable '{g.name}' holds values that carry "
                          "derivatives inside an OpenMP parallel region: the other "
                          "threads' shadows of it cannot be cleared before each derivative "
                          "call", location=inst_location(inst, names),
                          hint="keep the per-thread values in a local variable of the "
                               "region (or an array indexed by omp_get_thread_num())")
        out[g] = module.add_global(f"{g.name}.enzyme_shadow", g.value_type,
                                   ZeroInit(g.value_type), linkage=shadow_linkage(g),
                                   align=g.align or 16)
    return out


def _check_dup_globals(site, shadows) -> None:
    """A global passed with enzyme_dup (the caller's shadow) that the function also
    uses by name as scratch (its own shadow global) would have two shadows."""
    if not shadows:
        return
    from ..analysis.globals import global_base
    from .callsite import location
    from .errors import CallSiteError
    for b in site.bindings:
        if b.kind == "dup" and getattr(b.value, "type", None) is not None \
                and b.value.type.is_pointer:
            g = global_base(b.value)
            if g is not None and g in shadows:
                raise CallSiteError(
                    f"global '{g.name}' is passed with enzyme_dup and a shadow, and the "
                    "differentiated code also stores floating-point values into it by "
                    "name (which gives it a shadow global): it would have two shadows",
                    location=location(site.call),
                    hint="use the global only through the argument in the differentiated "
                         "code, or pass a local copy")


def _free_zero_shadows(module, shadows, call, after) -> None:
    """Before a derivative call, and after a combined one (reverse or forward mode; an
    augmented forward's are needed until its reverse): free the zeroed shadows given
    to workspaces left in pointer variables (``runtime.fill_shadow_check``)."""
    from ..ir.instructions import Call
    from .emit import Emitter
    from .runtime import free_zero_shadows
    if not shadows or after and not isinstance(call, Call):
        return      # (after an invoke: left to the next derivative call)
    e = Emitter(module)
    if after:
        e.position_after(call)
    else:
        e.position_before(call)
    free_zero_shadows(e, module, shadows)


def _zero_shadow_globals(module, shadows, call) -> None:
    """Before a derivative call: the shadow globals start at zero (what the globals
    held before the call has derivative zero; no adjoint of an earlier call remains)."""
    from ..analysis.globals import thread_local
    from ..ir import types as T
    from ..ir.values import ConstantInt
    from .emit import Emitter
    from .libc import memset0
    if not shadows:
        return
    e = Emitter(module)
    e.position_before(call)
    dl = module.datalayout
    for s in shadows.values():
        n = ConstantInt(T.i64, dl.size_in_bytes(s.value_type))
        if thread_local(s):    # the calling thread's copy
            s = e.call(e.declare("llvm.threadlocal.address.p0", T.ptr, [T.ptr]), [s])
        memset0(e, s, n)


def _optimize_reached(module, names, log) -> str:
    """Pre-AD optimisation of ``names``; returns the module's new text.

    Only the functions whose bodies the pass has parsed (the call sites' holders and
    what they differentiate) go to LLVM as definitions; every body still unparsed goes
    as a declaration and is put back, verbatim, into LLVM's output — with its
    metadata and attribute-group numbers renumbered to the output's (a named metadata
    list ``!enzyme.keep`` of every node keeps all nodes alive and tells where LLVM
    moved each).  Whatever the renumbering cannot place exactly falls back to sending
    the whole module."""
    from .. import llvm
    return round_trip(module, lambda text: llvm.optimize_functions(text, names),
                      log, "pre-AD optimisation")


def round_trip(module, run, log, what: str) -> str:
    """``run`` (an LLVM pass over textual IR, returning text) on the function bodies the
    pass has parsed, the others sent as declarations and put back (see
    :func:`_optimize_reached`); the module's new text."""
    from ..ir import print_module
    from ..llvm import LLVMError
    try:
        return _slim_round_trip(module, run)
    except (_NoSlim, LLVMError) as e:     # e.g. a blockaddress of a body left out
        log(f"{what} on the whole module ({str(e).splitlines()[0]})")
        return run(print_module(module))


class _NoSlim(Exception):
    pass


_LINKAGE_WORDS = {"private", "internal", "available_externally", "linkonce", "weak", "common",
                  "appending", "extern_weak", "linkonce_odr", "weak_odr", "external"}
# !12 (metadata), #3 (attributes) — not inside a string (inline asm: ARM's "#1")
_REF = re.compile(r'"[^"]*"|(?<![\w.$-])([!#])(\d+)\b')


def _slim_round_trip(module, run) -> str:
    from ..ir.printer import Printer, global_name
    from ..ir.types import quote_name

    printer = Printer()
    full_function = printer.function
    kept: dict = {}     # name -> its definition's text, for the bodies never parsed

    def function(fn):
        if fn._lazy_body is None:
            return full_function(fn)
        if quote_name(fn.name) != fn.name:
            raise _NoSlim(f"function name @{global_name(fn.name)}")
        kept[fn.name] = full_function(fn)
        ft = fn.function_type
        prefix = " ".join(w for w in fn.prefix.split() if w not in _LINKAGE_WORDS)
        params = [f"{a.type} {a.attrs}".strip() for a in fn.args]
        if ft.varargs:
            params.append("...")
        attrs = Attributes.parse(fn.fn_attrs).without("comdat")
        return (f"declare {prefix + ' ' if prefix else ''}{ft.ret} @{fn.name}"
                f"({', '.join(params)}) {attrs}").rstrip()

    full_alias = printer.alias

    def alias(a):
        """An alias of a body left out would point to a declaration, which LLVM rejects:
        it goes as a declaration too and comes back as it was."""
        t = a.target
        while getattr(t, "opcode", None) in ("bitcast", "addrspacecast"):
            t = t.operand(0)
        if type(a).keyword != "alias" or not getattr(t, "is_function", False) \
                or t._lazy_body is None or not a.value_type.is_function:
            return full_alias(a)
        if quote_name(a.name) != a.name:
            raise _NoSlim(f"alias name @{global_name(a.name)}")
        kept[a.name] = full_alias(a)
        ft = a.value_type
        params = [str(p) for p in ft.params] + (["..."] if ft.varargs else [])
        return f"declare {ft.ret} @{a.name}({', '.join(params)})"

    printer.function = function
    printer.alias = alias
    text = printer.module(module)
    if not kept:
        return run(text)    # every body parsed: this is the whole module
    keys = list(module.metadata)
    if keys:
        text += "!enzyme.keep = !{" + ", ".join(f"!{k}" for k in keys) + "}\n"
    lines = run(text).split("\n")
    md_map: dict = {}
    attr_of: dict = {}      # attribute-group text -> number in the output
    keep_at = None
    for i, ln in enumerate(lines):
        if ln.startswith("!enzyme.keep = "):
            refs = re.findall(r"!(\d+)", ln)
            if len(refs) != len(keys):
                raise _NoSlim("metadata list changed length")
            md_map = dict(zip(keys, refs))
            keep_at = i
        elif ln.startswith("attributes #"):
            num, _, rest = ln[len("attributes #"):].partition(" = ")
            attr_of.setdefault(rest, num)
    if keys and keep_at is None:
        raise _NoSlim("metadata list dropped")
    if keep_at is not None:
        lines[keep_at] = ""
    extra = []
    next_attr = max((int(n) for n in attr_of.values()), default=-1) + 1
    attr_map: dict = {}
    for k, v in module.attribute_groups.items():
        n = attr_of.get(v)
        if n is None:
            n = attr_of[v] = str(next_attr)
            next_attr += 1
            extra.append(f"attributes #{n} = {v}")
        attr_map[k] = n

    maps = {"!": md_map, "#": attr_map}

    def remap(definition):
        try:
            return _REF.sub(lambda m: m.group(0) if m.group(1) is None
                            else m.group(1) + maps[m.group(1)][m.group(2)], definition)
        except KeyError as e:
            raise _NoSlim(f"reference to #{e} or !{e} that is not in the module") from None

    decl = re.compile(r"declare [^@]*@([-a-zA-Z$._0-9]+)\(")
    placed = 0
    for i, ln in enumerate(lines):
        if ln.startswith("declare "):
            m = decl.match(ln)
            if m and m.group(1) in kept:
                lines[i] = remap(kept[m.group(1)])
                placed += 1
    if placed != len(kept):
        raise _NoSlim(f"{len(kept) - placed} declaration(s) not found in LLVM's output")
    # LLVM prints only the named types and comdats something in its module uses: the
    # bodies put back may use others
    defined = {ln.partition(" = ")[0] for ln in lines if ln[:1] in ("%", "$")}
    types = [f"{t} = type {t.definition()}" for t in module.types.values()
             if str(t) not in defined]
    types += [c for c in module.comdats if c.partition(" = ")[0] not in defined]
    at = next((i for i, ln in enumerate(lines) if ln.startswith("target triple")), 0)
    lines[at + 1:at + 1] = types
    return "\n".join(lines + extra) + "\n"


def _define_markers(module):
    """Marker globals only declared (``extern int enzyme_dup;``) get a weak definition
    when still referenced, so the program links; unreferenced ones are dropped."""
    from ..ir import types as T
    from ..ir.values import ConstantInt
    from .callsite import MARKERS
    for g in list(module.global_variables):
        if g.name in MARKERS and g.is_declaration:
            if not g.uses:
                g.erase()
            else:
                g.initializer = ConstantInt(T.i32, 0)
                g.set_linkage("weak")
