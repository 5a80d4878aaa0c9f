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
from ..ir.attributes import Attributes
from ..ir.instructions import Call, Cast, Invoke, Load, Ret
from ..ir.instructions import Alloca
from ..ir.values import ConstantFP, ConstantInt, Undef, ZeroInit
from .runtime import TAPE_TYPE
from .emit import Emitter, attr_type
from .errors import CallSiteError, MissingDefinitionError
from .unwind import guarded

ENTRY_PREFIXES = {"__enzyme_autodiff": "reverse", "__enzyme_fwddiff": "forward",
                  "__enzyme_augmentfwd": "augment", "__enzyme_reverse": "split_reverse",
                  "__enzyme_augmentsize": "size", "__enzyme_batch": "batch",
                  "__enzyme_fwdsplit": "fwdsplit"}

MARKERS = {"enzyme_dup", "enzyme_dupnoneed", "enzyme_const", "enzyme_out", "enzyme_width",
           "enzyme_dupv", "enzyme_dupnoneedv", "enzyme_allocated", "enzyme_tape",
           "enzyme_nofree", "enzyme_primal_return", "enzyme_noret", "enzyme_const_return",
           "enzyme_active_return", "enzyme_dup_return", "enzyme_scalar", "enzyme_vector"}
BATCH_MARKERS = {"enzyme_scalar", "enzyme_vector"}    # __enzyme_batch only
INLINE_TAPE_MAX = 16384   # bytes: a combined sweep's fixed-size tape up to this is a local
INLINE_SWEEPS_MAX = 8000  # instructions: both sweeps times their call sites, inlined up to this
RETURN_MARKERS = {"enzyme_primal_return", "enzyme_noret", "enzyme_const_return",
                  "enzyme_active_return", "enzyme_dup_return"}


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
    shadows: list = field(default_factory=list)   # one per lane (enzyme_width)
    dupv: tuple | None = None                      # (base pointer, byte stride)
    noneed: bool = False

    @property
    def shadow(self):
        return self.shadows[0] if self.shadows else None


@dataclass
class AutodiffSite:
    call: Call
    mode: str
    fn: object
    sret: object
    bindings: list = field(default_factory=list)
    markers: list = field(default_factory=list)  # marker loads to delete
    width: int = 1
    ret_markers: set = field(default_factory=set)
    allocated: object = None                     # enzyme_allocated: an int, or a Value
    tape: object = None
    nofree: bool = False
    extras: list = field(default_factory=list)   # arguments after the function's ones
    alias_checks: list = field(default_factory=list)  # vector reverse: (i, j) to compare
    result: object = None                        # what replaced the call


def emitter_at(call):
    """An emitter placed before the call site ``call``, whose instructions take the
    call's source location (what a debugger shows for the derivative code; and a call
    that may be inlined needs one in a function built with ``-g``)."""
    e = Emitter(call.module)
    e.position_before(call)
    e.debug_loc = call.get_metadata("dbg")
    return e


def location(call) -> str:
    """Where the user wrote the call: through ``inlinedAt`` to the outermost caller
    (a call inside an always_inline helper such as ``enzyme::autodiff``)."""
    loc = call.debug_loc
    md, mod = call.get_metadata("dbg"), call.module
    if loc is not None and md is not None and mod is not None:
        for _ in range(64):
            outer = mod._md_fields(md).get("inlinedAt")
            if not outer:
                break
            md = outer
        loc = mod.debug_location(md) or loc
    if loc is not None:
        f, line, col = loc
        return f"{f}:{line}:{col}" if col else f"{f}:{line}"
    fn = call.function
    return f"in function '{fn.name}'" if fn is not None else "?"


def entry_name(name: str) -> str:
    """``name`` itself, or for an Itanium-mangled C++ function (a template such as
    ``<enzyme/utils>``'s ``__enzyme_autodiff<R>(void *, T...)``, possibly in a
    namespace) its unqualified name."""
    if not name.startswith("_Z"):
        return name
    i = 2 + (name[2:3] == "N")
    while i < len(name) and name[i].isdigit():
        j = i
        while j < len(name) and name[j].isdigit():
            j += 1
        n = int(name[i:j])
        part = name[j:j + n]
        if part.startswith("__enzyme_"):
            return part
        i = j + n
    return name


def find_sites(module):
    """Every call to an ``__enzyme_*`` entry point, in module order."""
    out = []
    for fn in list(module.functions):
        mode = None
        ename = entry_name(fn.name)
        for prefix, m in ENTRY_PREFIXES.items():
            if ename.startswith(prefix):
                mode = m
        if mode is None:
            continue
        for u in fn.uses:
            c = u.user
            if isinstance(c, (Call, Invoke)) and c.callee is fn:
                out.append((c, mode))
    return out


def entry_uses_as_value(module):
    """Instructions (or constants) that use an ``__enzyme_*`` entry point other than as
    the function a call calls: its address stored to a variable, cast and called through
    a pointer, passed on.  At -O0 ``fn = (T)__enzyme_autodiff; fn(f, x)`` reads the
    entry point back from a local; once the locals are promoted it is a direct call."""
    out = []
    for fn in list(module.functions):
        ename = entry_name(fn.name)
        if not ename.startswith(tuple(ENTRY_PREFIXES)):
            continue
        for u in fn.uses:
            c = u.user
            if isinstance(c, (Call, Invoke)) and c.callee is fn:
                continue
            out.append((c, ename))
    return out


def _returned_function(v):
    """The function a call to a defined function always returns (every ``ret`` returns
    it, through casts): a C++ lambda's conversion to a function pointer, ``(void *)+f``,
    which -O0 leaves a call (``operator double (*)(double)()``); else None."""
    if not isinstance(v, (Call, Invoke)):
        return None
    callee = v.called_function
    if callee is None or callee.is_declaration:
        return None
    found = None
    for inst in callee.instructions():
        if isinstance(inst, Ret):
            r = inst.operand(0) if inst.operands else None
            while isinstance(r, Cast):
                r = r.operand(0)
            if not getattr(r, "is_function", False) or found not in (None, r):
                return None
            found = r
    return found


def _const_int(v, what, loc):
    if not isinstance(v, ConstantInt):
        raise CallSiteError(f"{what} must be followed by an integer constant", location=loc,
                            hint="pass a literal (the value is needed at compile time)")
    return v.value


def through_rules(sites, registry, module) -> None:
    """A call site whose function has a custom rule or is ``function_like`` a libm
    function differentiates a wrapper that calls it instead: as in Enzyme,
    ``__enzyme_autodiff((void*)f, x)`` of an ``f`` with a registered gradient uses the
    rule, not ``f``'s body (and a ``function_like`` one its libm derivative, where
    Enzyme 15 differentiates the body); the call inside the wrapper goes the way every
    such call goes (``custom.CallHooks``).  An inactive function asked for directly is
    differentiated, as Enzyme does: only calls to it are inactive.  The call's function
    argument is the wrapper from then on (the site is found again after the pre-AD
    optimisation)."""
    from .dispatch import rule_wrapper
    made: dict = {}
    for site in sites:
        fn = site.fn
        if site.mode == "batch" or not registry.has_rule(fn.name):
            continue
        w = made.get(fn)
        if w is None:
            # one per function, whichever round meets it: an augmented forward and its
            # reverse (split mode) must differentiate the same wrapper
            name = f"{fn.name}.enzyme_entry"
            w = made[fn] = module.get_function(name) or rule_wrapper(module, fn, name)
        i = 1 if site.sret is not None else 0
        site.call.set_arg(i, w)
        site.fn = w


def parse_site(call, mode) -> AutodiffSite:
    """The call site ``call`` of an ``__enzyme_*`` entry point (``mode``): the function
    it differentiates and the binding of each parameter, from the markers, values and
    shadows it passes."""
    try:
        site = _parse_site(call, mode)
    except CallSiteError:
        _refuse_split_structs(call, None)
        raise
    _refuse_split_structs(call, site)
    return site


def _refuse_split_structs(call, site) -> None:
    """A struct of at most 16 bytes passed by value goes in registers: x86-64 splits
    ``{double re, im}`` into two doubles, ``{int n; double *p}`` into an integer and a
    pointer, at the call site and in the function alike.  The markers, values and
    shadows then pair with the pieces, not with the struct (``__enzyme_fwddiff(f, z,
    dz)`` took ``z.im`` for the tangent of ``z.re``: silently wrong, as in Enzyme).
    clang marks every scalar argument and parameter ``noundef`` but such pieces; two
    or more adjacent unmarked parameters (where the call site marks some argument) are
    such a struct, refused unless each piece is constant (``site``: the bindings; None
    where binding failed, which such a struct explains)."""
    from ..ir.attributes import Attributes
    target = site.fn if site is not None else _target_of(call)
    if target is None or target.is_declaration:
        return
    params = target.args
    if not any("noundef" in (q.attrs or "") for q in params) and not any(
            "noundef" in (a or "") for i in target.instructions() if isinstance(i, Call)
            for a in i.arg_attrs):
        return      # (compiled by a front end that marks nothing noundef: nothing to tell)

    def piece(q):
        at = Attributes.parse(q.attrs or "")
        return not at.has("noundef") and not any(
            at.arg(k) is not None for k in ("byval", "byref", "sret", "inalloca"))
    runs, k = [], 0
    while k < len(params):
        j = k
        while j < len(params) and piece(params[j]):
            j += 1
        if j - k >= 2:
            runs.append((k, j))
        k = max(j, k + 1)
    kinds = {b.index: b.kind for b in site.bindings} if site is not None else {}
    for lo, hi in runs:
        if site is not None and all(kinds.get(q) == "const" for q in range(lo, hi)):
            continue
        name = entry_name(call.callee_name or "")
        raise CallSiteError(
            f"{name} of '{target.name}': its parameters {lo + 1} to {hi} are the pieces of a "
            "struct passed by value in registers (the calling convention splits a struct of "
            "at most 16 bytes into two values), with which the markers, values and shadows "
            "would pair instead of the struct", location=location(call),
            hint="pass the struct by pointer: enzyme_dup, &s, &ds (or enzyme_const, &s)")


def _target_of(call):
    """The function an ``__enzyme_*`` call differentiates, or None."""
    from .promote import call_target
    t = call_target(call)
    return t if getattr(t, "is_function", False) else None


def _parse_site(call, mode) -> AutodiffSite:
    loc = location(call)
    name = entry_name(call.callee_name or "")
    if mode == "fwdsplit":
        raise CallSiteError(f"{name}: forward split mode (__enzyme_fwdsplit) is not supported "
                            "by EnzymePy", location=loc,
                            hint="use __enzyme_fwddiff (combined forward mode)")
    from .promote import call_target
    args = call.args
    sret = None
    i = 0
    if call.arg_attrs and Attributes.parse(call.arg_attrs[0]).has("sret"):
        sret = args[0]
        i = 1
    target = call_target(call)
    if target is None:
        raise CallSiteError(f"{name}: missing the function to differentiate", location=loc)
    if not getattr(target, "is_function", False):
        target = _returned_function(target) or target
    if not getattr(target, "is_function", False):
        raise CallSiteError(f"{name}: the first argument must be a function known at compile "
                            "time", location=loc, hint="pass the function itself, e.g. (void*)f")
    if target.is_declaration:
        raise MissingDefinitionError(f"{name}: the body of '{target.name}' is not available",
                                     location=loc,
                                     hint="compile its definition with enzyme-cc into the same "
                                          "program: as a source file, an object or a static "
                                          "library (the code of a shared library is not "
                                          "visible to the AD pass)")
    site = AutodiffSite(call, mode, target, sret)
    forward = mode == "forward"
    i += 1
    if mode == "batch":
        from .vector import parse_batch
        return parse_batch(call, target, args, i, site, loc, name)
    params = target.args
    p = 0

    def config(mk, i):
        """Markers that configure the call rather than describe a parameter."""
        if mk == "enzyme_width":
            if i + 1 >= len(args):
                raise CallSiteError("enzyme_width must be followed by the width", location=loc)
            w = _const_int(args[i + 1], "enzyme_width", loc)
            if w < 1:
                raise CallSiteError(f"enzyme_width {w}: the width must be at least 1",
                                    location=loc)
            if p > 0 or site.width != 1:
                after = "another enzyme_width" if site.width != 1 else "the first argument"
                raise CallSiteError(f"width mismatch: enzyme_width {w} given after {after}",
                                    location=loc, hint="pass enzyme_width, N once, before "
                                                       "the function's arguments")
            site.width = w
            return i + 2
        if mk == "enzyme_allocated":
            if i + 1 >= len(args):
                raise CallSiteError("enzyme_allocated must be followed by the tape size",
                                    location=loc)
            n = args[i + 1]     # a constant is checked at compile time (see split.py)
            site.allocated = n.value if isinstance(n, ConstantInt) else n
            return i + 2
        if mk == "enzyme_tape":
            if i + 1 >= len(args):
                raise CallSiteError("enzyme_tape must be followed by the tape", location=loc)
            site.tape = args[i + 1]
            return i + 2
        if mk == "enzyme_nofree":
            site.nofree = True
            return i + 1
        if mk in RETURN_MARKERS:
            site.ret_markers.add(mk)
            return i + 1
        return None

    def lanes(i, p, mk):
        """The W shadows after the value at args[i]; returns (shadows, index after them)."""
        W = site.width
        sh = list(args[i + 1:i + 1 + W])
        bad = next((x for x in sh if marker_of(x) is not None), None)
        if len(sh) < W or bad is not None:
            found = f": found the marker {marker_of(bad)}" if bad is not None else ""
            raise CallSiteError(f"missing argument shadow for parameter {p + 1} of "
                                f"'{target.name}' after {mk}{found}"
                                + (f" (width mismatch: enzyme_width {W} needs {W} shadows)"
                                   if W > 1 else ""), location=loc,
                                hint="enzyme_dup takes the value and its shadow"
                                + ("s, one per lane" if W > 1 else ""))
        return sh, i + 1 + W

    def valueless(i):
        """``__enzyme_augmentsize(f, enzyme_dup, enzyme_const)``: the activity markers
        alone, no values after them (the tape's size depends on the activity only), as
        Enzyme accepts it."""
        return mode == "size" and (i + 1 >= len(args) or marker_of(args[i + 1]) is not None)

    if forward and sret is not None and params \
            and Attributes.parse(params[0].attrs).arg("sret") is not None:
        # forward mode of a function returning a struct in memory, the entry point
        # declared to return that struct too: the tangent struct is the shadow of the
        # function's sret parameter, written straight into the call's result; the primal
        # result goes to a scratch copy (``_args_for``), as in Enzyme
        site.bindings.append(ParamBinding(0, "dup", None, [sret]))
        site.sret = None
        p = 1

    while i < len(args) and p < len(params):
        a = args[i]
        mk = marker_of(a)
        if mk is not None and valueless(i) and mk in ("enzyme_dup", "enzyme_dupnoneed",
                                                      "enzyme_const", "enzyme_out"):
            site.markers.append(a)
            kind = "dup" if mk.startswith("enzyme_dup") else mk[len("enzyme_"):]
            ty = params[p].type
            if kind == "dup" and not ty.is_pointer or kind == "out" and not floatish(ty):
                raise CallSiteError(f"{mk} on parameter {p + 1} of '{target.name}', of type "
                                    f"{ty}", location=loc, hint="enzyme_dup is for pointers, "
                                    "enzyme_out for floating-point values")
            site.bindings.append(ParamBinding(p, kind, Undef(ty),
                                              [Undef(ty)] * site.width if kind == "dup"
                                              else [], None, mk == "enzyme_dupnoneed"))
            i += 1
            p += 1
            continue
        if mk is not None:
            site.markers.append(a)
            if mk not in MARKERS or mk in BATCH_MARKERS:
                raise CallSiteError(f"illegal enzyme metadata classification '{mk}'"
                                    + (" (a __enzyme_batch marker)" if mk in MARKERS else ""),
                                    location=loc, hint="known markers: "
                                    + ", ".join(sorted(MARKERS - BATCH_MARKERS)))
            nxt = config(mk, i)
            if nxt is not None:
                i = nxt
                continue
            param = params[p]
            if mk in ("enzyme_dup", "enzyme_dupnoneed", "enzyme_dupv", "enzyme_dupnoneedv"):
                if not param.type.is_pointer and not floatish(param.type):
                    raise CallSiteError(f"{mk} on parameter {p + 1} of '{target.name}', which "
                                        "is an integer", location=loc)
                if not param.type.is_pointer and not forward:
                    raise CallSiteError(f"{mk} on by-value float parameter {p + 1} of "
                                        f"'{target.name}' is not supported in reverse mode",
                                        location=loc,
                                        hint="use enzyme_out (the default) instead")
                noneed = "noneed" in mk
                if mk.endswith("v"):
                    # Enzyme's order: the byte stride first, then the value and the
                    # shadows' base pointer (lane k's shadow is base + k * stride)
                    shape = (f"{mk}, byte_stride, x, dxs (parameter {p + 1} of "
                             f"'{target.name}')")
                    if i + 3 >= len(args):
                        raise CallSiteError(f"{mk} takes the byte stride, the value and the "
                                            f"shadows' base pointer: {shape}", location=loc)
                    stride, val, base = args[i + 1], args[i + 2], args[i + 3]
                    if not stride.type.is_int:
                        old = (" (x, dxs, byte_stride is not Enzyme's order)"
                               if args[i + 3].type.is_int else "")
                        raise CallSiteError(f"{mk} must be followed by the integer byte stride"
                                            f"{old}", location=loc, hint=f"write {shape}")
                    if not base.type.is_pointer:
                        raise CallSiteError(f"{mk}: the shadows' base after the value must be "
                                            "a pointer", location=loc, hint=f"write {shape}")
                    site.bindings.append(ParamBinding(p, "dup", val, [], (base, stride),
                                                      noneed))
                    i += 4
                else:
                    if i + 1 >= len(args):
                        raise CallSiteError(f"missing argument shadow for parameter {p + 1} of "
                                            f"'{target.name}' after {mk}", location=loc)
                    sh, i2 = lanes(i + 1, p, mk)
                    site.bindings.append(ParamBinding(p, "dup", args[i + 1], sh, None, noneed))
                    i = i2
            elif mk == "enzyme_const":
                if i + 1 >= len(args):
                    raise CallSiteError(f"missing value after enzyme_const for parameter "
                                        f"{p + 1} of '{target.name}'", location=loc)
                site.bindings.append(ParamBinding(p, "const", args[i + 1]))
                i += 2
            else:  # enzyme_out
                if forward:
                    raise CallSiteError(f"enzyme_out (parameter {p + 1} of '{target.name}') "
                                        f"is a reverse-mode marker; {name} is forward mode",
                                        location=loc, hint="pass enzyme_dup, x, dx (the value "
                                                           "and its tangent)")
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
        param = params[p]
        if param.type.is_pointer or (forward and floatish(param.type)):
            if i + 1 >= len(args):
                what = "pointer" if param.type.is_pointer else "float"
                raise CallSiteError(f"missing argument shadow for {what} parameter {p + 1} of "
                                    f"'{target.name}'", location=loc,
                                    hint="pass enzyme_dup, the value and its shadow, or "
                                         "enzyme_const and the value")
            sh, i2 = lanes(i, p, "the value")
            site.bindings.append(ParamBinding(p, "dup", a, sh))
            i = i2
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
    while i < len(args):
        a = args[i]
        mk = marker_of(a)
        if mk is not None:
            site.markers.append(a)
            if mk not in MARKERS or mk in BATCH_MARKERS:
                raise CallSiteError(f"illegal enzyme metadata classification '{mk}'",
                                    location=loc)
            nxt = config(mk, i)
            if nxt is None:
                raise CallSiteError(f"{name}: too many arguments for '{target.name}' "
                                    f"({len(params)} parameters): {mk} after the last one",
                                    location=loc)
            i = nxt
            continue
        site.extras.append(a)
        i += 1
    if site.width > 1 and site.bindings and site.bindings[0].value is None:
        raise CallSiteError(f"{name} with enzyme_width {site.width} of '{target.name}', which "
                            "returns a struct in memory (sret): not supported", location=loc,
                            hint="call it once per direction (enzyme_width 1)")
    if site.extras and mode not in ("split_reverse",):
        raise CallSiteError(f"{name}: too many arguments for '{target.name}' "
                            f"({len(params)} parameters)", location=loc)
    if mode in ("augment", "split_reverse", "size") and site.width != 1:
        raise CallSiteError(f"{name}: enzyme_width {site.width} (vector mode) is supported "
                            "by __enzyme_fwddiff and __enzyme_autodiff only", location=loc,
                            hint="call the split-mode entries once per direction")
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


def _args_for(e, site, kinds_fn, loc, lane=None):
    """The primal arguments, each duplicated one followed by its W shadows (only lane
    ``lane``'s when given)."""
    fn = site.fn
    out = []
    lanes = range(site.width) if lane is None else (lane,)
    for bnd in site.bindings:
        pty = fn.args[bnd.index].type
        if bnd.value is None:   # the primal result of a forward sret function (parse_site)
            scratch = Alloca(attr_type(fn.args[bnd.index], "sret"), align=16)
            site.call.function.entry_block.insert(0, scratch)
            bnd.value = scratch
        out.append(_coerce(e, bnd.value, pty, loc))
        if bnd.kind == "dup":
            sty = T.ptr if pty.is_pointer else pty
            # a parameter passed by value in memory: in forward mode its shadow (the
            # tangent, which the function may update like its own copy) goes as a copy;
            # in reverse mode the shadow is where the adjoint accumulates -- the caller's
            # memory, whether it passed a pointer (&dv, as Enzyme reads the signature)
            # or the struct itself (dv, as Enzyme does too: the driver passes such a
            # struct by reference, so that clang neither folds the caller's reads of it
            # nor puts it in read-only data; llvm.prelink) -- unless it is constant data
            byval = attr_type(fn.args[bnd.index], "byval")
            if byval is not None and site.mode not in ("forward", "batch") \
                    and not any(_constant_data(x) for x in bnd.shadows):
                byval = None
            if bnd.dupv is not None:
                base, stride = bnd.dupv
                base = _coerce(e, base, T.ptr, loc)
                stride = _coerce(e, stride, T.i64, loc)
                for k in lanes:
                    off = e.binop("mul", stride, ConstantInt(T.i64, k)) if k else None
                    q = e.gep_bytes(base, off) if off is not None else base
                    out.append((_private_copy(e, site, q, byval) if byval else q)
                               if pty.is_pointer else e.load(pty, q))
            else:
                for k in lanes:
                    s = _coerce(e, bnd.shadows[k], sty, loc)
                    out.append(_private_copy(e, site, s, byval) if byval else s)
    return out


def _guard_distinct(e, site, loc) -> None:
    """Vector reverse mode runs the primal once per lane: abort, with a message, when two
    parameters it writes through one of and reads through the other point to the same
    memory at run time (``vector.check_lanes_independent``)."""
    from .runtime import _string
    from .vector import alias_guard
    value = {b.index: b.value for b in site.bindings}
    name = site.fn.name
    for i, j in site.alias_checks:
        lo, hi = sorted((i, j))
        msg = (f"enzyme: {entry_name(site.call.callee_name or '')} with enzyme_width "
               f"{site.width} (vector reverse mode) of '{name}': parameters {lo + 1} and "
               f"{hi + 1} point to the same memory, which '{name}' writes through one and "
               "reads through the other, so each lane would see other inputs: aborting\n")
        e.call(alias_guard(site.call.module),
               [_coerce(e, value[i], T.ptr, loc), _coerce(e, value[j], T.ptr, loc),
                _string(site.call.module, msg), ConstantInt(T.i64, len(msg.encode()))])


def _constant_data(p) -> bool:
    """Whether ``p`` points into a constant global (read-only data)."""
    from ..analysis.activity import underlying_object
    g = underlying_object(p)
    return getattr(g, "is_global", False) and getattr(g, "is_constant", False)


def _private_copy(e, site, p, ty):
    """A copy of the ``ty`` at ``p`` in the caller's frame: the shadow of a struct passed
    by value is passed by value too (a tangent always; an adjoint only where the caller's
    is constant data), so the derivative may update it without touching the caller's
    object."""
    a = Alloca(ty, align=16)
    site.call.function.entry_block.insert(0, a)
    size = site.call.module.datalayout.size_in_bytes(ty)
    memcpy = e.declare("llvm.memcpy.p0.p0.i64", T.void, [T.ptr, T.ptr, T.i64, T.i1])
    e.call(memcpy, [a, p, ConstantInt(T.i64, size), ConstantInt(T.i1, 0)])
    return a


def _pack(e, site, values, module, loc):
    """The call's result from ``values``: one scalar as is, several as a C struct of
    their types (through memory: the ABI may return it in registers, as a vector, or
    through sret)."""
    call = site.call
    rty = call.type
    if not values or (rty.is_void and site.sret is None):
        return None
    if len(values) == 1 and site.sret is None and not (rty.is_struct or rty.is_array
                                                         or rty.is_vector or rty.is_void):
        return _coerce(e, values[0], rty, loc)
    st = T.StructType([v.type for v in values])
    dl = module.datalayout
    need = dl.size_in_bytes(st)
    if site.sret is not None:
        buf = site.sret
    else:
        have = 0 if rty.is_void else dl.size_in_bytes(rty)
        if have < need:
            what = f" (enzyme_width {site.width})" if site.width > 1 else ""
            raise CallSiteError(f"width mismatch: {call.callee_name} returns {rty} "
                                f"({have} bytes) but the call produces {len(values)} "
                                f"value(s){what} ({need} bytes)", location=loc,
                                hint="declare the entry point to return a struct with one "
                                     "field per value (e.g. struct { double d[N]; })")
        buf = Alloca(T.ArrayType(T.i8, max(need, have)), align=16)
        call.function.entry_block.insert(0, buf)
    for v, off in zip(values, dl.field_offsets(st)):
        e.store(v, e.gep_bytes(buf, off) if off else buf)
    return None if rty.is_void else e.load(rty, buf)


def refresh(site, replaced: dict) -> None:
    """Follow earlier call sites' replacements (a tape returned by one lowered
    ``__enzyme_augmentfwd`` and passed to a later ``__enzyme_reverse``, a size from
    ``__enzyme_augmentsize`` passed to ``enzyme_allocated``)."""
    def f(v):
        return replaced.get(v, v)
    for b in site.bindings:
        b.value = f(b.value)
        b.shadows = [f(x) for x in b.shadows]
        if b.dupv is not None:
            b.dupv = (f(b.dupv[0]), f(b.dupv[1]))
    site.extras = [f(x) for x in site.extras]
    site.tape = f(site.tape) if site.tape is not None else None
    if site.allocated is not None and not isinstance(site.allocated, int):
        site.allocated = f(site.allocated)   # a size from __enzyme_augmentsize


def _finish(site, result):
    call = site.call
    if not call.type.is_void:
        if result is None:
            from .emit import zero
            result = zero(call.type)
        call.replace_all_uses_with(result)
        site.result = result
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


def _inline_sweeps(gen, sites: int) -> None:
    """Mark both sweeps ``alwaysinline`` when their code, once per call site, stays
    within :data:`INLINE_SWEEPS_MAX` instructions: inlined next to each other, the values
    the reverse sweep reads from the (local) tape are the forward sweep's registers."""
    fns = (gen.aug, gen.rev)
    attrs = [Attributes.parse(f.fn_attrs) for f in fns]
    if any(a.has("noinline") or a.has("optnone") for a in attrs):
        return
    size = sum(1 for f in fns for _ in f.instructions())
    if size * sites > INLINE_SWEEPS_MAX:
        return
    for f, a in zip(fns, attrs):
        f.fn_attrs = str(a.with_("alwaysinline"))


def lower_site(site: AutodiffSite, gen, module, sites: int = 1) -> None:
    """Replace the call by: tape, augmented forward, reverse (seed 1.0), free tape, and
    the derivatives packed the way the call's prototype returns them (then the primal
    result with ``enzyme_primal_return``).  ``sites``: how many call sites lower
    ``gen`` this way (the inlining budget is shared)."""
    from .split import HEADER, static_tape_bytes   # split builds on this module
    call = site.call
    loc = location(call)
    e = emitter_at(call)
    # A tape whose size is known at compile time (no pushes in loops or recursion) lives
    # in the caller's frame, right after its header: no malloc/free per gradient, and
    # once the two sweeps are inlined the frame's stores and loads fold away.
    nbytes = static_tape_bytes(gen.aug)
    on_stack = nbytes is not None and nbytes <= INLINE_TAPE_MAX
    if on_stack:
        tape = Alloca(T.ArrayType(T.i8, HEADER + nbytes), align=16)
        _inline_sweeps(gen, sites)
    else:
        tape = Alloca(TAPE_TYPE, align=8)
    call.function.entry_block.insert(0, tape)
    fn = site.fn
    W = site.width
    if site.alias_checks:
        _guard_distinct(e, site, loc)
    lanes = []
    primal = None
    for k in range(W):
        # vector mode (enzyme_width): one combined sweep per lane (see ad/vector.py)
        if on_stack:
            e.store(e.gep_bytes(tape, HEADER), tape, 8)
            e.store(ConstantInt(T.i64, 0), e.gep_bytes(tape, 8), 8)
            e.store(ConstantInt(T.i64, nbytes), e.gep_bytes(tape, 16), 8)
        else:
            e.store(ZeroInit(TAPE_TYPE), tape, 8)
        args = _args_for(e, site, None, loc, lane=k if W > 1 else None)
        p = e.call(guarded(module, gen.aug, site.fn.name), args + [tape])
        if gen.ret_shadow:
            p = e.extractvalue(p, [0])
        primal = p if primal is None else primal
        rargs = list(args)
        if gen.ret_active:
            rargs.append(ConstantFP(fn.return_type, 1.0))
        res = e.call(guarded(module, gen.rev, site.fn.name), rargs + [tape])
        if not on_stack:
            free = e.declare("free", T.void, [T.ptr])
            e.call(free, [e.load(T.ptr, tape, 8)])
        lanes.append([e.extractvalue(res, [j]) for j in range(len(gen.out_args))])
    # each active argument's W derivatives together: struct { double da[W]; double db[W]; }
    outs = [lanes[k][j] for j in range(len(gen.out_args)) for k in range(W)]
    if "enzyme_primal_return" in site.ret_markers and not fn.return_type.is_void:
        outs.append(primal)
    _finish(site, _pack(e, site, outs, module, loc))


def lower_forward(site: AutodiffSite, gen, module) -> None:
    """Replace the call by the forward-mode function; the result is the tangent(s) of
    the return value (``enzyme_primal_return``: the primal first; ``enzyme_const_return``:
    the primal only; ``enzyme_noret``: nothing)."""
    call = site.call
    loc = location(call)
    e = emitter_at(call)
    res = e.call(guarded(module, gen.fn, site.fn.name), _args_for(e, site, None, loc))
    rm = site.ret_markers
    if gen.ret_pair:
        primal = e.extractvalue(res, [0])
        tans = [e.extractvalue(res, [1 + k]) for k in range(site.width)]
    else:
        primal = None if res.type.is_void else res
        tans = []
    if "enzyme_noret" in rm:
        values = []
    elif "enzyme_const_return" in rm:
        values = [primal] if primal is not None else []
    elif "enzyme_primal_return" in rm:
        values = ([primal] if primal is not None else []) + tans
    else:
        values = tans
    _finish(site, _pack(e, site, values, module, loc))
