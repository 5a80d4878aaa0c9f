"""Terminators (``ret``, ``br``, ``switch``, ``indirectbr``, ``resume``,
``unreachable``, ``catchswitch``, ``catchret``, ``cleanupret``) and the other
exception-handling instructions (``landingpad``, ``catchpad``, ``cleanuppad``).

Subclasses of :class:`.instructions.Instruction` like the rest; ``instructions``
imports them back, so they are reached from there as before.
"""

from __future__ import annotations

from . import types as T
from .instructions import Instruction

__all__ = ["LandingPad", "CatchPad", "CleanupPad", "Terminator", "Ret", "Br", "Switch",
           "IndirectBr", "Resume", "Unreachable", "CatchSwitch", "CatchRet", "CleanupRet"]


# ----------------------------------------------------------------------------
# exception handling
# ----------------------------------------------------------------------------

class LandingPad(Instruction):
    """``clauses[i]`` is ``"catch"`` or ``"filter"`` for operand i."""

    opcode = "landingpad"

    def __init__(self, type, cleanup=False, clauses=(), name=None):
        super().__init__(type, [v for _, v in clauses], name)
        self.cleanup = cleanup
        self.clauses = [k for k, _ in clauses]

    def add_clause(self, kind, value):
        self.clauses.append(kind)
        self.append_operand(value)

    def _print(self, p):
        s = f"landingpad {self.type}"
        if self.cleanup:
            s += "\n          cleanup"
        for k, u in zip(self.clauses, self._ops):
            s += f"\n          {k} {p.tv(u.value)}"
        return s


class _FuncletPad(Instruction):
    """Operands ``[parent_pad, args...]``."""

    def __init__(self, parent_pad, args=(), name=None):
        super().__init__(T.token, [parent_pad, *args], name)

    def _print(self, p):
        return (f"{self.opcode} within {p.ref(self.operand(0))} ["
                + ", ".join(p.tv(v) for v in self.operands[1:]) + "]")


class CatchPad(_FuncletPad):
    opcode = "catchpad"


class CleanupPad(_FuncletPad):
    opcode = "cleanuppad"


# ----------------------------------------------------------------------------
# terminators
# ----------------------------------------------------------------------------

class Terminator(Instruction):
    is_terminator = True


class Ret(Terminator):
    opcode = "ret"

    def __init__(self, value=None):
        super().__init__(T.void, [value] if value is not None else [])

    @property
    def value(self):
        return self.operand(0) if self._ops else None

    def _print(self, p):
        return "ret " + p.tv(self.operand(0)) if self._ops else "ret void"


class Br(Terminator):
    """Unconditional ``[dest]`` or conditional ``[cond, iftrue, iffalse]``."""

    opcode = "br"

    def __init__(self, *ops):
        super().__init__(T.void, ops)

    @property
    def is_conditional(self) -> bool:
        return len(self._ops) == 3

    @property
    def condition(self):
        return self.operand(0) if len(self._ops) == 3 else None

    def _print(self, p):
        if len(self._ops) == 1:
            return "br " + p.lbl(self.operand(0))
        c, t, f = self.operands
        return f"br {p.tv(c)}, {p.lbl(t)}, {p.lbl(f)}"


class Switch(Terminator):
    """Operands ``[cond, default, case_value0, dest0, ...]``."""

    opcode = "switch"

    def __init__(self, cond, default, cases=()):
        super().__init__(T.void, [cond, default])
        for v, b in cases:
            self.add_case(v, b)

    def add_case(self, value, block):
        self.append_operand(value)
        self.append_operand(block)

    @property
    def condition(self):
        return self.operand(0)

    @property
    def default(self):
        return self.operand(1)

    @property
    def cases(self):
        ops = self._ops
        return [(ops[i].value, ops[i + 1].value) for i in range(2, len(ops), 2)]

    def _print(self, p):
        s = f"switch {p.tv(self.operand(0))}, {p.lbl(self.operand(1))} ["
        for v, b in self.cases:
            s += f"\n    {p.tv(v)}, {p.lbl(b)}"
        return s + "\n  ]"


class IndirectBr(Terminator):
    opcode = "indirectbr"

    def __init__(self, addr, dests=()):
        super().__init__(T.void, [addr, *dests])

    def _print(self, p):
        return (f"indirectbr {p.tv(self.operand(0))}, ["
                + ", ".join(p.lbl(b) for b in self.operands[1:]) + "]")


class Resume(Terminator):
    opcode = "resume"

    def __init__(self, value):
        super().__init__(T.void, [value])

    def _print(self, p):
        return "resume " + p.tv(self.operand(0))


class Unreachable(Terminator):
    opcode = "unreachable"

    def __init__(self):
        super().__init__(T.void)

    def _print(self, p):
        return "unreachable"


class CatchSwitch(Terminator):
    """Operands ``[parent_pad, handlers..., (unwind)]``; ``has_unwind`` says if the last is one."""

    opcode = "catchswitch"

    def __init__(self, parent_pad, handlers, unwind=None, name=None):
        ops = [parent_pad, *handlers] + ([unwind] if unwind is not None else [])
        super().__init__(T.token, ops, name)
        self.has_unwind = unwind is not None

    def _print(self, p):
        ops = self.operands
        hs = ops[1:-1] if self.has_unwind else ops[1:]
        s = f"catchswitch within {p.ref(ops[0])} [" + ", ".join(p.lbl(b) for b in hs) + "]"
        return s + (f" unwind {p.lbl(ops[-1])}" if self.has_unwind else " unwind to caller")


class CatchRet(Terminator):
    opcode = "catchret"

    def __init__(self, pad, dest):
        super().__init__(T.void, [pad, dest])

    def _print(self, p):
        return f"catchret from {p.ref(self.operand(0))} to {p.lbl(self.operand(1))}"


class CleanupRet(Terminator):
    opcode = "cleanupret"

    def __init__(self, pad, unwind=None):
        super().__init__(T.void, [pad] + ([unwind] if unwind is not None else []))

    def _print(self, p):
        s = f"cleanupret from {p.ref(self.operand(0))} unwind "
        return s + (p.lbl(self.operand(1)) if len(self._ops) > 1 else "to caller")
