"""Vector memory operations and x86 SIMD intrinsics, rewritten before differentiation.

**Masked loads and stores.**  SIMD code handles the tail of an array with masked memory
operations: AVX's ``_mm256_maskload_ps``/``_mm256_maskstore_pd``
(``llvm.x86.avx.maskload.ps.256``, which LLVM's instcombine turns into the generic
``llvm.masked.load`` when it sees the mask is a vector of booleans or a constant) and
the generic ``llvm.masked.load``/``store`` themselves.  A masked lane is not touched at
all: its memory may not exist.  Each such call becomes the scalar code it stands for —
one ordinary load or store per lane, under its mask bit — which every analysis and both
modes already understand (the shadow is read and written lane by lane under the same
mask; the reverse sweep's adjoint of a lane goes back to that lane only).  A constant
mask needs no branches: the enabled lanes are loaded or stored, the others take the
pass-through value.  A mask known only at run time gets one conditional block per lane,
as LLVM's own ``scalarize-masked-mem-intrin`` pass builds for targets without masked
memory instructions.  ``llvm.masked.gather``/``scatter``/``expandload``/
``compressstore`` are left as they are (a compile error where they touch derivatives).

**Horizontal additions.**  ``_mm_hadd_ps``/``_mm256_hadd_pd``/``hsub``... (SSE3/AVX:
``llvm.x86.sse3.hadd.ps``, ``llvm.x86.avx.hadd.pd.256``, ...) become the two
``shufflevector``s and the ``fadd``/``fsub`` they compute, bit for bit.

(``_mm256_max_ps``/``min`` and ``rcp``/``rsqrt`` keep their calls: they have derivative
rules, see ``analysis.effects.libm_base`` and ``ad.rules.LIBM``.)
"""

from __future__ import annotations

from ..ir import types as T
from ..ir.attributes import Attributes
from ..ir.builder import IRBuilder
from ..ir.instructions import Call
from ..ir.values import ConstantAggregate, ConstantInt, ConstantSplat, ZeroInit
from .emit import zero

__all__ = ["lower_simd"]

# x86 intrinsic -> (is a load, vector type); the mask is the sign bit of each integer lane
_X86 = {
    f"llvm.x86.avx.mask{op}.{s}{w}": (op == "load", T.VectorType(el, n // size))
    for op in ("load", "store")
    for s, el, size in (("ps", T.float, 4), ("pd", T.double, 8))
    for w, n in (("", 16), (".256", 32))
}


def _kind(call):
    """("load" or "store", vector type) of a masked memory call this module handles."""
    name = call.callee_name or ""
    if name.startswith("llvm.masked.load."):
        return "load", call.type
    if name.startswith("llvm.masked.store."):
        return "store", call.args[0].type
    if name in _X86:
        is_load, vt = _X86[name]
        return ("load" if is_load else "store"), vt
    return None


def _mask(call, kind):
    if call.callee_name.startswith("llvm.masked."):
        return call.args[2 if kind == "store" else 1]
    return call.args[1]


def _lane_bits(call, kind):
    """The mask as a list of Python bools when it is constant, else None.  A lane is
    enabled by its top bit (an i1 of the generic intrinsics, the sign of x86's lanes)."""
    m = _mask(call, kind)
    n, w = m.type.count, m.type.element.width
    if isinstance(m, ZeroInit):
        return [False] * n
    if isinstance(m, ConstantSplat):
        lanes = [m.operand(0)] * n
    elif isinstance(m, ConstantAggregate):
        lanes = m.operands
    else:
        return None
    if not all(isinstance(v, ConstantInt) for v in lanes):
        return None
    return [bool((v.value >> (w - 1)) & 1) for v in lanes]


def _align(call, kind, size):
    """The alignment of each lane's access: the call's, at most the element's size."""
    i = 1 if kind == "store" and call.callee_name.startswith("llvm.masked.") else 0
    attrs = call.arg_attrs[i] if call.arg_attrs else ""
    a = Attributes.parse(attrs).arg("align") if attrs else None
    return min(int(a) if a else 1, size)


def _mask_bit(b, call, kind, k):
    """The i1 saying whether lane ``k`` is enabled."""
    lane = b.extractelement(_mask(call, kind), ConstantInt(T.i32, k))
    if lane.type.width == 1:
        return lane
    return b.icmp("slt", lane, ConstantInt(lane.type, 0))


def _parts(call, kind):
    """(pointer, value stored or pass-through vector) of the call."""
    a = call.args
    if call.callee_name.startswith("llvm.masked."):
        return (a[1], a[0]) if kind == "store" else (a[0], a[2])
    if kind == "store":
        return a[0], a[2]
    return a[0], zero(call.type)


def _lower(call):
    kind, vt = _kind(call)
    ptr, other = _parts(call, kind)
    el, n = vt.element, vt.count
    align = _align(call, kind, call.module.datalayout.store_size(el))
    bits = _lane_bits(call, kind)
    b = IRBuilder()
    b.debug_loc = call.get_metadata("dbg")
    b.position_before(call)

    def lane_ptr(k):
        return b.gep(el, ptr, [ConstantInt(T.i64, k)], inbounds=True) if k else ptr

    if bits is not None:              # constant mask: no branches
        acc = other
        for k in range(n):
            if not bits[k]:
                continue
            idx = ConstantInt(T.i32, k)
            if kind == "load":
                acc = b.insertelement(acc, b.load(el, lane_ptr(k), align=align), idx)
            else:
                b.store(b.extractelement(other, idx), lane_ptr(k), align=align)
        if kind == "load":
            call.replace_all_uses_with(acc)
        call.erase()
        return
    acc = other
    for k in range(n):
        idx = ConstantInt(T.i32, k)
        bit = _mask_bit(b, call, kind, k)
        tail = call.parent.split_after(call)
        head = call.parent
        then = head.parent.insert_basic_block(head.parent.blocks.index(tail))
        b.position_at_end(head)
        b.cbranch(bit, then, tail)
        b.position_at_end(then)
        if kind == "load":
            with_lane = b.insertelement(acc, b.load(el, lane_ptr(k), align=align), idx)
        else:
            b.store(b.extractelement(other, idx), lane_ptr(k), align=align)
        b.br(tail)
        call.remove_from_parent()
        tail.insert(0, call)
        if kind == "load":
            b.position_at_start(tail)
            acc = b.phi(vt, [(with_lane, then), (acc, head)])
            b.position_before(call)
        else:
            b.position_before(call)
    if kind == "load":
        call.replace_all_uses_with(acc)
    call.erase()


# x86 horizontal addition -> (the element's size, fadd or fsub)
_HORIZONTAL = {
    f"llvm.x86.{isa}.h{op}.{s}{w}": (size, "f" + ("add" if op == "add" else "sub"))
    for op in ("add", "sub")
    for s, size in (("ps", 4), ("pd", 8))
    for isa, w in (("sse3", ""), ("avx", ".256"))
}


def lane_mask(idx):
    """A ``shufflevector`` mask of the lane indices ``idx`` (-1: poison)."""
    from ..ir.values import Poison
    return ConstantAggregate(T.VectorType(T.i32, len(idx)),
                             [ConstantInt(T.i32, i) if i >= 0 else Poison(T.i32) for i in idx])


def _horizontal(call):
    """``hadd(a, b)``: in each 128-bit block, the sums of a's neighbouring pairs, then
    b's (``hsub``: the first minus the second)."""
    size, op = _HORIZONTAL[call.callee_name]
    a, b = call.args
    n = a.type.count
    block = 16 // size
    first, second = [], []
    for base in range(0, n, block):
        for off in (0, n):             # a's lanes, then b's
            for p in range(block // 2):
                first.append(off + base + 2 * p)
                second.append(off + base + 2 * p + 1)
    bld = IRBuilder()
    bld.debug_loc = call.get_metadata("dbg")
    bld.position_before(call)
    x = bld.shufflevector(a, b, lane_mask(first))
    y = bld.shufflevector(a, b, lane_mask(second))
    r = getattr(bld, op)(x, y)
    call.replace_all_uses_with(r)
    call.erase()


def lower_simd(fn) -> int:
    """Rewrite the masked loads and stores and the horizontal additions in ``fn`` (a
    private copy about to be differentiated); return how many calls were rewritten."""
    calls = [i for i in fn.instructions() if isinstance(i, Call)
             and (_kind(i) is not None or i.callee_name in _HORIZONTAL)]
    for c in calls:
        if c.callee_name in _HORIZONTAL:
            _horizontal(c)
        else:
            _lower(c)
    return len(calls)
