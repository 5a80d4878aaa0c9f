"""IRBuilder: an insertion point and one method per instruction kind.

Modelled on llvmlite's ``ir.IRBuilder``: ``position_at_end``/``position_before``
and context managers (``if_then``, ``if_else``, ``goto_block``) so code that
emits IR reads like the IR it emits.  At the end of a block that already has a
terminator, instructions go before the terminator.  Set ``builder.debug_loc =
"!12"`` to put ``!dbg !12`` on every instruction it creates.

Beside the instructions: ``declare`` (a function of the module, declared on
first use), ``gep_bytes`` (a pointer plus a byte offset) and ``resolve``, which
every operand goes through: a subclass overrides it to accept its own stand-ins
for values (the AD pass's ``ad.emit.Emitter``, this builder plus what is
specific to AD, resolves its lazily computed primal values there).
"""

from __future__ import annotations

import contextlib

from . import instructions as I
from . import types as T
from .values import ConstantFP, ConstantInt, IRError

__all__ = ["IRBuilder"]


def _binop(opcode):
    def method(self, a, b, name=None, flags=()):
        return self.insert(I.BinaryOp(opcode, self.resolve(a), self.resolve(b), flags, name))
    method.__name__ = opcode
    method.__doc__ = f"``{opcode}`` (flags e.g. ``('nsw',)`` or fast-math ``('fast',)``)."
    return method


def _cast(opcode):
    def method(self, v, ty, name=None, flags=()):
        return self.insert(I.Cast(opcode, self.resolve(v), ty, flags, name))
    method.__name__ = opcode
    return method


class IRBuilder:
    def __init__(self, block=None, module=None):
        """Positioned at the end of ``block`` if given.  ``module`` is where ``declare``
        and ``intrinsic`` add functions (default: the insertion block's module)."""
        self.block = None
        self._before = None  # insert before this instruction, or at the end when None
        self._module = module
        self.debug_loc: str | None = None
        if block is not None:
            self.position_at_end(block)

    # -- position --------------------------------------------------------------------
    @property
    def basic_block(self):
        return self.block

    @property
    def function(self):
        return self.block.parent if self.block is not None else None

    @property
    def module(self):
        if self._module is not None:
            return self._module
        fn = self.function
        return fn.parent if fn is not None else None

    def position_at_end(self, block) -> None:
        """After the last instruction (before the terminator once the block has one)."""
        self.block, self._before = block, None

    def position_at_start(self, block) -> None:
        """Before the first instruction (use ``position_after_phis`` to skip phis)."""
        self.block = block
        self._before = block.instructions[0] if block.instructions else None

    def position_after_phis(self, block) -> None:
        self.block = block
        self._before = block.first_non_phi

    def position_before(self, inst) -> None:
        self.block, self._before = inst.parent, inst

    def position_after(self, inst) -> None:
        blk = inst.parent
        i = blk.index_of(inst)
        self.block = blk
        self._before = blk.instructions[i + 1] if i + 1 < len(blk.instructions) else None

    def insert(self, inst):
        """Insert ``inst``, built by the caller, at the insertion point."""
        if self.block is None:
            raise IRError("IRBuilder has no insertion point")
        if self.debug_loc is not None and inst.get_metadata("dbg") is None:
            inst.metadata.append(("dbg", self.debug_loc))
        before = self._before if self._before is not None else self.block.terminator
        if before is None:
            self.block.append(inst)
        else:
            inst.insert_before(before)
        return inst

    def resolve(self, v):
        """The Value to use for the operand ``v`` (or None, for an absent one): ``v``
        itself here."""
        return v

    def append_basic_block(self, name=None):
        """A new block right after the current one."""
        fn = self.function
        idx = fn.blocks.index(self.block) + 1 if self.block in fn.blocks else len(fn.blocks)
        return fn.insert_basic_block(idx, name)

    @contextlib.contextmanager
    def goto_block(self, block):
        """Temporarily emit at the end of ``block`` (before its terminator if it has one)."""
        saved = (self.block, self._before)
        self.position_at_end(block)
        try:
            yield
        finally:
            self.block, self._before = saved

    @contextlib.contextmanager
    def goto_entry_block(self):
        with self.goto_block(self.function.entry_block):
            yield

    @contextlib.contextmanager
    def _branch_helper(self, bbenter, bbexit):
        self.position_at_end(bbenter)
        yield bbexit
        if self.block.terminator is None:
            self.br(bbexit)

    @contextlib.contextmanager
    def if_then(self, pred, name="if"):
        """``with b.if_then(c): ...`` emits the body in a block run only when ``c``."""
        bbif = self.append_basic_block(name + ".then")
        bbend = self.append_basic_block(name + ".end")
        fn = self.function
        fn.blocks.remove(bbend)
        fn.blocks.insert(fn.blocks.index(bbif) + 1, bbend)
        self.cbranch(pred, bbif, bbend)
        with self._branch_helper(bbif, bbend):
            yield bbend
        self.position_at_end(bbend)

    @contextlib.contextmanager
    def if_else(self, pred, name="if"):
        """``with b.if_else(c) as (then, otherwise): with then: ... with otherwise: ...``"""
        bbthen = self.append_basic_block(name + ".then")
        fn = self.function
        bbelse = fn.insert_basic_block(fn.blocks.index(bbthen) + 1, name + ".else")
        bbend = fn.insert_basic_block(fn.blocks.index(bbelse) + 1, name + ".end")
        self.cbranch(pred, bbthen, bbelse)
        yield self._branch_helper(bbthen, bbend), self._branch_helper(bbelse, bbend)
        self.position_at_end(bbend)

    # -- constants ---------------------------------------------------------------------
    @staticmethod
    def const_int(ty, v) -> ConstantInt:
        return ConstantInt(ty, v)

    @staticmethod
    def const_fp(ty, v) -> ConstantFP:
        return ConstantFP(ty, float(v))

    # -- arithmetic ---------------------------------------------------------------------
    add, sub, mul = _binop("add"), _binop("sub"), _binop("mul")
    udiv, sdiv, urem, srem = _binop("udiv"), _binop("sdiv"), _binop("urem"), _binop("srem")
    shl, lshr, ashr = _binop("shl"), _binop("lshr"), _binop("ashr")
    and_, or_, xor = _binop("and"), _binop("or"), _binop("xor")
    fadd, fsub, fmul, fdiv, frem = (_binop(o) for o in ("fadd", "fsub", "fmul", "fdiv", "frem"))

    def binop(self, opcode, a, b, name=None, flags=()):
        return self.insert(I.BinaryOp(opcode, self.resolve(a), self.resolve(b), flags, name))

    def fneg(self, a, name=None, flags=()):
        return self.insert(I.UnaryOp("fneg", self.resolve(a), flags, name))

    def icmp(self, pred, a, b, name=None, flags=()):
        """``pred`` is an LLVM predicate: eq ne slt sle sgt sge ult ule ugt uge."""
        return self.insert(I.ICmp(pred, self.resolve(a), self.resolve(b), flags, name))

    def fcmp(self, pred, a, b, name=None, flags=()):
        """``pred``: oeq one olt ole ogt oge ord uno ueq une ult ule ugt uge true false."""
        return self.insert(I.FCmp(pred, self.resolve(a), self.resolve(b), flags, name))

    def select(self, cond, a, b, name=None, flags=()):
        r = self.resolve
        return self.insert(I.Select(r(cond), r(a), r(b), flags, name))

    def freeze(self, v, name=None):
        return self.insert(I.Freeze(self.resolve(v), name))

    def phi(self, ty, incoming=(), name=None, flags=()):
        """A phi at the insertion point (add edges with ``phi.add_incoming(v, block)``)."""
        incoming = [(self.resolve(v), b) for v, b in incoming]
        return self.insert(I.Phi(ty, incoming, flags, name))

    # -- casts --------------------------------------------------------------------------
    trunc, zext, sext = _cast("trunc"), _cast("zext"), _cast("sext")
    fptrunc, fpext = _cast("fptrunc"), _cast("fpext")
    fptoui, fptosi, uitofp, sitofp = (_cast(o) for o in ("fptoui", "fptosi", "uitofp", "sitofp"))
    ptrtoint, inttoptr, bitcast = _cast("ptrtoint"), _cast("inttoptr"), _cast("bitcast")
    addrspacecast = _cast("addrspacecast")

    def cast(self, opcode, v, ty, name=None, flags=()):
        return self.insert(I.Cast(opcode, self.resolve(v), ty, flags, name))

    # -- memory ---------------------------------------------------------------------------
    def alloca(self, ty, count=None, align=None, name=None):
        return self.insert(I.Alloca(ty, self.resolve(count), align, (), 0, name))

    def load(self, ty, ptr, align=None, name=None, volatile=False, ordering=None):
        return self.insert(I.Load(ty, self.resolve(ptr), align, volatile, ordering, None, name))

    def store(self, value, ptr, align=None, volatile=False, ordering=None):
        return self.insert(I.Store(self.resolve(value), self.resolve(ptr), align, volatile,
                                   ordering))

    def gep(self, source_type, ptr, indices, inbounds=False, name=None, flags=None):
        """``indices`` may mix Values and Python ints (ints become i64, i32 for struct
        fields)."""
        ptr = self.resolve(ptr)
        idx = []
        ty = source_type
        for n, i in enumerate(indices):
            if isinstance(i, int):
                i = ConstantInt(T.i32 if (n > 0 and ty.is_struct) else T.i64, i)
            else:
                i = self.resolve(i)
            if n > 0:
                ty = (ty.elements[i.value] if ty.is_struct else
                      getattr(ty, "element", ty))
            idx.append(i)
        fl = list(flags) if flags is not None else (["inbounds"] if inbounds else [])
        return self.insert(I.GEP(source_type, ptr, idx, fl, name=name))

    def gep_bytes(self, ptr, offset, name=None):
        """``ptr`` plus ``offset`` bytes (an int or an i64 Value): ``getelementptr i8``."""
        return self.gep(T.i8, ptr, [offset], name=name)

    def fence(self, ordering, syncscope=None):
        return self.insert(I.Fence(ordering, syncscope))

    def atomicrmw(self, op, ptr, val, ordering="seq_cst", align=None, name=None):
        return self.insert(I.AtomicRMW(op, self.resolve(ptr), self.resolve(val), ordering, align,
                                       name=name))

    def cmpxchg(self, ptr, cmp, new, success="seq_cst", failure="seq_cst", align=None, name=None):
        r = self.resolve
        return self.insert(I.CmpXchg(r(ptr), r(cmp), r(new), success, failure, align, name=name))

    # -- aggregates and vectors -----------------------------------------------------------
    def extractvalue(self, agg, indices, name=None):
        if isinstance(indices, int):
            indices = [indices]
        return self.insert(I.ExtractValue(self.resolve(agg), indices, name))

    def insertvalue(self, agg, v, indices, name=None):
        if isinstance(indices, int):
            indices = [indices]
        return self.insert(I.InsertValue(self.resolve(agg), self.resolve(v), indices, name))

    def _index(self, idx):
        return ConstantInt(T.i64, idx) if isinstance(idx, int) else self.resolve(idx)

    def extractelement(self, vec, idx, name=None):
        return self.insert(I.ExtractElement(self.resolve(vec), self._index(idx), name))

    def insertelement(self, vec, v, idx, name=None):
        r = self.resolve
        return self.insert(I.InsertElement(r(vec), r(v), self._index(idx), name))

    def shufflevector(self, a, b, mask, name=None):
        return self.insert(I.ShuffleVector(self.resolve(a), self.resolve(b), mask, name))

    # -- calls ----------------------------------------------------------------------------
    def declare(self, name, ret, params, varargs=False):
        """The module's function ``name`` of type ``ret (params...)``, declared on first use."""
        return self.module.get_or_insert_function(name, T.FunctionType(ret, params, varargs))

    def call(self, callee, args, name=None, fnty=None, tail="", flags=(), fn_attrs="",
             arg_attrs=None, ret_attrs=""):
        """Call a Function (its type is used) or any pointer value with ``fnty``."""
        if fnty is None:
            fnty = getattr(callee, "function_type", None)
            if fnty is None:
                raise IRError("indirect call needs fnty")
        args = [self.resolve(a) for a in args]
        return self.insert(I.Call(fnty, self.resolve(callee), args, name, tail, flags, "",
                                  ret_attrs, arg_attrs, fn_attrs))

    def invoke(self, callee, args, normal, unwind, name=None, fnty=None, fn_attrs=""):
        fnty = fnty or callee.function_type
        args = [self.resolve(a) for a in args]
        return self.insert(I.Invoke(fnty, self.resolve(callee), args, normal, unwind, name=name,
                                    fn_attrs=fn_attrs))

    def intrinsic(self, name, fnty, args, result_name=None, flags=()):
        """Call ``llvm.*`` intrinsic ``name`` (declared on first use)."""
        fn = self.module.get_or_insert_function(name, fnty)
        return self.call(fn, args, result_name, flags=flags)

    def va_arg(self, valist, ty, name=None):
        return self.insert(I.VAArg(self.resolve(valist), ty, name))

    def landingpad(self, ty, cleanup=False, name=None, clauses=()):
        """``clauses``: ``(kind, value)`` pairs, kind ``"catch"`` or ``"filter"``."""
        return self.insert(I.LandingPad(ty, cleanup, tuple(clauses), name))

    # -- terminators ------------------------------------------------------------------------
    def ret(self, value=None):
        return self.insert(I.Ret(self.resolve(value)))

    def ret_void(self):
        return self.insert(I.Ret())

    def br(self, target):
        return self.insert(I.Br(target))

    branch = br

    def cbranch(self, cond, iftrue, iffalse):
        return self.insert(I.Br(self.resolve(cond), iftrue, iffalse))

    def switch(self, value, default, cases=()):
        return self.insert(I.Switch(self.resolve(value), default, cases))

    def unreachable(self):
        return self.insert(I.Unreachable())

    def resume(self, value):
        return self.insert(I.Resume(self.resolve(value)))

    def __repr__(self):
        return f"<IRBuilder at {self.block!r}>"
