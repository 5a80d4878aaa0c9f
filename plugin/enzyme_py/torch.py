"""PyTorch adapter: a C function of an :func:`enzyme_py.compile` library as a
differentiable torch operation.

    f = enzyme_py.torch.function(lib.loss)          # double loss(const double *w, ...)
    loss = f(w, x, n)                               # 0-d tensor; loss.backward() works
    g = enzyme_py.torch.function(lib.mlp, out_shapes=[(128, 10)])
    logits = g(w1, b1, x)                           # void mlp(..., double *out)

The function becomes a ``torch.autograd.Function``: ``backward`` runs EnzymePy's
reverse mode (only for the inputs that need a gradient), ``jvp`` its forward mode, so
``loss.backward()``, ``torch.autograd.grad``, ``gradcheck`` and forward-mode AD
(``torch.autograd.forward_ad``) work.  ``torch.func`` transforms do not: they hand
``backward`` wrapped tensors without storage, which C code cannot read.  Derivatives
are first order (the backward pass is not itself differentiable).
Tensors must live on the CPU with the C parameter's dtype (``double`` float64,
``float`` float32); non-contiguous tensors are made contiguous.  Scalar parameters take
Python numbers or 0-d tensors (a float 0-d tensor gets a gradient).

A function with a ``double``/``float`` return value returns it as a 0-d tensor and takes
all of its parameters.  A ``void`` (or integer-returning) function's results are its
non-const floating-point array parameters: the adapter leaves them out of the
arguments, allocates them (zero-filled) from ``out_shapes`` — a list of shapes, one per
result parameter in order, or a callable taking the inputs and returning that list —
and returns them (one tensor, or a tuple).
"""

from __future__ import annotations

import numbers

import numpy as np
import torch

from . import api

__all__ = ["function"]


def _np(t, p: api.Param, fname: str):
    """A tensor (or number) as the NumPy value the C parameter takes."""
    if isinstance(t, torch.Tensor):
        if t.device.type != "cpu":
            raise ValueError(f"{fname}: parameter '{p.name}' is on {t.device}; "
                             "EnzymePy runs C code on the CPU (use .cpu())")
        t = t.detach()
        if p.kind != "array":
            if t.numel() != 1:
                raise TypeError(f"{fname}: parameter '{p.name}' ({p.ctype}) takes a number "
                                f"or a 0-d tensor, not a tensor of shape {tuple(t.shape)}")
            return t.item()
        return t.contiguous().numpy()
    return t


class _FirstOrderOnly(torch.autograd.Function):
    """``g`` itself, tied to ``inputs`` in the graph of a backward: differentiating it
    raises (see ``function``'s ``_second_order_fails``)."""

    @staticmethod
    def forward(ctx, name, g, *inputs):
        ctx.name = name
        return g.clone()

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise RuntimeError(f"{ctx.name}: EnzymePy's PyTorch functions have first derivatives "
                           "only; a second derivative (a Hessian, grad of grad with "
                           "create_graph=True) is not supported")


def function(fun, out_shapes=None):
    """Wrap ``lib.f`` as a torch function (see the module docstring)."""
    fn = api._function(fun, "torch.function")
    sig = fn.signature
    params = sig.params
    if fn.returns_float:
        results: list[int] = []
        if out_shapes is not None:
            raise TypeError(f"enzyme_py.torch.function: {sig.name} returns a value; "
                            "out_shapes is for functions that write result arrays")
    else:
        results = fn.results
        if not results:
            raise TypeError(f"enzyme_py.torch.function: {sig.name} has no result: no "
                            "double/float return value and no non-const floating-point "
                            "array parameter")
        if out_shapes is None:
            raise TypeError(f"enzyme_py.torch.function: {sig.name} writes its results to "
                            f"{', '.join(params[i].name for i in results)}; give their "
                            "shapes with out_shapes=[...]")
    inputs = [i for i in range(len(params)) if i not in results]

    def shapes_for(args) -> list[tuple]:
        shp = out_shapes(*args) if callable(out_shapes) else out_shapes
        shp = [tuple([s]) if isinstance(s, numbers.Integral) else tuple(s) for s in shp]
        if len(shp) != len(results):
            raise ValueError(f"{sig.name}: out_shapes has {len(shp)} shapes for "
                             f"{len(results)} result parameters "
                             f"({', '.join(params[i].name for i in results)})")
        return shp

    def values(args) -> list:
        """Full, checked parameter list (result arrays freshly zeroed)."""
        if len(args) != len(inputs):
            raise TypeError(f"{sig.name}() takes {len(inputs)} arguments "
                            f"({', '.join(params[i].name for i in inputs)}) but "
                            f"{len(args)} were given")
        vals: list = [None] * len(params)
        for k, i in enumerate(inputs):
            vals[i] = _np(args[k], params[i], sig.name)
        for i, s in zip(results, shapes_for(args) if results else []):
            vals[i] = np.zeros(s, dtype=params[i].dtype)
        return fn._bind(tuple(vals), {})

    def to_torch(a):
        return torch.from_numpy(np.asarray(a))

    def _second_order_fails(ctx, grads):
        """The gradient is computed outside torch's graph: where a graph of the backward
        is being built (``create_graph=True``: a Hessian, a gradient penalty) and the
        inputs require gradients, each gradient is tied to those inputs through a node
        whose own backward raises -- differentiating it again fails loudly instead of
        silently dropping the C function's part (its second derivative came out 0).
        (``torch.autograd.function.once_differentiable`` looks only at the incoming
        gradients, which here do not require gradients.)"""
        needing = [t for t in ctx.saved_tensors if t.requires_grad]
        if not torch.is_grad_enabled() or not needing:
            return grads
        return tuple(None if g is None else _FirstOrderOnly.apply(fn.__name__, g, *needing)
                     for g in grads)

    class EnzymeFunction(torch.autograd.Function):
        @staticmethod
        def forward(*args):
            vals = values(args)
            if fn.returns_float:
                run = [v.copy() if p.kind == "array" and not p.const else v
                       for p, v in zip(params, vals)]
                r = fn(*run)
                return torch.tensor(r, dtype=getattr(torch, sig.ret.dtype))
            fn(*vals)
            outs = tuple(to_torch(vals[i]) for i in results)
            return outs[0] if len(outs) == 1 else outs

        @staticmethod
        def setup_context(ctx, inputs_, output):
            tensors = [a for a in inputs_ if isinstance(a, torch.Tensor)]
            ctx.save_for_backward(*tensors)
            ctx.save_for_forward(*tensors)
            ctx.is_tensor = [isinstance(a, torch.Tensor) for a in inputs_]
            ctx.others = [None if isinstance(a, torch.Tensor) else a for a in inputs_]

        @staticmethod
        def _args(ctx):
            saved = iter(ctx.saved_tensors)
            return [next(saved) if t else o for t, o in zip(ctx.is_tensor, ctx.others)]

        @staticmethod
        def backward(ctx, *grad_outputs):
            return _second_order_fails(ctx, EnzymeFunction._backward(ctx, *grad_outputs))

        @staticmethod
        def _backward(ctx, *grad_outputs):
            args = EnzymeFunction._args(ctx)
            vals = values(args)
            active = [i for k, i in enumerate(inputs)
                      if ctx.needs_input_grad[k] and params[i].is_float]
            if not active:
                return (None,) * len(inputs)
            if fn.returns_float:
                _, g = api.reverse(fn, vals, active,
                                  ret_seed=float(grad_outputs[0]))
            else:
                seeds = {i: (np.zeros(vals[i].shape, vals[i].dtype) if go is None
                             else go.detach().cpu().contiguous().numpy())
                         for i, go in zip(results, grad_outputs)}
                _, g = api.reverse(fn, vals, active, seeds=seeds)
            out = []
            for k, i in enumerate(inputs):
                if i not in g or not ctx.is_tensor[k]:
                    out.append(None)
                else:
                    out.append(to_torch(g[i]).to(args[k].dtype).reshape(args[k].shape))
            return tuple(out)

        @staticmethod
        def jvp(ctx, *tangents):
            args = EnzymeFunction._args(ctx)
            vals = values(args)
            tans = {}
            for i, t in zip(inputs, tangents):
                if t is None or not params[i].is_float:
                    continue
                tans[i] = t.detach().cpu().contiguous().numpy() if params[i].kind == "array" \
                    else float(t)
            if fn.returns_float:
                _, t = api.forward(fn, vals, tans)
                return torch.tensor(t, dtype=getattr(torch, sig.ret.dtype))
            _, ts = api.forward(fn, vals, tans)
            ts = (ts,) if len(results) == 1 else ts
            outs = tuple(to_torch(t) for t in ts)
            return outs[0] if len(outs) == 1 else outs

    EnzymeFunction.__name__ = EnzymeFunction.__qualname__ = f"Enzyme_{fn.__name__}"

    def apply(*args):
        return EnzymeFunction.apply(*args)

    apply.__name__ = fn.__name__
    apply.__doc__ = f"{fn!r} as a differentiable torch function"
    apply.autograd_function = EnzymeFunction
    return apply
