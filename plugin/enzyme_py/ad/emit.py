"""The AD pass's instruction builder, ``Emitter``: ``ir.IRBuilder`` plus what is
specific to AD (operands computed on first use, ``Lazy``; adjoints of structs and
arrays added element-wise; float constants typed after a value; libm calls by base
name), and helpers for building derivatives: zeros and accumulator zeros, type
suffixes, copying a function body, which call arguments pass a shadow.
"""

from __future__ import annotations

from ..ir import types as T
from ..ir.builder import IRBuilder
from ..ir.instructions import Call, InsertValue
from ..ir.values import (ConstantAggregate, ConstantFP, ConstantInt, ConstantNull, ConstantSplat,
                         Poison, Undef, ZeroInit)

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


def keep_byval(primal, fn, kinds, width=1) -> None:
    """Give the parameters of a generated function ``fn`` that pass a by-value
    aggregate of ``primal`` (``byval(T)``) the same attribute: the call then hands the
    function its own copy, as it does the primal, so its writes to the copy (a struct
    argument updated in place) reach neither the caller's object nor, for a constant
    argument, read-only data.  Shadows (``kinds`` "dup", ``width`` of them) stay plain
    pointers: a caller inside the derivative passes its own shadow, whose adjoints
    must come back; at an ``__enzyme_*`` call site the shadow is a private copy
    (``callsite._private_copy``)."""
    from ..ir.attributes import Attributes
    i = 0
    for a, k in zip(primal.args, kinds):
        attrs = Attributes.parse(a.attrs)
        if attrs.has("byval"):
            fn.args[i].attrs = str(Attributes([t for t in attrs if t.kind == "word"
                                               and t.name in ("byval", "align")]))
        i += 1 + (width if k == "dup" else 0)


def byval_at_call_sites(functions) -> None:
    """Give the calls of ``functions`` the ``byval`` attributes of their callees'
    parameters where the call lacks them (the derivative functions ``keep_byval`` marks
    are called by code the AD pass writes): direct calls, and indirect ones whose callee
    is chosen among such functions by selects or phis (``dispatch.select_target``).  An
    indirect call takes the ABI from its own attributes: without ``byval`` it passes the
    pointer in a register where the callee reads a copy from the stack, and every later
    argument one register off (a gradient of garbage).  A direct call takes them from
    the callee, but LLVM's dead-store elimination reads the call's: it took a callee's
    ``byval`` parameter for its own memory and the caller's stores to the object passed
    as dead -- the reverse sweep then read what was never written (an SDF scene's
    gradient, garbage at -O2)."""
    from ..ir.attributes import Attributes
    from ..ir.instructions import Phi, Select
    for f in functions:
        marked = [(i, a.attrs) for i, a in enumerate(f.args) if "byval(" in (a.attrs or "")]
        if not marked:
            continue
        work, seen = [f], set()
        while work:
            v = work.pop()
            if v in seen:
                continue
            seen.add(v)
            for u in v.uses:
                c = u.user
                if isinstance(c, (Select, Phi)) and c.type.is_pointer:
                    work.append(c)      # a choice of callee (an indirect call's dispatch)
                    continue
                if not isinstance(c, Call) or c.callee is not v:
                    continue
                for i, attrs in marked:
                    have = c.arg_attrs[i] or ""
                    if Attributes.parse(have).arg("byval") is None:
                        c.arg_attrs[i] = (have + " " + attrs).strip()


def attr_type(arg, attr):
    """The type an attribute of a parameter names (``byval(T)``, ``sret(T)``), or None."""
    from ..ir.attributes import named_type
    return named_type(arg.attrs, attr, arg.parent.parent)


def copy_body(src, dst, vmap):
    """Append a copy of ``src``'s blocks to the function ``dst``.

    ``vmap`` maps ``src``'s arguments to values of ``dst`` on entry and every block
    and instruction to its copy on return.  Debug locations and records are dropped,
    and so are the source locations in loop metadata: they belong to ``src``'s
    subprogram, and the verifier rejects them in another function."""
    from ..ir.metadata import loop_id_without_locations
    for b in src.blocks:
        vmap[b] = dst.append_basic_block(b.name)
    new = []
    loops: dict[str, str] = {}

    def loop_id(ref: str) -> str:
        if ref not in loops:
            loops[ref] = loop_id_without_locations(dst.parent, ref)
        return loops[ref]

    for b in src.blocks:
        nb = vmap[b]
        for inst in b.instructions:
            c = inst.clone(vmap)
            c.metadata = [(k, loop_id(v) if k == "llvm.loop" else v)
                          for k, v in c.metadata if k != "dbg"]
            c.dbg_records = []
            vmap[inst] = c
            nb.append(c)
            new.append(c)
    for c in new:  # operands defined later in src (phis, back edges)
        for u in c.operand_uses:
            mv = vmap.get(u.value)
            if mv is not None:
                c.set_operand(u.index, mv)


class Emitter(IRBuilder):
    """The AD pass's builder: an ``IRBuilder`` whose operands may also be ``Lazy``
    (resolved on use), with ``fadd`` element-wise on float aggregates, ``const`` typed
    after a value, and ``libm`` calls by base name."""

    def __init__(self, module):
        super().__init__(module=module)

    def resolve(self, v):
        return v.get() if isinstance(v, Lazy) else v

    def const(self, v, like):
        """The float constant ``v`` of ``like``'s type (``like`` a type or a value;
        every lane of a vector)."""
        ty = like if isinstance(like, T.Type) else like.type
        if ty.is_vector:
            return ConstantSplat(ty, [self.const(v, ty.element)])
        return self.const_fp(ty, v)  # ir.values.fp_text rounds and spells it exactly

    def fadd(self, a, b, name=None, flags=()):
        """``fadd``, also of structs and arrays of floats (field by field; integer and
        pointer fields carry no adjoint and keep ``a``'s value)."""
        a, b = self.resolve(a), self.resolve(b)
        ty = a.type
        if ty.is_struct or ty.is_array:
            n = len(ty.elements) if ty.is_struct else ty.count
            out = a
            for i in range(n):
                et = ty.elements[i] if ty.is_struct else ty.element
                if not _has_float(et):
                    continue      # an integer or pointer field carries no adjoint
                s = self.fadd(self.extractvalue(a, [i]), self.extractvalue(b, [i]))
                out = self.insertvalue(out, s, [i])
            return out
        return super().fadd(a, b, name, flags)

    def libm(self, name, *args):
        """libm / intrinsic call by base name, typed after the first floating-point
        argument (``jn(n, x)``: after x): the LLVM intrinsic where there is one
        (``llvm.cos.f64``; any function of a vector), else the libm function (``tan``,
        ``tanf``, ``tanl``); ``__enzyme_py_*`` names are EnzymePy's runtime functions."""
        args = [self.resolve(a) for a in args]
        ty = next((a.type for a in args if not a.type.is_int), args[0].type)
        if name.startswith("__enzyme_py_"):
            from .runtime import runtime_function
            return self.call(runtime_function(self.module, name, ty), args)
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
        return self.call(fn, args)


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


def loop_latch(e, i, bound, first, nxt, loop, after, signed=False) -> None:
    """The latch of a counted loop ``for (i = 0; i < bound; i++)``: at the end of
    ``nxt``, go on with ``i + 1`` in ``loop`` or, past ``bound`` (an int or an i64
    value; compared signed with ``signed``), continue in ``after`` (where ``e`` is
    left); ``i`` (an i64 phi of ``loop``) starts at 0 from ``first``."""
    e.position_at_end(nxt)
    i1 = e.binop("add", i, ConstantInt(T.i64, 1))
    if isinstance(bound, int):
        bound = ConstantInt(T.i64, bound)
    e.cbranch(e.icmp("slt" if signed else "ult", i1, bound), loop, after)
    i.add_incoming(ConstantInt(T.i64, 0), first)
    i.add_incoming(i1, nxt)
    e.position_at_end(after)


def made_of_own_shadows(v, own_shadow, limit=32) -> bool:
    """Whether the pointer instruction ``v`` is built only from constant pointers each
    of which is its own shadow (``own_shadow``), through phis, selects, GEPs and pointer
    casts: the vtable pointer of an object whose class depends on the data, a function
    from a table, the end ``null + n`` of an empty ``std::vector``.  Its shadow is then
    ``v`` itself (a GEP applies to the shadow with the same indices)."""
    from ..ir.instructions import GEP, Cast, Phi, Select
    from ..ir.walk import BoundedWalk
    if not v.is_instruction:
        return False
    walk = BoundedWalk(v, limit)
    for x in walk:
        if isinstance(x, Phi):
            walk.add(*(val for val, _ in x.incoming))
        elif isinstance(x, Select):
            walk.add(*x.operands[1:])
        elif isinstance(x, GEP) or isinstance(x, Cast) \
                and x.opcode in ("bitcast", "addrspacecast"):
            walk.add(x.operand(0))
        elif x.is_instruction or not x.is_constant or not own_shadow(x):
            return False
    return not walk.exceeded


def returns_own_shadows(v, own_shadow) -> bool:
    """Whether the pointer ``v`` is a field of the struct a call to a defined function
    returns (``extractvalue (call f), k``) that every return of ``f`` fills with a
    constant that is its own shadow (``own_shadow``: null, a function): a custom rule's
    augmented forward pass returning ``{NULL, result}`` as its tape.  Its shadow is then
    ``v`` itself."""
    from ..ir.instructions import ExtractValue, Ret
    if not isinstance(v, ExtractValue) or len(v.indices) != 1:
        return False
    call = v.operand(0)
    callee = call.called_function if isinstance(call, Call) else None
    if callee is None or callee.is_declaration:
        return False
    k = v.indices[0]
    rets = [t.value for b in callee.blocks for t in [b.terminator]
            if isinstance(t, Ret) and t.value is not None]
    for r in rets:
        for _ in range(64):     # the last insertvalue into field k
            if isinstance(r, InsertValue) and list(r.indices) != [k]:
                r = r.operand(0)
                continue
            break
        if isinstance(r, InsertValue):
            r = r.operand(1)
        elif isinstance(r, ConstantAggregate):
            r = r.operands[k]
        elif isinstance(r, (Undef, Poison, ZeroInit)):
            continue
        else:
            return False
        if r.is_instruction or not r.is_constant or not (
                isinstance(r, (ConstantNull, Undef, Poison)) or own_shadow(r)):
            return False
    return bool(rets)


def sync_text_objects(e, inst, A, shadows_of) -> None:
    """After ``A``, the copy of ``inst`` -- a std::string member the C++ library defines
    out of line (``effects.returns_text``: characters only, no derivative) -- copy each
    string object it was given into that object's shadows (``shadows_of(arg)``: a list,
    empty where there is none).  The member may have moved the characters (``s += ...``
    past the inline buffer): the shadow object then holds the same pointers, as text is
    its own shadow, instead of its own inline buffer's address, which the string's
    destructor would free.  The object's size is its ``dereferenceable`` bytes, at most
    a string's (32 bytes in libstdc++, 24 in libc++): clang marks a string that is the
    first member of a struct with the struct's size (``std::swap`` of two
    ``std::pair<std::string, double>`` passes the pairs), and the bytes after the string
    are not text -- the double's adjoint was overwritten with its value.  A null shadow
    (a string without one, passed on) gets nothing."""
    from ..analysis.types import string_object_size
    from ..ir.attributes import Attributes
    callee = inst.called_function
    most = string_object_size(inst.callee_name or "")
    memcpy = None
    for j, a in enumerate(inst.args):
        if not a.type.is_pointer:
            continue
        shadows = shadows_of(a)
        if not shadows:
            continue
        texts = [A.arg_attrs[j] if j < len(A.arg_attrs) else ""]
        if callee is not None and j < len(callee.args):
            texts.append(callee.args[j].attrs)
        n = next((int(x) for x in (Attributes.parse(t).arg("dereferenceable") for t in texts)
                  if x is not None and x.isdigit()), None)
        if not n:
            continue
        if most is not None:
            n = min(n, most)
        if memcpy is None:
            memcpy = e.declare("llvm.memcpy.p0.p0.i64", T.void, [T.ptr, T.ptr, T.i64, T.i1])
        for sh in shadows:
            # (none where the string has no shadow: a global `std::string` key, read
            # through a tuple of references whose shadow holds null for it)
            k = e.select(e.icmp("eq", sh, ConstantNull(T.ptr)), ConstantInt(T.i64, 0),
                         ConstantInt(T.i64, n))
            e.call(memcpy, [sh, A.args[j], k, ConstantInt(T.i1, 0)])


def loaded_own_shadow(v, own_shadow) -> bool:
    """Whether the pointer ``v`` is loaded from a read-only global whose every pointer is
    a constant that is its own shadow (``own_shadow``): a C++ VTT or vtable (also one a
    library defines), a table of functions.
    Its shadow is then ``v`` itself (the ``std::ostringstream`` constructor stores the
    vtable pointers it reads from the VTT into the stream object)."""
    from ..analysis.globals import global_base
    from ..ir.instructions import Load
    from ..ir.values import ConstantExpr
    if not isinstance(v, Load) or v.operand(0).is_instruction:
        return False
    g = global_base(v.operand(0))
    if g is None or not g.is_constant:
        return False
    if g.initializer is None:
        # defined in a library (libstdc++'s std::ostringstream VTT): by the C++ ABI a
        # VTT or vtable holds only vtable and function pointers and offsets
        return g.name.startswith(("_ZTT", "_ZTV"))
    work, seen = [g.initializer], 0
    while work:
        c = work.pop()
        seen += 1
        if seen > 4096:
            return False
        if c.type.is_pointer:
            if not (isinstance(c, (ConstantNull, Undef, Poison)) or own_shadow(c)):
                return False
        elif isinstance(c, (ConstantAggregate, ConstantExpr)):
            work.extend(c.operands)
    return True


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


def passes_shadow(a, act, callee=None, k=None) -> bool:
    """Whether the pointer argument ``a`` (the ``k``-th) of a call to the defined
    function ``callee`` goes with a shadow (kind "dup"): it has one, or it is null,
    whose shadow is null (the callee may store it into memory that has a shadow:
    libc++'s ``unique_ptr::reset(nullptr)``), or it points into a read-only table of
    floats -- whose shadow is the table's zero twin -- and the callee keeps it
    (``_kept``: a GSL-style spline object storing a pointer to a constant knot table)."""
    if not a.type.is_pointer:
        return False
    if a in act.shadowed or isinstance(a, ConstantNull):
        return True
    if callee is None or a.is_instruction or k is None or k >= len(callee.args):
        return False
    from ..analysis.globals import read_only_table
    return read_only_table(a) is not None and _kept(callee.args[k])


def _kept(param) -> bool:
    """Whether the pointer ``param`` (or a GEP/cast of it) is stored into memory,
    returned, or merged by a phi/select/insertvalue in its function: where it would
    meet pointers with shadows."""
    from ..analysis.activity import address_uses
    from ..ir.instructions import Phi, Ret, Select, Store
    return any(isinstance(u.user, Store) and u.index == 0
               or isinstance(u.user, (Ret, Phi, Select, InsertValue))
               for u in address_uses(param, set()))


def pointer_global_check(module, load, shadow_globals, plain=False, fill=True):
    """For a load of a pointer from a global holding pointers that has a shadow global
    (a file-scope pointer to scratch the differentiated code allocates:
    ``analysis.globals``), the function ``ptr (shadow, primal)`` giving the shadow to
    use: where the variable only ever holds blocks of the C library's allocator
    (``heap_block_only``), a zeroed block when the pointer was read before the code
    stored its block there (``runtime.fill_shadow_check``; ``plain``: a ``calloc``
    block, as forward mode's shadows are; not with ``fill`` false: vector forward
    mode, whose other lanes have shadow globals of their own), else the check that
    stops the program then (``runtime.unset_shadow_check``); None where no check is
    needed."""
    if not shadow_globals or not load.type.is_pointer:
        return None
    from ..analysis.globals import global_base
    from ..analysis.activity import underlying_object
    a = underlying_object(load.operand(0))
    if isinstance(a, Call) and (a.callee_name or "").startswith("llvm.threadlocal.address"):
        a = a.args[0]       # the calling thread's copy of a thread-local pointer variable
    g = global_base(a)
    if g is None or g not in shadow_globals or not g.value_type.is_pointer \
            or _only_stored(load):
        return None
    from .runtime import fill_shadow_check, unset_shadow_check
    from ..analysis.globals import heap_block_only
    if fill and heap_block_only(g):
        return fill_shadow_check(module, g, shadow_globals[g], plain)
    return unset_shadow_check(module, g)


def _only_stored(v, depth=4) -> bool:
    """Whether ``v`` is only stored to memory (through phis and selects): a pointer
    saved to be restored (``saved = g_p; g_p = x; ...; g_p = saved;``) is never read
    through, and a read of its shadow before one is set harms nothing."""
    from ..ir.instructions import Phi, Select, Store
    return bool(v.users) and all(
        isinstance(u, Store) and u.operand(0) is v
        or isinstance(u, (Phi, Select)) and depth and _only_stored(u, depth - 1)
        for u in v.users)


def shadow_address(e, inst, base_shadow, value_of):
    """The shadow of ``inttoptr`` ``inst`` whose address is computed from one pointer's
    (``analysis.activity.address_source``): the same integer operations, at ``e``, on the
    address of ``base_shadow``; ``value_of`` gives the generated code's value of each
    other operand (an integer that comes from no pointer).  An aligned block's shadow is
    rounded the way the block is, inside a shadow block of the same size."""
    from ..ir.instructions import BinaryOp, Cast, Select
    from ..analysis.activity import address_source
    base = address_source(inst)
    memo: dict = {}
    on_path: dict = {}

    def build(v):
        if v in memo:
            return memo[v]
        if isinstance(v, Cast) and v.opcode in ("ptrtoint", "ptrtoaddr") \
                and v.operand(0) is base:
            got = e.cast(v.opcode, base_shadow, v.type)
        elif isinstance(v, BinaryOp) and _reaches(v, base, on_path):
            # (without nuw/nsw: the shadow's address is another number)
            got = e.binop(v.opcode, build(v.operand(0)), build(v.operand(1)))
        elif isinstance(v, Select) and _reaches(v, base, on_path):
            got = e.select(value_of(v.operand(0)), build(v.operand(1)), build(v.operand(2)))
        else:
            got = value_of(v)
        memo[v] = got
        return got
    return e.cast("inttoptr", build(inst.operand(0)), inst.type)


def _reaches(v, base, memo) -> bool:
    """Whether the integer ``v`` is computed from ``base``'s address (through the
    operations ``address_source`` followed, which bounded the graph), memoised."""
    from ..ir.instructions import BinaryOp, Cast, Select
    if v not in memo:
        memo[v] = False
        if isinstance(v, Cast) and v.opcode in ("ptrtoint", "ptrtoaddr"):
            memo[v] = v.operand(0) is base
        elif isinstance(v, (BinaryOp, Select)):
            ops = v.operands if isinstance(v, BinaryOp) else v.operands[1:]
            memo[v] = any([_reaches(o, base, memo) for o in ops])
    return memo[v]


def scratch_sink(module, fn):
    """A zeroed 64-byte scratch slot at the start of ``fn``: where an access through a
    pointer whose shadow is the primal memory goes instead (``Activity._own_merges``);
    only zeros are ever stored there."""
    from ..ir.instructions import Alloca
    e = Emitter(module)
    e.position_at_start(fn.blocks[0])
    a = Alloca(T.ArrayType(T.i8, 64), align=64)
    e.insert(a)
    memset = e.declare("llvm.memset.p0.i64", T.void, [T.ptr, T.i8, T.i64, T.i1])
    e.call(memset, [a, ConstantInt(T.i8, 0), ConstantInt(T.i64, 64), ConstantInt(T.i1, 0)])
    return a

