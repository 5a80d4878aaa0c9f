"""JAX adapter: a C function of an :func:`enzyme_py.compile` library as a JAX
function that works under ``jax.jit``, ``jax.grad``, ``jax.vjp``, ``jax.jvp`` and
``jax.vmap``.

    jax.config.update("jax_enable_x64", True)       # for double parameters
    f = enzyme_py.jax.function(lib.loss)            # double loss(const double *w, ...)
    jax.grad(f)(w, x, n)
    g = enzyme_py.jax.function(lib.mlp, out_shapes=[(128, 10)])   # void mlp(..., double *out)
    jax.jit(g)(w1, b1, x)

Each wrapped function is a JAX primitive evaluated through ``jax.pure_callback``.  Its
JVP rule is a second primitive that runs EnzymePy's forward mode
(``__enzyme_fwddiff``) and is linear in the tangents; that primitive's transpose runs
the reverse mode (``__enzyme_autodiff``).  So ``jax.jvp`` costs one forward-mode call
and ``jax.grad``/``jax.vjp`` one primal call plus one reverse-mode call.  ``jax.vmap``
loops over the batch.  Derivatives are first order.

Arguments: arrays (``jax.Array`` or NumPy) of the C parameter's dtype (``double``
needs ``jax_enable_x64``), float scalars as numbers or 0-d arrays (differentiable),
integer parameters as Python ints (static: they may not be traced).  Results, as in
:mod:`enzyme_py.torch`: the ``double``/``float`` return value as a 0-d array, else the
non-const floating-point array parameters, which are left out of the arguments and
allocated from ``out_shapes`` (a list of shapes, one per result parameter, or a
callable taking the arguments and returning that list).
"""

from __future__ import annotations

import numbers

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

from . import api

__all__ = ["function"]


class _Spec:
    """Everything static about one call; equal specs share JAX's compilation caches."""

    def __init__(self, fn: api.Function, operands: list[int], statics: dict,
                 results: list[int], out_shapes: list[tuple]):
        self.fn = fn
        self.operands = operands        # parameter indices passed as JAX operands
        self.statics = statics          # parameter index -> Python int
        self.results = results          # parameter indices of result arrays
        self.out_shapes = out_shapes
        self._key = (id(fn), tuple(operands), tuple(sorted(statics.items())), tuple(results),
                     tuple(out_shapes))

    def __hash__(self):
        return hash(self._key)

    def __eq__(self, other):
        return isinstance(other, _Spec) and other.fn is self.fn and other._key == self._key

    def out_avals(self) -> list:
        params = self.fn.signature.params
        if self.fn.returns_float:
            return [jax.core.ShapedArray((), np.dtype(self.fn.signature.ret.dtype))]
        return [jax.core.ShapedArray(s, np.dtype(params[i].dtype))
                for i, s in zip(self.results, self.out_shapes)]

    def values(self, ops) -> list:
        """The full NumPy argument list (result arrays zero-filled), checked."""
        params = self.fn.signature.params
        vals: list = [None] * len(params)
        for i, a in zip(self.operands, ops):
            p = params[i]
            if p.kind == "array":
                vals[i] = np.asarray(a) if p.const else np.array(a, copy=True)
                vals[i] = np.ascontiguousarray(vals[i])
            else:
                vals[i] = np.asarray(a)[()]
        for i, v in self.statics.items():
            vals[i] = v
        for i, s in zip(self.results, self.out_shapes):
            vals[i] = np.zeros(s, dtype=params[i].dtype)
        return self.fn._bind(tuple(vals), {})

    def float_operands(self) -> list[int]:
        """Positions (in ``operands``) of the floating-point operands."""
        params = self.fn.signature.params
        return [k for k, i in enumerate(self.operands) if params[i].is_float]


# -- the primal -----------------------------------------------------------------------

def _call_np(spec: _Spec, *ops):
    vals = spec.values(ops)
    fn = spec.fn
    if fn.returns_float:
        r = fn(*vals)
        return [np.asarray(r, dtype=fn.signature.ret.dtype)]
    fn(*vals)
    return [vals[i] for i in spec.results]


def _callback_primitive(name: str, np_fn) -> Primitive:
    """A primitive whose value is ``np_fn(spec, *operands)`` on host arrays, through
    ``jax.pure_callback`` (so it works under ``jit``; ``vmap`` loops over the batch);
    its results have the wrapped function's output shapes."""
    def impl(*args, spec):
        return jax.pure_callback(lambda *a: np_fn(spec, *a), spec.out_avals(), *args,
                                 vmap_method="sequential")

    prim = Primitive(name)
    prim.multiple_results = True
    prim.def_impl(impl)
    prim.def_abstract_eval(lambda *args, spec: spec.out_avals())
    mlir.register_lowering(prim, mlir.lower_fun(impl, multiple_results=True))
    return prim


call_p = _callback_primitive("enzyme_py_call", _call_np)


# -- forward mode: linear in the tangents --------------------------------------------

def _jvp_np(spec: _Spec, *args):
    n = len(spec.operands)
    ops, tans = args[:n], args[n:]
    vals = spec.values(ops)
    fl = spec.float_operands()
    tangents = {spec.operands[k]: np.asarray(t) for k, t in zip(fl, tans)}
    _, t = api.forward(spec.fn, vals, tangents)
    if spec.fn.returns_float:
        return [np.asarray(t, dtype=spec.fn.signature.ret.dtype)]
    return [t] if len(spec.results) == 1 else list(t)


jvp_p = _callback_primitive("enzyme_py_jvp", _jvp_np)


def _call_jvp(primals, tangents, *, spec):
    fl = spec.float_operands()
    tans = [ad.instantiate_zeros(tangents[k]) for k in fl]
    outs = call_p.bind(*primals, spec=spec)
    touts = jvp_p.bind(*primals, *tans, spec=spec)
    return outs, touts


ad.primitive_jvps[call_p] = _call_jvp


# -- reverse mode: the transpose of the forward mode --------------------------------

def _vjp_np(spec: _Spec, *args):
    n = len(spec.operands)
    ops, cts = args[:n], args[n:]
    vals = spec.values(ops)
    fl = spec.float_operands()
    active = [spec.operands[k] for k in fl]
    if spec.fn.returns_float:
        _, g = api.reverse(spec.fn, vals, active, ret_seed=float(np.asarray(cts[0])))
    else:
        seeds = {i: np.asarray(c) for i, c in zip(spec.results, cts)}
        _, g = api.reverse(spec.fn, vals, active, seeds=seeds)
    params = spec.fn.signature.params
    return [np.asarray(g[spec.operands[k]], dtype=params[spec.operands[k]].dtype)
            .reshape(np.shape(ops[k])) for k in fl]


def _jvp_transpose(cts, *args, spec):
    n = len(spec.operands)
    ops = args[:n]
    if any(ad.is_undefined_primal(a) for a in ops):
        raise NotImplementedError("enzyme_py.jax: the tangent map is linear in the "
                                  "tangents only; higher-order derivatives are not supported")
    avals = spec.out_avals()
    cts = [jnp.zeros(a.shape, a.dtype) if type(c) is ad.Zero else c
           for c, a in zip(cts, avals)]
    fl = spec.float_operands()
    shapes = [jax.ShapeDtypeStruct(np.shape(ops[k]),
                                   np.dtype(spec.fn.signature.params[spec.operands[k]].dtype))
              for k in fl]
    grads = jax.pure_callback(lambda *a: _vjp_np(spec, *a), shapes, *ops, *cts,
                              vmap_method="sequential")
    return [None] * n + list(grads)


ad.primitive_transposes[jvp_p] = _jvp_transpose


# -- vmap: a loop ----------------------------------------------------------------------

def _looping(prim):
    def rule(args, dims, **params):
        size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
        moved = [a if d is None else jnp.moveaxis(a, d, 0)
                 for a, d in zip(args, dims)]
        outs = [prim.bind(*[a if d is None else a[b]
                            for a, d in zip(moved, dims)], **params) for b in range(size)]
        stacked = [jnp.stack(col) for col in zip(*outs)]
        return stacked, [0] * len(stacked)
    return rule


batching.primitive_batchers[call_p] = _looping(call_p)
batching.primitive_batchers[jvp_p] = _looping(jvp_p)


# -- the user's function --------------------------------------------------------------

def function(fun, out_shapes=None):
    """Wrap ``lib.f`` as a JAX function (see the module docstring)."""
    fn = api._function(fun, "jax.function")
    sig = fn.signature
    params = sig.params
    if fn.returns_float:
        results: list[int] = []
        if out_shapes is not None:
            raise TypeError(f"enzyme_py.jax.function: {sig.name} returns a value; "
                            "out_shapes is for functions that write result arrays")
    else:
        results = fn.results
        if not results:
            raise TypeError(f"enzyme_py.jax.function: {sig.name} has no result: no "
                            "double/float return value and no non-const floating-point "
                            "array parameter")
        if out_shapes is None:
            raise TypeError(f"enzyme_py.jax.function: {sig.name} writes its results to "
                            f"{', '.join(params[i].name for i in results)}; give their "
                            "shapes with out_shapes=[...]")
    inputs = [i for i in range(len(params)) if i not in results]

    def wrapped(*args):
        if len(args) != len(inputs):
            raise TypeError(f"{sig.name}() takes {len(inputs)} arguments "
                            f"({', '.join(params[i].name for i in inputs)}) but "
                            f"{len(args)} were given")
        operands, ops_idx, statics = [], [], {}
        for i, a in zip(inputs, args):
            p = params[i]
            if p.kind == "unsupported":
                fn._bind((), {})   # raises the "cannot be called" TypeError
            if p.kind == "int":
                if isinstance(a, jax.core.Tracer):
                    raise TypeError(f"{sig.name}: integer parameter '{p.name}' must be a "
                                    "Python int (static), not a traced value; under "
                                    "jax.jit mark it static (static_argnums)")
                statics[i] = api._check(sig.name, p, a)
                continue
            if p.kind == "float":
                a = jnp.asarray(a, dtype=p.dtype) if isinstance(a, numbers.Real) else a
                if jnp.ndim(a) != 0:
                    raise TypeError(f"{sig.name}: parameter '{p.name}' ({p.ctype}) takes a "
                                    f"number or a 0-d array, not shape {jnp.shape(a)}")
            a = jnp.asarray(a) if isinstance(a, np.ndarray) else a
            dt = getattr(a, "dtype", None)
            if dt != np.dtype(p.dtype):
                hint = (" (enable 64-bit JAX: jax.config.update('jax_enable_x64', True))"
                        if p.dtype == "float64" and dt == np.float32
                        and not jax.config.jax_enable_x64 else "")
                raise TypeError(f"{sig.name}: parameter '{p.name}' ({p.ctype}) takes "
                                f"{p.dtype}, not {dt}{hint}")
            if p.kind == "array" and p.shape:
                if len(a.shape) != len(p.shape) or any(
                        d is not None and d != n for d, n in zip(p.shape, a.shape)):
                    raise ValueError(f"{sig.name}: parameter '{p.name}' takes shape "
                                     f"{p.shape}, not {tuple(a.shape)}")
            operands.append(a)
            ops_idx.append(i)
        shp: list[tuple] = []
        if results:
            raw = out_shapes(*args) if callable(out_shapes) else out_shapes
            shp = [(int(s),) if isinstance(s, numbers.Integral) else tuple(int(d) for d in s)
                   for s in raw]
            if len(shp) != len(results):
                raise ValueError(f"{sig.name}: out_shapes has {len(shp)} shapes for "
                                 f"{len(results)} result parameters "
                                 f"({', '.join(params[i].name for i in results)})")
        spec = _Spec(fn, ops_idx, statics, results, shp)
        outs = call_p.bind(*operands, spec=spec)
        return outs[0] if len(outs) == 1 else tuple(outs)

    wrapped.__name__ = fn.__name__
    wrapped.__doc__ = f"{fn!r} as a JAX function"
    return wrapped
