"""Python-interface benchmark: per-call overhead and the C MLP gradient.

    python -m benchmarks.python_api [--repeat N]

1. Overhead (µs per call, best of 5 runs of N calls) of a trivial C function
   ``double first(const double *x, int n)``: a bare ctypes call with argtypes set,
   ``lib.first(x, n)`` (argument checks included), and ``enzyme_py.grad(lib.first)``
   (copies, shadow allocation and the reverse sweep, which is near free here).
2. The gradient of the MLP of examples/mlp.c (784 -> 32 relu -> 10, cross-entropy,
   batch 128, float64, CPU, one thread): EnzymePy's ``value_and_grad`` on NumPy
   arrays, through ``enzyme_py.torch.function`` (loss.backward()), and PyTorch's
   own autograd of the same model (forward + backward), median ms.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import pathlib
import statistics
import time

import numpy as np

import enzyme_py

MLP_C = pathlib.Path(__file__).resolve().parents[1] / "examples" / "mlp.c"


def per_call_us(fn, n: int) -> float:
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, time.perf_counter() - t)
    return best / n * 1e6


def median_ms(fn, n: int) -> float:
    fn()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.python_api")
    ap.add_argument("--repeat", type=int, default=20000, help="calls per overhead run")
    ap.add_argument("--mlp-repeat", type=int, default=30, help="MLP gradients timed")
    args = ap.parse_args(argv)

    lib = enzyme_py.compile("double first(const double *x, int n) { return x[0] * n; }\n")
    x = np.ones(4)
    raw = ctypes.CDLL(os.path.join(lib.path, "lib.so")).first
    raw.argtypes = [ctypes.c_void_p, ctypes.c_int]
    raw.restype = ctypes.c_double
    ptr = x.ctypes.data
    g = enzyme_py.grad(lib.first)
    g(x, 4)
    print(f"per-call overhead, µs (best of 5 x {args.repeat} calls)")
    bare = per_call_us(lambda: raw(ptr, 4), args.repeat)
    bare_np = per_call_us(lambda: raw(x.ctypes.data, 4), args.repeat)
    call = per_call_us(lambda: lib.first(x, 4), args.repeat)
    grad = per_call_us(lambda: g(x, 4), args.repeat // 4)
    print(f"  bare ctypes (pointer precomputed)   {bare:8.2f}")
    print(f"  bare ctypes (x.ctypes.data per call) {bare_np:7.2f}")
    print(f"  lib.first(x, n)                     {call:8.2f}")
    print(f"  enzyme_py.grad(lib.first)(x, n)     {grad:8.2f}")

    mlp = enzyme_py.compile(MLP_C)
    rng = np.random.default_rng(0)
    W1, b1 = rng.normal(0, 0.05, (32, 784)), np.zeros(32)
    W2, b2 = rng.normal(0, 0.2, (10, 32)), np.zeros(10)
    X, y = rng.normal(size=(128, 784)), rng.integers(0, 10, 128).astype(np.int32)
    vg = enzyme_py.value_and_grad(mlp.mlp_loss, argnums=(0, 1, 2, 3))
    print("MLP 784-32-10, batch 128, float64, one thread: loss + gradient, median ms")
    primal = median_ms(lambda: mlp.mlp_loss(W1, b1, W2, b2, X, y, 128), args.mlp_repeat)
    ours = median_ms(lambda: vg(W1, b1, W2, b2, X, y, 128), args.mlp_repeat)
    print(f"  C loss alone (lib.mlp_loss)         {primal:8.3f}")
    print(f"  EnzymePy value_and_grad (NumPy)     {ours:8.3f}   ratio to primal "
          f"{ours / primal:.2f}")
    try:
        import torch

        from enzyme_py import torch as ep_torch
    except ImportError:
        print("  (torch not installed: no comparison)")
        return 0
    torch.set_num_threads(1)
    P = [torch.tensor(a, requires_grad=True) for a in (W1, b1, W2, b2)]
    Xt, yt = torch.tensor(X), torch.tensor(y, dtype=torch.long)
    yi = torch.tensor(y)
    f = ep_torch.function(mlp.mlp_loss)

    def torch_autograd():
        loss = torch.nn.functional.cross_entropy(torch.relu(Xt @ P[0].T + P[1]) @ P[2].T + P[3], yt)
        return torch.autograd.grad(loss, P)

    def torch_enzyme():
        return torch.autograd.grad(f(*P, Xt, yi, 128), P)

    te = median_ms(torch_enzyme, args.mlp_repeat)
    ta = median_ms(torch_autograd, args.mlp_repeat)
    print(f"  EnzymePy via enzyme_py.torch        {te:8.3f}")
    print(f"  torch.autograd (same model)         {ta:8.3f}   EnzymePy/torch {ours / ta:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
