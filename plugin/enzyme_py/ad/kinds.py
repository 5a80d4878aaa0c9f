"""Every instruction kind of the IR model, classified once: how the AD generators treat
it, or why it is an error.  Both generators call :func:`check` on every instruction of
the function they differentiate before they look at it, so an instruction kind nobody
wrote a rule for cannot be skipped silently.

``INSTRUCTIONS[cls]`` is ``(status, reason)``:

``rule``      the generators have a rule (adjoint, tangent, shadow); for some kinds only
              part of the opcodes are differentiable and the rest are listed in the
              opcode tables below.
``inactive``  never carries a derivative (the reason says why), so nothing is emitted.
``error``     a compile error wherever the instruction touches a value that carries a
              derivative or memory that has a shadow ("involved").
``never``     a compile error wherever it appears in a differentiated function (control
              flow the reverse sweep cannot replay).

Opcode-level tables: ``BINARY_OPCODES`` (integer opcodes are inactive, floating-point
ones have rules in ``rules.BINARY``), ``CAST_OPCODES`` and ``ATOMIC_OPERATIONS``.
"""

from __future__ import annotations

from ..ir import instructions as I
from ..ir.walk import BoundedWalk, derives_pointer
from .errors import NoDerivativeError

__all__ = ["INSTRUCTIONS", "BINARY_OPCODES", "CAST_OPCODES", "ATOMIC_OPERATIONS", "check",
           "check_never", "check_nonlocal_jump", "involved"]

RULE, INACTIVE, ERROR, NEVER = "rule", "inactive", "error", "never"

INSTRUCTIONS = {
    I.BinaryOp: (RULE, "rules.BINARY for fadd/fsub/fmul/fdiv/frem; integer opcodes have "
                       "integer results, which carry no derivative"),
    I.UnaryOp: (RULE, "rules.UNARY (fneg)"),
    I.ICmp: (INACTIVE, "an i1 comparison result carries no derivative"),
    I.FCmp: (INACTIVE, "an i1 comparison result carries no derivative"),
    I.Cast: (RULE, "rules.CASTS; shadow of pointer casts"),
    I.Select: (RULE, "adjoint to the chosen operand; shadow select"),
    I.Freeze: (RULE, "identity: the adjoint passes through"),
    I.Phi: (RULE, "adjoint to the incoming value of the edge taken; shadow phi"),
    I.ExtractElement: (RULE, "lane adjoint"),
    I.InsertElement: (RULE, "lane adjoint"),
    I.ShuffleVector: (RULE, "lane adjoints by the mask"),
    I.ExtractValue: (RULE, "field adjoint"),
    I.InsertValue: (RULE, "field adjoint"),
    I.Alloca: (RULE, "a zeroed shadow allocation"),
    I.Load: (RULE, "adjoint added into the shadow; shadow load of pointers"),
    I.Store: (RULE, "adjoint taken from the shadow, which is zeroed; shadow store of "
                    "pointers"),
    I.Fence: (INACTIVE, "orders memory accesses; computes no value"),
    I.AtomicRMW: (RULE, "ATOMIC_OPERATIONS: fadd/fsub/xchg of floats have rules; integer "
                        "operations on integer memory carry no derivative; the rest are "
                        "errors"),
    I.CmpXchg: (ERROR, "compare-and-exchange on memory with a shadow: no rule (only an "
                       "integer exchange on memory that type analysis proves holds "
                       "integers is accepted)"),
    I.GEP: (RULE, "a shadow GEP with the same indices"),
    I.Call: (RULE, "analysis.effects (call-effects table), rules.LIBM, custom rules, "
                   "defined functions differentiated through their bodies; an unknown "
                   "external function is an error"),
    I.Invoke: (ERROR, "a call that may throw: rewritten as a call before differentiation "
                      "(unwind.strip_invokes), so none should remain"),
    I.VAArg: (ERROR, "variadic arguments: their derivatives cannot be followed"),
    I.LandingPad: (INACTIVE, "exception bookkeeping: the caught exception's pointer and "
                             "selector carry no derivative"),
    I.CatchPad: (NEVER, "Windows exception handling: not supported"),
    I.CleanupPad: (NEVER, "Windows exception handling: not supported"),
    I.Ret: (RULE, "seeds the adjoint of the returned value"),
    I.Br: (RULE, "control flow, replayed in the reverse sweep"),
    I.Switch: (RULE, "control flow, replayed in the reverse sweep"),
    I.Unreachable: (INACTIVE, "no successor: nothing to differentiate"),
    I.Resume: (INACTIVE, "continues unwinding out of the function: the reverse sweep never "
                         "starts there"),
    I.IndirectBr: (NEVER, "computed goto: control flow the reverse sweep cannot replay"),
    I.CatchSwitch: (NEVER, "Windows exception handling: not supported"),
    I.CatchRet: (NEVER, "Windows exception handling: not supported"),
    I.CleanupRet: (NEVER, "Windows exception handling: not supported"),
    I.VerbatimInst: (ERROR, "an instruction EnzymePy keeps as text (callbr, ...): no rule"),
}

BINARY_OPCODES = {op: (RULE if op in I.FP_BINARY_OPS else INACTIVE) for op in I.BINARY_OPS}

CAST_OPCODES = {
    "fpext": RULE, "fptrunc": RULE, "bitcast": RULE, "addrspacecast": RULE,
    # float <-> integer: the result (or the operand) is an integer
    "sitofp": INACTIVE, "uitofp": INACTIVE, "fptosi": INACTIVE, "fptoui": INACTIVE,
    "trunc": INACTIVE, "zext": INACTIVE, "sext": INACTIVE,
    # pointers through integers: shadows cannot follow
    "ptrtoint": INACTIVE, "ptrtoaddr": INACTIVE, "inttoptr": ERROR,
}

# atomicrmw operations (LLVM 22): on floats, rules for the three that are linear
ATOMIC_OPERATIONS = {
    "fadd": RULE, "fsub": RULE, "xchg": RULE,
    "fmax": ERROR, "fmin": ERROR, "fmaximum": ERROR, "fminimum": ERROR,
    "fmaximumnum": ERROR, "fminimumnum": ERROR,
    # integer read-modify-writes: integer results
    "add": INACTIVE, "sub": INACTIVE, "and": INACTIVE, "nand": INACTIVE, "or": INACTIVE,
    "xor": INACTIVE, "max": INACTIVE, "min": INACTIVE, "umax": INACTIVE, "umin": INACTIVE,
    "uinc_wrap": INACTIVE, "udec_wrap": INACTIVE, "usub_cond": INACTIVE,
    "usub_sat": INACTIVE,
}


def visitor(table, inst):
    """A generator's entry in ``table`` (instruction kind -> visitor) for ``inst``'s kind
    or the nearest base class's; None when the kind has none."""
    for cls in type(inst).__mro__:
        if cls in table:
            return table[cls]
    return None


def _status(inst):
    for cls in type(inst).__mro__:
        got = INSTRUCTIONS.get(cls)
        if got is not None:
            return got
    return ERROR, f"no entry for instruction kind '{type(inst).__name__}'"


def involved(inst, act) -> bool:
    """Whether ``inst`` touches a value that carries a derivative or memory with a
    shadow."""
    if inst in act.active or inst in act.shadowed:
        return True
    return any(o in act.active or o in act.shadowed for o in inst.operands)


def check(inst, act, where):
    """Raise the compile error for ``inst`` if its kind has no rule where it is used
    (``where``: the location text, or a function returning it)."""
    status, reason = _status(inst)
    if isinstance(inst, I.Call):
        _check_float_bits_crossing(inst, act, where)
        _check_address_crossing(inst, act, where)
    if status == RULE and not isinstance(inst, (I.Cast, I.AtomicRMW, I.Store)):
        return
    if isinstance(inst, I.Store) and _float_punned_store(inst, act):
        raise NoDerivativeError(
            "a floating-point value is stored where the code reads the same bytes back as "
            "floating-point values of another type (a double read as two floats: a union "
            "of floats or a vector passed by value as the ABI does): their derivatives "
            "cannot follow", location=where() if callable(where) else where,
            hint="pass the union or vector by pointer, or read it with the type it was "
                 "stored as; at -O1 and above LLVM keeps the floats apart")
    if isinstance(inst, I.Cast) and (_float_bits_rearranged(inst, act)
                                     or _float_bits_valued(inst, act)) \
            or isinstance(inst, I.Store) and _float_bits_stored(inst, act):
        raise NoDerivativeError(
            "floating-point values moved through integer operations (shifted, truncated, "
            "masked or added to as an integer, then turned back into floats): their "
            "derivatives cannot follow", location=where() if callable(where) else where,
            hint="move the values as floats (memcpy into a float variable, array indexing); "
                 "LLVM's -O3 vector code extracts lanes this way: -O2 does not")
    if callable(where):
        where = where()
    if status == RULE or status == INACTIVE:
        from ..analysis.activity import code_pointer
        if isinstance(inst, I.Cast) and CAST_OPCODES.get(inst.opcode, ERROR) == ERROR \
                and inst not in act.shadowed and (_int_cast_involved(inst, act)
                                                  or _returned_address(inst, act)) \
                and not code_pointer(inst):
            # (an address rounded as an integer is shadowed: activity.address_source)
            raise NoDerivativeError(
                f"'{inst.opcode}' makes a pointer out of an integer that came from a pointer "
                "with a shadow: the shadow cannot follow", location=where,
                hint="keep the pointer a pointer (no round trip through an integer)")
        if isinstance(inst, I.AtomicRMW) and involved(inst, act):
            op = ATOMIC_OPERATIONS.get(inst.operation, ERROR)
            ty = inst.operand(1).type
            if op == ERROR or not (ty.is_float or ty.is_vector and ty.element.is_float
                                   or _integer_memory(inst)):
                raise NoDerivativeError(
                    f"'atomicrmw {inst.operation} {ty}' on memory that carries derivatives "
                    "has no derivative rule" + ("" if op == ERROR else
                                                " (an integer operation on memory that may "
                                                "hold floating-point values)"),
                    location=where,
                    hint="use a plain update, or __atomic_fetch_add/sub on the double itself")
        return
    if isinstance(inst, I.CmpXchg) and involved(inst, act) and _integer_memory(inst):
        return
    if status == NEVER or involved(inst, act):
        raise NoDerivativeError(f"'{inst.opcode}' cannot be differentiated: {reason}",
                                location=where, hint=_HINTS.get(type(inst), ""))


def check_never(blocks, act, where_of) -> None:
    """:func:`check` on the instructions of ``blocks`` that are errors wherever they
    appear (``never``: a computed goto, Windows exception pads) before anything else,
    so that the error names the construct rather than a consequence of it."""
    for b in blocks:
        for inst in b.instructions:
            if INSTRUCTIONS.get(type(inst), (None,))[0] == NEVER:
                check(inst, act, lambda i=inst: where_of(i))


# calls that jump out of the functions between them (longjmp) or return twice (setjmp):
# the reverse sweep replays the forward's control flow backwards from its tape, which a
# non-local jump leaves unfinished (what the frames jumped over computed gets no adjoint)
NONLOCAL_JUMPS = {"setjmp", "_setjmp", "__sigsetjmp", "sigsetjmp", "longjmp", "_longjmp",
                  "siglongjmp", "__longjmp_chk", "vfork"}


def check_nonlocal_jump(inst, where) -> None:
    """Reverse mode: a call to ``setjmp``/``longjmp`` (or anything ``returns_twice``) in
    differentiated code is a compile error -- its derivative would silently miss what
    the frames a jump skips computed.  Forward mode follows the jumps as they happen."""
    from ..ir.attributes import resolved
    callee = inst.called_function
    name = callee.name if callee is not None else None
    twice = resolved(inst.module, inst.fn_attrs).has("returns_twice") or (
        callee is not None and resolved(inst.module, callee.fn_attrs).has("returns_twice"))
    if name in NONLOCAL_JUMPS or twice:
        raise NoDerivativeError(
            f"call to '{name or 'a returns_twice function'}': a non-local jump "
            "(setjmp/longjmp) in code differentiated in reverse mode; the reverse sweep "
            "cannot replay it", location=where(),
            hint="return an error code instead of jumping, or use forward mode "
                 "(__enzyme_fwddiff), which follows the jump")


_HINTS = {
    I.VAArg: "pass the values in an array instead of as variadic arguments",
    I.Invoke: "mark the callee noexcept or build with -fno-exceptions",
    I.CmpXchg: "use atomic fetch-add/sub on the double, or a lock around a plain update",
    I.IndirectBr: "use a switch instead of a computed goto",
}


def _integer_memory(inst) -> bool:
    """An atomic operation on integers in memory type analysis proves holds only
    integers (a counter or a flag): the object's other accesses are all integer, or
    the bytes the operation touches are (``std::shared_ptr``'s reference counts, in a
    control block that also holds the object -- by the byte-offset analysis)."""
    from ..analysis.types import memory_kinds, pointee_kinds
    ty, p = inst.operand(1).type, inst.operand(0)
    if not ty.is_int:
        return False
    if memory_kinds([p], exclude=inst) == {"int"}:
        return True
    module = inst.module
    return pointee_kinds(module, [p], module.datalayout.store_size(ty), exclude=inst) \
        == {"int"}


def _float_bits_rearranged(inst, act, limit=32) -> bool:
    """Whether the cast ``inst`` makes floats out of integers computed, through integer
    arithmetic (shifts, masks, additions: ``u += 3ull << 52`` multiplies a double by 8),
    truncations or lane extractions, from floating-point values that carry derivatives
    -- a float reinterpreted as an integer (a bitcast of an active value, or an integer
    load of memory with a shadow that holds floats), then rearranged: ``memcpy(&u64, x,
    8); y = (float)bits(u64 >> 32)``, or LLVM's ``bitcast <8 x float> to i256; lshr;
    trunc; bitcast to <4 x float>``; or read whole from memory as an integer and
    bitcast, where ``typed_copies`` left the load an integer (volatile, or bitcast to
    two float types).  A plain round
    trip (bitcast there and back, an integer copy) keeps its derivative."""
    from ..analysis.activity import floatish
    if inst.opcode != "bitcast":
        return False    # sitofp/uitofp convert an integer's value: no float bits there
    if not (floatish(inst.type) and inst.operand(0).type.is_int
            or inst.type.is_vector and floatish(inst.type)
            and inst.operand(0).type.is_vector and inst.operand(0).type.element.is_int):
        return False
    x = inst.operand(0)
    if isinstance(x, I.Load) and _float_bits(x, act, limit=limit):
        # floats read whole as an integer that typed_copies left an integer: the
        # derivative does not follow the bitcast
        return True
    return _float_bits(x, act, moved_only=True, limit=limit)


_MANTISSA_BITS = {"half": 10, "bfloat": 7, "float": 23, "double": 52, "x86_fp80": 63,
                  "fp128": 112}


def _float_bits_valued(inst, act, limit=32) -> bool:
    """Whether the conversion ``inst`` (``sitofp``/``uitofp``) takes the value of an
    integer computed from the bits of a floating-point value that carries a derivative,
    exponent and mantissa bits both -- Mitchell's ``log2``, ``(float)(bits(x) -
    0x3F800000) * 0x1p-23`` (HH-suite's ``flog2``), or the same on a double's high
    word: the result moves with the float, and no derivative follows the integer.  The
    exponent alone, shifted right past the mantissa (``ilogb``'s way), is constant
    between powers of two; mantissa bits alone, truncated below the exponent, are no
    function of the float's value (a NaN-boxed integer payload, `(double)(int32_t)v`
    where `v`'s tag says it holds one)."""
    from ..analysis.activity import floatish
    from ..ir.values import ConstantInt
    if inst.opcode not in ("sitofp", "uitofp") or not inst.operand(0).type.is_int:
        return False

    def spans(lo, hi, width, mantissa):
        """Whether the window [lo, hi) of a ``width``-bit float's bits holds both some
        of its mantissa and some of its exponent."""
        return lo < mantissa < hi and lo < width - 1

    # (value, the window [lo, hi) of its bits that reaches the conversion)
    walk = BoundedWalk((inst.operand(0), 0, inst.operand(0).type.width), limit)
    for v, lo, hi in walk:
        if isinstance(v, I.BinaryOp) and v.opcode not in I.FP_BINARY_OPS:
            by = v.operand(1)
            if v.opcode in ("lshr", "ashr") and isinstance(by, ConstantInt):
                walk.add((v.operand(0), lo + by.value, hi + by.value))
            else:
                walk.add(*((o, lo, hi) for o in v.operands if not o.is_constant))
        elif isinstance(v, I.Cast) and v.opcode in ("trunc", "zext", "sext"):
            narrow = min(v.type.width, v.operand(0).type.width)
            walk.add((v.operand(0), lo, min(hi, narrow)))
        elif isinstance(v, (I.Phi, I.Select, I.Freeze)):
            walk.add(*((o, lo, hi) for o in (
                v.merged if isinstance(v, (I.Phi, I.Select)) else v.operands)))
        elif isinstance(v, I.Cast) and v.opcode == "bitcast":
            src = v.operand(0)
            if floatish(src.type) and not src.type.is_vector \
                    and (src in act.active or src in act.pruned) \
                    and spans(lo, hi, v.type.width, _MANTISSA_BITS.get(str(src.type), 0)):
                return True
        elif isinstance(v, I.Load) and v.operand(0) in act.shadowed \
                and v.type.width in (32, 64) \
                and spans(lo, hi, v.type.width, 23 if v.type.width == 32 else 52):
            # (a float's bytes read as an integer: a union's other member at -O0 -- not
            # an integer field beside floats, `(float)item.idx`)
            module = inst.parent.parent.parent
            if _holds_a_float(module, v.operand(0), v.type.width // 8, v):
                return True
    return False
    walk = BoundedWalk((inst.operand(0), 0), limit)    # (value, bits shifted right)
    for v, shift in walk:
        if isinstance(v, I.BinaryOp) and v.opcode not in I.FP_BINARY_OPS:
            by = v.operand(1)
            if v.opcode in ("lshr", "ashr") and isinstance(by, ConstantInt):
                walk.add((v.operand(0), shift + by.value))
            else:
                walk.add(*((o, shift) for o in v.operands if not o.is_constant))
        elif isinstance(v, I.Cast) and v.opcode in ("trunc", "zext", "sext"):
            walk.add((v.operand(0), shift))
        elif isinstance(v, (I.Phi, I.Select, I.Freeze)):
            walk.add(*((o, shift) for o in (
                v.merged if isinstance(v, (I.Phi, I.Select)) else v.operands)))
        elif isinstance(v, I.Cast) and v.opcode == "bitcast":
            src = v.operand(0)
            if floatish(src.type) and not src.type.is_vector \
                    and (src in act.active or src in act.pruned) \
                    and shift < _MANTISSA_BITS.get(str(src.type), 0):
                return True
        elif isinstance(v, I.Load) and v.operand(0) in act.shadowed \
                and v.type.width in (32, 64) and shift < (23 if v.type.width == 32 else 52):
            # (a float's bytes read as an integer: a union's other member at -O0 -- not
            # an integer field beside floats, `(float)item.idx`)
            module = inst.parent.parent.parent
            if _holds_a_float(module, v.operand(0), v.type.width // 8, v):
                return True
    return False


def _float_punned_store(inst, act) -> bool:
    """Whether the store ``inst`` of an active float (or vector of floats) into a local
    is read back, over the same bytes, as floats of another type (clang's -O0 code for
    ``union { __m128 v; float f[4]; }`` passed by value: two ``double`` arguments,
    stored into the union and read as ``float``): the adjoints of the two typings would
    be added as numbers of the wrong type."""
    from ..analysis.activity import base_offset, floatish
    v = inst.operand(0)
    if not floatish(v.type) or v not in act.active:
        return False
    dl = inst.parent.parent.parent.datalayout
    root, off = base_offset(inst.operand(1), dl)
    if not isinstance(root, I.Alloca) or off is None:
        return False
    el = v.type.element if v.type.is_vector else v.type
    n = dl.store_size(v.type)
    walk = [root]
    while walk:
        x = walk.pop()
        for u in x.uses:
            user = u.user
            if isinstance(user, (I.GEP, I.Cast)) and user.type.is_pointer:
                walk.append(user)
            elif isinstance(user, I.Load) and floatish(user.type):
                _, o = base_offset(user.operand(0), dl)
                t = user.type.element if user.type.is_vector else user.type
                if t != el and (o is None or o < off + n and off < o + dl.store_size(user.type)):
                    return True
    return False


def _float_bits_stored(inst, act, limit=32) -> bool:
    """Whether the store ``inst`` writes, into memory that holds floats, integers made
    by rearranging the bits of floats that carry derivatives -- the float read back
    from memory instead of a bitcast (AVX's ``_mm256_andnot_ps`` at -O1 stores its
    integer lanes; a sign mask there is rewritten first: ``sign_bits``)."""
    v = inst.operand(0)
    ty = v.type
    if not (ty.is_int or ty.is_vector and ty.element.is_int) or v.is_constant:
        return False
    if not _float_bits(v, act, moved_only=True, limit=limit):
        return False
    # (the bytes written must hold floats and nothing else: an integer field of a
    # record that also holds doubles, copied piecewise, is no float)
    module = inst.parent.parent.parent
    size = module.datalayout.store_size(ty)
    from ..analysis.activity import floatish
    if size < 4 and not any(isinstance(x, I.Cast) and x.opcode == "bitcast"
                            and floatish(x.operand(0).type)
                            for x in _int_sources(v, casts=True)):
        # (bytes of a float only where a float's bits are cut up here -- or where the
        # bytes are read back and put together into a float: a little-endian packer's
        # `buf[i] = u >> 8 * i` unpacked by `v |= (uint64_t)in[i] << 8 * i`)
        return _bytes_become_floats(module, inst.operand(1), size)
    # (integer constants stored there say nothing against a float: they may be a
    # float's bits -- -O3's unswitched loop stores `<2 x i64> splat(0xffffffff)`, an
    # `{int idx; float w}` pair of -1 and 0.0f, into the array the packed pairs go to)
    if _holds_a_float(module, inst.operand(1), size, (inst,) + _constant_stores(module)):
        return True
    # into memory of integers, where the program makes floats of integers it loads (a
    # double packed into `uint32_t` words by one helper, unpacked by another), or
    # where what is loaded from there becomes a float (a big-endian serialiser's bytes,
    # cut from the double's bits and put together again by its reader): the
    # derivative would not follow the words back
    return 4 <= size <= 8 and _floats_from_loaded_bits(module) \
        or _bytes_become_floats(module, inst.operand(1), size)


def _bytes_become_floats(module, p, size=None, limit=64, depth=1) -> bool:
    """Whether some integer load of the ``size`` bytes at ``p`` (None: of the object it
    points into) -- here, in a defined function the object is passed to, or, for a
    parameter, in the callers' object -- becomes a floating-point value
    (:func:`_becomes_float`, ``depth`` levels: bitcast to one, or stored into memory
    that holds floats).  Offsets are followed through constant GEPs; a load at an
    offset not known counts."""
    from ..analysis.activity import base_offset
    dl = module.datalayout
    base, at = base_offset(p, dl)
    if size is None:
        at = None
    walk = BoundedWalk((base, 0, True), limit)
    for v, off, up in walk:
        if up and v.is_argument and v.parent is not None:
            # (a parameter of the function the bytes are stored in, or of its callers:
            # the memory the callers pass -- a packer's `buf`, read back by the caller's
            # unpacker; not for a callee's parameter, whose other callers pass other
            # memory)
            f, k = v.parent, v.index
            walk.add(*((u.user.args[k], off, True) for u in f.uses
                       if isinstance(u.user, I.Call) and u.user.called_function is f
                       and k < len(u.user.args)))
        for u in v.uses:
            user = u.user
            if derives_pointer(u):
                c = user.constant_offset(dl) if isinstance(user, I.GEP) else \
                    0 if isinstance(user, I.Cast) else None
                walk.add((user, None if off is None or c is None else off + c, False))
            elif isinstance(user, I.Load) and user.type.is_int:
                n = dl.store_size(user.type)
                if at is not None and off is not None and (off + n <= at or at + size <= off):
                    continue    # (other bytes of the object: a tag beside the bits)
                # (a byte: as the wider integer it is put into)
                wide = [user] if user.type.width >= 16 else [
                    x.user for x in user.uses if isinstance(x.user, I.Cast)
                    and x.user.opcode in ("zext", "sext")]
                if any(_becomes_float(w, depth=depth) for w in wide):
                    return True
            elif isinstance(user, I.Call) and u.index < len(user.args):
                callee = user.called_function
                if callee is not None and not callee.is_declaration \
                        and u.index < len(callee.args):
                    walk.add((callee.args[u.index], off, False))
    return False


def _floats_from_loaded_bits(module) -> bool:
    """Whether the program's functions (``module.typetree_scope``) make a float of the
    bits of integers they load: a bitcast of an integer computed (by shifts, ors,
    extensions) from integer loads."""
    scope = module.__dict__.get("typetree_scope") or [
        f for f in module.functions if f.is_materialized and not f.is_declaration]
    got = module.__dict__.get("_floats_from_loaded_bits")
    if got is not None and got[0] is scope:
        return got[1]
    from ..analysis.activity import floatish
    out = any(isinstance(i, I.Cast) and i.opcode == "bitcast" and floatish(i.type)
              and not floatish(i.operand(0).type)
              and any(_loaded_int(x) for x in _int_sources(i.operand(0), casts=True))
              for f in scope for i in f.instructions())
    module.__dict__["_floats_from_loaded_bits"] = (scope, out)
    return out


def _loaded_int(x) -> bool:
    """Whether ``x`` is an integer load, or an integer parameter that some call passes an
    integer computed from loads (-O3 loads the words in the caller: ``unpack(w[0],
    w[1])``)."""
    if isinstance(x, I.Load):
        return x.type.is_int
    if not (x.is_argument and x.type.is_int):
        return False
    f, k = x.parent, x.parent.args.index(x)
    return any(isinstance(u.user, I.Call) and u.user.called_function is f
               and k < len(u.user.args)
               and any(isinstance(y, I.Load) and y.type.is_int
                       for y in _int_sources(u.user.args[k], casts=True))
               for u in f.uses)


def _constant_stores(module) -> tuple:
    """The stores of integer constants (scalars or vectors) in the program's functions
    (``module.typetree_scope`` while the AD pass runs)."""
    from ..ir.values import ConstantAggregate, ConstantInt, ZeroInit
    scope = module.__dict__.get("typetree_scope") or [
        f for f in module.functions if f.is_materialized and not f.is_declaration]
    got = module.__dict__.get("_constant_stores")
    if got is not None and got[0] is scope:
        return got[1]
    out = tuple(i for f in scope for i in f.instructions()
                if isinstance(i, I.Store) and isinstance(i.operand(0), (
                    ConstantInt, ConstantAggregate, ZeroInit))
                and (i.operand(0).type.is_int or i.operand(0).type.is_vector
                     and i.operand(0).type.element.is_int))
    module.__dict__["_constant_stores"] = (scope, out)
    return out


def _float_bits(value, act, moved_only=False, limit=32, unknown=False) -> bool:
    """Whether the integer ``value`` holds bits of floating-point values that carry
    derivatives (a bitcast of an active float, an integer load of memory with a shadow
    that may hold floats), followed through phis and selects; with ``moved_only``, only
    bits that integer arithmetic, truncation or lane extraction has rearranged (and
    memory with no other access counts as holding floats), else also bits copied
    unchanged (and the memory must be seen to hold floats; ``unknown``: or not seen to
    hold anything)."""
    from ..analysis.activity import floatish
    from ..analysis.types import memory_kinds
    work, seen, moved = [(value, not moved_only)], set(), False
    while work and limit:
        limit -= 1
        v, through = work.pop()
        if (v, through) in seen:
            continue
        seen.add((v, through))
        if isinstance(v, I.BinaryOp) and v.opcode not in I.FP_BINARY_OPS:
            work.extend((o, True) for o in v.operands if not o.is_constant)
        elif isinstance(v, I.Cast) and v.opcode in ("trunc", "zext", "sext"):
            work.append((v.operand(0), True))
        elif isinstance(v, I.ExtractElement):
            work.append((v.operand(0), True))
        elif isinstance(v, (I.Phi, I.Select, I.Freeze)):
            work.extend((o, through) for o in (
                v.merged if isinstance(v, (I.Phi, I.Select)) else v.operands))
        elif isinstance(v, (I.ShuffleVector, I.InsertElement)):
            # integer lanes moved (a splat of a double's bits as <2 x i64>; Eigen's
            # movddup as a shuffle of <4 x i32> halves): no derivative follows them
            work.extend((o, True) for o in v.operands[:2] if not o.is_constant)
        elif isinstance(v, I.Cast) and v.opcode == "bitcast":
            src = v.operand(0)
            if floatish(src.type):
                # (a float whose only use is this cast reaches no output as a float:
                # activity's backward reasoning dropped it, ``pruned``)
                if through and (src in act.active or src in act.pruned):
                    moved = True
            else:
                work.append((src, through))
        elif isinstance(v, I.Load) and through and v.operand(0) in act.shadowed:
            # memory with a shadow read as an integer: its floats, unless its other
            # accesses show only integers (nothing else seen: it may hold floats)
            kinds = memory_kinds([v.operand(0)], exclude=v)
            if not kinds and (moved_only or unknown) \
                    or kinds & {"double", "float", "float-other"}:
                moved = True
    return moved


def _check_float_bits_crossing(inst, act, where) -> None:
    """A call passing or returning an integer that holds the bits of active
    floating-point values, which the other side turns back into floats (the x86-64 ABI
    passes ``union { double d; long i; }`` and ``struct { float v; int idx; }`` by value
    as an ``i64``): the derivative does not cross a call as an integer, so it is a
    compile error rather than a lost one.  Bits the other side keeps as an integer (a
    hash of a double key) carry no derivative and are no error.  (``ad/abi.py`` gives a
    whole float passed this way its type back before differentiation.)"""
    callee = inst.called_function
    if callee is None or callee.is_declaration or callee.name.startswith("llvm."):
        return      # libc/intrinsics: their own rules say what they do
    # (the callee bitcasting the bits to a float says what they are: memory with a
    # shadow that shows no typed access here -- the caller's float array, read as an
    # i32 at -O0 to pack a `{float, int}` argument -- counts as holding floats; and an
    # integer another call returned built from a float's bits, handed on unopened:
    # `use(make(x))` of a small struct both sides pass as an i64)
    _check_bits_stored_by_callee(inst, callee, act, where)
    crossing = [("the call passes", a.type) for a, param in zip(inst.args, callee.args)
                if (_int_bits(a, act) or _float_bits_returned(a, act))
                and _becomes_float(param, loose=True)
                or _int_bits(a, act, unknown=True) and _becomes_float(param)]
    if any(a in act.active or a in act.shadowed for a in inst.args) \
            and _becomes_float(inst, loose=_returns_float_bits(callee)):
        crossing.append(("the call returns", inst.type))
    if crossing:
        what, ty = crossing[0]
        raise NoDerivativeError(
            f"{what} floating-point values that carry derivatives as an integer ('{ty}': a "
            "union or small struct holding a float, passed by value as the ABI does): "
            "their derivatives cannot follow",
            location=where() if callable(where) else where,
            hint="pass the floating-point value itself, or a pointer to the union or struct")


def _check_bits_stored_by_callee(call, callee, act, where) -> None:
    """A float that carries a derivative, passed to a callee that stores its bits --
    cut up by integer operations -- into memory the call's pointer arguments reach, from
    which they are read back into a float (a big-endian serialiser `put_f64(buf, x)`,
    read back by `get_f64(buf)`): the callee carries no derivative to the bytes (no
    float reaches an output through it), so the derivative was 0, silently."""
    from ..analysis.activity import floatish, underlying_object
    for a, param in zip(call.args, callee.args):
        if not (floatish(a.type) and not a.type.is_vector
                and (a in act.active or a in act.pruned)):
            continue
        walk = BoundedWalk(param, 64)
        for v in walk:
            for u in v.uses:
                user = u.user
                if isinstance(user, I.Cast) and user.opcode in ("bitcast", "trunc", "zext",
                                                                "sext") \
                        and not floatish(user.type) \
                        or isinstance(user, I.BinaryOp) and user.opcode not in I.FP_BINARY_OPS \
                        or isinstance(user, (I.Phi, I.Select, I.Freeze)):
                    walk.add(user)
                elif isinstance(user, I.Store) and u.index == 0 and v is not param:
                    base = underlying_object(user.operand(1))
                    if base.is_argument and base.parent is callee \
                            and base.index < len(call.args) \
                            and _bytes_become_floats(call.module, call.args[base.index]):
                        raise NoDerivativeError(
                            "floating-point values moved through integer operations (the "
                            "callee stores the bits of a floating-point argument into memory "
                            "they are read back from as a float): their derivatives cannot "
                            "follow", location=where() if callable(where) else where,
                            hint="copy the value's bytes with memcpy, or keep it as a float")


def _float_bits_returned(v, act) -> bool:
    """Whether the integer ``v`` is the result (or a field of the result) of a call,
    with arguments that carry derivatives, of a defined function that builds it from a
    float's bits."""
    if not v.type.is_int:
        return False
    if isinstance(v, I.ExtractValue):    # ({i64, float}: the struct's first eightbyte)
        v = v.operand(0)
    if not isinstance(v, I.Call):
        return False
    f = v.called_function
    return f is not None and not f.is_declaration and _returns_float_bits(f) \
        and any(a in act.active or a in act.shadowed for a in v.args)


def _returns_float_bits(callee) -> bool:
    """Whether an integer ``callee`` returns (alone or in a struct) is made from a
    float's bits (``bitcast double to i64``: a tagged value built from a double; or
    loaded from memory where a float is seen among what it holds: a
    ``std::variant<double, int>`` returned from its local at -O0), not from pointers
    or integers (libc++'s list iterator returned as an ``i64``)."""
    from ..analysis.activity import floatish
    from ..analysis.typetree import MemoryTypes

    def loaded_float(x):
        if not (isinstance(x, I.Load) and (x.type.is_int or x.type.is_struct)):
            return False
        size = callee.parent.datalayout.store_size(x.type)
        got = MemoryTypes.of(callee.parent, [x.operand(0)]).kinds(x.operand(0), 0, size,
                                                                  exclude=x)
        return bool(got & {"double", "float"})

    return any(isinstance(x, I.Cast) and x.opcode == "bitcast" and floatish(x.operand(0).type)
               or loaded_float(x)
               for b in callee.blocks
               if isinstance(b.terminator, I.Ret) and b.terminator.value is not None
               for x in _int_sources(b.terminator.value, casts=True))


def _int_bits(v, act, unknown=False) -> bool:
    ty = v.type
    return ty.is_int and ty.width >= 16 and not v.is_constant \
        and _float_bits(v, act, unknown=unknown)


def _becomes_float(value, limit=16, loose=False, depth=3) -> bool:
    """Whether the integer ``value`` (a call's result, a parameter) is turned into
    floating-point values where it arrives: bitcast to a float type, or stored into
    memory seen to hold floats (through phis, selects, integer arithmetic and casts);
    ``loose``: memory where a float is seen among other kinds counts too (a tagged
    value's ``uint64_t`` bits field, read as a double by another function).  ``depth``
    more levels: or passed to a defined function where it does, returned to callers
    where the result does, or stored into memory whose integer loads do
    (:func:`_bytes_become_floats`: QuickJS's boxed values kept in a ``uint64_t`` stack
    at -O0, unboxed by another function)."""
    from ..analysis.activity import floatish
    ty = value.type
    parts = ty.elements if ty.is_struct else [ty]     # {i32, i64}: a tag and a union
    if not any(t.is_int and t.width >= 16 for t in parts):
        return False
    module = value.parent.parent if value.is_argument else value.module
    work, seen = [value], set()
    while work and limit:
        limit -= 1
        v = work.pop()
        if v in seen:
            continue
        seen.add(v)
        for u in v.uses:
            user = u.user
            if isinstance(user, I.Cast) and user.opcode == "bitcast" and floatish(user.type):
                return True
            if isinstance(user, (I.Phi, I.Select, I.Freeze)) \
                    or isinstance(user, I.ExtractValue) and not floatish(user.type) \
                    or isinstance(user, I.BinaryOp) \
                    and user.opcode not in I.FP_BINARY_OPS \
                    or isinstance(user, I.Cast) and user.opcode in ("trunc", "zext", "sext"):
                work.append(user)
            elif isinstance(user, I.Store) and user.operand(0) is v:
                size = module.datalayout.store_size(v.type)
                if _holds_a_float(module, user.operand(1), size, user, loose):
                    return True
                # into integer memory, where the program makes floats of integers it
                # loads (-O3 hands a double to a packer as an `i64` load: `pack(words,
                # bits)` stores it into `uint32_t` words another helper rebuilds from)
                if value.is_argument and 4 <= size <= 8 \
                        and _floats_from_loaded_bits(module):
                    return True
                if depth and _bytes_become_floats(module, user.operand(1), size,
                                                  depth=depth - 1):
                    return True
            elif depth and isinstance(user, I.Call) and u.index < len(user.args):
                callee = user.called_function
                if callee is not None and not callee.is_declaration \
                        and not (callee.name or "").startswith("llvm.") \
                        and u.index < len(callee.args) \
                        and _becomes_float(callee.args[u.index], limit, loose, depth - 1):
                    return True
            elif depth and isinstance(user, I.Ret) and user.parent is not None:
                # returned: where the callers' results go (a union handed back
                # unchanged by a getter, `ret i64 %0` at -O3)
                f = user.parent.parent
                if any(isinstance(c.user, I.Call) and c.user.called_function is f
                       and _becomes_float(c.user, limit, loose, depth - 1) for c in f.uses):
                    return True
    return False


def _holds_a_float(module, p, size, exclude, loose=False) -> bool:
    """Whether the byte-offset analysis finds a float -- and nothing else -- in some
    aligned 4 or 8 bytes of the ``size`` stored to ``p``, or, for fewer bytes, in the
    bytes stored (a temporary copied on, clang's
    -O0 code for a returned struct, is what it is copied to).  A field of a struct that
    also holds doubles is no float; bytes where the analysis has met both (libc++'s
    list keeps its size where its nodes keep their values) say nothing."""
    from ..analysis.typetree import MemoryTypes
    types = MemoryTypes.of(module, [p])
    for n, kind in ((8, "double"), (4, "float")):
        for off in range(0, size - n + 1, n):
            got = types.kinds(p, off, n, exclude)
            if got == {kind} or loose and kind in got:
                return True
            # (for a scalar of a float's width: or what the program's own accesses make
            # of those bytes and of the bytes integer copies move them to -- a double's
            # bits put into a `uint64_t` field by -O3's promoted argument, read as a
            # double after the call)
            if size == n and kind in got and types.copied_kinds(
                    p, n, exclude if isinstance(exclude, tuple) else (exclude,)) == {kind}:
                return True
    # fewer bytes than a float, where one is (a byte-by-byte swap of doubles: the other
    # bytes' stores are what makes them look like integers too)
    return size < 4 and bool(types.kinds(p, 0, size, exclude) & {"double", "float"})


_INT_ARITHMETIC = (I.BinaryOp, I.Phi, I.Select, I.Freeze)


def _int_sources(v, limit=32, casts=False):
    """The values the integer ``v`` is computed from through integer arithmetic
    (phis, selects, freezes included): the leaves of that computation; with ``casts``,
    also through truncations, extensions and the fields of a struct built by
    ``insertvalue``."""
    walk = BoundedWalk(v, limit)
    for x in walk:
        if isinstance(x, _INT_ARITHMETIC) or casts and (
                isinstance(x, I.InsertValue)
                or isinstance(x, I.Cast) and x.opcode in ("trunc", "zext", "sext")):
            walk.add(*x.operands)
        else:
            yield x


def _address_of_any(v, pointers) -> bool:
    """Whether the integer ``v`` is computed from the address (``ptrtoint``) of a pointer
    that ``pointers(p)`` accepts."""
    return any(isinstance(x, I.Cast) and x.opcode in ("ptrtoint", "ptrtoaddr")
               and pointers(x.operand(0)) for x in _int_sources(v))


def _made_pointer(param, depth=2, limit=32) -> bool:
    """Whether the integer parameter ``param`` is turned back into a pointer in its
    function (``inttoptr``, through integer arithmetic) or in a defined function it is
    passed to (``depth`` calls down)."""
    walk = BoundedWalk(param, limit)
    for v in walk:
        for u in v.uses:
            user = u.user
            if isinstance(user, I.Cast) and user.opcode == "inttoptr":
                return True
            if isinstance(user, _INT_ARITHMETIC) or \
                    isinstance(user, I.Cast) and user.type.is_int:
                walk.add(user)
            elif isinstance(user, I.Call) and depth and u.index < len(user.args):
                callee = user.called_function
                if callee is not None and not callee.is_declaration \
                        and u.index < len(callee.args) \
                        and _made_pointer(callee.args[u.index], depth - 1):
                    return True
    return False


def _check_address_crossing(call, act, where) -> None:
    """A pointer's address passed as an integer (a tagged pointer, ``uintptr_t``) to a
    defined function that turns it back into a pointer: the pointer's shadow cannot
    follow the integer, and derivatives read through it there would be lost."""
    callee = call.called_function
    if callee is None or callee.is_declaration:
        return
    for k, a in enumerate(call.args):
        if k < len(callee.args) and a.type.is_int \
                and (_address_of_any(a, lambda p: p in act.shadowed)
                     or _result_of_shadowed_call(a, act)) \
                and _made_pointer(callee.args[k]):
            raise NoDerivativeError(
                "the address of a pointer with a shadow is passed as an integer to "
                f"'{callee.name.removesuffix('.enzyme')}', which turns it back into a "
                "pointer: the shadow cannot follow",
                location=where() if callable(where) else where,
                hint="pass the pointer as a pointer (tag it in a separate integer)")


def _result_of_shadowed_call(v, act) -> bool:
    """Whether the integer ``v`` is (a field of) the result of a defined function that
    receives a pointer with a shadow: it may be that pointer's address (a tagged
    pointer built by an out-of-line ``make_view(p)`` returning ``{uintptr_t, int}``)."""
    for x in _int_sources(v):
        while isinstance(x, I.ExtractValue):
            x = x.operand(0)
        callee = x.called_function if isinstance(x, I.Call) else None
        if callee is not None and not callee.is_declaration \
                and any(a in act.shadowed for a in x.args):
            return True
    return False


def _returned_address(inst, act) -> bool:
    """For ``inttoptr``: whether its integer is (computed from) the result of a defined
    function returning an address made from one of its pointer parameters, for which
    this call passes a pointer with a shadow."""
    from ..analysis.activity import underlying_object
    for v in _int_sources(inst.operand(0)):
        callee = v.called_function if isinstance(v, I.Call) else None
        if callee is None or callee.is_declaration:
            continue
        for b in callee.blocks:
            t = b.terminator
            if isinstance(t, I.Ret) and t.value is not None:
                for k, param in enumerate(callee.args):
                    if k < len(v.args) and v.args[k] in act.shadowed and _address_of_any(
                            t.value, lambda p, param=param: underlying_object(p) is param):
                        return True
    return False


def _int_cast_involved(inst, act) -> bool:
    """Whether the integer operand of an ``inttoptr`` is computed from a pointer that has
    a shadow (through integer arithmetic), or from an integer loaded out of memory that
    may hold such pointers (a load only turned into a pointer, typed_copies makes a
    pointer load: this is what is left)."""
    for v in _int_sources(inst.operand(0)):
        if isinstance(v, I.Cast) and v.opcode in ("ptrtoint", "ptrtoaddr"):
            if v.operand(0) in act.shadowed:
                return True
        elif isinstance(v, I.Load):
            p = v.operand(0)
            if p in act.shadowed and act.may_hold_shadowed_pointers(p):
                return True
    return False
