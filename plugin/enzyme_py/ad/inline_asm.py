"""Known x86 inline assembly as the LLVM IR it computes (a rewrite before AD).

Eigen's SSE/AVX packet functions use inline assembly under clang (which reports itself
as an old GCC): ``maxpd``/``minpd`` (and the ``ps`` and AVX three-operand forms) for
``pmax``/``pmin`` -- ``maxCoeff()``, the range reduction of ``log()`` -- and
``vfmadd231pd`` for ``pmadd`` with FMA (``-mfma``, ``-march=native``: the vectorised
matrix-vector and coefficient-wise products).  The
derivative cannot look inside assembly; the same operation in IR it can.  Each form is
replaced by what the instruction computes, exactly:

- ``max``: ``x > y ? x : y`` with Intel's operand order (the second source where the
  comparison fails: NaN, or equal zeros), ``min`` with ``<``;
- ``vfmadd231``: ``llvm.fma`` (one rounding, as the instruction).

Only assembly without side effects, memory clobbers or memory operands
(``effects.pure_inline_asm``) whose operands have the instruction's element type is
rewritten; anything else stays assembly (and is an error where its result carries a
derivative).  Not empty assembly tying an output to an input, though it computes its
input: Eigen's ``EIGEN_OPTIMIZATION_BARRIER`` keeps ``(|a| + 2^52) - 2^52`` from being
folded in its SSE2 rounding, whose derivative as arithmetic would be 1 where rounding's
is 0 -- the barrier marks code whose floating-point arithmetic is not its mathematics.
"""

from __future__ import annotations

import re

from ..analysis.effects import inline_asm_code, pure_inline_asm
from ..ir import types as T

__all__ = ["inline_asm_as_ir"]

# AT&T syntax as clang prints it into IR: sources first, the destination ($0) last
_TWO = re.compile(r"^\s*(max|min)(pd|ps|sd|ss)\s+\$(\d+)\s*,\s*\$0\s*$")
_THREE = re.compile(r"^\s*v(max|min)(pd|ps|sd|ss)\s+\$(\d+)\s*,\s*\$(\d+)\s*,\s*\$0\s*$")
_FMA = re.compile(r"^\s*vfmadd231(pd|ps|sd|ss)\s+\$(\d+)\s*,\s*\$(\d+)\s*,\s*\$0\s*$")


def _element_ok(suffix, ty) -> bool:
    """Whether ``ty`` is what the instruction's suffix works on: packed forms on a
    vector (or one value) of doubles/floats, scalar forms on one value."""
    want = T.double if suffix[1] == "d" else T.float
    if suffix[0] == "p":
        return ty == want or ty.is_vector and ty.element == want
    return ty == want


def _operands(call):
    """``$n`` -> value: the inputs in constraint order after the outputs; ``$0`` is the
    input tied to output 0 (constraint ``0``), if any."""
    parts = [c for c in call.callee.constraints if not c.startswith("~")]
    outs = [c for c in parts if c.startswith("=")]
    ins = parts[len(outs):]
    if len(outs) != 1 or len(ins) != len(call.args):
        return None
    ops = {}
    for k, (c, a) in enumerate(zip(ins, call.args)):
        ops[k + 1] = a
        if c == "0":
            ops[0] = a
    return ops


def _rewrite(call, e):
    """The IR value replacing ``call``, emitted before it, or None."""
    code = inline_asm_code(call)
    ops = _operands(call)
    if code is None or ops is None:
        return None
    ty = call.type
    m = _TWO.match(code)
    if m is not None:       # OP src, dst: dst = OP(dst, src)
        x, y = ops.get(0), ops.get(int(m.group(3)))
        op, suffix = m.group(1), m.group(2)
    else:
        m = _THREE.match(code)
        if m is not None:   # vOP src2, src1, dst: dst = OP(src1, src2)
            x, y = ops.get(int(m.group(4))), ops.get(int(m.group(3)))
            op, suffix = m.group(1), m.group(2)
        else:
            m = _FMA.match(code)
            if m is None:
                return None
            a, b, c = ops.get(int(m.group(2))), ops.get(int(m.group(3))), ops.get(0)
            if None in (a, b, c) or not all(v.type == ty for v in (a, b, c)) \
                    or not _element_ok(m.group(1), ty):
                return None
            name = f"llvm.fma.{_suffix(ty)}"
            return e.call(e.declare(name, ty, [ty, ty, ty]), [b, a, c])
    if x is None or y is None or x.type != ty or y.type != ty or not _element_ok(suffix, ty):
        return None
    return e.select(e.fcmp("ogt" if op == "max" else "olt", x, y), x, y)


def _suffix(ty) -> str:
    el = ty.element if ty.is_vector else ty
    base = "f64" if el == T.double else "f32"
    return f"v{ty.count}{base}" if ty.is_vector else base


def inline_asm_as_ir(fn) -> int:
    """Replace the known forms (module docstring) in ``fn``; returns how many."""
    from ..ir.instructions import Call
    from .emit import Emitter
    n = 0
    for inst in [i for i in fn.instructions() if isinstance(i, Call) and pure_inline_asm(i)]:
        e = Emitter(fn.parent)
        e.position_before(inst)
        v = _rewrite(inst, e)
        if v is None:
            continue
        inst.replace_all_uses_with(v)
        inst.erase()
        n += 1
    return n
