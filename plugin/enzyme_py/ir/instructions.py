"""Instructions: one class per family, each knows its operands and prints itself.

Operand layouts follow LLVM where it is simple (a store is ``[value, ptr]``, a
call is ``[args..., bundle inputs..., callee]``).  Per-kind fields are plain
attributes; ``metadata`` holds the trailing attachments as ``(kind, text)``
pairs (``("dbg", "!12")``) and ``dbg_records`` the ``#dbg_*`` records printed
before the instruction.

The terminators and the exception-handling instructions are in :mod:`.terminators`
(imported here, so ``instructions.Br`` and ``from .instructions import *`` see them).
"""

from __future__ import annotations

from . import types as T
from .values import DebugRecord, IRError, User, Value

__all__ = [
    "Instruction", "UnaryOp", "BinaryOp", "ICmp", "FCmp", "Cast", "Select", "Phi",
    "Freeze", "ExtractElement", "InsertElement", "ShuffleVector", "ExtractValue",
    "InsertValue", "Alloca", "Load", "Store", "Fence", "CmpXchg", "AtomicRMW", "GEP",
    "Call", "Invoke", "VAArg", "LandingPad", "CatchPad", "CleanupPad", "Ret", "Br",
    "Switch", "IndirectBr", "Resume", "Unreachable", "CatchSwitch", "CatchRet",
    "CleanupRet", "VerbatimInst", "BINARY_OPS", "CAST_OPS", "FP_BINARY_OPS",
]

BINARY_OPS = {"add", "sub", "mul", "udiv", "sdiv", "urem", "srem", "shl", "lshr", "ashr",
              "and", "or", "xor", "fadd", "fsub", "fmul", "fdiv", "frem"}
FP_BINARY_OPS = {"fadd", "fsub", "fmul", "fdiv", "frem"}
CAST_OPS = {"trunc", "zext", "sext", "fptrunc", "fpext", "fptoui", "fptosi", "uitofp",
            "sitofp", "ptrtoint", "inttoptr", "bitcast", "addrspacecast", "ptrtoaddr"}


def _j(*parts) -> str:
    return " ".join(p for p in parts if p)


class Instruction(User):
    """Base class; ``opcode`` is the LLVM mnemonic."""

    is_instruction = True
    is_terminator = False
    opcode = ""

    def __init__(self, type, operands=(), name=None):
        super().__init__(type, operands, name)
        self.parent = None  # BasicBlock
        self.metadata: list[tuple[str, str]] = []
        self.dbg_records: list[DebugRecord] = []

    # -- position -------------------------------------------------------------
    @property
    def function(self):
        return self.parent.parent if self.parent is not None else None

    @property
    def module(self):
        f = self.function
        return f.parent if f is not None else None

    def _check_free(self, other: Instruction):
        if other.parent is None:
            raise IRError("reference instruction is not in a block")
        if self.parent is not None:
            raise IRError("instruction is already in a block; use move_before/move_after")

    def insert_before(self, other: Instruction) -> Instruction:
        self._check_free(other)
        blk = other.parent
        blk.instructions.insert(blk.index_of(other), self)
        self.parent = blk
        return self

    def insert_after(self, other: Instruction) -> Instruction:
        self._check_free(other)
        blk = other.parent
        blk.instructions.insert(blk.index_of(other) + 1, self)
        self.parent = blk
        return self

    def remove_from_parent(self) -> Instruction:
        """Unlink from the block, keeping operands and uses (for moving)."""
        if self.parent is not None:
            self.parent.instructions.pop(self.parent.index_of(self))
            self.parent = None
        return self

    def move_before(self, other: Instruction) -> None:
        self.remove_from_parent().insert_before(other)

    def move_after(self, other: Instruction) -> None:
        self.remove_from_parent().insert_after(other)

    def erase(self) -> None:
        """Remove and drop operands; raises if the result is still used.

        Uses by debug records do not count: they become ``poison``.  The
        instruction's own debug records move to the next instruction.
        """
        real = [u for u in self.uses if not u.user.is_debug_use]
        if real:
            raise IRError(f"cannot erase {self.opcode} instruction: it still has "
                          f"{len(real)} use(s)")
        if self.uses:
            from .values import Poison
            for u in self.uses:
                u.user.set_operand(u.index, Poison(self.type))
        blk = self.parent
        if blk is not None:
            i = blk.index_of(self)
            if self.dbg_records and i + 1 < len(blk.instructions):
                nxt = blk.instructions[i + 1]
                for r in self.dbg_records:
                    r.owner = nxt
                nxt.dbg_records[:0] = self.dbg_records
            else:
                for r in self.dbg_records:
                    r.drop_all_references()
            blk.instructions.pop(i)
            self.parent = None
        self.dbg_records = []
        self.drop_all_references()

    # -- copy -----------------------------------------------------------------
    def clone(self, vmap: dict | None = None) -> Instruction:
        """A detached copy whose operands are mapped through ``vmap`` (old → new)."""
        new = object.__new__(type(self))
        Value.__init__(new, self.type, self.name)
        new._ops = []
        for k, v in self.__dict__.items():
            setattr(new, k, list(v) if type(v) is list else v)
        new.parent = None
        get = vmap.get if vmap is not None else None
        for u in self._ops:
            v = u.value
            new.append_operand(get(v, v) if get else v)
        new.dbg_records = []
        for r in self.dbg_records:
            c = r.clone(vmap)
            c.owner = new
            new.dbg_records.append(c)
        return new

    # -- metadata -------------------------------------------------------------
    def get_metadata(self, kind: str) -> str | None:
        for k, v in self.metadata:
            if k == kind:
                return v
        return None

    def set_metadata(self, kind: str, text: str | None) -> None:
        self.metadata = [(k, v) for k, v in self.metadata if k != kind]
        if text is not None:
            self.metadata.append((kind, text))

    @property
    def debug_loc(self):
        """``(filename, line, column)`` from ``!dbg``, or None."""
        md = self.get_metadata("dbg")
        mod = self.module
        if md is None or mod is None:
            return None
        return mod.debug_location(md)

    def location_str(self) -> str:
        """``file.c:12:3`` when debug info says so, else ``in function @f``."""
        loc = self.debug_loc
        if loc is not None:
            f, line, col = loc
            return f"{f}:{line}:{col}" if col else f"{f}:{line}"
        fn = self.function
        return f"in function @{fn.name}" if fn is not None else "<detached instruction>"

    # -- CFG ------------------------------------------------------------------
    @property
    def successors(self) -> list:
        if not self.is_terminator:
            return []
        return [u.value for u in self._ops if u.value.is_block]

    def _print(self, p) -> str:
        raise NotImplementedError

    def __repr__(self):
        return f"<{type(self).__name__} {self.opcode} {self.name or ''}>"


# ----------------------------------------------------------------------------
# arithmetic and friends
# ----------------------------------------------------------------------------

class UnaryOp(Instruction):
    def __init__(self, opcode, a, flags=(), name=None):
        super().__init__(a.type, [a], name)
        self.opcode, self.flags = opcode, list(flags)

    def _print(self, p):
        return _j(self.opcode, *self.flags, p.tv(self.operand(0)))


class BinaryOp(Instruction):
    """``add nuw nsw``, ``fmul fast``...; ``flags`` is the list of flag words."""

    def __init__(self, opcode, a, b, flags=(), name=None):
        super().__init__(a.type, [a, b], name)
        self.opcode, self.flags = opcode, list(flags)

    def _print(self, p):
        a, b = self.operands
        return _j(self.opcode, *self.flags, p.tv(a)) + ", " + p.ref(b)


def _cmp_type(ty):
    return T.VectorType(T.i1, ty.count, ty.scalable) if ty.is_vector else T.i1


class ICmp(Instruction):
    opcode = "icmp"

    def __init__(self, pred, a, b, flags=(), name=None):
        super().__init__(_cmp_type(a.type), [a, b], name)
        self.predicate, self.flags = pred, list(flags)

    def _print(self, p):
        a, b = self.operands
        return _j("icmp", *self.flags, self.predicate, p.tv(a)) + ", " + p.ref(b)


class FCmp(ICmp):
    opcode = "fcmp"

    def _print(self, p):
        a, b = self.operands
        return _j("fcmp", *self.flags, self.predicate, p.tv(a)) + ", " + p.ref(b)


class Cast(Instruction):
    def __init__(self, opcode, v, dest_type, flags=(), name=None):
        super().__init__(dest_type, [v], name)
        self.opcode, self.flags = opcode, list(flags)

    def _print(self, p):
        return _j(self.opcode, *self.flags, p.tv(self.operand(0)), "to", str(self.type))


class Select(Instruction):
    opcode = "select"

    def __init__(self, cond, a, b, flags=(), name=None):
        super().__init__(a.type, [cond, a, b], name)
        self.flags = list(flags)

    @property
    def merged(self) -> list[Value]:
        """The values the select chooses between (as ``Phi.merged``)."""
        return self.operands[1:]

    def _print(self, p):
        return _j("select", *self.flags, ", ".join(p.tv(v) for v in self.operands))


class Freeze(Instruction):
    opcode = "freeze"

    def __init__(self, v, name=None):
        super().__init__(v.type, [v], name)

    def _print(self, p):
        return "freeze " + p.tv(self.operand(0))


class Phi(Instruction):
    """Operands alternate ``[value0, block0, value1, block1, ...]``."""

    opcode = "phi"

    def __init__(self, type, incoming=(), flags=(), name=None):
        super().__init__(type, (), name)
        self.flags = list(flags)
        for v, b in incoming:
            self.add_incoming(v, b)

    @property
    def incoming(self) -> list[tuple[Value, Value]]:
        ops = self._ops
        return [(ops[i].value, ops[i + 1].value) for i in range(0, len(ops), 2)]

    @property
    def merged(self) -> list[Value]:
        """The incoming values (as ``Select.merged``), without their blocks."""
        return [self._ops[i].value for i in range(0, len(self._ops), 2)]

    def add_incoming(self, value, block) -> None:
        self.append_operand(value)
        self.append_operand(block)

    def incoming_for(self, block) -> Value | None:
        for v, b in self.incoming:
            if b is block:
                return v
        return None

    def set_incoming_value(self, block, value) -> None:
        for i in range(1, len(self._ops), 2):
            if self._ops[i].value is block:
                self.set_operand(i - 1, value)

    def set_incoming_block(self, i: int, block) -> None:
        self.set_operand(2 * i + 1, block)

    def remove_incoming(self, block) -> None:
        for i in range(len(self._ops) - 1, 0, -2):
            if self._ops[i].value is block:
                self.remove_operand(i)
                self.remove_operand(i - 1)

    def _print(self, p):
        inc = ", ".join(f"[ {p.ref(v)}, {p.ref(b)} ]" for v, b in self.incoming)
        return _j("phi", *self.flags, str(self.type), inc)


# ----------------------------------------------------------------------------
# vectors and aggregates
# ----------------------------------------------------------------------------

class ExtractElement(Instruction):
    opcode = "extractelement"

    def __init__(self, vec, idx, name=None):
        super().__init__(vec.type.element, [vec, idx], name)

    def _print(self, p):
        return "extractelement " + ", ".join(p.tv(v) for v in self.operands)


class InsertElement(Instruction):
    opcode = "insertelement"

    def __init__(self, vec, elt, idx, name=None):
        super().__init__(vec.type, [vec, elt, idx], name)

    def _print(self, p):
        return "insertelement " + ", ".join(p.tv(v) for v in self.operands)


class ShuffleVector(Instruction):
    opcode = "shufflevector"

    def __init__(self, a, b, mask, name=None):
        ty = T.VectorType(a.type.element, mask.type.count, mask.type.scalable)
        super().__init__(ty, [a, b, mask], name)

    def _print(self, p):
        return "shufflevector " + ", ".join(p.tv(v) for v in self.operands)


def aggregate_member_type(ty, indices):
    for i in indices:
        ty = ty.elements[i] if ty.is_struct else ty.element
    return ty


class ExtractValue(Instruction):
    opcode = "extractvalue"

    def __init__(self, agg, indices, name=None):
        super().__init__(aggregate_member_type(agg.type, indices), [agg], name)
        self.indices = list(indices)

    def _print(self, p):
        return "extractvalue " + p.tv(self.operand(0)) + "".join(f", {i}" for i in self.indices)


class InsertValue(Instruction):
    opcode = "insertvalue"

    def __init__(self, agg, v, indices, name=None):
        super().__init__(agg.type, [agg, v], name)
        self.indices = list(indices)

    def _print(self, p):
        return ("insertvalue " + p.tv(self.operand(0)) + ", " + p.tv(self.operand(1))
                + "".join(f", {i}" for i in self.indices))


# ----------------------------------------------------------------------------
# memory
# ----------------------------------------------------------------------------

def _align(a):
    return f", align {a}" if a is not None else ""


class Alloca(Instruction):
    """``alloca T[, T2 count][, align N][, addrspace(N)]``; ``count`` is operand 0 if given."""

    opcode = "alloca"

    def __init__(self, allocated_type, count=None, align=None, flags=(), addrspace=0, name=None):
        super().__init__(T.PointerType(addrspace), [count] if count is not None else [], name)
        self.allocated_type, self.align, self.flags = allocated_type, align, list(flags)
        self.addrspace = addrspace

    @property
    def count(self):
        return self.operand(0) if self._ops else None

    def _print(self, p):
        s = _j("alloca", *self.flags, str(self.allocated_type))
        if self._ops:
            s += ", " + p.tv(self.operand(0))
        s += _align(self.align)
        if self.addrspace:
            s += f", addrspace({self.addrspace})"
        return s


def _atomic_tail(syncscope, ordering):
    return (" " + syncscope if syncscope else "") + (" " + ordering if ordering else "")


class Load(Instruction):
    opcode = "load"

    def __init__(self, type, ptr, align=None, volatile=False, ordering=None, syncscope=None,
                 name=None):
        super().__init__(type, [ptr], name)
        self.align, self.volatile = align, volatile
        self.ordering, self.syncscope = ordering, syncscope

    @property
    def pointer(self):
        return self.operand(0)

    def _print(self, p):
        s = _j("load", "atomic" if self.ordering else "", "volatile" if self.volatile else "",
               str(self.type)) + ", " + p.tv(self.operand(0))
        return s + _atomic_tail(self.syncscope, self.ordering) + _align(self.align)


class Store(Instruction):
    opcode = "store"

    def __init__(self, value, ptr, align=None, volatile=False, ordering=None, syncscope=None):
        super().__init__(T.void, [value, ptr])
        self.align, self.volatile = align, volatile
        self.ordering, self.syncscope = ordering, syncscope

    @property
    def value(self):
        return self.operand(0)

    @property
    def pointer(self):
        return self.operand(1)

    def _print(self, p):
        s = _j("store", "atomic" if self.ordering else "", "volatile" if self.volatile else "",
               p.tv(self.operand(0))) + ", " + p.tv(self.operand(1))
        return s + _atomic_tail(self.syncscope, self.ordering) + _align(self.align)


class Fence(Instruction):
    opcode = "fence"

    def __init__(self, ordering, syncscope=None):
        super().__init__(T.void)
        self.ordering, self.syncscope = ordering, syncscope

    def _print(self, p):
        return "fence" + _atomic_tail(self.syncscope, self.ordering)


class CmpXchg(Instruction):
    opcode = "cmpxchg"

    def __init__(self, ptr, cmp, new, success, failure, align=None, weak=False,
                 volatile=False, syncscope=None, name=None):
        super().__init__(T.StructType([cmp.type, T.i1]), [ptr, cmp, new], name)
        self.success, self.failure, self.align = success, failure, align
        self.weak, self.volatile, self.syncscope = weak, volatile, syncscope

    def _print(self, p):
        s = _j("cmpxchg", "weak" if self.weak else "", "volatile" if self.volatile else "",
               ", ".join(p.tv(v) for v in self.operands))
        tail = _atomic_tail(self.syncscope, f"{self.success} {self.failure}")
        return s + tail + _align(self.align)


class AtomicRMW(Instruction):
    opcode = "atomicrmw"

    def __init__(self, op, ptr, val, ordering, align=None, volatile=False, syncscope=None,
                 name=None):
        super().__init__(val.type, [ptr, val], name)
        self.operation, self.ordering, self.align = op, ordering, align
        self.volatile, self.syncscope = volatile, syncscope

    def _print(self, p):
        s = _j("atomicrmw", "volatile" if self.volatile else "", self.operation,
               ", ".join(p.tv(v) for v in self.operands))
        return s + _atomic_tail(self.syncscope, self.ordering) + _align(self.align)


class GEP(Instruction):
    """``getelementptr [inbounds|nusw] [nuw] T, ptr %p, idx...``; operands ``[ptr, idx...]``."""

    opcode = "getelementptr"

    def __init__(self, source_type, ptr, indices, flags=(), type=None, name=None):
        if type is None:
            type = ptr.type
            for i in indices:
                if i.type.is_vector and not type.is_vector:
                    type = T.VectorType(ptr.type, i.type.count, i.type.scalable)
        super().__init__(type, [ptr, *indices], name)
        self.source_type, self.flags = source_type, list(flags)

    @property
    def pointer(self):
        return self.operand(0)

    @property
    def indices(self):
        return self.operands[1:]

    @property
    def inbounds(self) -> bool:
        return "inbounds" in self.flags

    def constant_offset(self, dl):
        """The byte offset this GEP adds to its pointer when every index is a constant
        (``dl``: the module's data layout), else None."""
        from .values import ConstantInt
        idx = self.indices
        if not idx or not all(isinstance(i, ConstantInt) for i in idx):
            return None
        try:
            off = idx[0].value * dl.size_in_bytes(self.source_type)
            return off + dl.offset_of(self.source_type, [i.value for i in idx[1:]])
        except Exception:  # noqa: BLE001 - unusual types: unknown offset
            return None

    def _print(self, p):
        return (_j("getelementptr", *self.flags, str(self.source_type)) + ", "
                + ", ".join(p.tv(v) for v in self.operands))


# ----------------------------------------------------------------------------
# calls
# ----------------------------------------------------------------------------

class Call(Instruction):
    """A call; operands are ``[args..., bundle inputs..., callee]``.

    ``arg_attrs[i]`` is the attribute text of argument i (``"noundef nonnull"``),
    ``ret_attrs`` / ``fn_attrs`` likewise (``fn_attrs`` may be ``"#3"``),
    ``bundles`` lists ``(tag, number_of_inputs)`` (tag with its quotes).
    """

    opcode = "call"
    _n_tail = 1  # operands after args + bundle inputs

    def __init__(self, fnty: T.FunctionType, callee, args, name=None, tail="", flags=(),
                 cc="", ret_attrs="", arg_attrs=None, fn_attrs="", bundles=()):
        bundle_vals = [v for _, vals in bundles for v in vals]
        super().__init__(fnty.ret, [*args, *bundle_vals, *self._extra_ops(), callee], name)
        self.function_type = fnty
        self.tail, self.flags, self.cc = tail, list(flags), cc
        self.ret_attrs, self.fn_attrs = ret_attrs, fn_attrs
        self.arg_attrs = list(arg_attrs) if arg_attrs is not None else [""] * len(args)
        self.num_args = len(args)
        self.bundles = [(tag, len(vals)) for tag, vals in bundles]

    def _extra_ops(self):
        return []

    @property
    def callee(self) -> Value:
        return self._ops[-1].value

    @callee.setter
    def callee(self, v):
        self.set_operand(len(self._ops) - 1, v)

    @property
    def called_function(self):
        """The callee if it is a Function (a direct call), else None."""
        c = self.callee
        return c if getattr(c, "is_function", False) else None

    @property
    def callee_name(self) -> str | None:
        c = self.callee
        return c.name if c.is_global else None

    @property
    def args(self) -> list[Value]:
        return [u.value for u in self._ops[:self.num_args]]

    def arg(self, i: int) -> Value:
        return self._ops[i].value

    def set_arg(self, i: int, v: Value) -> None:
        self.set_operand(i, v)

    @property
    def bundle_operands(self):
        out, i = [], self.num_args
        for tag, n in self.bundles:
            out.append((tag, [u.value for u in self._ops[i:i + n]]))
            i += n
        return out

    def _call_core(self, p) -> str:
        fnty = self.function_type
        tyname = str(fnty) if fnty.varargs else str(fnty.ret)
        args = []
        for u, attrs in zip(self._ops[:self.num_args], self.arg_attrs):
            v = u.value
            args.append(_j(str(v.type), attrs, p.ref(v)))
        s = _j(self.cc, self.ret_attrs, tyname, p.ref(self.callee)) + "(" + ", ".join(args) + ")"
        if self.fn_attrs:
            s += " " + self.fn_attrs
        if self.bundles:
            bs, i = [], self.num_args
            for tag, n in self.bundles:
                bs.append(tag + "(" + ", ".join(p.tv(u.value) for u in self._ops[i:i + n]) + ")")
                i += n
            s += " [ " + ", ".join(bs) + " ]"
        return s

    def _print(self, p):
        return _j(self.tail, "call", *self.flags, self._call_core(p))


class Invoke(Call):
    """Operands ``[args..., bundle inputs..., normal, unwind, callee]``."""

    opcode = "invoke"
    is_terminator = True

    def __init__(self, fnty, callee, args, normal, unwind, **kw):
        self._pending = (normal, unwind)
        super().__init__(fnty, callee, args, **kw)
        del self._pending

    def _extra_ops(self):
        return list(self._pending)

    @property
    def normal_dest(self):
        return self._ops[-3].value

    @property
    def unwind_dest(self):
        return self._ops[-2].value

    def _print(self, p):
        return (_j("invoke", *self.flags, self._call_core(p))
                + f"\n          to {p.lbl(self.normal_dest)} unwind {p.lbl(self.unwind_dest)}")


class VAArg(Instruction):
    opcode = "va_arg"

    def __init__(self, valist, type, name=None):
        super().__init__(type, [valist], name)

    def _print(self, p):
        return f"va_arg {p.tv(self.operand(0))}, {self.type}"


class VerbatimInst(Instruction):
    """An instruction kept as text with operand holes (``callbr`` and anything rare).

    ``parts`` mixes literal strings and operand indices; block operands make
    ``successors`` work when ``is_terminator`` is set.
    """

    def __init__(self, opcode, type, parts, operands, is_terminator=False, name=None):
        super().__init__(type, operands, name)
        self.opcode, self.parts = opcode, list(parts)
        self.is_terminator = is_terminator

    def _print(self, p):
        return "".join(x if type(x) is str else p.ref(self._ops[x].value) for x in self.parts)


from .terminators import (  # noqa: E402,F401  (they subclass Instruction)
    Br,
    CatchPad,
    CatchRet,
    CatchSwitch,
    CleanupPad,
    CleanupRet,
    IndirectBr,
    LandingPad,
    Resume,
    Ret,
    Switch,
    Terminator,
    Unreachable,
    _FuncletPad,
)
