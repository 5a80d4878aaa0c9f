"""The functions of a compiled library (:class:`Function`, ``lib.f``) and their
derivatives: the argument checks and the ctypes call, one reverse or forward sweep
through the function's generated wrapper (:func:`reverse`, :func:`forward`; the
PyTorch and JAX adapters call these), and the transformations built on them:
:func:`grad`, :func:`value_and_grad`, :func:`jvp`, :func:`vjp`.

The build side (the cache, the signatures, ``compile``, ``Library`` and the wrappers'
C source) is :mod:`.api`, which imports these names: ``enzyme_py.grad`` and
``enzyme_py.api.grad`` are this module's.  This module needs none of :mod:`.api` at
run time (only its types, for annotations), so either can be imported first.
"""

from __future__ import annotations

import ctypes
import numbers
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .api import Library, Param, Signature

__all__ = ["Function", "grad", "value_and_grad", "jvp", "vjp", "reverse", "forward"]


# ---------------------------------------------------------------------------------------
# calls and argument checks


def _ptype(p: Param) -> str:
    if p.kind == "unsupported":
        return p.why
    return ("const " if p.const else "") + p.ctype


_CT = {"float64": ctypes.c_double, "float32": ctypes.c_float, "bool": ctypes.c_bool,
       "int8": ctypes.c_int8, "uint8": ctypes.c_uint8, "int16": ctypes.c_int16,
       "uint16": ctypes.c_uint16, "int32": ctypes.c_int32, "uint32": ctypes.c_uint32,
       "int64": ctypes.c_int64, "uint64": ctypes.c_uint64}


def _ctype(p: Param):
    return ctypes.c_void_p if p.kind == "array" else _CT[p.dtype]


class Function:
    """A C function of a :class:`Library`; call it with NumPy arrays and numbers."""

    def __init__(self, lib: Library, sig: Signature):
        self.lib = lib
        self.signature = sig
        self.__name__ = sig.name.rsplit("::", 1)[-1]
        self.__qualname__ = sig.name
        self._why = sig.unsupported()
        self._c = getattr(lib._dll, sig.symbol)
        if self._why is None:
            self._c.argtypes = [_ctype(p) for p in sig.params]
            self._c.restype = None if sig.ret is None else _CT[sig.ret.dtype]
        self._names = {p.name: i for i, p in enumerate(sig.params)}

    def __repr__(self) -> str:
        s = self.signature
        ret = "void" if s.ret is None else s.ret.ctype
        args = ", ".join(f"{_ptype(p)} {p.name}".replace("* ", "*") for p in s.params)
        return f"<enzyme_py.Function {ret} {s.name}({args})>"

    @property
    def results(self) -> list[int]:
        """Indices of the array parameters that are the function's results (for a
        function without a floating-point return value): the non-const float arrays."""
        return [i for i, p in enumerate(self.signature.params)
                if p.kind == "array" and p.is_float and not p.const]

    @property
    def returns_float(self) -> bool:
        r = self.signature.ret
        return r is not None and r.kind == "float"

    def _bind(self, args: tuple, kwargs: dict, what: str = "") -> list:
        """The arguments in parameter order, checked."""
        if self._why is not None:
            raise TypeError(f"{self.signature.name}: cannot be called from Python: "
                            f"{self._why} (pointer parameters must point to numbers)")
        params = self.signature.params
        vals = list(args)
        if len(vals) > len(params):
            raise TypeError(f"{self.signature.name}() takes {len(params)} arguments "
                            f"({', '.join(p.name for p in params)}) but {len(vals)} were given")
        if kwargs:
            vals += [_MISSING] * (len(params) - len(vals))
            for k, v in kwargs.items():
                i = self._names.get(k)
                if i is None:
                    raise TypeError(f"{self.signature.name}() has no parameter '{k}'")
                if vals[i] is not _MISSING:
                    raise TypeError(f"{self.signature.name}() got parameter '{k}' twice")
                vals[i] = v
        if len(vals) < len(params) or any(v is _MISSING for v in vals):
            missing = [p.name for i, p in enumerate(params)
                       if i >= len(vals) or vals[i] is _MISSING]
            raise TypeError(f"{self.signature.name}() missing argument(s): "
                            f"{', '.join(missing)} (it takes {len(params)}: "
                            f"{', '.join(p.name for p in params)})")
        name = self.signature.name
        return [_check(name, p, v, what) for p, v in zip(params, vals)]

    def __call__(self, *args, **kwargs):
        vals = self._bind(args, kwargs)
        cargs = [v.ctypes.data if p.kind == "array" else v
                 for p, v in zip(self.signature.params, vals)]
        return self._c(*cargs)


_RANGES = {n: (int(np.iinfo(n).min), int(np.iinfo(n).max))
           for n in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")}


class _Missing:
    def __repr__(self):
        return "<missing>"


_MISSING = _Missing()


def _check(fname: str, p: Param, v, what: str = ""):
    kind = p.kind
    # fast paths for the common, valid cases (this runs on every call)
    if kind == "array":
        if type(v) is np.ndarray and v.dtype == p.dtype and v.flags.c_contiguous \
                and not p.shape and (p.const or v.flags.writeable):
            return v
    elif kind == "float":
        if type(v) is float:
            return v
    elif type(v) is int and p.dtype != "bool":
        lo, hi = _RANGES[p.dtype]
        if lo <= v <= hi:
            return v
    where = f"{fname}: parameter '{p.name}'{what}"
    if p.kind == "array":
        if not isinstance(v, np.ndarray):
            raise TypeError(f"{where} ({'const ' if p.const else ''}{p.ctype}) takes a NumPy "
                            f"array of {p.dtype}, not {type(v).__name__}")
        if v.dtype != p.dtype:
            raise TypeError(f"{where} ({'const ' if p.const else ''}{p.ctype}) takes "
                            f"{p.dtype}, not a {v.dtype} array")
        if not v.flags.c_contiguous:
            raise ValueError(f"{where}: the array is not C-contiguous "
                             "(use np.ascontiguousarray)")
        if p.shape:
            if v.ndim != len(p.shape) or any(d is not None and d != n
                                             for d, n in zip(p.shape, v.shape)):
                want = "(" + ", ".join("n" if d is None else str(d) for d in p.shape) \
                    + ("," if len(p.shape) == 1 else "") + ")"
                raise ValueError(f"{where} takes an array of shape {want}, not "
                                 f"{tuple(v.shape)}")
        if not p.const and not v.flags.writeable:
            raise ValueError(f"{where} is not const, so the function may write to it, "
                             "and the array is read-only (pass a copy)")
        return v
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v[()]
    if p.kind == "float":
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
            raise TypeError(f"{where} ({p.ctype}) takes a number, not {type(v).__name__}")
        return float(v)
    # integers
    if p.dtype == "bool":
        if isinstance(v, (bool, np.bool_)) or (isinstance(v, numbers.Integral) and v in (0, 1)):
            return bool(v)
        raise TypeError(f"{where} (bool) takes True or False, not {v!r}")
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{where} ({p.ctype}) takes an integer, not {type(v).__name__}")
    v = int(v)
    lo, hi = _RANGES[p.dtype]
    if not lo <= v <= hi:
        raise ValueError(f"{where} ({p.ctype}) is out of range: {v}")
    return v


# ---------------------------------------------------------------------------------------
# differentiation


def _function(f, who: str) -> Function:
    if isinstance(f, Function):
        return f
    raise TypeError(f"enzyme_py.{who} differentiates functions of a library built by "
                    f"enzyme_py.compile (lib.f), not {type(f).__name__}")


def _argnums(fn: Function, argnums, who: str) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, numbers.Integral) else tuple(argnums)
    n = len(fn.signature.params)
    out = []
    for a in nums:
        if not isinstance(a, numbers.Integral) or not -n <= a < n:
            raise ValueError(f"enzyme_py.{who}: argnums {argnums!r} out of range for "
                             f"{fn.signature.name}, which has {n} parameters")
        a = int(a) % n
        p = fn.signature.params[a]
        if not p.is_float:
            raise TypeError(f"enzyme_py.{who}: parameter '{p.name}' of "
                            f"{fn.signature.name} is {'an array of ' if p.kind == 'array' else ''}"
                            f"{p.ctype.rstrip(' *')}; only floating-point parameters are "
                            "differentiable (integers are constant)")
        out.append(a)
    return tuple(out)


def reverse(fn: Function, vals: list, active, seeds: dict | None = None,
            ret_seed: float = 1.0) -> tuple[float | None, dict]:
    """One reverse sweep of ``fn`` at the checked arguments ``vals``: derivatives with
    respect to the parameters in ``active`` (array or float-scalar indices).  The seed
    is ``ret_seed`` for a float result, else ``seeds[i]`` (arrays) for the result arrays.
    Returns (the primal float result or None, {index: derivative})."""
    params = fn.signature.params
    active = frozenset(active)
    dup = frozenset(i for i, p in enumerate(params)
                    if p.kind == "array" and p.is_float and (i in active or not p.const))
    out = frozenset(i for i in active if params[i].kind == "float")
    c = fn.lib._derivative(fn.signature, "rev", dup, out)
    cargs = []
    shadows = {}
    keep = []   # the copies must outlive the call (cargs holds bare addresses)
    for i, (p, v) in enumerate(zip(params, vals)):
        if p.kind == "array":
            if not p.const:
                v = v.copy()
                keep.append(v)
            cargs.append(v.ctypes.data)
            if i in dup:
                s = seeds.get(i) if seeds else None
                s = np.zeros_like(v) if s is None else np.array(s, dtype=v.dtype, copy=True)
                shadows[i] = s
                cargs.append(s.ctypes.data)
        else:
            cargs.append(v)
    float_ret = fn.returns_float
    buf = np.zeros(len(out) + 1)
    cargs.append(buf.ctypes.data)
    c(*cargs)
    del keep
    grads: dict = {}
    base = 1 if float_ret else 0
    for k, i in enumerate(sorted(out)):
        grads[i] = float(buf[base + k])
    for i in active:
        if i in shadows:
            grads[i] = shadows[i]
    if float_ret and ret_seed != 1.0:
        for i in grads:
            grads[i] = grads[i] * ret_seed
    return (float(buf[0]) if float_ret else None), grads


def forward(fn: Function, vals: list, tangents: dict) -> tuple[Any, Any]:
    """One forward sweep: ``tangents`` maps parameter indices to tangents (arrays or
    numbers).  Returns (primal result, tangent of the result); for functions without a
    float result, the result arrays (one, or a tuple) and their tangents."""
    params = fn.signature.params
    results = fn.results
    dup = frozenset(i for i, p in enumerate(params)
                    if p.kind == "array" and p.is_float and (i in tangents or not p.const))
    out = frozenset(i for i in tangents if params[i].kind == "float")
    c = fn.lib._derivative(fn.signature, "fwd", dup, out)
    cargs = []
    arrays = {}
    shadows = {}
    for i, (p, v) in enumerate(zip(params, vals)):
        if p.kind == "array":
            if not p.const:
                v = v.copy()
            arrays[i] = v
            cargs.append(v.ctypes.data)
            if i in dup:
                t = tangents.get(i)
                t = np.zeros_like(v) if t is None else np.array(t, dtype=v.dtype, copy=True)
                shadows[i] = t
                cargs.append(t.ctypes.data)
        else:
            cargs.append(v)
            if i in out:
                cargs.append(float(tangents[i]))
    buf = np.zeros(2)
    cargs.append(buf.ctypes.data)
    c(*cargs)
    if fn.returns_float:
        return float(buf[0]), float(buf[1])
    vals_out = tuple(arrays[i] for i in results)
    tans_out = tuple(shadows[i] for i in results)
    if len(results) == 1:
        return vals_out[0], tans_out[0]
    return vals_out, tans_out


def _scalar_grad(fn: Function, who: str) -> None:
    if not fn.returns_float:
        r = fn.signature.ret
        raise TypeError(f"enzyme_py.{who}: {fn.signature.name} returns "
                        f"{'void' if r is None else r.ctype}; grad needs a double or float "
                        "result (use enzyme_py.vjp for functions that write arrays)")


def grad(fun, argnums=0):
    """``grad(lib.f, argnums)(*args)``: the gradient of ``f``'s double/float result with
    respect to parameter ``argnums`` (an array for an array parameter, a float for a
    scalar); a tuple of gradients when ``argnums`` is a tuple.  Reverse mode."""
    vg = value_and_grad(fun, argnums)

    def grad_fn(*args, **kwargs):
        return vg(*args, **kwargs)[1]

    grad_fn.__name__ = f"grad_{getattr(fun, '__name__', 'f')}"
    return grad_fn


def value_and_grad(fun, argnums=0):
    """Like :func:`grad`, returning ``(value, gradient)`` from one reverse sweep."""
    fn = _function(fun, "value_and_grad")
    _scalar_grad(fn, "grad")
    nums = _argnums(fn, argnums, "grad")

    def value_and_grad_fn(*args, **kwargs):
        vals = fn._bind(args, kwargs)
        value, g = reverse(fn, vals, nums)
        if isinstance(argnums, numbers.Integral):
            return value, g[nums[0]]
        return value, tuple(g[i] for i in nums)

    value_and_grad_fn.__name__ = f"value_and_grad_{fn.__name__}"
    return value_and_grad_fn


def _is_zero(t) -> bool:
    return t is None or (isinstance(t, numbers.Number) and not isinstance(t, bool) and t == 0)


def jvp(fun, primals, tangents):
    """Forward mode: ``(value, tangent)`` of ``fun`` at ``primals`` in the direction
    ``tangents`` (one per parameter; ``None`` or ``0`` for none, and always for
    integer parameters).  For a function without a float result, the value and tangent
    are its result arrays (one array, or a tuple of them)."""
    fn = _function(fun, "jvp")
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise ValueError(f"enzyme_py.jvp: {len(primals)} primals but {len(tangents)} tangents")
    vals = fn._bind(primals, {})
    _need_results(fn, "jvp")
    tans = {}
    for i, (p, t) in enumerate(zip(fn.signature.params, tangents)):
        if _is_zero(t):
            continue
        if not p.is_float:
            raise TypeError(f"enzyme_py.jvp: parameter '{p.name}' of {fn.signature.name} is "
                            "not floating-point; its tangent must be None or 0")
        if p.kind == "array":
            t = np.asarray(t)
            if t.shape != vals[i].shape:
                raise ValueError(f"enzyme_py.jvp: the tangent of '{p.name}' has shape "
                                 f"{t.shape}, the primal {vals[i].shape}")
        else:
            t = _check(fn.signature.name, p, t, " (tangent)")
        tans[i] = t
    return forward(fn, vals, tans)


def _need_results(fn: Function, who: str) -> None:
    if not fn.returns_float and not fn.results:
        raise TypeError(f"enzyme_py.{who}: {fn.signature.name} has no result to "
                        "differentiate: it returns no double/float and has no non-const "
                        "floating-point array parameter")


def vjp(fun, *primals):
    """``value, f_vjp = vjp(lib.f, *args)``: the result of ``f`` at ``args`` and a
    function from a cotangent of that result (a number for a float result; an array,
    or a tuple of arrays, for the result arrays) to the cotangents of every parameter
    (a tuple, ``None`` for integer parameters).  Reverse mode."""
    fn = _function(fun, "vjp")
    vals = fn._bind(primals, {})
    _need_results(fn, "vjp")
    results = fn.results
    params = fn.signature.params
    copies = [v.copy() if p.kind == "array" and not p.const else v
              for p, v in zip(params, vals)]
    value: Any
    if fn.returns_float:
        value = float(fn(*copies))
        copies = [v.copy() if p.kind == "array" and not p.const else v
                  for p, v in zip(params, vals)]
    else:
        run = [v.copy() if p.kind == "array" and not p.const else v
               for p, v in zip(params, vals)]
        fn(*run)
        outs = tuple(run[i] for i in results)
        value = outs[0] if len(outs) == 1 else outs
    active = [i for i, p in enumerate(params) if p.is_float]

    def f_vjp(ct):
        if fn.returns_float:
            if not isinstance(ct, numbers.Real) and not (isinstance(ct, np.ndarray)
                                                         and ct.size == 1):
                raise TypeError("the cotangent of a float result is a number")
            _, g = reverse(fn, copies, active, ret_seed=float(ct))
        else:
            cts = (ct,) if len(results) == 1 else tuple(ct)
            if len(cts) != len(results):
                raise ValueError(f"{fn.signature.name} has {len(results)} result arrays "
                                 f"({', '.join(params[i].name for i in results)}); "
                                 f"got {len(cts)} cotangents")
            seeds = {}
            for i, c in zip(results, cts):
                c = np.asarray(c)
                if c.shape != copies[i].shape:
                    raise ValueError(f"the cotangent of '{params[i].name}' has shape "
                                     f"{c.shape}, the result {copies[i].shape}")
                seeds[i] = c
            _, g = reverse(fn, copies, active, seeds=seeds)
        return tuple(g.get(i) for i in range(len(params)))

    return value, f_vjp
