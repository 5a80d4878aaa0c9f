"""What the parts of the reverse-mode generator share: the instruction kinds that
are pure, small predicates on values and calls, and the trip count of a loop seen
from the augmented function (``reverse.py`` puts the generator together)."""

from __future__ import annotations

from ..analysis.activity import floatish
from ..analysis.effects import call_effect
from ..ir.instructions import (BinaryOp, Cast, ExtractElement, ExtractValue, FCmp, Freeze, GEP,
                               ICmp, InsertElement, InsertValue, Select, ShuffleVector, UnaryOp)
from ..ir.values import Poison, Undef
from .emit import zero

_PURE = (BinaryOp, UnaryOp, Cast, GEP, ICmp, FCmp, Select, ExtractValue, InsertValue,
         ExtractElement, InsertElement, ShuffleVector, Freeze)


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


def _float_data_global(v):
    """Whether ``v`` (a constant pointer) points into a read-only global holding
    floating-point values (``static const double GEOM[]``): a derivative read or
    accumulated through a pointer into it needs a shadow of its own -- the primal
    would give its values as tangents and take adjoints into read-only memory."""
    from ..ir.module import GlobalVariable
    for _ in range(16):
        if v.is_global or not v.operands:
            break
        v = v.operand(0)
    return isinstance(v, GlobalVariable) and v.is_constant and floatish(v.value_type)


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

