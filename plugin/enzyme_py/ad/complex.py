"""C99 ``double complex`` functions and C++ ``std::complex<double>`` in differentiated code.

A ``double complex`` travels as two doubles (arguments) and ``{double, double}``
(results) in the x86-64 and AArch64 ABIs, and clang turns complex multiplication and
division into calls to ``__muldc3``/``__divdc3`` (C++ ``std::complex`` operators, and
``std::abs``/``exp``/``log``/``pow``/``sqrt`` of a ``std::complex<double>``, end in the same
calls).  Before differentiation, calls to these functions in the functions being
differentiated are redirected to reference implementations written here in terms of
real libm functions (``_enzymepy_cexp``: ``exp(re) * (cos im, sin im)``), which the AD
pass then differentiates through their bodies like any other code:

``cabs`` ``carg`` ``cexp`` ``clog`` ``csqrt`` ``cpow`` ``__muldc3`` ``__divdc3``
(and ``creal``/``cimag``/``conj``, which clang inlines).

``__muldc3``/``__divdc3`` here are the textbook formulas: the recovery of infinite and NaN
parts of C's Annex G is not reproduced (derivatives of infinities are not defined
anyway).  ``float complex`` and ``long double complex`` versions are not redirected (their
calls stay unknown functions: a compile error where they touch derivatives).
"""

from __future__ import annotations

from ..ir import types as T
from ..ir.instructions import Call
from ..ir.values import ConstantFP

__all__ = ["redirect_complex_calls"]

_D = T.double
_PAIR = T.StructType([_D, _D])


def _c(v):
    return ConstantFP(_D, v)


def _pack(e, re, im):
    agg = e.insertvalue(_undef(), re, [0])
    return e.insertvalue(agg, im, [1])


def _undef():
    from ..ir.values import Undef
    return Undef(_PAIR)


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
    t = e.libm("sqrt", e.fmul(e.fadd(e.libm("hypot", re, im), e.libm("fabs", re)), _c(0.5)))
    zero = e.fcmp("oeq", t, _c(0.0))
    two_t = e.select(zero, _c(1.0), e.fmul(t, _c(2.0)))     # z = 0: result 0
    q = e.fdiv(im, two_t)
    pos = e.fcmp("oge", re, _c(0.0))
    r_re = e.select(pos, t, e.libm("fabs", q))
    r_im = e.select(pos, q, e.libm("copysign", t, im))
    return _pack(e, r_re, r_im)


def _cpow(e, zr, zi, wr, wi):
    lr, li = _log(e, zr, zi)
    return _pack(e, *_exp(e, *_mul(e, wr, wi, lr, li)))


def _muldc3(e, a, b, c, d):
    return _pack(e, *_mul(e, a, b, c, d))


def _divdc3(e, a, b, c, d):
    den = e.fadd(e.fmul(c, c), e.fmul(d, d))
    return _pack(e, e.fdiv(e.fadd(e.fmul(a, c), e.fmul(b, d)), den),
                 e.fdiv(e.fsub(e.fmul(b, c), e.fmul(a, d)), den))


# name: (number of double parameters, returns a complex, body)
_FUNCTIONS = {
    "cabs": (2, False, _cabs), "carg": (2, False, _carg),
    "cexp": (2, True, _cexp), "clog": (2, True, _clog), "csqrt": (2, True, _csqrt),
    "cpow": (4, True, _cpow), "__muldc3": (4, True, _muldc3), "__divdc3": (4, True, _divdc3),
}


def _reference(module, name):
    from .emit import Emitter
    nparams, complex_result, body = _FUNCTIONS[name]
    rname = f"_enzymepy_{name.lstrip('_')}"
    fn = module.get_function(rname)
    if fn is not None:
        return fn
    rt = _PAIR if complex_result else _D
    fn = module.add_function(rname, T.FunctionType(rt, [_D] * nparams), linkage="internal",
                             fn_attrs="nounwind", unique=False)
    e = Emitter(module)
    e.position_at_end(fn.append_basic_block("entry"))
    e.ret(body(e, *fn.args))
    return fn


def redirect_complex_calls(fn) -> None:
    """In ``fn`` (a private copy about to be differentiated), call the reference
    implementations instead of the C library's complex functions."""
    module = fn.parent
    for inst in list(fn.instructions()):
        if not isinstance(inst, Call):
            continue
        name = inst.callee_name or ""
        spec = _FUNCTIONS.get(name)
        if spec is None:
            continue
        nparams, complex_result, _ = spec
        ft = inst.function_type
        if ft.varargs or list(ft.params) != [_D] * nparams \
                or ft.ret != (_PAIR if complex_result else _D):
            continue   # another ABI's spelling: left alone
        ref = _reference(module, name)
        inst.callee = ref
        inst.function_type = ref.function_type
