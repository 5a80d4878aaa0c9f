"""Sign-bit masks applied to floats as integers, rewritten as ``fneg`` and ``fabs``.

SIMD code flips, clears or sets the sign of chosen lanes with a bitwise operation on
the floats' bits: Eigen's ``pxor``/``pabs``/``pand`` (the quaternion product, the 4x4
``inverse()``, ``cwiseAbs``), ``_mm_xor_pd(v, _mm_set_pd(-0.0, 0.0))``, an absolute value
by ``_mm_andnot_pd(_mm_set1_pd(-0.0), v)``.  In LLVM's IR that is ``bitcast`` to an
integer vector, ``xor``/``and``/``or`` with a constant, ``bitcast`` back; derivatives
follow floats, so these were a compile error ("floating-point values moved through
integer operations"; Enzyme 15 builds some of them).

Before differentiation, in the private copies about to be differentiated, such an
operation whose constant, cut into lanes of the float's width, holds in each lane only
one of the masks below becomes the float operations it stands for, lane by lane, bit
for bit:

======  ==================  ====================  ===================
op      keeps the lane      sign mask (-0.0)      all but the sign
======  ==================  ====================  ===================
xor     0                   ``fneg``              --
and     all ones            +0.0 or -0.0 (no      ``fabs``
                            derivative)
or      0                   ``fneg (fabs x)``     --
======  ==================  ====================  ===================

(an ``and`` with 0 gives +0.0).  The lanes are put together with ``shufflevector``s.  The
floats are the ``bitcast``'s source, a shuffle of such floats' lanes (a splat of a
double's bits), or -- for an integer ``load`` (the float memory read as integers) -- the
one float type the result is bitcast to.  Any other constant, a
mask known only at run time (-O0 keeps ``_mm_xor_pd``'s mask in memory) and a copysign
made of two masked halves are left as they are: a compile error where they carry
derivatives (``kinds``).
"""

from __future__ import annotations

from ..ir import types as T
from ..ir.instructions import BinaryOp, Cast, Load, ShuffleVector
from ..ir.values import ConstantAggregate, ConstantInt, ConstantSplat, Poison, Undef, ZeroInit
from .simd import lane_mask
from .typed_copies import fold_bitcast_pairs, replace_with_floats

__all__ = ["rewrite_sign_masks"]


def _int_lanes(c, ty):
    """The integer constant ``c`` of (vector) type ``ty`` as a list of lane values
    (None for a poison or undef lane: one the program never reads), or None."""
    n = ty.count if ty.is_vector else 1
    if isinstance(c, ZeroInit):
        return [0] * n
    if isinstance(c, ConstantInt):
        return [c.value]
    if isinstance(c, ConstantSplat) and isinstance(c.operand(0), ConstantInt):
        return [c.operand(0).value] * n
    if isinstance(c, ConstantAggregate) and all(isinstance(v, (ConstantInt, Poison, Undef))
                                                for v in c.operands):
        return [v.value if isinstance(v, ConstantInt) else None for v in c.operands]
    return None


def _lane_kinds(op, lanes, width, fwidth):
    """What the operation does to each float lane of ``fwidth`` bits (integer lanes of
    ``width`` bits, little-endian), or None where a lane's mask is none of the table's.
    A float lane whose mask is all poison is kept as it is (its value is never read)."""
    bits = known = 0
    for i, v in enumerate(lanes):
        if v is not None:
            bits |= (v & ((1 << width) - 1)) << (i * width)
            known |= ((1 << width) - 1) << (i * width)
    total = len(lanes) * width
    if total % fwidth:
        return None
    ones, sign = (1 << fwidth) - 1, 1 << (fwidth - 1)
    table = {"xor": {0: "x", sign: "neg"},
             "and": {ones: "x", sign ^ ones: "abs", sign: "sign", 0: "zero"},
             "or": {0: "x", sign: "nabs"}}[op]
    out = []
    for k in range(total // fwidth):
        have = (known >> (k * fwidth)) & ones
        got = "x" if have == 0 else \
            table.get((bits >> (k * fwidth)) & ones) if have == ones else None
        if got is None:
            return None
        out.append(got)
    return out


def _float_type_of(x, result):
    """The float (vector) type whose bits the integer ``x`` holds: its ``bitcast``'s
    source, or for an integer load the one float type ``result`` is bitcast to."""
    if isinstance(x, Cast) and x.opcode == "bitcast":
        ty = x.operand(0).type
    elif isinstance(x, ShuffleVector) and _float_shuffle_source(x) is not None:
        ty = T.VectorType(_float_shuffle_source(x).element, x.type.count)
    elif isinstance(x, Load) and not x.volatile and not x.ordering:
        tys = {u.user.type for u in result.uses
               if isinstance(u.user, Cast) and u.user.opcode == "bitcast"}
        if not tys:
            tys = _floats_in_memory(x)
        if len(tys) != 1:
            return None
        ty = tys.pop()
    else:
        return None
    el = ty.element if ty.is_vector else ty
    if not el.is_float or el.kind not in ("float", "double"):
        return None     # (a bitcast from integers or pointers: no float's bits)
    return ty


def _floats_in_memory(ld) -> set:
    """For an integer load whose result is not bitcast (only stored again: AVX's
    ``_mm256_andnot_ps`` at -O1 stores the masked lanes as integers), the float type of
    its lane width when the memory it reads holds floats of that width and nothing
    else; else an empty set."""
    from ..analysis.types import memory_kinds
    ty = ld.type
    el = ty.element if ty.is_vector else ty
    kind = {32: "float", 64: "double"}.get(el.width)
    if kind is None or memory_kinds([ld.operand(0)], exclude=ld) != {kind}:
        return set()
    fel = T.float if kind == "float" else T.double
    return {T.VectorType(fel, ty.count) if ty.is_vector else fel}


def _float_shuffle_source(sv):
    """For a shuffle of integer lanes (a splat of a double's bits: Eigen's ``pset1`` of a
    computed value at -O1) whose operands are floats bitcast lane for lane, the float
    vector type of those operands; else None."""
    ty = None
    for o in sv.operands[:2]:
        if isinstance(o, (Poison, Undef)):
            continue
        if not (isinstance(o, Cast) and o.opcode == "bitcast" and o.operand(0).type.is_vector
                and o.operand(0).type.count == o.type.count
                and o.operand(0).type.element.kind in ("float", "double")):
            return None
        ty = o.operand(0).type
    return ty


def _floats(e, x, fty):
    """The floats whose bits the integer ``x`` holds, as an ``fty`` value."""
    if isinstance(x, Load):   # read as floats once, where it was read, for every use
        e.position_before(x)
        v = e.load(fty, x.operand(0), align=x.align)
        v.metadata = [m for m in x.metadata if m[0] != "tbaa"]
        replace_with_floats(x, v)
        return v
    if isinstance(x, ShuffleVector):
        src = _float_shuffle_source(x)
        a, b = (o.operand(0) if isinstance(o, Cast) else Poison(src) for o in x.operands[:2])
        return e.shufflevector(a, b, x.operand(2).clone())
    return x.operand(0)


def _lane(e, kind, x):
    if kind == "x":
        return x
    if kind == "neg":
        return e.fneg(x)
    if kind == "abs":
        return e.libm("fabs", x)
    if kind == "nabs":
        return e.fneg(e.libm("fabs", x))
    if kind == "sign":                       # the sign alone: copysign(0, x)
        return e.libm("copysign", e.const(0.0, x), x)
    return e.const(0.0, x)                   # "zero"


def _rewrite(op, module) -> bool:
    ity = op.type
    a, b = op.operands
    x, c = (a, b) if b.is_constant else (b, a)
    if not c.is_constant or x.is_constant:
        return False
    lanes = _int_lanes(c, ity)
    fty = _float_type_of(x, op)
    if lanes is None or fty is None:
        return False
    dl = module.datalayout
    if dl.store_size(fty) != dl.store_size(ity):
        return False
    el = fty.element if fty.is_vector else fty
    kinds = _lane_kinds(op.opcode, lanes, (ity.element if ity.is_vector else ity).width,
                        dl.store_size(el) * 8)
    if kinds is None:
        return False
    from .emit import Emitter
    e = Emitter(module)
    e.debug_loc = op.get_metadata("dbg")
    e.position_before(op)
    v = _floats(e, x, fty)
    e.position_before(op)
    built = {}
    for k in dict.fromkeys(kinds):
        built[k] = _lane(e, k, v)
    out = built[kinds[0]]
    n = len(kinds)
    for k, w in built.items():
        if k == kinds[0]:
            continue
        out = e.shufflevector(out, w, lane_mask([n + i if kinds[i] == k else i
                                                 for i in range(n)]))
    replace_with_floats(op, out)    # (stored as it is: the floats are stored)
    if isinstance(x, ShuffleVector) and not x.uses:
        x.erase()
    return True


def rewrite_sign_masks(fn) -> int:
    """Rewrite the sign-bit masks on floats in ``fn`` (a private copy about to be
    differentiated) as the float operations they stand for; return how many."""
    module = fn.parent
    n = 0
    for op in [i for i in fn.instructions() if isinstance(i, BinaryOp)
               and i.opcode in ("xor", "and", "or")
               and (i.type.is_int or i.type.is_vector and i.type.element.is_int)]:
        n += _rewrite(op, module)
    if n:
        fold_bitcast_pairs(fn)
    return n
