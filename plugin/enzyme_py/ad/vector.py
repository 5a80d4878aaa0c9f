"""Vector (batch) reverse mode and the batched primal.

``__enzyme_autodiff(f, enzyme_width, N, ...)`` takes N shadows per duplicated
argument (``enzyme_dup, x, dx0, ..., dxN-1`` or ``enzyme_dupv, byte_stride, x, dxs``) and
returns, for each active (``enzyme_out``) argument in order, its N derivatives — the
layout of ``struct { double da[N]; double db[N]; }`` — then the primal result with
``enzyme_primal_return``.  Lane k seeds a float result with 1.0.

EnzymePy runs one combined reverse sweep (augmented forward, then reverse) per lane
with the width-1 gradient.  The primal therefore runs N times, which gives the right
derivatives only when a second run sees what the first one saw: the function must not
read memory that it (or its callees) writes, other than its own locals and heap
allocations, nor call a function with hidden state (``rand``, the clock).
``check_lanes_independent`` proves that by underlying object (arguments the call site
passes the same object to are one object, an in-place ``f(x, x)``; two others that
it writes through one of and reads through the other are compared at run time before
the lanes run, equal pointers aborting with a message -- partly overlapping ones are
assumed not to occur; a pointer loaded from memory may point anywhere) and otherwise
rejects the call.

``__enzyme_batch(f, enzyme_width, N, args...)``: each argument is N values (one per
lane; ``enzyme_vector`` says so explicitly) or ``enzyme_scalar, v``: v for every lane;
returns the N results (``struct { double r[N]; }``).
"""

from __future__ import annotations

from ..analysis.overwrite import ARG, CONST, GLOBAL, LOCAL, call_writes, underlying_objects
from ..ir.instructions import AtomicRMW, Call, CmpXchg, Invoke, Load, Store
from .errors import CallSiteError

__all__ = ["check_lanes_independent", "lower_batch"]

_READS_NOTHING = ("llvm.lifetime.", "llvm.dbg.", "llvm.assume", "llvm.experimental.noalias",
                  "llvm.invariant.", "llvm.donothing", "llvm.sideeffect", "llvm.var.annotation",
                  "llvm.objectsize", "llvm.prefetch", "free", "malloc", "calloc", "_Znwm",
                  "_Znam", "_ZdlPv", "_ZdaPv")


# functions with hidden state: each call reads and changes it (a generator's seed), or
# reads what changes between runs (the clock); a second run of the primal sees other values
_HIDDEN_STATE = frozenset({
    "rand", "random", "drand48", "lrand48", "mrand48", "srand", "srandom", "srand48",
    "time", "clock", "clock_gettime", "gettimeofday", "omp_get_wtime"})


def _objs(p, dl, argmap):
    """Objects of the top-level function that pointer ``p`` may point into: ('arg', i),
    ('global', g), 'unknown'; local memory (fresh on every run) is left out."""
    out = set()
    for o in underlying_objects(p, dl):
        if o.kind in (LOCAL, CONST):
            continue
        if o.kind == ARG:
            out |= argmap.get(o.value, {"unknown"})
        elif o.kind == GLOBAL:
            out.add(("global", o.value.name))
        else:
            out.add("unknown")
    return out


def _effects(fn, argmap, dl, module, pure, stack, reads, writes):
    if fn in stack:
        reads.add("unknown")
        writes.add("unknown")
        return
    stack = stack | {fn}
    for blk in fn.blocks:
        for inst in blk.instructions:
            if isinstance(inst, Load):
                reads |= _objs(inst.operand(0), dl, argmap)
            elif isinstance(inst, Store):
                writes |= _objs(inst.operand(1), dl, argmap)
            elif isinstance(inst, (AtomicRMW, CmpXchg)):
                o = _objs(inst.operand(0), dl, argmap)
                reads |= o
                writes |= o
            elif isinstance(inst, (Call, Invoke)):
                name = inst.callee_name or ""
                callee = inst.called_function
                if callee is not None and not callee.is_declaration:
                    sub = {a: _objs(v, dl, argmap) if a.type.is_pointer else set()
                           for a, v in zip(callee.args, inst.args, strict=False)}
                    _effects(callee, sub, dl, module, pure, stack, reads, writes)
                    continue
                if name in _HIDDEN_STATE:
                    reads.add(("state", name))
                    writes.add(("state", name))
                    continue
                if name.startswith(_READS_NOTHING) or (pure is not None and pure(name)):
                    continue
                w = call_writes(inst, module, pure)
                if w == "all":
                    writes.add("unknown")
                elif w:
                    for p in w:
                        writes |= _objs(p, dl, argmap)
                for a in inst.args:
                    if a.type.is_pointer:
                        reads |= _objs(a, dl, argmap)


def check_lanes_independent(primal, site, pure=None) -> list:
    """Raise unless running ``primal`` again after a first run reads the same memory
    (see the module docstring).  Returns the pairs ``(i, j)`` of pointer parameters it
    writes through the first and reads through the second that the call site does not
    show to be one object: equal at run time, a later lane would read what an earlier
    one wrote, so the call site checks them (``alias_guard``)."""
    from .callsite import entry_name, location
    module = primal.parent
    dl = module.datalayout
    # pointer parameters the call site passes the same object to are one object
    # (an in-place call, f(x, x)); distinct objects are assumed not to alias
    argmap = {a: {("arg", _same_object(site, i))} for i, a in enumerate(primal.args)
              if a.type.is_pointer}
    reads: set = set()
    writes: set = set()
    _effects(primal, argmap, dl, module, pure, frozenset(), reads, writes)
    clash = None
    for w in writes:
        for r in reads:
            if w == "unknown" or r == "unknown" or w == r:
                clash = (r, w)
                break
        if clash:
            break
    if clash is None:
        return sorted({(w[1], r[1]) for w in writes for r in reads
                       if w[0] == "arg" and r[0] == "arg" and w != r})
    fname = site.fn.name

    def what(o):
        if o == "unknown":
            return "memory it cannot identify (a pointer loaded from memory, or a call)"
        if o[0] == "arg":
            return f"parameter {o[1] + 1}"
        if o[0] == "state":
            return f"the hidden state of {o[1]}()"
        return f"the global '{o[1]}'"
    r, w = clash
    detail = (f"it may read {what(r)}, which it writes" if r == w
              else f"it reads {what(r)} and writes {what(w)}")
    raise CallSiteError(
        f"{entry_name(site.call.callee_name or '')}: enzyme_width {site.width} (vector reverse "
        f"mode) needs '{fname}' to give the same result when run again, but {detail}",
        location=location(site.call),
        hint="EnzymePy runs the reverse sweep once per lane; call __enzyme_autodiff once "
             "per direction instead, or copy the input the function modifies")


def alias_guard(module):
    """``__enzyme_py_distinct(a, b, msg, len)``: abort with ``msg`` on stderr when the two
    pointers are equal (the run-time half of the check above)."""
    from .emit import Emitter
    from .unwind import _unwound
    from ..ir import types as T
    name = "__enzyme_py_distinct"
    fn = module.get_function(name)
    if fn is not None:
        return fn
    fn = module.add_function(name, T.FunctionType(T.void, [T.ptr, T.ptr, T.ptr, T.i64]),
                             linkage="internal", fn_attrs="nounwind", unique=False)
    e = Emitter(module)
    entry, bad, ok = (fn.append_basic_block(n) for n in ("entry", "bad", "ok"))
    e.position_at_end(entry)
    e.cbranch(e.icmp("eq", fn.args[0], fn.args[1]), bad, ok)
    e.position_at_end(bad)
    e.call(_unwound(module), [fn.args[2], fn.args[3]], fn_attrs="noreturn nounwind")
    e.unreachable()
    e.position_at_end(ok)
    e.ret(None)
    return fn


def _same_object(site, i) -> int:
    """The first parameter index whose argument at the call site may point into the
    same object as parameter ``i``'s (the same value, or the same local, global or
    argument of the caller at any offset); ``i`` itself when there is none."""
    dl = site.call.module.datalayout
    values = {b.index: b.value for b in site.bindings if b.value.type.is_pointer}
    mine = values.get(i)
    if mine is None:
        return i
    roots = {id(o.value) for o in underlying_objects(mine, dl) if o.value is not None}
    for j in sorted(values):
        if j >= i:
            break
        other = values[j]
        if other is mine or roots & {id(o.value) for o in underlying_objects(other, dl)
                                     if o.value is not None}:
            return j
    return i


def lower_batch(site, module) -> None:
    """``__enzyme_batch``: call the function once per lane; the N results packed."""
    from .callsite import _coerce, _finish, _pack, emitter_at, location
    call = site.call
    loc = location(call)
    e = emitter_at(call)
    fn = site.fn
    results = []
    for k in range(site.width):
        args = [_coerce(e, b.shadows[k] if b.kind == "vector" else b.value,
                        fn.args[b.index].type, loc) for b in site.bindings]
        r = e.call(fn, args)
        if not fn.return_type.is_void:
            results.append(r)
    _finish(site, _pack(e, site, results, module, loc))


def parse_batch(call, target, args, i, site, loc, name):
    """The arguments of ``__enzyme_batch`` from ``args[i]`` on (after the function)."""
    from .callsite import MARKERS, ParamBinding, _const_int, marker_of
    params = target.args
    p = 0

    def take(i, n, what):
        vals = list(args[i:i + n])
        bad = next((v for v in vals if marker_of(v) is not None), None)
        if len(vals) < n or bad is not None:
            found = f": found the marker {marker_of(bad)}" if bad is not None else ""
            raise CallSiteError(f"{name}: {what} of '{target.name}' needs {n} value(s), one "
                                f"per lane (width mismatch: enzyme_width {site.width}){found}",
                                location=loc, hint="pass enzyme_scalar, v to use one value "
                                                   "for every lane")
        return vals

    while i < len(args):
        a = args[i]
        mk = marker_of(a)
        if mk is not None:
            site.markers.append(a)
            if mk not in MARKERS:
                raise CallSiteError(f"illegal enzyme metadata classification '{mk}'",
                                    location=loc)
            if mk == "enzyme_width":
                if i + 1 >= len(args):
                    raise CallSiteError("enzyme_width must be followed by the width",
                                        location=loc)
                w = _const_int(args[i + 1], "enzyme_width", loc)
                if w < 1 or p > 0 or site.width != 1:
                    raise CallSiteError(f"width mismatch: enzyme_width {w} must come once, "
                                        "before the function's arguments, and be at least 1",
                                        location=loc)
                site.width = w
                i += 2
                continue
            if p >= len(params):
                raise CallSiteError(f"{name}: too many arguments for '{target.name}' "
                                    f"({len(params)} parameters)", location=loc)
            what = f"parameter {p + 1}"
            if mk == "enzyme_scalar":
                (v,) = take(i + 1, 1, what)
                site.bindings.append(ParamBinding(p, "const", v))
                i += 2
            elif mk == "enzyme_vector":
                vals = take(i + 1, site.width, what)
                site.bindings.append(ParamBinding(p, "vector", vals[0], vals))
                i += 1 + site.width
            else:
                raise CallSiteError(f"{name}: {mk} is not a batch marker (use enzyme_width, "
                                    "enzyme_scalar or enzyme_vector)", location=loc)
            p += 1
            continue
        if p >= len(params):
            raise CallSiteError(f"{name}: too many arguments for '{target.name}' "
                                f"({len(params)} parameters)", location=loc)
        vals = take(i, site.width, f"parameter {p + 1}")
        site.bindings.append(ParamBinding(p, "vector", vals[0], vals))
        i += site.width
        p += 1
    if p < len(params):
        raise CallSiteError(f"{name}: too few arguments for '{target.name}': parameter {p + 1} "
                            f"of {len(params)} is missing", location=loc)
    return site
