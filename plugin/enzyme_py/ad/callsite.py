"""Recognise ``__enzyme_autodiff*`` call sites, read the activity markers and
lower each call to the generated gradient.

Markers are globals the program defines (``int enzyme_dup;``) and passes by
value, so in the IR a marker argument is ``load i32, ptr @enzyme_dup``; we read
the global's name (before any optimisation could fold the load).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..analysis.activity import floatish
from ..ir import types as T
from ..ir.instructions import Call, Cast, Load, Invoke
from ..ir.instructions import Alloca
from ..ir.values import ConstantFP, ZeroInit
from .runtime import TAPE_TYPE
from .emit import Emitter
from .errors import CallSiteError

ENTRY_PREFIXES = {"__enzyme_autodiff": "reverse"}

MARKERS = {"enzyme_dup", "enzyme_dupnoneed", "enzyme_const", "enzyme_out", "enzyme_width",
           "enzyme_dupv", "enzyme_dupnoneedv", "enzyme_allocated", "enzyme_tape",
           "enzyme_nofree", "enzyme_primal_return", "enzyme_noret", "enzyme_const_return",
           "enzyme_active_return", "enzyme_dup_return"}
SUPPORTED = {"enzyme_dup", "enzyme_dupnoneed", "enzyme_const", "enzyme_out"}


def marker_of(v) -> str | None:
    """The marker name if ``v`` is ``load @enzyme_*`` (possibly through a cast)."""
    while isinstance(v, Cast):
        v = v.operand(0)
    if isinstance(v, Load):
        p = v.operand(0)
        if p.is_global and p.name.startswith("enzyme_"):
            return p.name
    return None


@dataclass
class ParamBinding:
    index: int
    kind: str            # "const", "dup", "out"
    value: object
    shadow: object = None


@dataclass
class AutodiffSite:
    call: Call
    mode: str
    fn: object
    sret: object
    bindings: list = field(default_factory=list)
    markers: list = field(default_factory=list)  # marker loads to delete


def location(call) -> str:
    loc = call.debug_loc
    if loc is not None:
        f, line, col = loc
        return f"{f}:{line}:{col}" if col else f"{f}:{line}"
    fn = call.function
    return f"in function '{fn.name}'" if fn is not None else "?"


def find_sites(module):
    """Every call to an ``__enzyme_autodiff*`` function, in module order."""
    out = []
    for fn in list(module.functions):
        mode = None
        for prefix, m in ENTRY_PREFIXES.items():
            if fn.name.startswith(prefix):
                mode = m
        if mode is None:
            continue
        for u in fn.uses:
            c = u.user
            if isinstance(c, (Call, Invoke)) and c.callee is fn:
                out.append((c, mode))
    return out


def parse_site(call, mode) -> AutodiffSite:
    loc = location(call)
    name = call.callee_name
    args = call.args
    sret = None
    i = 0
    if call.arg_attrs and "sret" in (call.arg_attrs[0] or ""):
        sret = args[0]
        i = 1
    if i >= len(args):
        raise CallSiteError(f"{name}: missing the function to differentiate", location=loc)
    target = args[i]
    while isinstance(target, Cast) or (target.is_constant and not target.is_global
                                       and getattr(target, "opcode", None) == "bitcast"):
        target = target.operand(0)
    if not getattr(target, "is_function", False):
        raise CallSiteError(f"{name}: the first argument must be a function known at compile "
                            "time", location=loc, hint="pass the function itself, e.g. (void*)f")
    if target.is_declaration:
        raise CallSiteError(f"{name}: the body of '{target.name}' is not available",
                            location=loc, hint="compile its definition with enzyme-cc too")
    site = AutodiffSite(call, mode, target, sret)
    i += 1
    params = target.args
    p = 0
    while i < len(args):
        a = args[i]
        mk = marker_of(a)
        if mk is not None:
            site.markers.append(a)
            if mk not in MARKERS:
                raise CallSiteError(f"illegal enzyme metadata classification '{mk}'",
                                    location=loc)
            if mk not in SUPPORTED:
                raise CallSiteError(f"the marker '{mk}' is not supported by {name} yet",
                                    location=loc)
            if p >= len(params):
                raise CallSiteError(f"{name}: too many arguments for '{target.name}' "
                                    f"({len(params)} parameters)", location=loc)
            param = params[p]
            if mk in ("enzyme_dup", "enzyme_dupnoneed"):
                if i + 2 >= len(args):
                    raise CallSiteError(f"missing argument shadow for parameter {p + 1} of "
                                        f"'{target.name}' after {mk}", location=loc,
                                        hint="enzyme_dup takes the value and its shadow")
                if not param.type.is_pointer and not floatish(param.type):
                    raise CallSiteError(f"{mk} on parameter {p + 1} of '{target.name}', which "
                                        "is an integer", location=loc)
                if not param.type.is_pointer:
                    raise CallSiteError(f"{mk} on by-value float parameter {p + 1} of "
                                        f"'{target.name}' is not supported", location=loc,
                                        hint="use enzyme_out (the default) instead")
                site.bindings.append(ParamBinding(p, "dup", args[i + 1], args[i + 2]))
                i += 3
            elif mk == "enzyme_const":
                if i + 1 >= len(args):
                    raise CallSiteError(f"missing value after enzyme_const for parameter "
                                        f"{p + 1} of '{target.name}'", location=loc)
                site.bindings.append(ParamBinding(p, "const", args[i + 1]))
                i += 2
            else:  # enzyme_out
                if i + 1 >= len(args):
                    raise CallSiteError(f"missing value after enzyme_out for parameter "
                                        f"{p + 1} of '{target.name}'", location=loc)
                if not floatish(param.type):
                    raise CallSiteError(f"enzyme_out on parameter {p + 1} of '{target.name}', "
                                        "which is not a floating-point value", location=loc)
                site.bindings.append(ParamBinding(p, "out", args[i + 1]))
                i += 2
            p += 1
            continue
        if p >= len(params):
            raise CallSiteError(f"{name}: too many arguments for '{target.name}' "
                                f"({len(params)} parameters)", location=loc)
        param = params[p]
        if param.type.is_pointer:
            if i + 1 >= len(args):
                raise CallSiteError(f"missing argument shadow for pointer parameter {p + 1} of "
                                    f"'{target.name}'", location=loc,
                                    hint="pass enzyme_dup, the pointer and its shadow, or "
                                         "enzyme_const and the pointer")
            site.bindings.append(ParamBinding(p, "dup", a, args[i + 1]))
            i += 2
        elif floatish(param.type):
            site.bindings.append(ParamBinding(p, "out", a))
            i += 1
        else:
            site.bindings.append(ParamBinding(p, "const", a))
            i += 1
        p += 1
    if p < len(params):
        raise CallSiteError(f"{name}: too few arguments for '{target.name}': parameter {p + 1} "
                            f"of {len(params)} is missing", location=loc)
    return site


def _coerce(e, v, ty, loc):
    if v.type == ty:
        return v
    if v.type.is_float and ty.is_float:
        op = "fptrunc" if v.type.width > ty.width else "fpext"
        return e.cast(op, v, ty)
    if v.type.is_int and ty.is_int:
        return e.cast("trunc" if v.type.width > ty.width else "sext", v, ty)
    if v.type.is_int and ty.is_pointer:
        return e.cast("inttoptr", v, ty)
    raise CallSiteError(f"argument of type {v.type} passed for a parameter of type {ty}",
                        location=loc)


def lower_site(site: AutodiffSite, gen, module) -> None:
    """Replace the call by: tape, augmented forward, reverse (seed 1.0), free tape, and
    the derivatives packed the way the call's prototype returns them."""
    call = site.call
    loc = location(call)
    e = Emitter(module).at_before(call)
    tape = Alloca(TAPE_TYPE, align=8)
    call.function.entry_block.insert(0, tape)
    e.store(ZeroInit(TAPE_TYPE), tape, 8)
    fn = site.fn
    args = []
    for bnd in site.bindings:
        pty = fn.args[bnd.index].type
        args.append(_coerce(e, bnd.value, pty, loc))
        if bnd.kind == "dup":
            args.append(_coerce(e, bnd.shadow, T.ptr, loc))
    e.call_fn(gen.aug, args + [tape])
    rargs = list(args)
    if gen.ret_active:
        rargs.append(ConstantFP(fn.return_type, 1.0))
    res = e.call_fn(gen.rev, rargs + [tape])
    data = e.load(T.ptr, tape, 8)
    free = e.declare("free", T.void, [T.ptr])
    e.call_fn(free, [data])
    # pack the derivatives as a C struct of their types, coerce to the call's return
    outs = [e.extractvalue(res, [k]) for k in range(len(gen.out_args))]
    rty = call.type
    if not outs:
        result = None
    elif len(outs) == 1 and rty.is_float and site.sret is None:
        result = _coerce(e, outs[0], rty, loc)
    else:
        st = T.StructType([o.type for o in outs])
        dl = module.datalayout
        offs = dl.field_offsets(st)
        if site.sret is not None:
            buf = site.sret
        else:
            buf = Alloca(T.ArrayType(T.i8, max(dl.size_in_bytes(st),
                                               dl.size_in_bytes(rty) if not rty.is_void else 0)),
                         align=16)
            call.function.entry_block.insert(0, buf)
        for o, off in zip(outs, offs):
            e.store(o, e.gep_bytes(buf, off) if off else buf)
        result = None if rty.is_void else e.load(rty, buf)
    if not rty.is_void:
        if result is None:
            from .emit import zero
            result = zero(rty)
        call.replace_all_uses_with(result)
    if isinstance(call, Invoke):
        from ..ir.instructions import Br
        blk = call.parent
        normal, unwind = call.normal_dest, call.unwind_dest
        for phi in unwind.phis:
            phi.remove_incoming(blk)
        call.erase()
        blk.append(Br(normal))
    else:
        call.erase()
    for m in site.markers:
        if not m.uses and m.parent is not None:
            m.erase()
