"""Derivative rules as data: one table per family.

Each entry gives, per operand, the adjoint contribution as an expression of the
emitter ``e``, the operands ``x`` (a tuple), the primal result ``r`` and the
incoming adjoint ``d``.  Every expression is linear in ``d``, so the tangent
(forward-mode) rule is the same expression with ``d`` set to the operand's
tangent, summed over operands (see :func:`tangent`).  ``None`` marks an operand
with no derivative (an integer exponent, a rounding function's argument).

The emitter is ``ad.emit.Emitter``, an ``ir.IRBuilder``: the rules use its
``fadd fsub fmul fdiv fneg fcmp select sitofp sub`` and two methods of its own,
``const(v, like)`` (a float constant of ``like``'s type) and ``libm(name, *args)``,
which takes a base libm name (``"cos"``) and picks the float/double/intrinsic
spelling.  ``x`` and ``r`` may be ``Lazy`` (computed on first use): the emitter
resolves them as operands.
"""

from __future__ import annotations

import math

from ..analysis.effects import libm_base
from ..ir.values import ConstantInt

__all__ = ["BINARY", "UNARY", "CASTS", "LIBM", "REDUCTIONS", "STRUCT_MATH", "ATOMICS",
           "libm_rule", "reduction_rule", "struct_math_rule", "tangent", "contribution"]

# ---------------------------------------------------------------------------
# binary and unary floating-point instructions, keyed by opcode
# ---------------------------------------------------------------------------

BINARY = {
    "fadd": (lambda e, x, r, d: d,
             lambda e, x, r, d: d),
    "fsub": (lambda e, x, r, d: d,
             lambda e, x, r, d: e.fneg(d)),
    "fmul": (lambda e, x, r, d: e.fmul(d, x[1]),
             lambda e, x, r, d: e.fmul(d, x[0])),
    # r = a / b: da = d / b, db = -(d / b) * r -- one division that both adjoints share
    # (the same fdiv, merged by CSE), not two
    "fdiv": (lambda e, x, r, d: e.fdiv(d, x[1]),
             lambda e, x, r, d: e.fneg(e.fmul(e.fdiv(d, x[1]), r))),
    "frem": (lambda e, x, r, d: d,
             lambda e, x, r, d: e.fneg(e.fmul(d, e.libm("trunc", e.fdiv(x[0], x[1]))))),
}

UNARY = {
    "fneg": (lambda e, x, r, d: e.fneg(d),),
}

# casts between float types are linear (the adjoint is cast back); int<->float casts
# carry no derivative.  Value: how the adjoint of the operand is formed from d.
CASTS = {
    "fpext": "cast-back",      # fptrunc d to the operand type
    "fptrunc": "cast-back",    # fpext d to the operand type
    "bitcast": "cast-back",    # only float<->float-vector bitcasts are active
    "sitofp": None, "uitofp": None, "fptosi": None, "fptoui": None,
}

# atomic read-modify-writes on floats (``old = atomicrmw op p, v``: ``old = *p;
# *p = *p op v``), keyed by operation: (the adjoint of v from the adjoint ``t`` of *p
# after the operation, whether the operation replaces *p).  The tangent of ``old`` is
# the same operation applied to p's shadow and v's tangent (linear in both).
# ---------------------------------------------------------------------------

ATOMICS = {
    "fadd": (lambda e, t: t, False),
    "fsub": (lambda e, t: e.fneg(t), False),
    "xchg": (lambda e, t: t, True),
}

# ---------------------------------------------------------------------------
# libm functions and the matching LLVM intrinsics, keyed by base name
# ---------------------------------------------------------------------------

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _c(e, v, like):
    return e.const(v, like)


def _sq(e, a):
    return e.fmul(a, a)


def _minus1(e, i):
    return e.sub(i, ConstantInt(i.type, 1))


def _plus1(e, i):
    return e.add(i, ConstantInt(i.type, 1))


def _i32(v):
    from ..ir import types as T
    return ConstantInt(T.i32, v)


def _bessel_step(e, fn, lower, n_up, x, r, d):
    """``d (lower - fn(n_up, x)) / 2``: the derivative of a Bessel function of order n
    from its neighbours' values (``lower`` the order n - 1's)."""
    return e.fmul(d, e.fmul(_c(e, 0.5, r), e.fsub(lower, e.libm(fn, n_up, x))))


LIBM = {
    "sin": (lambda e, x, r, d: e.fmul(d, e.libm("cos", x[0])),),
    "cos": (lambda e, x, r, d: e.fneg(e.fmul(d, e.libm("sin", x[0]))),),
    "tan": (lambda e, x, r, d: e.fmul(d, e.fadd(_c(e, 1.0, r), _sq(e, r))),),
    "asin": (lambda e, x, r, d: e.fdiv(d, e.libm("sqrt", e.fsub(_c(e, 1.0, r), _sq(e, x[0])))),),
    "acos": (lambda e, x, r, d: e.fneg(e.fdiv(d, e.libm("sqrt", e.fsub(_c(e, 1.0, r),
                                                                       _sq(e, x[0]))))),),
    "atan": (lambda e, x, r, d: e.fdiv(d, e.fadd(_c(e, 1.0, r), _sq(e, x[0]))),),
    "atan2": (lambda e, x, r, d: e.fdiv(e.fmul(d, x[1]), e.fadd(_sq(e, x[0]), _sq(e, x[1]))),
              lambda e, x, r, d: e.fneg(e.fdiv(e.fmul(d, x[0]),
                                               e.fadd(_sq(e, x[0]), _sq(e, x[1]))))),
    "sinh": (lambda e, x, r, d: e.fmul(d, e.libm("cosh", x[0])),),
    "cosh": (lambda e, x, r, d: e.fmul(d, e.libm("sinh", x[0])),),
    "tanh": (lambda e, x, r, d: e.fmul(d, e.fsub(_c(e, 1.0, r), _sq(e, r))),),
    "asinh": (lambda e, x, r, d: e.fdiv(d, e.libm("sqrt", e.fadd(_sq(e, x[0]), _c(e, 1.0, r)))),),
    "acosh": (lambda e, x, r, d: e.fdiv(d, e.libm("sqrt", e.fsub(_sq(e, x[0]), _c(e, 1.0, r)))),),
    "atanh": (lambda e, x, r, d: e.fdiv(d, e.fsub(_c(e, 1.0, r), _sq(e, x[0]))),),
    "exp": (lambda e, x, r, d: e.fmul(d, r),),
    "exp2": (lambda e, x, r, d: e.fmul(d, e.fmul(r, _c(e, _LN2, r))),),
    "exp10": (lambda e, x, r, d: e.fmul(d, e.fmul(r, _c(e, _LN10, r))),),
    "expm1": (lambda e, x, r, d: e.fmul(d, e.fadd(r, _c(e, 1.0, r))),),
    "log": (lambda e, x, r, d: e.fdiv(d, x[0]),),
    "log2": (lambda e, x, r, d: e.fdiv(d, e.fmul(x[0], _c(e, _LN2, r))),),
    "log10": (lambda e, x, r, d: e.fdiv(d, e.fmul(x[0], _c(e, _LN10, r))),),
    "log1p": (lambda e, x, r, d: e.fdiv(d, e.fadd(x[0], _c(e, 1.0, r))),),
    # 0 at 0, where the derivative is infinite, as Enzyme's rule has it: sqrt(x - x),
    # or a distance |a - b| where a == b, contributes nothing instead of inf - inf
    "sqrt": (lambda e, x, r, d: e.select(e.fcmp("oeq", x[0], _c(e, 0.0, r)), _c(e, 0.0, r),
                                         e.fdiv(d, e.fmul(_c(e, 2.0, r), r))),),
    "cbrt": (lambda e, x, r, d: e.fdiv(e.fmul(d, r), e.fmul(_c(e, 3.0, r), x[0])),),
    "pow": (lambda e, x, r, d: e.fmul(d, e.fmul(x[1], e.libm("pow", x[0],
                                                             e.fsub(x[1], _c(e, 1.0, r))))),
            # (at a base of 0, where 0^y is 0 for y > 0: 0, as Enzyme guards it, not 0 log 0)
            lambda e, x, r, d: e.select(e.fcmp("oeq", x[0], _c(e, 0.0, r)), _c(e, 0.0, r),
                                        e.fmul(d, e.fmul(r, e.libm("log", x[0]))))),
    "powi": (lambda e, x, r, d: e.fmul(d, e.fmul(e.sitofp(x[1], r.type),
                                                 e.libm("powi", x[0], _minus1(e, x[1])))),
             None),
    "hypot": (lambda e, x, r, d: e.fdiv(e.fmul(d, x[0]), r),
              lambda e, x, r, d: e.fdiv(e.fmul(d, x[1]), r)),
    # at the kinks, Enzyme's choices: fabs'(±0) = +1, fmin's tie to y, fmax's to x
    "fabs": (lambda e, x, r, d: e.select(e.fcmp("olt", x[0], _c(e, 0.0, r)), e.fneg(d), d),),
    "copysign": (lambda e, x, r, d: e.fmul(d, e.fmul(e.libm("copysign", _c(e, 1.0, r), x[0]),
                                                     e.libm("copysign", _c(e, 1.0, r), x[1]))),
                 None),
    "fmax": (lambda e, x, r, d: e.select(e.fcmp("oge", x[0], x[1]), d, _c(e, 0.0, r)),
             lambda e, x, r, d: e.select(e.fcmp("oge", x[0], x[1]), _c(e, 0.0, r), d)),
    "fmin": (lambda e, x, r, d: e.select(e.fcmp("olt", x[0], x[1]), d, _c(e, 0.0, r)),
             lambda e, x, r, d: e.select(e.fcmp("olt", x[0], x[1]), _c(e, 0.0, r), d)),
    "fmod": (lambda e, x, r, d: d,
             lambda e, x, r, d: e.fneg(e.fmul(d, e.libm("trunc", e.fdiv(x[0], x[1]))))),
    "fma": (lambda e, x, r, d: e.fmul(d, x[1]),
            lambda e, x, r, d: e.fmul(d, x[0]),
            lambda e, x, r, d: d),
    "erf": (lambda e, x, r, d: e.fmul(d, e.fmul(_c(e, _TWO_OVER_SQRT_PI, r),
                                                e.libm("exp", e.fneg(_sq(e, x[0]))))),),
    "erfc": (lambda e, x, r, d: e.fneg(e.fmul(d, e.fmul(_c(e, _TWO_OVER_SQRT_PI, r),
                                                        e.libm("exp", e.fneg(_sq(e, x[0])))))),),
    "tgamma": (lambda e, x, r, d: e.fmul(d, e.fmul(r, e.libm("__enzyme_py_digamma", x[0]))),),
    "lgamma": (lambda e, x, r, d: e.fmul(d, e.libm("__enzyme_py_digamma", x[0])),),
    # the reentrant lgamma: the sign of gamma(x) stored through the pointer (an integer)
    "lgamma_r": (lambda e, x, r, d: e.fmul(d, e.libm("__enzyme_py_digamma", x[0])), None),
    # x 2^k (k an integer): linear in x
    "ldexp": (lambda e, x, r, d: e.libm("ldexp", d, x[1]), None),
    "scalbn": (lambda e, x, r, d: e.libm("scalbn", d, x[1]), None),
    # m = x 2^-e (e stored through the pointer): dm/dx = 2^-e = m / x, exactly
    "frexp": (lambda e, x, r, d: e.select(e.fcmp("oeq", x[0], _c(e, 0.0, r)), d,
                                          e.fmul(d, e.fdiv(r, x[0]))), None),
    # x - n y with n the integer nearest x / y (exactly (x - r) / y)
    "remainder": (lambda e, x, r, d: d,
                  lambda e, x, r, d: e.fneg(e.fmul(d, e.libm("rint", e.fdiv(e.fsub(x[0], r),
                                                                             x[1]))))),
    # remainder's value; the quotient's low bits stored through the pointer (an integer)
    "remquo": (lambda e, x, r, d: d,
               lambda e, x, r, d: e.fneg(e.fmul(d, e.libm("rint", e.fdiv(e.fsub(x[0], r),
                                                                          x[1])))),
               None),
    # the float next to x in the direction of y: x moved by one unit in the last place
    "nextafter": (lambda e, x, r, d: d, lambda e, x, r, d: _c(e, 0.0, r)),
    "nexttoward": (lambda e, x, r, d: d, lambda e, x, r, d: _c(e, 0.0, x[1])),
    # max(x - y, 0)
    "fdim": (lambda e, x, r, d: e.select(e.fcmp("ogt", x[0], x[1]), d, _c(e, 0.0, r)),
             lambda e, x, r, d: e.select(e.fcmp("ogt", x[0], x[1]), e.fneg(d), _c(e, 0.0, r))),
    # Bessel functions of the first and second kind: J0' = -J1, Jn' = (Jn-1 - Jn+1) / 2
    # (J1' as (J0 - J2) / 2, finite at 0 where J0 - J1 / x is not); Y likewise
    "j0": (lambda e, x, r, d: e.fneg(e.fmul(d, e.libm("j1", x[0]))),),
    "y0": (lambda e, x, r, d: e.fneg(e.fmul(d, e.libm("y1", x[0]))),),
    "j1": (lambda e, x, r, d: _bessel_step(e, "jn", e.libm("j0", x[0]), _i32(2), x[0], r, d),),
    "y1": (lambda e, x, r, d: _bessel_step(e, "yn", e.libm("y0", x[0]), _i32(2), x[0], r, d),),
    "jn": (None, lambda e, x, r, d: _bessel_step(e, "jn", e.libm("jn", _minus1(e, x[0]), x[1]),
                                                 _plus1(e, x[0]), x[1], r, d)),
    "yn": (None, lambda e, x, r, d: _bessel_step(e, "yn", e.libm("yn", _minus1(e, x[0]), x[1]),
                                                 _plus1(e, x[0]), x[1], r, d)),
    # x86 SIMD, lane by lane (analysis.effects.X86_MATH): max/min return the second
    # operand unless the first is greater (less); rcp/rsqrt are approximations r of
    # 1/x and 1/sqrt(x), differentiated as those functions at r
    "x86_max": (lambda e, x, r, d: e.select(e.fcmp("ogt", x[0], x[1]), d, _c(e, 0.0, r)),
                lambda e, x, r, d: e.select(e.fcmp("ogt", x[0], x[1]), _c(e, 0.0, r), d)),
    "x86_min": (lambda e, x, r, d: e.select(e.fcmp("olt", x[0], x[1]), d, _c(e, 0.0, r)),
                lambda e, x, r, d: e.select(e.fcmp("olt", x[0], x[1]), _c(e, 0.0, r), d)),
    "x86_rcp": (lambda e, x, r, d: e.fneg(e.fmul(d, _sq(e, r))),),
    "x86_rsqrt": (lambda e, x, r, d: e.fmul(d, e.fmul(_c(e, -0.5, r), e.fmul(r, _sq(e, r)))),),
    # piecewise constant: zero derivative
    "floor": (None,), "ceil": (None,), "round": (None,), "trunc": (None,),
    "rint": (None,), "nearbyint": (None,), "roundeven": (None,), "logb": (None,),
}

# ---------------------------------------------------------------------------
# vector reductions (llvm.vector.reduce.*), keyed by the reduction.  Their Jacobian
# is not diagonal, so each entry gives the adjoint rules (one per operand, as above)
# and, separately, the tangent rule ``(e, x, r, dx) -> tangent``: the forward rule can
# NOT be derived from the adjoint one here.
# ---------------------------------------------------------------------------


def _splat(e, s, like):
    """A vector of ``like``'s type with every lane ``s``."""
    from ..ir import types as T
    from ..ir.values import Poison, ZeroInit
    ty = like.type
    v = e.insertelement(Poison(ty), s, ConstantInt(T.i32, 0))
    return e.shufflevector(v, Poison(ty), ZeroInit(T.VectorType(T.i32, ty.count)))


def _arg_lane(e, vec, r):
    """Index (i32) of the first lane of ``vec`` equal to ``r`` (the max/min), and
    whether there is one."""
    from ..ir import types as T
    n = vec.type.count
    ity = T.IntType(n)
    bits = e.cast("bitcast", e.fcmp("oeq", vec, _splat(e, r, vec)), ity)
    cttz = e.declare(f"llvm.cttz.i{n}", ity, [ity, T.i1])
    idx = e.call(cttz, [bits, ConstantInt(T.i1, 0)])
    if n > 32:
        idx = e.cast("trunc", idx, T.i32)
    elif n < 32:
        idx = e.cast("zext", idx, T.i32)
    return idx, e.icmp("ult", idx, ConstantInt(T.i32, n))


def _to_lane(e, x, r, d):
    """Adjoint of a max/min reduction: ``d`` into the lane that won."""
    from .emit import zero
    vec = e.resolve(x[0])
    idx, ok = _arg_lane(e, vec, e.resolve(r))
    return e.select(ok, e.insertelement(zero(vec.type), d, idx), zero(vec.type))


def _from_lane(e, x, r, dx):
    from .emit import zero
    if dx[0] is None:
        return None
    vec = e.resolve(x[0])
    idx, ok = _arg_lane(e, vec, e.resolve(r))
    return e.select(ok, e.extractelement(dx[0], idx), zero(e.resolve(r).type))


def _fadd_tangent(e, x, r, dx):
    out = dx[0]
    if dx[1] is not None:
        vt = e.resolve(dx[1]).type
        fn = e.declare(f"llvm.vector.reduce.fadd.v{vt.count}"
                       f"{'f64' if vt.element.kind == 'double' else 'f32'}",
                       vt.element, [vt.element, vt])
        s = e.call(fn, [e.const(-0.0, vt.element), dx[1]])
        out = s if out is None else e.fadd(out, s)
    return out


REDUCTIONS = {
    # llvm.vector.reduce.fadd(start, vec) = start + sum(vec) (ordered or reassoc)
    "fadd": ((lambda e, x, r, d: d,
              lambda e, x, r, d: _splat(e, d, x[1])), _fadd_tangent),
    # llvm.vector.reduce.fmax/fmin(vec): the lane that won gets the adjoint
    "fmax": ((_to_lane,), _from_lane),
    "fmin": ((_to_lane,), _from_lane),
}
_REDUCTION_ALIASES = {"fmaximum": "fmax", "fminimum": "fmin"}


def reduction_rule(name: str, tangent=False):
    """``(base, adjoint_rules)`` for ``llvm.vector.reduce.<op>.<type>`` (with
    ``tangent``: ``(base, tangent_rule)``), else None."""
    if not name.startswith("llvm.vector.reduce."):
        return None
    op = name.split(".")[3]
    op = _REDUCTION_ALIASES.get(op, op)
    entry = REDUCTIONS.get(op)
    return (f"vector.reduce.{op}", entry[1 if tangent else 0]) if entry else None


# ---------------------------------------------------------------------------
# math intrinsics with two results, returned as a struct (``llvm.modf``: {fraction,
# integral part}; ``llvm.sincos``: {sin, cos}; ``llvm.frexp``: {mantissa, exponent}).
# Their adjoint takes the struct of the two results' adjoints ``d`` to the operand's, and
# their tangent the operand's tangent to the struct of the results' tangents -- neither
# is the other's (the adjoint tables above map one result to one operand), so each entry
# gives both: ``(adjoint(e, x, r, d), tangent(e, x, r, dx))``.
# ---------------------------------------------------------------------------


def _pair(e, ty, a, b):
    from ..ir.values import Undef
    return e.insertvalue(e.insertvalue(Undef(ty), a, [0]), b, [1])


def _frexp_scale(e, x, m, d):
    """d * m / x (= d * 2^-exp, exactly), d itself at x = 0."""
    x = e.resolve(x)
    return e.select(e.fcmp("oeq", x, _c(e, 0.0, x)), d, e.fmul(d, e.fdiv(m, x)))


STRUCT_MATH = {
    # modf(x) = {x - trunc(x), trunc(x)}: the fraction moves with x, the integral part
    # is piecewise constant
    "modf": (lambda e, x, r, d: e.extractvalue(d, [0]),
             lambda e, x, r, dx: _pair(e, e.resolve(r).type, dx, _c(e, 0.0, dx))),
    # sincos(x) = {sin x, cos x}
    "sincos": (lambda e, x, r, d: e.fsub(e.fmul(e.extractvalue(d, [0]), e.extractvalue(r, [1])),
                                         e.fmul(e.extractvalue(d, [1]), e.extractvalue(r, [0]))),
               lambda e, x, r, dx: _pair(e, e.resolve(r).type,
                                         e.fmul(dx, e.extractvalue(r, [1])),
                                         e.fneg(e.fmul(dx, e.extractvalue(r, [0]))))),
    # frexp(x) = {m, exp} with x = m 2^exp: dm/dx = 2^-exp; the exponent is an integer
    "frexp": (lambda e, x, r, d: _frexp_scale(e, x[0], e.extractvalue(r, [0]),
                                              e.extractvalue(d, [0])),
              lambda e, x, r, dx: _pair(e, e.resolve(r).type,
                                        _frexp_scale(e, x[0], e.extractvalue(r, [0]), dx),
                                        _zero_of(e.resolve(r).type.elements[1]))),
}


def _zero_of(ty):
    from .emit import zero
    return zero(ty)


def struct_math_rule(name: str):
    """``(base, (adjoint, tangent))`` for ``llvm.modf.*``, ``llvm.sincos.*`` and
    ``llvm.frexp.*`` (scalar or vector), else None."""
    if not name.startswith("llvm."):
        return None
    base = name[5:].split(".")[0]
    entry = STRUCT_MATH.get(base)
    return (base, entry) if entry is not None else None


def libm_rule(name: str):
    """``(base, rule)`` for a libm function or LLVM intrinsic name, else None.

    ``sin``, ``sinf``, ``llvm.sin.f64``, ``llvm.sin.v2f64``, ``__sin_finite`` all map to
    the ``sin`` entry (the spellings are resolved by ``analysis.effects.libm_base``; a
    pure math function without an entry here has no derivative rule).
    """
    base = libm_base(name)
    if base is None or base not in LIBM:
        return None
    return base, LIBM[base]


def contribution(f, e, x, r, d, strong_zero=False):
    """One operand's entry ``f`` applied to the adjoint (or tangent) ``d``.  With
    ``strong_zero`` (``-fenzyme-strong-zero``, Enzyme's ``-enzyme-strong-zero``) a zero
    ``d`` contributes zero even where the partial derivative is infinite or NaN: the
    adjoint of ``sqrt(x)`` at 0, or of ``exp(x)`` past overflow, on a path that
    discards the value, is 0 instead of 0 x inf = NaN."""
    v = f(e, x, r, d)
    ty = d.type
    if not strong_zero or v is d or not (ty.is_float or ty.is_vector and ty.element.is_float):
        return v
    z = e.const(0.0, d)
    return e.select(e.fcmp("oeq", d, z), z, v)


def tangent(rule, e, x, r, dx, strong_zero=False):
    """Forward-mode rule from an adjoint entry: sum of each operand's expression
    with ``d`` replaced by that operand's tangent (None = zero tangent)."""
    out = None
    for f, t in zip(rule, dx):
        if f is None or t is None:
            continue
        v = contribution(f, e, x, r, t, strong_zero)
        out = v if out is None else e.fadd(out, v)
    return out
