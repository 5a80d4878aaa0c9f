"""OpenMP: differentiating through the LLVM OpenMP runtime ABI (``__kmpc_*``, what
clang emits for ``-fopenmp``), in reverse and forward mode.

clang outlines the body of ``#pragma omp parallel`` into a function
``outlined(ptr gtid, ptr btid, shared...)`` and calls
``__kmpc_fork_call(loc, n, outlined, shared...)``, which runs it on every thread of
a team; the shared variables are passed by reference.

Reverse mode.  The augmented forward sweep forks ``augmented_outlined`` (through a
wrapper) with the shared pointers followed by their shadows and a *team*: one tape
per thread (``{i64 threads, i64 capacity, tape[capacity]}``), so each thread keeps
its own cache (loop bounds of its static chunk, values its iterations need) in
the order it ran.  The reverse of the fork is a fork of ``diffe_outlined`` on a
team of the same size (``__kmpc_push_num_threads``; a different size aborts with a
message): thread k pops thread k's tape, so a worksharing loop runs the same
iterations per thread as in the forward sweep, in reverse; the runtime's loop
scheduling calls themselves need no reverse (``__kmpc_for_static_init_*`` /
``__kmpc_dispatch_*``: their bounds are cached per thread, so static, dynamic and
guided schedules replay exactly).  Generated code running on several threads (the
outlined function and everything it calls) adds adjoints into memory it does not
own (anything but its own allocas) with ``atomicrmw fadd``, so threads whose
iterations read the same element (a stencil) do not lose updates; in the reverse of
the region's body those additions are first combined per thread in a small table and
reach memory as one atomic addition per address and flush (``combine.py``).  Barriers
reverse to barriers.  Lock sections (``critical``, ``omp_set_lock``..``unset``, the
reductions below) draw a ticket from the team in the forward sweep, and the reverse
sweep reverses them one at a time in the reverse order of their tickets: the adjoint
of ``s = s * p`` or of a max depends on that order, and the order alone excludes the
other threads (no lock is taken; a user's lock may be destroyed by then).  Outside a
differentiated team (one thread), a named critical section's lock is simply taken
again in the reverse sweep.

Reductions (``reduction(+:s)``): ``__kmpc_reduce[_nowait]`` may combine the threads'
private copies in a tree through the reduction callback (invisible to the AD), so
the differentiated code replaces it with a critical section in which every
thread runs the combining code clang emitted for the "critical" method
(``s = s + s_private``, or a max, a product...; the runtime's return value 1, so the
atomic variant, a compare-and-exchange loop for max and product, is dead code the AD
does not see), reversed in order as above.

Forward mode forks the tangent function of ``outlined`` with the shadows appended
the same way; reductions become critical sections as above.

A float passed into a region by value (``firstprivate``) is passed by reference
before differentiation (:func:`prepare`), so that it is shared data like the rest.

Not handled (a compile error naming the construct): tasks, ``ordered``,
``copyprivate``, ``teams``, ``threadprivate``, the runtime's atomic helpers, a float
that carries a derivative still passed by value (a region used other than by its
forks), and reverse-mode derivative code of a region differentiated again (its team
of tapes has no shadow).
"""

from __future__ import annotations

from ..analysis.activity import floatish, underlying_object
from ..analysis.effects import mem_intrinsic
from ..ir import types as T
from ..ir.instructions import Alloca, Call, Cast, Load, Store
from ..ir.module import Function
from ..ir.values import ConstantInt
from .errors import ADError, NoDerivativeError

__all__ = ["FORK", "handles", "outlined_of", "aug_call", "rev_call", "fwd_call",
           "accumulate", "is_private", "EFFECT_NAMES"]

FORK = "__kmpc_fork_call"

# what each runtime call does in the differentiated code: ("keep", reverse partner
# or None) -- the call stays in the forward code and its reverse calls the partner;
# "reduce"/"end_reduce"/"end_reduce_nowait"/"fork": handled specially.
_KEEP = {
    "__kmpc_global_thread_num": None, "__kmpc_bound_thread_num": None,
    "__kmpc_global_num_threads": None, "__kmpc_bound_num_threads": None,
    "__kmpc_in_parallel": None, "__kmpc_ok_to_fork": None,
    "__kmpc_for_static_init_4": None, "__kmpc_for_static_init_4u": None,
    "__kmpc_for_static_init_8": None, "__kmpc_for_static_init_8u": None,
    "__kmpc_for_static_fini": None,
    "__kmpc_dispatch_init_4": None, "__kmpc_dispatch_init_4u": None,
    "__kmpc_dispatch_init_8": None, "__kmpc_dispatch_init_8u": None,
    "__kmpc_dispatch_next_4": None, "__kmpc_dispatch_next_4u": None,
    "__kmpc_dispatch_next_8": None, "__kmpc_dispatch_next_8u": None,
    "__kmpc_dispatch_fini_4": None, "__kmpc_dispatch_fini_4u": None,
    "__kmpc_dispatch_fini_8": None, "__kmpc_dispatch_fini_8u": None,
    "__kmpc_dispatch_deinit": None,
    "__kmpc_push_num_threads": None, "__kmpc_push_proc_bind": None,
    "__kmpc_single": None, "__kmpc_end_single": None,
    "__kmpc_master": None, "__kmpc_end_master": None,
    "__kmpc_masked": None, "__kmpc_end_masked": None,
    "__kmpc_flush": None,
    "__kmpc_barrier": "__kmpc_barrier",
    "__kmpc_critical": "__kmpc_end_critical",
    "__kmpc_critical_with_hint": "__kmpc_end_critical",
    "__kmpc_end_critical": "__kmpc_critical",
    "__kmpc_serialized_parallel": "__kmpc_end_serialized_parallel",
    "__kmpc_end_serialized_parallel": "__kmpc_serialized_parallel",
    "omp_set_lock": "omp_unset_lock", "omp_unset_lock": "omp_set_lock",
    "omp_set_nest_lock": "omp_unset_nest_lock", "omp_unset_nest_lock": "omp_set_nest_lock",
}
_SPECIAL = {FORK: "fork", "__kmpc_reduce": "reduce", "__kmpc_reduce_nowait": "reduce",
            "__kmpc_end_reduce": "end_reduce", "__kmpc_end_reduce_nowait": "end_reduce_nowait"}
# lock sections: released / taken by these (the reverse sweep reverses them in the
# reverse of the order the threads ran them in the forward sweep)
_RELEASES = {"__kmpc_end_critical", "omp_unset_lock", "omp_unset_nest_lock"}
_ACQUIRES = {"__kmpc_critical", "__kmpc_critical_with_hint", "omp_set_lock",
             "omp_set_nest_lock"}
# constructs that are refused, by name prefix: (construct, hint)
_REFUSED = (
    (("__kmpc_omp_task", "__kmpc_taskloop", "__kmpc_taskgroup", "__kmpc_end_taskgroup",
      "__kmpc_omp_taskwait", "__kmpc_omp_taskyield", "__kmpc_task_reduction",
      "__kmpc_taskred"),
     "OpenMP tasks (#pragma omp task / taskloop / taskwait)",
     "use a worksharing loop (#pragma omp parallel for) in the differentiated code, or "
     "move the tasks out of it"),
    (("__kmpc_ordered", "__kmpc_end_ordered", "__kmpc_doacross"),
     "an ordered region (#pragma omp ordered)", "remove the ordered clause"),
    (("__kmpc_copyprivate",), "single copyprivate",
     "share the variable instead (declare it outside the parallel region)"),
    (("__kmpc_fork_teams", "__kmpc_push_num_teams", "__kmpc_fork_call_if",
      "__kmpc_distribute"), "teams / distribute or an if() clause on parallel",
     "use #pragma omp parallel for"),
    (("__kmpc_threadprivate",), "threadprivate variables",
     "pass the data through arguments instead"),
    (("__kmpc_atomic_",), "an atomic update done by the OpenMP runtime (long double or "
     "complex #pragma omp atomic)", "use double or float for the updated variable"),
)
# the user-level lock API handled here besides the __kmpc_ entry points
_API = {"omp_set_lock", "omp_unset_lock", "omp_set_nest_lock", "omp_unset_nest_lock"}
EFFECT_NAMES = sorted(set(_KEEP) | set(_SPECIAL))


def handles(name: str) -> bool:
    """Whether calls to ``name`` are this module's to differentiate."""
    return name.startswith("__kmpc_") or name in _API


def outlined_of(call):
    """The outlined function of a ``__kmpc_fork_call``, else None."""
    if (call.callee_name or "") == FORK and call.num_args >= 3 \
            and isinstance(call.args[2], Function):
        return call.args[2]
    return None


def is_private(p) -> bool:
    """Whether ``p`` points into the running function's own stack (an alloca): memory
    no other thread adds adjoints to."""
    return isinstance(underlying_object(p), Alloca)


def accumulate(e, p, d, align=None):
    """``*p += d`` as atomic additions (memory other threads' reverse sweeps add to);
    vectors lane by lane.  The additions take the float type's natural alignment (as
    C lays floats out) when the access said less: an outlined region's pointers to
    shared variables come with ``align 1`` from clang at -O1 and up, and an atomic
    addition that under-aligned is a call into libatomic, which the program does not
    link (``parallel sections``); x86-64 performs a locked addition at any address."""
    ty = d.type
    natural = e.module.datalayout.size_in_bytes(ty.element if ty.is_vector else ty)
    if ty.is_vector:
        el = ty.element
        for k in range(ty.count):
            x = e.extractelement(d, ConstantInt(T.i32, k))
            q = e.gep(el, p, [ConstantInt(T.i64, k)])
            e.atomicrmw("fadd", q, x, "monotonic", natural)
        return
    e.atomicrmw("fadd", p, d, "monotonic", max(align or 0, natural))


def prepare(fn) -> None:
    """In a private copy of a function to differentiate: a ``switch`` on the result of
    ``__kmpc_reduce[_nowait]`` goes to its case 1 (the combining code under the lock,
    which the differentiated code always runs: see ``aug_call``); the atomic case
    (a compare-and-exchange loop for max/min/product) becomes unreachable and is
    neither differentiated nor checked.  Floats passed into a region by value
    (``firstprivate``) go by reference (:func:`_floats_by_reference`)."""
    from ..ir.instructions import Br, Phi, Switch
    for inst in list(fn.instructions()):
        o = outlined_of(inst) if isinstance(inst, Call) else None
        if o is not None and not o.is_declaration:
            _floats_by_reference(o)
    for inst in list(fn.instructions()):
        if not isinstance(inst, Call) or _SPECIAL.get(inst.callee_name or "") != "reduce":
            continue
        for u in list(inst.uses):
            sw = u.user
            if not isinstance(sw, Switch) or u.index != 0:
                continue
            target = next((blk for v, blk in sw.cases
                           if isinstance(v, ConstantInt) and v.value == 1), sw.default)
            blk = sw.parent
            gone = {x for x in [sw.default] + [b for _, b in sw.cases] if x is not target}
            for x in gone:
                for phi in [i for i in x.instructions if isinstance(i, Phi)]:
                    phi.remove_incoming(blk)
            # several edges from blk into target (two cases): the phis keep one
            for phi in [i for i in target.instructions if isinstance(i, Phi)]:
                while sum(1 for _, b in phi.incoming if b is blk) > 1:
                    v = phi.incoming_for(blk)
                    phi.remove_incoming(blk)
                    phi.add_incoming(v, blk)
            sw.erase()
            blk.append(Br(target))


def _holds_float(p) -> bool:
    """Whether the integer parameter ``p`` of an outlined region carries a float's bits:
    cast to a float, or stored where a float is loaded from (clang's ``.casted`` copy
    at -O0)."""
    for u in p.uses:
        user = u.user
        if isinstance(user, Cast) and user.opcode == "bitcast" and floatish(user.type):
            return True
        if isinstance(user, Store) and u.index == 0:
            base = underlying_object(user.operand(1))
            if isinstance(base, Alloca) and any(
                    isinstance(v.user, Load) and floatish(v.user.type) for v in base.uses):
                return True
    return False


def _floats_by_reference(o) -> None:
    """A float passed into the region ``o`` by value (``firstprivate(alpha)``: its bits
    as an integer argument of the fork) is passed by reference instead: the caller
    stores it in a local of its own and passes the address; the region loads it on
    entry, so each thread still has its own copy.  Its derivative then goes the way of
    shared data's: a shadow local, the threads' adjoints added into it atomically --
    where by value a float's derivative could not leave the region."""
    from ..ir.values import Argument
    o.materialize()     # (the parameters' uses are known once the body is parsed)
    ks = [k for k in range(2, len(o.args))
          if not o.args[k].type.is_pointer and _holds_float(o.args[k])]
    if not ks:
        return
    sites = []
    for u in list(o.uses):
        c = u.user
        if isinstance(c, Call) and c.called_function is o:
            sites.append((c, 0))            # the serialized region (an if() clause)
        elif isinstance(c, Call) and outlined_of(c) is o:
            sites.append((c, 1))            # the fork: its arguments start one later
        else:
            return                          # used some other way: left by value
    float_ty = {}
    for k in ks:    # the float type whose bits the integer carries
        float_ty[k] = next((u.user.type for u in o.args[k].uses
                            if isinstance(u.user, Cast) and u.user.opcode == "bitcast"
                            and floatish(u.user.type)), T.double)
    for c, shift in sites:
        fn = c.parent.parent
        for k in ks:
            v = c.args[k + shift]
            if isinstance(v, Cast) and v.opcode == "bitcast" and floatish(v.operand(0).type):
                v = v.operand(0)        # the float itself, so its derivative is stored
            else:
                cast = Cast("bitcast", v, float_ty[k])
                cast.insert_before(c)
                v = cast
            slot = Alloca(v.type, align=8)
            fn.blocks[0].insert(0, slot)
            Store(v, slot, 8).insert_before(c)
            c.set_arg(k + shift, slot)
    entry = o.blocks[0]
    at = entry.first_non_phi
    for k in ks:
        old = o.args[k]
        new = Argument(T.ptr, old.name, o, k, "noundef nonnull")
        o.args[k] = new
        ld = Load(float_ty[k], new, 8)
        ld.insert_before(at)
        bits = Cast("bitcast", ld, old.type)
        bits.insert_before(at)
        for u in list(old.uses):    # a cast back to the float: the loaded float itself
            user = u.user
            if isinstance(user, Cast) and user.opcode == "bitcast" and user.type == ld.type:
                user.replace_all_uses_with(ld)
                user.erase()
        old.replace_all_uses_with(bits)
        if not bits.uses:
            bits.erase()
    ft = o.function_type
    o.function_type = T.FunctionType(ft.ret, [a.type for a in o.args], ft.varargs)
    for c, shift in sites:
        if shift == 0:
            c.function_type = o.function_type


def _construct_error(gen, inst, name):
    for prefixes, what, hint in _REFUSED:
        if name.startswith(prefixes):
            raise NoDerivativeError(f"{what} cannot be differentiated ('{name}')",
                                    location=gen.ctx.err_loc(inst), hint=hint)
    raise NoDerivativeError(f"no derivative rule for the OpenMP runtime call '{name}'",
                            location=gen.ctx.err_loc(inst),
                            hint="use parallel / for (static or dynamic schedule) / "
                                 "reduction(+:...) / critical / atomic / barrier / single "
                                 "/ master, or move the construct out of the differentiated "
                                 "code")


def _gtid(e, loc):
    """The calling thread's global id (fresh: the reverse team's threads need not have
    the forward team's ids)."""
    fn = e.declare("__kmpc_global_thread_num", T.i32, [T.ptr])
    return e.call(fn, [loc])


def _call_partner(e, name, args):
    """A call of the runtime function ``name`` with the reverse sweep's ``args``
    (gtid replaced by the current thread's)."""
    if name.startswith("omp_"):
        e.call(e.declare(name, T.void, [T.ptr]), [args[0]])
        return
    loc = args[0]
    if name == "__kmpc_barrier" or name.endswith("serialized_parallel"):
        e.call(e.declare(name, T.void, [T.ptr, T.i32]), [loc, _gtid(e, loc)])
    elif name in ("__kmpc_critical", "__kmpc_end_critical"):
        e.call(e.declare(name, T.void, [T.ptr, T.i32, T.ptr]),
                  [loc, _gtid(e, loc), args[2]])
    else:   # pragma: no cover - _KEEP lists only the partners above
        raise AssertionError(name)


def _reduce_as_critical(e, A, kind):
    """In differentiated code, a reduction is combined under a lock by every thread
    (the "critical" method): replace ``A`` accordingly."""
    loc, gtid = A.args[0], A.args[1]
    lck = A.args[-1]
    crit = e.declare("__kmpc_critical", T.void, [T.ptr, T.i32, T.ptr])
    end = e.declare("__kmpc_end_critical", T.void, [T.ptr, T.i32, T.ptr])
    e.position_before(A)
    if kind == "reduce":
        e.call(crit, [loc, gtid, lck])
        new = ConstantInt(T.i32, 1)
        A.replace_all_uses_with(new)
    else:
        new = e.call(end, [loc, gtid, lck])
        if kind == "end_reduce":
            e.call(e.declare("__kmpc_barrier", T.void, [T.ptr, T.i32]), [loc, gtid])
    A.erase()
    return new


def _fork_const_fields(act, inst) -> frozenset:
    """``Activity.callee_const_fields`` of a fork's shared variables, for the outlined
    function's parameters (each one position before its operand: the fork's operands
    are loc, count, the outlined function, then the shared variables; the outlined
    function's parameters gtid, btid, then the same)."""
    return frozenset((f[0] - 1,) + f[1:] for f in act.callee_const_fields(inst.args)
                     if f[0] >= 3)


def _fork_kinds(gen, inst):
    """Activity of the outlined function's parameters: gtid, btid, then the shared
    values (pointers with shadows: dup).  A float still carried by value (see
    :func:`_floats_by_reference`) that carries a derivative is refused."""
    kinds = ["const", "const"]
    for a in inst.args[3:]:
        if a.type.is_pointer:
            kinds.append("dup" if a in gen.act.shadowed else "const")
            continue
        if _carries_active_float(a, gen.act):
            raise ADError("a floating-point value that carries a derivative is passed into "
                          "the parallel region by value (firstprivate); not supported",
                          location=gen.ctx.err_loc(inst),
                          hint="make the variable shared (the default for variables "
                               "declared outside the region), or pass it through memory")
        kinds.append("const")
    return kinds


def _carries_active_float(v, act):
    if isinstance(v, Cast) and floatish(v.operand(0).type):
        return v.operand(0) in act.active
    if isinstance(v, Load):
        base = underlying_object(v.operand(0))
        for u in getattr(base, "users", []):
            if isinstance(u, Store) and floatish(u.operand(0).type) and u.operand(0) in act.active:
                return True
    return False


def _push_cap(gen, inst):
    """The thread count a ``num_threads(k)`` clause asks for (``__kmpc_push_num_threads``
    before the fork: in its block, or in the blocks before it while each has one
    predecessor -- with an ``if()`` clause the push comes before the branch between
    the fork and the serialized region), as a value of the augmented function, else
    None."""
    blk, end = inst.parent, inst.parent.index_of(inst)
    for _ in range(8):
        for x in reversed(blk.instructions[:end]):
            if isinstance(x, Call) and (x.callee_name or "") == "__kmpc_push_num_threads":
                return gen.vmap[x].args[2]
            if isinstance(x, Call) and (x.callee_name or "").startswith("__kmpc_") \
                    and (x.callee_name or "") != "__kmpc_global_thread_num":
                return None
        preds = blk.predecessors
        if len(preds) != 1:
            return None
        blk = preds[0]
        end = len(blk.instructions)
    return None


# ------------------------------------------------------------------ reverse mode
def aug_call(gen, inst, A) -> bool:
    """The augmented forward sweep of an OpenMP runtime call (``gen``: ReverseGen)."""
    name = inst.callee_name or ""
    if not handles(name):
        return False
    e = gen.e
    kind = _SPECIAL.get(name)
    if gen.parallel and (name in _RELEASES or kind in ("end_reduce", "end_reduce_nowait")):
        # the section's place in the team's order, for the reverse sweep
        e.position_before(A)
        tickets = gen.__dict__.setdefault("omp_tickets", {})
        tickets[inst] = e.call(_ticket_fn(gen, "ticket"), [gen.tape_aug])
    if name in _KEEP:
        return True
    if kind is None:
        _construct_error(gen, inst, name)
    if kind != "fork":
        gen.vmap[inst] = _reduce_as_critical(e, A, kind)
        return True
    outlined = _check_outlined(gen, inst)
    kinds = _fork_kinds(gen, inst)
    g = gen.ctx.get(outlined, kinds, False, parallel=True,
                    const_fields=_fork_const_fields(gen.act, inst))
    g.region_root = True   # its reverse combines adjoint additions per thread (combine.py)
    aug_w, _ = _wrappers(gen, g, kinds)
    e.position_before(A)
    cap = e.call(e.declare("omp_get_max_threads", T.i32, []), [])
    pushed = _push_cap(gen, inst)
    if pushed is not None:
        cap = e.select(e.icmp("sgt", pushed, cap), pushed, cap)
    team = e.call(_team_new(gen), [cap])
    extra = list(A.args[3:])
    for a, k in zip(inst.args[3:], kinds[2:]):
        if k == "dup":
            extra.append(gen._sh_aug(a, inst))
    extra.append(team)
    c = e.call(A.callee, [A.args[0], ConstantInt(T.i32, len(extra)), aug_w] + extra)
    c.function_type = A.function_type
    A.erase()
    gen.vmap[inst] = c
    teams = gen.__dict__.setdefault("omp_teams", {})
    teams[inst] = (team, g, kinds)
    return True


def rev_call(gen, inst, b) -> bool:
    """The reverse of an OpenMP runtime call, emitted at ``gen.e``'s position (and of a
    memcpy/memmove in code running on several threads)."""
    name = inst.callee_name or ""
    if gen.parallel and mem_intrinsic(name) in ("memcpy", "memmove"):
        return _rev_parallel_copy(gen, inst, b, mem_intrinsic(name))
    if not handles(name):
        return False
    e = gen.e
    args = inst.args
    partner = _KEEP.get(name)
    kind = _SPECIAL.get(name)
    # Lock sections in code running on a team are reversed one at a time, in the
    # reverse of the order the forward sweep ran them (tickets): that order excludes
    # the other threads without the lock (a user's lock may be gone by now).  Run by
    # one thread (no team), a section keeps its lock: a named critical section's, or a
    # lock that outlives the call (not one of the function's own locals).
    if name in _RELEASES or kind in ("end_reduce", "end_reduce_nowait"):
        if kind == "end_reduce":
            _call_partner(e, "__kmpc_barrier", [gen.primal(args[0], b)])
        if gen.parallel:
            _wait_turn(gen, inst, b)
        elif not (name.startswith("omp_") and is_private(args[0])):
            _call_partner(e, partner or "__kmpc_critical", _partner_args(gen, args, b))
        return True
    if name in _ACQUIRES or kind == "reduce":
        if gen.parallel:
            e.call(_ticket_fn(gen, "pass"), [gen.tape_rev])
        elif not (name.startswith("omp_") and is_private(args[0])):
            _call_partner(e, partner or "__kmpc_end_critical", _partner_args(gen, args, b))
        return True
    if name in _KEEP:
        if partner is not None:
            _call_partner(e, partner, _partner_args(gen, args, b))
        return True
    loc = gen.primal(args[0], b)
    team_aug, g, kinds = gen.omp_teams[inst]
    _, rev_w = _wrappers(gen, g, kinds)
    team = gen._cached(("omp.team", inst), team_aug, T.ptr, inst.parent, b)
    nth = e.cast("trunc", e.load(T.i64, team, 8), T.i32)
    push = e.declare("__kmpc_push_num_threads", T.void, [T.ptr, T.i32, T.i32])
    e.call(push, [loc, _gtid(e, loc), nth])
    extra = [gen.primal(a, b) for a in args[3:]]
    for a, k in zip(args[3:], kinds[2:]):
        if k == "dup":
            extra.append(gen.shadow(a, b))
    extra.append(team)
    fork = e.declare(FORK, T.void, [T.ptr, T.i32, T.ptr], varargs=True)
    e.call(fork, [loc, ConstantInt(T.i32, len(extra)), rev_w] + extra)
    e.call(e.declare("free", T.void, [T.ptr]), [team])
    return True


def _rev_parallel_copy(gen, inst, b, mem):
    """The reverse of a copy of floating-point data out of memory other threads may
    add adjoints to: ``ds[i] += dd[i]`` atomically, ``dd[i] = 0``.  False: the
    generic reverse is right (nothing to add, or the source is this thread's own)."""
    args = inst.args
    kind = getattr(gen, "mem_kind", {}).get(inst)
    act = gen.act
    if args[0] not in act.shadowed or kind not in ("double", "float") \
            or args[1] not in act.shadowed or is_private(args[1]):
        return False
    if mem == "memmove":
        raise ADError("memmove of floating-point data out of shared memory inside a "
                      "parallel region is not supported", location=gen.ctx.err_loc(inst),
                      hint="copy into a private buffer with memcpy, or element by element")
    e = gen.e
    ty = T.double if kind == "double" else T.float
    n = gen.primal(args[2], b)
    if n.type != T.i64:
        n = e.cast("zext", n, T.i64)
    e.call(_atomic_copy_adjoint(gen.ctx.module, ty),
              [gen.shadow(args[0], b), gen.shadow(args[1], b), n])
    return True


def _atomic_copy_adjoint(m, ty):
    """``__enzyme_py_memcpy_adj_atomic_<T>(dd, ds, nbytes)``: ``ds[i] += dd[i]``
    (atomic), ``dd[i] = 0``."""
    from .emit import Emitter, type_suffix
    from .runtime import _new
    from ..ir.values import ConstantFP
    fn, new = _new(m, f"__enzyme_py_memcpy_adj_atomic_{type_suffix(ty)}", T.void,
                   [T.ptr, T.ptr, T.i64])
    if not new:
        return fn
    e = Emitter(m)
    dd, ds, nb = fn.args
    entry, loop, exit_ = (fn.append_basic_block(x) for x in ("entry", "loop", "exit"))
    size = m.datalayout.store_size(ty)
    e.position_at_end(entry)
    n = e.binop("udiv", nb, ConstantInt(T.i64, size))
    e.cbranch(e.icmp("eq", n, ConstantInt(T.i64, 0)), exit_, loop)
    e.position_at_end(loop)
    i = e.phi(T.i64)
    pd = e.gep(ty, dd, [i])
    ps = e.gep(ty, ds, [i])
    e.atomicrmw("fadd", ps, e.load(ty, pd), "monotonic", size)
    e.store(ConstantFP(ty, 0.0), pd)
    i1 = e.binop("add", i, ConstantInt(T.i64, 1))
    e.cbranch(e.icmp("ult", i1, n), loop, exit_)
    i.add_incoming(ConstantInt(T.i64, 0), entry)
    i.add_incoming(i1, loop)
    e.position_at_end(exit_)
    e.ret()
    return fn


def _partner_args(gen, args, b):
    """The reverse sweep's arguments for a partner call: loc (or the lock), and the
    lock of a critical section (argument 2; a reduction's is its last)."""
    out = [gen.primal(args[0], b), None]
    if len(args) > 2 and args[0].type.is_pointer:
        out.append(gen.primal(args[2] if len(args) < 5 else args[-1], b))
    return out


def _wait_turn(gen, inst, b):
    """Reverse sweep, before re-taking a lock released at ``inst``: wait until the
    sections that followed this one in the forward sweep have been reversed (the
    adjoint of ``s = s * p`` under a lock depends on the order)."""
    tk = gen._cached(("omp.ticket", inst), gen.omp_tickets[inst], T.i64, inst.parent, b)
    gen.e.call(_ticket_fn(gen, "turn"), [gen.tape_rev, tk])


_REGION = "__enzyme_py_omp_region."   # the microtasks of the two sweeps


def _check_outlined(gen, inst):
    """The outlined function of a fork, which must have a body and must not be one of
    the reverse mode's own microtasks (derivative code of a region, differentiated
    again: the team's tapes have no shadows)."""
    outlined = outlined_of(inst)
    if outlined is None or outlined.is_declaration:
        raise NoDerivativeError("__kmpc_fork_call of a function whose body is not visible",
                                location=gen.ctx.err_loc(inst))
    if outlined.name.startswith(_REGION):
        raise NoDerivativeError(
            "a higher-order derivative through reverse-mode derivative code of an OpenMP "
            "parallel region is not supported", location=gen.ctx.err_loc(inst),
            hint="differentiate the parallel code once per derivative, or use forward "
                 "mode inside (forward over forward goes through parallel regions)")
    return outlined


def _wrappers(gen, g, kinds):
    """The microtasks forked in the two sweeps: ``(gtid, btid, shared..., shadows...,
    team)``, calling ``g.aug`` / ``g.rev`` with this thread's tape."""
    cache = gen.ctx.__dict__.setdefault("omp_wrappers", {})
    got = cache.get(g)
    if got is not None:
        return got
    from .emit import Emitter
    m = gen.ctx.module
    P = g.P
    types = [a.type for a in P.args]
    params = list(types) + [T.ptr for k in kinds[2:] if k == "dup"] + [T.ptr]
    out = []
    for which, target in (("aug", g.aug), ("rev", g.rev)):
        w = m.add_function(f"{_REGION}{target.name}", T.FunctionType(T.void, params),
                           linkage="internal", fn_attrs=gen.ctx.attrs_for(P))
        e = Emitter(m)
        e.position_at_end(w.append_basic_block("entry"))
        n = len(types)
        team = w.args[-1]
        tape = e.call(_team_tape(gen), [team, ConstantInt(T.i32, 1 if which == "rev"
                                                          else 0)])
        call_args, s = [], n
        for k, kd in enumerate(kinds):
            call_args.append(w.args[k])
            if kd == "dup":
                call_args.append(w.args[s])
                s += 1
        call_args.append(tape)
        e.call(target, call_args)
        if which == "rev":
            e.call(e.declare("free", T.void, [T.ptr]), [e.load(T.ptr, tape, 8)])
        e.ret()
        out.append(w)
    cache[g] = tuple(out)
    return cache[g]


_TAPE_BYTES = 24   # runtime.TAPE_TYPE
_HEADER = 32       # {i64 threads, i64 capacity, i64 ticket, i64 unused}


def _team_new(gen):
    """``ptr __enzyme_py_omp_team_new(i32 cap)``: zeroed ``{i64 threads, i64 cap,
    i64 ticket, i64 unused, tape[cap]}``."""
    from .emit import Emitter
    from .runtime import _check, _new
    m = gen.ctx.module
    fn, new = _new(m, "__enzyme_py_omp_team_new", T.ptr, [T.i32])
    if not new:
        return fn
    e = Emitter(m)
    e.position_at_end(fn.append_basic_block("entry"))
    cap = e.cast("sext", fn.args[0], T.i64)
    cap = e.select(e.icmp("slt", cap, ConstantInt(T.i64, 1)), ConstantInt(T.i64, 1), cap)
    n = e.binop("add", e.binop("mul", cap, ConstantInt(T.i64, _TAPE_BYTES)),
                ConstantInt(T.i64, _HEADER))
    p = e.call(e.declare("calloc", T.ptr, [T.i64, T.i64]), [n, ConstantInt(T.i64, 1)])
    _check(m, e, fn, p, n, "allocating the tapes of a parallel region")
    e.store(cap, e.gep_bytes(p, 8), 8)
    e.ret(p)
    return fn


def _team_tape(gen):
    """``ptr __enzyme_py_omp_tape(ptr team, i32 reverse)``: the calling thread's tape;
    the forward sweep records the team size (thread 0), the reverse checks it."""
    from .emit import Emitter
    from .runtime import _new
    m = gen.ctx.module
    fn, new = _new(m, "__enzyme_py_omp_tape", T.ptr, [T.ptr, T.i32])
    if not new:
        return fn
    e = Emitter(m)
    team, rev = fn.args
    entry, fwd, rv, rec, ok, bad_cap, bad_n = (fn.append_basic_block(x) for x in (
        "entry", "fwd", "rev", "record", "ok", "too_many", "mismatch"))
    e.position_at_end(entry)
    tid = e.call(e.declare("omp_get_thread_num", T.i32, []), [])
    nth = e.cast("sext", e.call(e.declare("omp_get_num_threads", T.i32, []), []), T.i64)
    tid64 = e.cast("sext", tid, T.i64)
    e.cbranch(e.icmp("ne", rev, ConstantInt(T.i32, 0)), rv, fwd)
    e.position_at_end(fwd)
    cap = e.load(T.i64, e.gep_bytes(team, 8), 8)
    e.cbranch(e.icmp("sge", tid64, cap), bad_cap, rec)
    e.position_at_end(rec)
    e.store(nth, team, 8, ordering="monotonic")   # every thread, same value
    e.br(ok)
    e.position_at_end(rv)
    rec_n = e.load(T.i64, team, 8)
    e.cbranch(e.icmp("ne", rec_n, nth), bad_n, ok)
    e.position_at_end(ok)
    off = e.binop("add", e.binop("mul", tid64, ConstantInt(T.i64, _TAPE_BYTES)),
                  ConstantInt(T.i64, _HEADER))
    e.ret(e.gep_bytes(team, off))
    for blk, msg in ((bad_cap, "enzyme: a parallel region being differentiated ran with "
                      "more threads than omp_get_max_threads() (or its num_threads "
                      "clause) said\n"),
                     (bad_n, "enzyme: the reverse of a parallel region got a different "
                      "number of threads than the forward one (OMP_DYNAMIC, or a thread "
                      "limit?); the derivative needs the same team\n")):
        e.position_at_end(blk)
        _fail(m, e, msg)
    return fn


def _ticket_fn(gen, which):
    """The runtime of ordered lock sections, on the team a thread's tape belongs to
    (``tape - header - 24 * omp_get_thread_num()``):
    ``i64 __enzyme_py_omp_ticket(tape)`` (forward, inside the section: the section's
    place in the team's order), ``void __enzyme_py_omp_turn(tape, i64 ticket)``
    (reverse, before taking the lock: wait, yielding, until every section that came
    later in the forward sweep has been reversed) and ``void __enzyme_py_omp_pass(tape)``
    (reverse, after releasing it: the next earlier section may go)."""
    from .emit import Emitter
    from .runtime import _new
    m = gen.ctx.module
    params = [T.ptr, T.i64] if which == "turn" else [T.ptr]
    fn, new = _new(m, f"__enzyme_py_omp_{which}", T.i64 if which == "ticket" else T.void,
                   params)
    if not new:
        return fn
    e = Emitter(m)
    entry = fn.append_basic_block("entry")
    e.position_at_end(entry)
    tid = e.cast("sext", e.call(e.declare("omp_get_thread_num", T.i32, []), []), T.i64)
    off = e.binop("add", e.binop("mul", tid, ConstantInt(T.i64, _TAPE_BYTES)),
                  ConstantInt(T.i64, _HEADER - 16))
    counter = e.gep_bytes(fn.args[0], e.binop("sub", ConstantInt(T.i64, 0), off))
    if which == "ticket":
        e.ret(e.atomicrmw("add", counter, ConstantInt(T.i64, 1), "seq_cst", 8))
    elif which == "pass":
        e.atomicrmw("sub", counter, ConstantInt(T.i64, 1), "seq_cst", 8)
        e.ret()
    else:
        loop, wait, done = (fn.append_basic_block(x) for x in ("loop", "wait", "done"))
        want = e.binop("add", fn.args[1], ConstantInt(T.i64, 1))
        e.br(loop)
        e.position_at_end(loop)
        v = e.load(T.i64, counter, 8, ordering="seq_cst")
        e.cbranch(e.icmp("eq", v, want), done, wait)
        e.position_at_end(wait)
        e.call(e.declare("sched_yield", T.i32, []), [])
        e.br(loop)
        e.position_at_end(done)
        e.ret()
    return fn


def _fail(m, e, msg):
    from .runtime import _string
    s = _string(m, msg)
    write = e.declare("write", T.i64, [T.i32, T.ptr, T.i64])
    e.call(write, [ConstantInt(T.i32, 2), s, ConstantInt(T.i64, len(msg.encode()))])
    e.call(e.declare("abort", T.void, []), [], fn_attrs="noreturn nounwind")
    e.unreachable()


# ------------------------------------------------------------------ forward mode
def fwd_call(fg, inst, A) -> bool:
    """Forward mode of an OpenMP runtime call (``fg``: ForwardGen)."""
    name = inst.callee_name or ""
    if not handles(name):
        return False
    if name in _KEEP:
        return True
    kind = _SPECIAL.get(name)
    if kind is None:
        _construct_error(fg, inst, name)
    e = fg.e
    if kind != "fork":
        fg.vmap[inst] = _reduce_as_critical(e, A, kind)
        return True
    outlined = _check_outlined(fg, inst)
    kinds = _fork_kinds(fg, inst)
    g = fg.ctx.get(outlined, kinds, fg.W, const_fields=_fork_const_fields(fg.act, inst))
    extra = []
    for a, pa, k in zip(inst.args[3:], A.args[3:], kinds[2:]):
        extra.append(pa)
        if k == "dup":
            extra.extend(fg.S(a, inst))
    e.position_before(A)
    c = e.call(A.callee, [A.args[0], ConstantInt(T.i32, len(extra)), g.fn] + extra)
    c.function_type = A.function_type
    A.erase()
    fg.vmap[inst] = c
    return True
