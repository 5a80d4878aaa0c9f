"""Floating-point values the C ABI passes as integers, given back their type.

The x86-64 ABI passes and returns ``union { double num; long i; }`` by value as an
``i64`` (and a union of a float and an int as an ``i32``): clang's code for
``sq(num v) { return v.num * v.num; }`` is ``define double @sq(i64 %v)`` whose body
starts with ``bitcast i64 %v to double``, and its callers pass ``bitcast double %x to
i64``.  Derivatives follow a value's type, so across such a call they would be lost.
(-O3's argument promotion does the same to a pointer to a double the callee only
copies: ``box(&a, &x)``, ``memcpy(&a->bits, x, 8)``, becomes ``box(&a, i64 %bits)``.)

Before differentiation, in the private copies about to be differentiated, a parameter
bitcast to the floating-point type of its width (or only stored, into memory read as
floats of that width) becomes a parameter of that type (each
call passes its argument bitcast to it; uses that read its bits as an integer, a
union's exponent field, read the new parameter bitcast back), and a function
whose every return is a bitcast of one floating-point type (or an integer load of
memory holding only such floats: ``std::bit_cast<uint64_t>`` at -O0) returns that type (each
call's result is bitcast back for its users) -- the same program, with the floats'
type at the call boundary.  The bitcast round trips left in the callers keep their
derivatives (``rules.CASTS``).  A small struct returned as ``{ i64, i8 }`` -- a union of
a double beside a flag, what libc++'s ``std::optional<double>`` is -- gets the float
type for each integer field that holds a float's bits at every ``ret`` (inserted as a
bitcast float or loaded as one, by its TBAA tag or what the memory is seen to hold):
``{ double, i8 }``; each call's uses of the field get the float, or its bits back.
Only functions every use of which is a direct call are changed (an address taken
keeps the ABI's type).  An integer holding floats that is not
of this form -- a float and an int packed into one ``i64`` -- stays a compile error where
it crosses a call (``kinds._check_float_bits_crossing``).
"""

from __future__ import annotations

import re

from ..ir import types as T
from ..ir.instructions import Call, Cast, ExtractValue, InsertValue, Load, Ret, Store

__all__ = ["retype_float_abi"]

_FLOAT_OF_WIDTH = {64: T.double, 32: T.float}
# attributes of an integer that a float may not carry
_INT_ONLY = re.compile(r"\b(range\([^)]*\)|zeroext|signext|noext)\s*")


def _float_of(ty):
    return _FLOAT_OF_WIDTH.get(ty.width) if ty.is_int else None


def _direct_calls(fn):
    """The calls of ``fn`` when every use of it is as the callee of a direct call with
    its own function type, else None."""
    calls = []
    for u in fn.uses:
        c = u.user
        if not (isinstance(c, Call) and c.callee is fn and fn not in c.args
                and c.function_type == fn.function_type):
            return None
        calls.append(c)
    return calls


def _param_float(arg, types):
    """The float type the integer parameter ``arg`` is bitcast to, when some use
    bitcasts it to the floating-point type of its width and no use bitcasts it to
    another type (the other uses read its bits as an integer: a union's ``u >> 52``);
    or that it is only stored as, into memory where the program's own accesses, and
    those of the bytes integer copies move it to, are floats of that type
    (``typetree.copied_kinds``: -O3's argument promotion hands ``box(&a, &x)``, which
    ``memcpy``s a double into a ``uint64_t`` field, the double's bits as an ``i64``).
    ``types``: the byte-offset analysis, made when first asked for."""
    ft = _float_of(arg.type)
    if ft is None:
        return None
    if _bitcast_only_to([arg], ft):
        return ft
    stores = [u.user for u in arg.uses]
    if not stores or not all(isinstance(st, Store) and st.operand(0) is arg
                             and not st.volatile and not st.ordering for st in stores):
        return None
    n = ft.width // 8
    got = set()
    for st in stores:
        got |= types().copied_kinds(st.operand(1), n, exclude=(st,))
    return ft if got == {ft.kind} else None


def _bitcast_only_to(values, ft) -> bool:
    """Whether some use of ``values`` bitcasts one to ``ft``, and none to another type."""
    found = False
    for v in values:
        for u in v.uses:
            c = u.user
            if isinstance(c, Cast) and c.opcode == "bitcast":
                if c.type != ft:
                    return False
                found = True
    return found


def _return_float(fn):
    """The float type every ``ret`` of ``fn`` bitcasts its value from."""
    ft = _float_of(fn.return_type)
    if ft is None:
        return None
    rets = [b.terminator for b in fn.blocks if isinstance(b.terminator, Ret)]
    for r in rets:
        v = r.operand(0)
        if not (isinstance(v, Cast) and v.opcode == "bitcast" and v.operand(0).type == ft
                or _loads_float(v, ft)):
            return None
    return ft if rets else None


def _loads_float(v, ft) -> bool:
    """Whether ``v`` is an integer load of memory that holds floats of type ``ft`` and
    nothing else (``types.memory_kinds``, its own access aside): ``std::bit_cast<
    uint64_t>(x)`` of a double at -O0, a function returning ``*(const uint64_t *)&x``."""
    from ..analysis.types import memory_kinds
    return isinstance(v, Load) and not v.volatile and not v.ordering \
        and memory_kinds([v.operand(0)], exclude=v) == {ft.kind}


def _struct_fields(fn, calls):
    """{field: (float type, integer loads to read as floats)} for the integer fields of
    ``fn``'s literal struct result that hold a float's bits at every ``ret``
    (``_field_floats``); {} for none."""
    ty = fn.return_type
    if not ty.is_struct or type(ty) is not T.StructType or ty.packed \
            or not any(_float_of(e) for e in ty.elements):
        return {}
    rets = [b.terminator for b in fn.blocks if isinstance(b.terminator, Ret)]
    # (only the forms retyped exactly: each result read whole from memory by one load,
    # or built by a chain of insertvalues; each call's result taken apart by
    # extractvalues or stored whole -- elsewhere the bits would cross an integer
    # aggregate, and the check for floats crossing a call as integers stays)
    if not rets or not all(isinstance(v, Load) and len(v.uses) == 1 or _insert_chain(v)
                           for v in (r.operand(0) for r in rets)) \
            or not all(isinstance(u.user, ExtractValue) or isinstance(u.user, Store)
                       and u.index == 0 for c in calls for u in c.uses):
        return {}
    offsets = fn.parent.datalayout.field_offsets(ty)
    out = {}
    for k, e in enumerate(ty.elements):
        ft = _float_of(e)
        if ft is None:
            continue
        loads = []
        for r in rets:
            got = _field_floats(fn.parent, r.operand(0), k, offsets[k], ft, calls)
            if got is None:
                break
            loads.extend(got)
        else:
            out[k] = (ft, loads)
    return out


def _field_floats(module, v, k, offset, ft, calls):
    """Whether field ``k`` (at byte ``offset``) of the struct value ``v`` holds a float
    of type ``ft``, and the integer loads that read it: None where it does not;
    otherwise the loads (maybe none).  A struct read whole from memory (a local at -O0)
    holds one where the memory is seen to hold only such floats there, or the callers
    turn the field into that float and nothing else (a union member read as the
    double it holds, whatever else the callee may have put there: an empty optional's
    byte).  A struct built field by field holds one where the field is chosen (phis,
    selects) only between bitcasts of such floats, constants, and integer loads of
    such floats (their TBAA tag, or the memory's other accesses, say so -- or, where
    nothing else here accesses it, the callers' reading).  Memory "holds only such
    floats" where the other kinds seen there are narrower members at its first byte."""
    from ..analysis.types import tbaa_kind
    from ..analysis.typetree import MemoryTypes
    from ..ir.instructions import Phi, Select
    from ..ir.values import ConstantInt, Poison, Undef

    def seen(load, p, off):
        n = ft.width // 8
        types = MemoryTypes.of(module, [p])
        got = types.kinds(p, off, n, exclude=load)
        # (a union of the float and a narrower member at its start -- libc++'s empty
        # optional writes one byte there -- holds the float: nothing else spans it)
        return got == {ft.kind} or ft.kind in got \
            and types.kinds(p, off + 1, n - 1, exclude=load) == {ft.kind} \
            or not got and _callers_read_float(calls, k, ft)

    if isinstance(v, Load):
        return [] if seen(v, v.operand(0), offset) or _callers_read_float(calls, k, ft) \
            else None
    while isinstance(v, InsertValue) and v.indices != [k]:
        v = v.operand(0)
    if not isinstance(v, InsertValue):
        return None
    loads, work, done = [], [v.operand(1)], set()
    while work:
        x = work.pop()
        if x in done:
            continue
        done.add(x)
        if len(done) > 64:
            return None
        if isinstance(x, Cast) and x.opcode == "bitcast" and x.operand(0).type == ft \
                or isinstance(x, (ConstantInt, Undef, Poison)):
            continue
        if isinstance(x, Load) and not x.volatile and not x.ordering \
                and (tbaa_kind(x) == ft.kind or seen(x, x.operand(0), 0)):
            loads.append(x)
        elif isinstance(x, Phi):
            work.extend(y for y, _ in x.incoming)
        elif isinstance(x, Select):
            work.extend(x.operands[1:])
        else:
            return None
    return loads


def _callers_read_float(calls, k, ft) -> bool:
    """Whether the calls' field ``k`` is bitcast to ``ft`` somewhere and to no other
    type anywhere."""
    return _bitcast_only_to([u.user for c in calls for u in c.uses
                             if isinstance(u.user, ExtractValue) and u.user.indices == [k]],
                            ft)


def _retype_struct(fn, calls, fields):
    """Give ``fn``'s struct result the float types ``fields`` (index -> type)."""
    for ft, loads in fields.values():
        for ld in dict.fromkeys(loads):     # the float it holds, read as one (its bits
            if ld.type != ft:               # for the rest)
                bits = Cast("bitcast", ld, ld.type)
                bits.insert_after(ld)
                ld.replace_all_uses_with(bits)
                bits.set_operand(0, ld)
                ld.type = ft
    fields = {k: ft for k, (ft, _) in fields.items()}
    old = fn.function_type
    new_ret = T.StructType([fields.get(k, e) for k, e in enumerate(old.ret.elements)])
    fn.function_type = T.FunctionType(new_ret, list(old.params), old.varargs)
    fn.prefix = _INT_ONLY.sub("", fn.prefix).strip()
    for b in fn.blocks:
        r = b.terminator
        if not isinstance(r, Ret):
            continue
        v = r.operand(0)
        if isinstance(v, Load):
            v.type = new_ret        # (the same bytes, read with the floats' types)
        else:
            _retype_chain(v, new_ret, fields)
    for c in calls:
        c.function_type = fn.function_type
        c.ret_attrs = _INT_ONLY.sub("", c.ret_attrs).strip()
        users = list(c.uses)
        c.type = new_ret
        for u in users:
            user = u.user
            if isinstance(user, ExtractValue) and len(user.indices) == 1 \
                    and user.indices[0] in fields:
                user.type = fields[user.indices[0]]
                _now_float(user, list(user.uses), old.ret.elements[user.indices[0]])
            # (another field, whose type did not change; or the struct stored whole:
            # the same bytes, now typed)


def _insert_chain(v) -> bool:
    """Whether the struct value ``v`` is a chain of insertvalues of its fields into a
    constant (poison, undef, zeroinitializer, ``{ i32 1, i64 poison }``), each used only
    by the next."""
    from ..ir.values import ConstantAggregate, Poison, Undef, ZeroInit
    while isinstance(v, InsertValue) and len(v.indices) == 1 and len(v.uses) == 1:
        v = v.operand(0)
    return isinstance(v, (Poison, Undef, ZeroInit, ConstantAggregate))


def _constant_as(c, ty, fields):
    """The struct constant ``c`` as the struct type ``ty``: the fields in ``fields``
    hold the floats of the same bits."""
    import struct
    from ..ir.values import ConstantAggregate, ConstantFP, ConstantInt, Poison, Undef, ZeroInit
    if isinstance(c, (Poison, Undef, ZeroInit)):
        return type(c)(ty)
    elements = []
    for k, x in enumerate(c.operands):
        ft = fields.get(k)
        if ft is not None and isinstance(x, ConstantInt):
            fmt = ("<q", "<d") if ft.kind == "double" else ("<i", "<f")
            bits = x.value & ((1 << x.type.width) - 1)
            if bits >= 1 << (x.type.width - 1):
                bits -= 1 << x.type.width
            x = ConstantFP(ft, struct.unpack(fmt[1], struct.pack(fmt[0], bits))[0])
        elif ft is not None:
            x = type(x)(ft)         # (poison, undef, zeroinitializer)
        elements.append(x)
    return ConstantAggregate(ty, elements)


def _retype_chain(v, ty, fields):
    """Retype the insertvalue chain ending in ``v`` to the struct type ``ty``: the
    float fields get their integer bitcast to the float type (an integer load only
    bitcast is read as a float later: ``typed_copies.retype_float_lanes``)."""
    chain = []
    while isinstance(v, InsertValue):
        chain.append(v)
        v = v.operand(0)
    for iv in reversed(chain):
        if not isinstance(iv.operand(0), InsertValue):
            iv.set_operand(0, _constant_as(iv.operand(0), ty, fields))
        iv.type = ty
        k = iv.indices[0]
        if k in fields:
            x = iv.operand(1)
            if isinstance(x, Cast) and x.opcode == "bitcast" and x.operand(0).type == fields[k]:
                iv.set_operand(1, x.operand(0))
                if not x.uses:
                    x.erase()
            else:
                bc = Cast("bitcast", x, fields[k])
                bc.insert_before(iv)
                iv.set_operand(1, bc)


def _now_float(v, uses, int_ty) -> None:
    """``v`` was an integer of type ``int_ty`` and is now the float of its bits: its
    ``uses`` that bitcast it to that float take ``v`` itself, the others its bits back."""
    bits = None
    for u in uses:
        x = u.user
        if isinstance(x, Cast) and x.opcode == "bitcast" and x.type == v.type:
            x.replace_all_uses_with(v)      # the float the caller wanted
            x.erase()
            continue
        if bits is None:
            bits = Cast("bitcast", v, int_ty)
            bits.insert_after(v)
        x.set_operand(u.index, bits)


def _retype(fn, calls, params, ret):
    """Give ``fn`` the float types ``params`` (index -> type) and ``ret`` (or None)."""
    old = fn.function_type
    new_params = [params.get(i, t) for i, t in enumerate(old.params)]
    new = T.FunctionType(ret or old.ret, new_params, old.varargs)
    fn.function_type = new
    for i, ft in params.items():
        arg = fn.args[i]
        arg.type = ft
        arg.attrs = _INT_ONLY.sub("", arg.attrs).strip()
        bits = None
        for u in list(arg.uses):
            bc = u.user
            if isinstance(bc, Cast) and bc.opcode == "bitcast" and bc.type == ft:
                bc.replace_all_uses_with(arg)
                bc.erase()
                continue
            if bits is None:    # the bits as the integer they were (no derivative)
                bits = Cast("bitcast", arg, old.params[i])
                bits.insert_before(fn.blocks[0].instructions[0])
            bc.set_operand(u.index, bits)
    if ret is not None:
        fn.prefix = _INT_ONLY.sub("", fn.prefix).strip()
        for b in fn.blocks:
            r = b.terminator
            if isinstance(r, Ret):
                bc = r.operand(0)
                if isinstance(bc, Load):    # (read as the float: ``retype_float_lanes``)
                    f = Cast("bitcast", bc, ret)
                    f.insert_before(r)
                    r.set_operand(0, f)
                    continue
                r.set_operand(0, bc.operand(0))
                if not bc.uses:
                    bc.erase()
    for c in calls:
        for i, ft in params.items():
            a = c.args[i]
            if isinstance(a, Cast) and a.opcode == "bitcast" and a.operand(0).type == ft:
                c.set_arg(i, a.operand(0))      # the caller's float, as it was
                if not a.uses:
                    a.erase()
            else:
                bc = Cast("bitcast", a, ft)
                bc.metadata = [m for m in c.metadata if m[0] == "dbg"]
                bc.insert_before(c)
                c.set_arg(i, bc)
            if c.arg_attrs:
                c.arg_attrs[i] = _INT_ONLY.sub("", c.arg_attrs[i]).strip()
        c.function_type = new
        if ret is not None:
            c.ret_attrs = _INT_ONLY.sub("", c.ret_attrs).strip()
            users = list(c.uses)
            c.type = ret
            _now_float(c, users, old.ret)


def retype_float_abi(fns) -> list:
    """Give the copies ``fns`` (about to be differentiated) their floats' types at call
    boundaries where the ABI made them integers; return the functions changed."""
    fns = [f for f in fns if not f.is_declaration]
    for fn in fns:
        fn.materialize()     # their calls of each other are among their uses
    changed, made = [], []

    def types():
        if not made:
            from ..analysis.typetree import MemoryTypes
            made.append(MemoryTypes(fns[0].parent, fns))
        return made[0]

    for fn in fns:
        if fn.function_type.varargs:
            continue
        calls = _direct_calls(fn)
        if calls is None:
            continue
        params = {i: ft for i, a in enumerate(fn.args)
                  if (ft := _param_float(a, types)) is not None}
        ret = _return_float(fn)
        if params or ret is not None:
            _retype(fn, calls, params, ret)
            changed.append(fn)
        fields = _struct_fields(fn, calls)
        if fields:
            _retype_struct(fn, calls, fields)
            if fn not in changed:
                changed.append(fn)
    return changed
