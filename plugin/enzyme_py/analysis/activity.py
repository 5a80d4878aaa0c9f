"""Activity analysis: which values carry derivatives.

Forward ("down") reasoning from the active arguments: a float-typed value is
active if it depends on an active value or is loaded from memory with a shadow;
a pointer is *shadowed* (has a shadow pointer) if it derives from a duplicated
argument, a local/heap allocation, or is loaded from shadowed memory.  Backward
("up") reasoning prunes active values that cannot reach the return value or
shadowed memory: their adjoints would be zero anyway.

The result is read-only; ``str(result)`` lists the active values per block.
"""

from __future__ import annotations

from ..ir.instructions import (Alloca, Call, Cast, ExtractElement, ExtractValue, GEP,
                               InsertElement, InsertValue, Load, Phi, Select, ShuffleVector,
                               Store, BinaryOp, UnaryOp, Freeze)

__all__ = ["Activity", "ALLOC_FUNCS", "FREE_FUNCS", "floatish", "underlying_object"]

ALLOC_FUNCS = {"malloc", "calloc", "_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t",
               "realloc", "aligned_alloc", "_ZnwmSt11align_val_t"}
FREE_FUNCS = {"free", "_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdaPvm", "_ZdlPvSt11align_val_t",
              "_ZdlPvmSt11align_val_t"}


def floatish(ty) -> bool:
    if ty.is_float:
        return True
    if ty.is_vector:
        return ty.element.is_float
    if ty.is_struct:
        return any(floatish(t) for t in ty.elements)
    if ty.is_array:
        return floatish(ty.element)
    return False


def underlying_object(v, limit=64):
    """Strip GEPs and casts (not phis) to the pointer's base."""
    while limit:
        limit -= 1
        if isinstance(v, GEP):
            v = v.operand(0)
        elif isinstance(v, Cast) and v.opcode in ("bitcast", "addrspacecast"):
            v = v.operand(0)
        else:
            return v
    return v


class Activity:
    """``kinds[i]`` for argument i: ``"const"``, ``"dup"`` (pointer with shadow) or
    ``"out"`` (active by-value float)."""

    def __init__(self, fn, kinds, inactive=()):
        self.fn = fn
        self.inactive_fns = inactive  # names of functions whose calls carry no derivative
        self.active: set = set()      # float-typed values with adjoints
        self.shadowed: set = set()    # pointers with shadows
        for a, k in zip(fn.args, kinds):
            if k == "dup" and a.type.is_pointer:
                self.shadowed.add(a)
            elif k in ("out", "dup") and floatish(a.type):
                self.active.add(a)
        insts = [i for b in fn.blocks for i in b.instructions]
        changed = True
        while changed:
            changed = False
            for i in insts:
                if i in self.active or i in self.shadowed:
                    continue
                kind = self._classify(i)
                if kind == "active":
                    self.active.add(i)
                    changed = True
                elif kind == "shadow":
                    self.shadowed.add(i)
                    changed = True

    def _any_active(self, ops):
        return any(o in self.active for o in ops)

    def _classify(self, i):
        ty = i.type
        ops = i.operands
        if ty.is_pointer:
            if isinstance(i, Alloca):
                return "shadow" if _alloca_may_hold_float(i) else None
            if isinstance(i, (GEP, Cast)):
                return "shadow" if ops[0] in self.shadowed else None
            if isinstance(i, (Phi, Select)):
                vals = [v for v, _ in i.incoming] if isinstance(i, Phi) else ops[1:]
                return "shadow" if any(v in self.shadowed for v in vals) else None
            if isinstance(i, Load):
                return "shadow" if ops[0] in self.shadowed else None
            if isinstance(i, Call):
                name = i.callee_name or ""
                if name in self.inactive_fns:
                    return None
                if name in ALLOC_FUNCS:
                    return "shadow"
                if any(a in self.shadowed for a in i.args) and i.called_function is not None \
                        and not i.called_function.is_declaration:
                    return "shadow"
            return None
        if not floatish(ty):
            return None
        if isinstance(i, Load):
            return "active" if ops[0] in self.shadowed else None
        if isinstance(i, Call):
            if (i.callee_name or "") in self.inactive_fns:
                return None
            args = i.args
            if self._any_active(args) or any(a in self.shadowed for a in args):
                return "active"
            return None
        if isinstance(i, (BinaryOp, UnaryOp, Cast, Select, ExtractValue, InsertValue,
                          ExtractElement, InsertElement, ShuffleVector, Freeze)):
            return "active" if self._any_active(ops) else None
        if isinstance(i, Phi):
            return "active" if self._any_active([v for v, _ in i.incoming]) else None
        return None

    def is_active(self, v) -> bool:
        return v in self.active

    def has_shadow(self, v) -> bool:
        return v in self.shadowed

    def __str__(self):
        out = []
        for b in self.fn.blocks:
            names = [i.name or i.opcode for i in b.instructions
                     if i in self.active or i in self.shadowed]
            out.append(f"{b.name}: {' '.join(names)}")
        return "\n".join(out)


def _alloca_may_hold_float(a) -> bool:
    ty = a.allocated_type

    def has(t):
        if t.is_float or t.is_pointer:
            return True
        if t.is_vector or t.is_array:
            return has(t.element)
        if t.is_struct:
            return any(has(x) for x in t.elements)
        return False

    if has(ty):
        return True
    # i8 buffers (after SROA of memcpy'd structs) may hold anything: look at the uses
    work, seen = [a], set()
    while work:
        v = work.pop()
        if v in seen:
            continue
        seen.add(v)
        for u in v.users:
            if isinstance(u, (GEP, Cast, Phi, Select)):
                work.append(u)
            elif isinstance(u, Load) and (floatish(u.type) or u.type.is_pointer):
                return True
            elif isinstance(u, Store) and (floatish(u.operand(0).type)
                                           or u.operand(0).type.is_pointer):
                return True
            elif isinstance(u, Call):
                return True
    return False
