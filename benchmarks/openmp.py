"""Issue 13 item 4: OpenMP kernels differentiated by EnzymePy, timed at 1 and 2 (or
more) threads.  Each kernel (``benchmarks/openmp_kernels/*.c``: a 2-D heat stencil stepped by
``#pragma omp parallel for``, a diagonal GMM log-likelihood with a ``parallel for
reduction``) is built once with ``enzyme-cc -O2 -fopenmp`` and run at each thread
count; it prints the median primal and gradient times of interleaved batches.  The
report gives the gradient/primal ratio, the speed-up of each from 1 thread, their
quotient (gradient speed-up / primal speed-up: issue 13 asks for at least 0.8), and
how far the gradient moved across thread counts (rounding only: it must stay tiny).

    python -m benchmarks.openmp                       # threads 1,2; default sizes
    python -m benchmarks.openmp --threads 1,2,4 --reps 9
    python -m benchmarks.openmp --kernels heat2d_omp --sizes heat2d_omp=512,40

Timings are only meaningful on otherwise idle cores: the report prints the load
average next to the core count.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent / "openmp_kernels"
KERNELS = {"heat2d_omp": (256, 50), "gmm_omp": (8, 10, 20000)}


def _build(kernel: str, out: Path, cc: str) -> Path:
    exe = out / kernel
    r = subprocess.run([*shlex.split(cc), "-O2", "-fopenmp", str(HERE / f"{kernel}.c"), "-o",
                        str(exe), "-lm"], capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"building {kernel} failed:\n{r.stderr}")
    return exe


def _run(exe: Path, threads: int, reps: int, sizes) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OMP_DYNAMIC="false",
               OMP_PROC_BIND=os.environ.get("OMP_PROC_BIND", "false"))
    r = subprocess.run([str(exe), str(reps), *map(str, sizes)], capture_output=True,
                       text=True, env=env, timeout=1800)
    if r.returncode:
        raise SystemExit(f"{exe.name} at {threads} threads failed:\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.openmp", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--kernels", default=",".join(KERNELS))
    ap.add_argument("--sizes", action="append", default=[],
                    help="KERNEL=a,b,... (default: " + "; ".join(
                        f"{k}={','.join(map(str, v))}" for k, v in KERNELS.items()) + ")")
    ap.add_argument("--cc", default=os.environ.get("ENZYME_CC", "enzyme-cc"))
    a = ap.parse_args(argv)
    threads = [int(t) for t in a.threads.split(",")]
    sizes = dict(KERNELS)
    for s in a.sizes:
        k, _, v = s.partition("=")
        sizes[k] = tuple(int(x) for x in v.split(","))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"# {os.cpu_count()} cores, load average {load:.2f}; {a.reps} reps, medians")
    print("| kernel | sizes | threads | primal | gradient | grad/primal | primal speed-up "
          "| gradient speed-up | grad/primal speed-up | gradient vs 1 thread |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    tmp = Path(tempfile.mkdtemp(prefix="enzyme-omp-bench-"))
    try:
        for kernel in a.kernels.split(","):
            exe = _build(kernel, tmp, a.cc)
            base = None
            for t in threads:
                r = _run(exe, t, a.reps, sizes[kernel])
                if base is None:
                    base = r
                sp = base["primal_s"] / r["primal_s"]
                sg = base["grad_s"] / r["grad_s"]
                drift = abs(r["grad_abs"] - base["grad_abs"]) / abs(base["grad_abs"])
                print(f"| {kernel} | {','.join(map(str, sizes[kernel]))} | {r['threads']} "
                      f"| {r['primal_s'] * 1e3:.2f} ms | {r['grad_s'] * 1e3:.2f} ms "
                      f"| {r['grad_s'] / r['primal_s']:.1f} | {sp:.2f}x | {sg:.2f}x "
                      f"| {sg / sp:.2f} | {drift:.1e} |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
