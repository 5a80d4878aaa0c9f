"""Type analysis over opaque pointers (the part the AD pass needs today).

``memory_kinds(ptrs)`` answers "what does the memory behind these pointers hold?"
as a set over {'double', 'float', 'int', 'ptr'}, from every typed access
(loads, stores, GEP element types, allocated types) reachable from the same
underlying objects through GEPs, casts, phis and selects in the function.
"""

from __future__ import annotations

from ..ir.instructions import Alloca, Cast, GEP, Load, Phi, Select, Store

__all__ = ["memory_kinds", "scalar_kinds"]


def scalar_kinds(ty, out: set) -> set:
    if ty.is_float:
        out.add(ty.kind if ty.kind in ("double", "float") else "float-other")
    elif ty.is_int:
        out.add("int")
    elif ty.is_pointer:
        out.add("ptr")
    elif ty.is_vector or ty.is_array:
        scalar_kinds(ty.element, out)
    elif ty.is_struct:
        for t in ty.elements:
            scalar_kinds(t, out)
    return out


def _roots(p, limit=32):
    out, work, seen = [], [p], set()
    while work and limit:
        limit -= 1
        v = work.pop()
        if v in seen:
            continue
        seen.add(v)
        if isinstance(v, (GEP, Cast)):
            work.append(v.operand(0))
        elif isinstance(v, Phi):
            work.extend(x for x, _ in v.incoming)
        elif isinstance(v, Select):
            work.extend(v.operands[1:])
        else:
            out.append(v)
    return out


def memory_kinds(ptrs) -> set:
    kinds: set = set()
    roots = []
    for p in ptrs:
        roots.extend(_roots(p))
    work, seen = list(roots), set()
    while work:
        v = work.pop()
        if v in seen:
            continue
        seen.add(v)
        if isinstance(v, Alloca):
            scalar_kinds(v.allocated_type, kinds)
        for u in v.users:
            if isinstance(u, GEP) and u.operand(0) is v:
                if u.source_type.is_float or u.source_type.is_pointer:
                    scalar_kinds(u.source_type, kinds)
                work.append(u)
            elif isinstance(u, (Cast, Phi, Select)) and u.type.is_pointer:
                work.append(u)
            elif isinstance(u, Load):
                scalar_kinds(u.type, kinds)
            elif isinstance(u, Store) and u.operand(1) is v:
                scalar_kinds(u.operand(0).type, kinds)
    return kinds
