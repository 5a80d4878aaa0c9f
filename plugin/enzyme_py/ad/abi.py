"""Floating-point values the C ABI passes as integers, given back their type.

The x86-64 ABI passes and returns ``union { double num; long i; }`` by value as an
``i64`` (and a union of a float and an int as an ``i32``): clang's code for
``sq(num v) { return v.num * v.num; }`` is ``define double @sq(i64 %v)`` whose body
starts with ``bitcast i64 %v to double``, and its callers pass ``bitcast double %x to
i64``.  Derivatives follow a value's type, so across such a call they would be lost.

Before differentiation, in the private copies about to be differentiated, a parameter
bitcast to the floating-point type of its width becomes a parameter of that type (each
call passes its argument bitcast to it; uses that read its bits as an integer, a
union's exponent field, read the new parameter bitcast back), and a function
whose every return is a bitcast of one floating-point type returns that type (each
call's result is bitcast back for its users) -- the same program, with the floats'
type at the call boundary.  The bitcast round trips left in the callers keep their
derivatives (``rules.CASTS``).  Only functions every use of which is a direct call are
changed (an address taken keeps the ABI's type).  An integer holding floats that is not
of this form -- a float and an int packed into one ``i64`` -- stays a compile error where
it crosses a call (``kinds._check_float_bits_crossing``).
"""

from __future__ import annotations

import re

from ..ir import types as T
from ..ir.instructions import Call, Cast, Ret

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


def _param_float(arg):
    """The float type the integer parameter ``arg`` is bitcast to, when some use
    bitcasts it to the floating-point type of its width and no use bitcasts it to
    another type (the other uses read its bits as an integer: a union's ``u >> 52``)."""
    ft = _float_of(arg.type)
    if ft is None:
        return None
    found = False
    for u in arg.uses:
        c = u.user
        if isinstance(c, Cast) and c.opcode == "bitcast":
            if c.type != ft:
                return None
            found = True
    return ft if found else None


def _return_float(fn):
    """The float type every ``ret`` of ``fn`` bitcasts its value from."""
    ft = _float_of(fn.return_type)
    if ft is None:
        return None
    rets = [b.terminator for b in fn.blocks if isinstance(b.terminator, Ret)]
    for r in rets:
        v = r.operand(0)
        if not (isinstance(v, Cast) and v.opcode == "bitcast" and v.operand(0).type == ft):
            return None
    return ft if rets else None


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
            back = None
            for u in users:
                user = u.user
                if isinstance(user, Cast) and user.opcode == "bitcast" and user.type == ret:
                    user.replace_all_uses_with(c)      # the float the caller wanted
                    user.erase()
                    continue
                if back is None:
                    back = Cast("bitcast", c, old.ret)
                    back.insert_after(c)
                user.set_operand(u.index, back)


def retype_float_abi(fns) -> list:
    """Give the copies ``fns`` (about to be differentiated) their floats' types at call
    boundaries where the ABI made them integers; return the functions changed."""
    fns = [f for f in fns if not f.is_declaration]
    for fn in fns:
        fn.materialize()     # their calls of each other are among their uses
    changed = []
    for fn in fns:
        if fn.function_type.varargs:
            continue
        calls = _direct_calls(fn)
        if calls is None:
            continue
        params = {i: ft for i, a in enumerate(fn.args) if (ft := _param_float(a)) is not None}
        ret = _return_float(fn)
        if params or ret is not None:
            _retype(fn, calls, params, ret)
            changed.append(fn)
    return changed
