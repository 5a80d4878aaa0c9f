"""A small instruction emitter for the AD pass: an insertion point plus helpers
that build arithmetic on scalars, vectors and float aggregates (adjoints of
structs are added element-wise), libm calls by base name, and memory ops.
"""

from __future__ import annotations

from ..ir import types as T
from ..ir.instructions import (BinaryOp, Br, Call, Cast, ExtractElement, ExtractValue, FCmp,
                               GEP, ICmp, InsertElement, InsertValue, Load, Phi, Ret, Select,
                               Store, Switch, UnaryOp)
from ..ir.values import (ConstantAggregate, ConstantFP, ConstantInt, ConstantNull, Poison, Undef,
                         Value, ZeroInit)

# libm names that have an LLVM intrinsic (we prefer the intrinsic: vectors work too)
_INTRINSIC = {"sin", "cos", "exp", "exp2", "log", "log2", "log10", "sqrt", "pow", "fabs",
              "copysign", "trunc", "floor", "ceil", "fma", "powi"}


def type_suffix(ty) -> str:
    if ty.is_vector:
        return f"v{ty.count}{type_suffix(ty.element)}"
    return {"double": "f64", "float": "f32", "half": "f16", "fp128": "f128",
            "x86_fp80": "f80", "bfloat": "bf16"}.get(getattr(ty, "kind", ""), str(ty))


class Lazy:
    """A value produced on first use (primal operands needed by a rule)."""

    __slots__ = ("fn", "type", "_v")

    def __init__(self, fn, type):
        self.fn, self.type, self._v = fn, type, None

    def get(self):
        if self._v is None:
            self._v = self.fn()
        return self._v


def zero(ty):
    if ty.is_float:
        return ConstantFP(ty, 0.0)
    if ty.is_int:
        return ConstantInt(ty, 0)
    if ty.is_pointer:
        return ConstantNull(ty)
    return ZeroInit(ty)


def acc_zero(ty):
    """The initial value of an adjoint accumulator: -0.0 for floats (and float
    vectors), ``zero`` otherwise.  ``-0.0 + x`` is exactly ``x`` for every x (``+0.0 + x``
    turns -0.0 into +0.0), so LLVM folds the first accumulation without fast-math
    flags, and adjoint chains in reverse loops lose an add per contribution."""
    if ty.is_float:
        return ConstantFP(ty, -0.0)
    if ty.is_vector and ty.element.is_float and not ty.scalable:
        return ConstantAggregate(ty, [ConstantFP(ty.element, -0.0) for _ in range(ty.count)])
    return zero(ty)


def copy_body(src, dst, vmap):
    """Append a copy of ``src``'s blocks to the function ``dst``.

    ``vmap`` maps ``src``'s arguments to values of ``dst`` on entry and every block
    and instruction to its copy on return.  Debug locations and records are dropped:
    they belong to ``src``'s subprogram, and the verifier rejects them in another
    function."""
    for b in src.blocks:
        vmap[b] = dst.append_basic_block(b.name)
    new = []
    for b in src.blocks:
        nb = vmap[b]
        for inst in b.instructions:
            c = inst.clone(vmap)
            c.metadata = [(k, v) for k, v in c.metadata if k != "dbg"]
            c.dbg_records = []
            vmap[inst] = c
            nb.append(c)
            new.append(c)
    for c in new:  # operands defined later in src (phis, back edges)
        for u in c.operand_uses:
            mv = vmap.get(u.value)
            if mv is not None:
                c.set_operand(u.index, mv)


class Emitter:
    def __init__(self, module):
        self.module = module
        self.block = None
        self.before = None

    # -- position ---------------------------------------------------------------
    def at_end(self, block):
        self.block, self.before = block, None
        return self

    def at_before(self, inst):
        self.block, self.before = inst.parent, inst
        return self

    def insert(self, inst):
        if self.before is not None:
            inst.insert_before(self.before)
        else:
            term = self.block.terminator
            if term is not None:
                inst.insert_before(term)
            else:
                self.block.append(inst)
        return inst

    def _v(self, x):
        return x.get() if isinstance(x, Lazy) else x

    # -- constants -------------------------------------------------------------
    def const(self, v, like):
        ty = like if isinstance(like, T.Type) else like.type
        if ty.is_vector:
            from ..ir.values import ConstantSplat
            return ConstantSplat(ty, [self.const(v, ty.element)])
        return ConstantFP(ty, float(v))  # ir.values.fp_text rounds and spells it exactly

    # -- arithmetic ------------------------------------------------------------
    def binop(self, op, a, b):
        a, b = self._v(a), self._v(b)
        return self.insert(BinaryOp(op, a, b))

    def add(self, a, b):
        a, b = self._v(a), self._v(b)
        ty = a.type
        if ty.is_struct or ty.is_array:
            n = len(ty.elements) if ty.is_struct else ty.count
            out = a
            for i in range(n):
                et = ty.elements[i] if ty.is_struct else ty.element
                if not _has_float(et):
                    continue      # an integer or pointer field carries no adjoint
                s = self.add(self.extractvalue(a, [i]), self.extractvalue(b, [i]))
                out = self.insertvalue(out, s, [i])
            return out
        return self.binop("fadd", a, b)

    def sub(self, a, b):
        return self.binop("fsub", a, b)

    def mul(self, a, b):
        return self.binop("fmul", a, b)

    def div(self, a, b):
        return self.binop("fdiv", a, b)

    def neg(self, a):
        return self.insert(UnaryOp("fneg", self._v(a)))

    def fcmp(self, pred, a, b):
        return self.insert(FCmp(pred, self._v(a), self._v(b)))

    def icmp(self, pred, a, b):
        return self.insert(ICmp(pred, self._v(a), self._v(b)))

    def select(self, c, a, b):
        return self.insert(Select(self._v(c), self._v(a), self._v(b)))

    def cast(self, op, v, ty):
        return self.insert(Cast(op, self._v(v), ty))

    def sitofp(self, i, like):
        ty = like if isinstance(like, T.Type) else like.type
        return self.cast("sitofp", i, ty)

    def isub1(self, i):
        i = self._v(i)
        return self.binop("sub", i, ConstantInt(i.type, 1))

    def extractvalue(self, agg, idx):
        return self.insert(ExtractValue(self._v(agg), idx))

    def insertvalue(self, agg, v, idx):
        return self.insert(InsertValue(self._v(agg), self._v(v), idx))

    def extractelement(self, vec, i):
        return self.insert(ExtractElement(self._v(vec), self._v(i)))

    def insertelement(self, vec, x, i):
        return self.insert(InsertElement(self._v(vec), self._v(x), self._v(i)))

    # -- calls -----------------------------------------------------------------
    def declare(self, name, ret, params, varargs=False):
        fnty = T.FunctionType(ret, params, varargs)
        return self.module.get_or_insert_function(name, fnty)

    def call_fn(self, fn, args, fn_attrs=""):
        args = [self._v(a) for a in args]
        return self.insert(Call(fn.function_type, fn, args, fn_attrs=fn_attrs))

    def call(self, name, *args):
        """libm / intrinsic call by base name, typed after the first argument."""
        args = [self._v(a) for a in args]
        ty = args[0].type
        if name.startswith("__enzyme_py_"):
            from .runtime import runtime_function
            return self.call_fn(runtime_function(self.module, name, ty), args)
        if name in _INTRINSIC or ty.is_vector:
            sfx = type_suffix(ty)
            iname = f"llvm.{name}.{sfx}" + (".i32" if name == "powi" else "")
            fn = self.declare(iname, ty, [a.type for a in args])
        else:
            if ty.kind == "double":
                lname = name
            elif ty.kind == "float":
                lname = name + "f"
            else:
                lname = name + "l"
            fn = self.declare(lname, ty, [a.type for a in args])
        return self.call_fn(fn, args)

    # -- memory ----------------------------------------------------------------
    def load(self, ty, p, align=None):
        return self.insert(Load(ty, self._v(p), align=align))

    def store(self, v, p, align=None):
        return self.insert(Store(self._v(v), self._v(p), align=align))

    def gep_bytes(self, p, off):
        off = off if isinstance(off, Value) else ConstantInt(T.i64, off)
        return self.insert(GEP(T.i8, self._v(p), [off]))

    # -- control flow ------------------------------------------------------------
    def br(self, dest):
        return self.block.append(Br(dest))

    def cbr(self, c, t, f):
        return self.block.append(Br(self._v(c), t, f))

    def switch(self, v, default, cases):
        return self.block.append(Switch(self._v(v), default, cases))

    def ret(self, v=None):
        return self.block.append(Ret(self._v(v) if v is not None else None))

    def phi(self, ty, incoming=()):
        p = Phi(ty, incoming)
        if self.block.instructions:
            self.block.insert(0, p)
        else:
            self.block.append(p)
        return p


def poison(ty):
    return Poison(ty)


def _has_float(ty) -> bool:
    if ty.is_float:
        return True
    if ty.is_struct:
        return any(_has_float(t) for t in ty.elements)
    if ty.is_array or ty.is_vector:
        return _has_float(ty.element)
    return False


def no_pointer_set_yet(v) -> bool:
    """An ``insertvalue`` chain from poison/undef that has inserted only values without
    pointers (integers) so far."""
    from ..analysis.activity import has_pointer
    for _ in range(64):
        if isinstance(v, (Poison, Undef)):
            return True
        if not isinstance(v, InsertValue):
            return False
        x = v.operand(1)
        if x.type.is_pointer or has_pointer(x.type):
            return False
        v = v.operand(0)
    return False


def passes_shadow(a, act) -> bool:
    """Whether the pointer argument ``a`` of a call to a defined function goes with a
    shadow (kind "dup"): it has one, or it is null, whose shadow is null (the callee
    may store it into memory that has a shadow: libc++'s ``unique_ptr::reset(nullptr)``)."""
    return a.type.is_pointer and (a in act.shadowed or isinstance(a, ConstantNull))
