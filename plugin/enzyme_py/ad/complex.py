"""C99 ``double complex`` functions and C++ ``std::complex<double>`` in differentiated code.

A ``double complex`` travels as two doubles (arguments) and ``{double, double}``
(results) in the x86-64 and AArch64 ABIs, and clang turns complex multiplication and
division into calls to ``__muldc3``/``__divdc3`` (C++ ``std::complex`` operators, and
``std::abs``/``exp``/``log``/``pow``/``sqrt`` of a ``std::complex<double>``, end in the same
calls).  Before differentiation, calls to these functions in the functions being
differentiated are redirected to reference implementations written here in terms of
real libm functions (``_enzymepy_cexp``: ``exp(re) * (cos im, sin im)``), which the AD
pass then differentiates through their bodies like any other code:

``cabs`` ``carg`` ``cexp`` ``clog`` ``csqrt`` ``cpow`` ``csin`` ``ccos`` ``ctan``
``csinh`` ``ccosh`` ``ctanh`` ``__muldc3`` ``__divdc3`` (and ``creal``/``cimag``/``conj``,
which clang inlines; ``std::sin`` ... ``std::tanh`` of a ``std::complex<double>`` call
the C functions).  ``ctan``/``ctanh`` follow Kahan's formula, as glibc does.

``__muldc3``/``__divdc3`` here are the textbook formulas: the recovery of infinite and NaN
parts of C's Annex G is not reproduced (derivatives of infinities are not defined
anyway).  The same functions in the other precisions are redirected too, each in the
x86-64 ABI's spelling (a call in another spelling is left alone): ``float complex``
(``cabsf`` ... ``cpowf`` take and return ``<2 x float>``; ``__mulsc3``/``__divsc3`` take
four floats) and ``long double complex`` (``cabsl`` ... ``cpowl`` take each complex
``byval`` in memory and return ``{x86_fp80, x86_fp80}``; ``__mulxc3``/``__divxc3`` take
four ``x86_fp80``).
"""

from __future__ import annotations

from ..ir import types as T
from ..ir.instructions import Call
from ..ir.values import ConstantFP

__all__ = ["redirect_complex_calls"]

_D = T.double


def _c(like, v):
    """The constant ``v`` in the floating-point type of ``like``."""
    return ConstantFP(like.type, v)


def _pack(e, re, im):
    from ..ir.values import Undef
    agg = e.insertvalue(Undef(T.StructType([re.type, re.type])), re, [0])
    return e.insertvalue(agg, im, [1])


def _log(e, re, im):
    return e.libm("log", e.libm("hypot", re, im)), e.libm("atan2", im, re)


def _exp(e, re, im):
    m = e.libm("exp", re)
    return e.fmul(m, e.libm("cos", im)), e.fmul(m, e.libm("sin", im))


def _mul(e, a, b, c, d):
    return e.fsub(e.fmul(a, c), e.fmul(b, d)), e.fadd(e.fmul(a, d), e.fmul(b, c))


def _cabs(e, re, im):
    return e.libm("hypot", re, im)


def _carg(e, re, im):
    return e.libm("atan2", im, re)


def _cexp(e, re, im):
    return _pack(e, *_exp(e, re, im))


def _clog(e, re, im):
    return _pack(e, *_log(e, re, im))


def _csqrt(e, re, im):
    # t = sqrt((|z| + |re|) / 2); re >= 0: (t, im / 2t), else (|im| / 2t, copysign(t, im))
    t = e.libm("sqrt", e.fmul(e.fadd(e.libm("hypot", re, im), e.libm("fabs", re)),
                              _c(re, 0.5)))
    zero = e.fcmp("oeq", t, _c(re, 0.0))
    two_t = e.select(zero, _c(re, 1.0), e.fmul(t, _c(re, 2.0)))     # z = 0: result 0
    q = e.fdiv(im, two_t)
    pos = e.fcmp("oge", re, _c(re, 0.0))
    r_re = e.select(pos, t, e.libm("fabs", q))
    r_im = e.select(pos, q, e.libm("copysign", t, im))
    return _pack(e, r_re, r_im)


def _cpow(e, zr, zi, wr, wi):
    lr, li = _log(e, zr, zi)
    return _pack(e, *_exp(e, *_mul(e, wr, wi, lr, li)))


def _csinh(e, x, y):
    return _pack(e, e.fmul(e.libm("sinh", x), e.libm("cos", y)),
                 e.fmul(e.libm("cosh", x), e.libm("sin", y)))


def _ccosh(e, x, y):
    return _pack(e, e.fmul(e.libm("cosh", x), e.libm("cos", y)),
                 e.fmul(e.libm("sinh", x), e.libm("sin", y)))


def _csin(e, x, y):     # -i csinh(iz)
    return _pack(e, e.fmul(e.libm("sin", x), e.libm("cosh", y)),
                 e.fmul(e.libm("cos", x), e.libm("sinh", y)))


def _ccos(e, x, y):     # ccosh(iz)
    return _pack(e, e.fmul(e.libm("cos", x), e.libm("cosh", y)),
                 e.fneg(e.fmul(e.libm("sin", x), e.libm("sinh", y))))


def _tanh_parts(e, x, y):
    """Kahan's ``ctanh`` (as glibc and musl compute it): with t = tan y, s = sinh x,
    beta = 1 + t^2, rho = sqrt(1 + s^2): (beta rho s, t) / (1 + beta s^2); for |x| > 22,
    where sinh overflows first, (copysign(1, x), 4 sin y cos y e^(-2|x|)).  Both arms
    are computed (the large one's x kept out of the small one's sinh, so neither
    derivative meets an infinity) and one is selected."""
    big = e.fcmp("ogt", e.libm("fabs", x), _c(x, 22.0))
    xs = e.select(big, _c(x, 0.0), x)
    t = e.libm("tan", y)
    sh = e.libm("sinh", xs)
    beta = e.fadd(_c(x, 1.0), e.fmul(t, t))
    rho = e.libm("sqrt", e.fadd(_c(x, 1.0), e.fmul(sh, sh)))
    den = e.fadd(_c(x, 1.0), e.fmul(beta, e.fmul(sh, sh)))
    small_re = e.fdiv(e.fmul(beta, e.fmul(rho, sh)), den)
    small_im = e.fdiv(t, den)
    xb = e.select(big, x, _c(x, 30.0))
    big_re = e.libm("copysign", _c(x, 1.0), x)
    big_im = e.fmul(e.fmul(_c(x, 4.0), e.fmul(e.libm("sin", y), e.libm("cos", y))),
                    e.libm("exp", e.fmul(_c(x, -2.0), e.libm("fabs", xb))))
    return e.select(big, big_re, small_re), e.select(big, big_im, small_im)


def _ctanh(e, x, y):
    return _pack(e, *_tanh_parts(e, x, y))


def _ctan(e, x, y):     # -i ctanh(iz), iz = -y + ix
    a, b = _tanh_parts(e, e.fneg(y), x)
    return _pack(e, b, e.fneg(a))


def _muldc3(e, a, b, c, d):
    return _pack(e, *_mul(e, a, b, c, d))


def _divdc3(e, a, b, c, d):
    den = e.fadd(e.fmul(c, c), e.fmul(d, d))
    return _pack(e, e.fdiv(e.fadd(e.fmul(a, c), e.fmul(b, d)), den),
                 e.fdiv(e.fsub(e.fmul(b, c), e.fmul(a, d)), den))


# base name: (the parameters: "z" a complex, "x" a real; returns a complex, body)
_FUNCTIONS = {
    "cabs": ("z", False, _cabs), "carg": ("z", False, _carg),
    "cexp": ("z", True, _cexp), "clog": ("z", True, _clog), "csqrt": ("z", True, _csqrt),
    "cpow": ("zz", True, _cpow), "csin": ("z", True, _csin), "ccos": ("z", True, _ccos),
    "ctan": ("z", True, _ctan), "csinh": ("z", True, _csinh), "ccosh": ("z", True, _ccosh),
    "ctanh": ("z", True, _ctanh), "__muldc3": ("xxxx", True, _muldc3),
    "__divdc3": ("xxxx", True, _divdc3),
}

_FP80 = T.StructType([T.x86_fp80, T.x86_fp80])
# precision: (element type, a complex parameter as passed: "pair" two elements, "vector"
# one <2 x el>, "byval" a pointer to {el, el} in memory; a complex result's type)
_PRECISIONS = {
    "d": (_D, "pair", T.StructType([_D, _D])),
    "s": (T.float, "vector", T.VectorType(T.float, 2)),
    "x": (T.x86_fp80, "byval", _FP80),
}


def _names():
    """Every redirected name -> (base name, precision)."""
    out = {}
    for base in _FUNCTIONS:
        if base.startswith("__"):      # __muldc3 -> __mulsc3, __mulxc3
            for p in _PRECISIONS:
                out[base.replace("dc3", f"{p}c3")] = (base, p)
        else:                          # cexp -> cexpf, cexpl
            out.update({base: (base, "d"), base + "f": (base, "s"), base + "l": (base, "x")})
    return out


_NAMES = _names()


def _signature(name):
    """(parameter types, parameter attributes, result type) of a redirected function."""
    base, prec = _NAMES[name]
    el, passing, ctype = _PRECISIONS[prec]
    kinds, complex_result, _ = _FUNCTIONS[base]
    params, attrs = [], []
    for k in kinds:
        if k == "x" or passing == "pair":
            n = 1 if k == "x" else 2
            params += [el] * n
            attrs += [""] * n
        elif passing == "vector":
            params.append(ctype)
            attrs.append("")
        else:
            params.append(T.ptr)
            attrs.append(f"byval({ctype}) align 16")
    return params, attrs, ctype if complex_result else el


def _reference(module, name):
    from .emit import Emitter
    from ..ir.values import ConstantInt, Undef
    base, prec = _NAMES[name]
    el, passing, ctype = _PRECISIONS[prec]
    params, attrs, rt = _signature(name)
    rname = f"_enzymepy_{name.lstrip('_')}"
    fn = module.get_function(rname)
    if fn is not None:
        return fn
    fn = module.add_function(rname, T.FunctionType(rt, params), linkage="internal",
                             arg_attrs=attrs, fn_attrs="nounwind", unique=False)
    e = Emitter(module)
    e.position_at_end(fn.append_basic_block("entry"))
    parts = []      # the real and imaginary parts of the arguments, in order
    for a in fn.args:
        if a.type.is_vector:
            parts += [e.extractelement(a, ConstantInt(T.i32, k)) for k in (0, 1)]
        elif a.type.is_pointer:
            pair = e.load(ctype, a, align=16)
            parts += [e.extractvalue(pair, [k]) for k in (0, 1)]
        else:
            parts.append(a)
    r = _FUNCTIONS[base][2](e, *parts)
    if rt.is_vector:    # {re, im} as the <2 x float> the ABI returns
        pieces = [e.extractvalue(r, [k]) for k in (0, 1)]
        r = Undef(rt)
        for k, v in enumerate(pieces):
            r = e.insertelement(r, v, ConstantInt(T.i32, k))
    e.ret(r)
    return fn


def redirect_complex_calls(fn) -> int:
    """In ``fn`` (a private copy about to be differentiated), call the reference
    implementations instead of the C library's complex functions; return how many
    calls were redirected."""
    module = fn.parent
    n = 0
    for inst in list(fn.instructions()):
        if not isinstance(inst, Call):
            continue
        name = inst.callee_name or ""
        if name not in _NAMES:
            continue
        params, _, rt = _signature(name)
        ft = inst.function_type
        if ft.varargs or list(ft.params) != params or ft.ret != rt:
            continue   # another ABI's spelling: left alone
        ref = _reference(module, name)
        inst.callee = ref
        inst.function_type = ref.function_type
        n += 1
    return n
