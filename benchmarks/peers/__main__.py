from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

# one thread for every tool, like the C kernels
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                                    "intra_op_parallelism_threads=1")

import numpy as np  # noqa: E402


def load(path):
    with open(path, "rb") as f:
        header = json.loads(f.readline())
        arrays = {}
        for a in header["arrays"]:
            dt = np.float64 if a["type"] == "f64" else np.int64
            arrays[a["name"]] = np.fromfile(f, dtype=dt, count=a["count"])
    return header["sizes"], arrays


def timed(fn, reps, min_time):
    """median seconds per call; batches last >= min_time; two warm-up calls (JIT)."""
    fn()
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-9)
    inner = max(1, int(min_time / one) + 1)
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        ts.append((time.perf_counter() - t0) / inner)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tool", choices=["torch", "jax"])
    ap.add_argument("kernel")
    ap.add_argument("inputs")
    ap.add_argument("grad_out")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--min-time", type=float, default=0.02)
    a = ap.parse_args()
    sizes, arrays = load(a.inputs)
    if a.tool == "torch":
        from . import torch_kernels as mod
    else:
        from . import jax_kernels as mod
    make = getattr(mod, a.kernel, None)
    if make is None:
        print(f"error: not natural: no {a.tool} version of {a.kernel}", file=sys.stderr)
        return 3
    primal, gradient = make(sizes, arrays)
    value = float(primal())
    g = np.asarray(gradient(), dtype=np.float64).ravel()
    tp = timed(primal, a.reps, a.min_time)
    tg = timed(gradient, a.reps, a.min_time)
    g.tofile(a.grad_out)
    print(json.dumps({"tool": a.tool, "kernel": a.kernel, "value": value, "primal_s": tp,
                      "grad_s": tg, "m": int(g.size)}))
    return 0


sys.exit(main())
