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
anyway).  Multiplication and division of ``float complex`` (``__mulsc3``/``__divsc3``,
four floats to ``<2 x float>`` on x86-64) and ``long double complex``
(``__mulxc3``/``__divxc3``, four ``x86_fp80`` to a pair) are redirected the same way;
the other ``float``/``long double`` complex functions are not (their calls stay unknown
functions: a compile error where they touch derivatives).
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
    agg = e.insertvalue(_undef(re.type), re, [0])
    return e.insertvalue(agg, im, [1])


def _undef(el=_D):
    from ..ir.values import Undef
    return Undef(T.StructType([el, el]))


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
# the same multiplication and division in other precisions: name -> (the double one,
# the element type, the result type)
_OTHER_PRECISIONS = {
    "__mulsc3": ("__muldc3", T.float, T.VectorType(T.float, 2)),
    "__divsc3": ("__divdc3", T.float, T.VectorType(T.float, 2)),
    "__mulxc3": ("__muldc3", T.x86_fp80, T.StructType([T.x86_fp80, T.x86_fp80])),
    "__divxc3": ("__divdc3", T.x86_fp80, T.StructType([T.x86_fp80, T.x86_fp80])),
}


def _signature(name):
    """(parameter types, result type, body) of a redirected function."""
    if name in _OTHER_PRECISIONS:
        base, el, rt = _OTHER_PRECISIONS[name]
        nparams, _, body = _FUNCTIONS[base]
        return [el] * nparams, rt, body
    nparams, complex_result, body = _FUNCTIONS[name]
    return [_D] * nparams, _PAIR if complex_result else _D, body


def _reference(module, name):
    from .emit import Emitter
    from ..ir.values import ConstantInt, Undef
    params, rt, body = _signature(name)
    rname = f"_enzymepy_{name.lstrip('_')}"
    fn = module.get_function(rname)
    if fn is not None:
        return fn
    fn = module.add_function(rname, T.FunctionType(rt, params), linkage="internal",
                             fn_attrs="nounwind", unique=False)
    e = Emitter(module)
    e.position_at_end(fn.append_basic_block("entry"))
    r = body(e, *fn.args)
    if rt.is_vector:    # {re, im} as the <2 x float> the ABI returns
        parts = [e.extractvalue(r, [k]) for k in (0, 1)]
        r = Undef(rt)
        for k, v in enumerate(parts):
            r = e.insertelement(r, v, ConstantInt(T.i32, k))
    e.ret(r)
    return fn


def redirect_complex_calls(fn) -> None:
    """In ``fn`` (a private copy about to be differentiated), call the reference
    implementations instead of the C library's complex functions."""
    module = fn.parent
    for inst in list(fn.instructions()):
        if not isinstance(inst, Call):
            continue
        name = inst.callee_name or ""
        if name not in _FUNCTIONS and name not in _OTHER_PRECISIONS:
            continue
        params, rt, _ = _signature(name)
        ft = inst.function_type
        if ft.varargs or list(ft.params) != params or ft.ret != rt:
            continue   # another ABI's spelling: left alone
        ref = _reference(module, name)
        inst.callee = ref
        inst.function_type = ref.function_type
