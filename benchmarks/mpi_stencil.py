"""MPI benchmark (issue 13 item 4): the 1-D domain-decomposition stencil of
``kernels/mpi_stencil.c`` (halo exchange by MPI_Send/MPI_Recv) built with enzyme-cc
against Open MPI, run with ``mpirun -np 1`` and ``-np 2``: primal and gradient time
(median of the slowest rank per call), their ratio, the speed-up from 1 to 2 ranks,
and the 2-rank gradient checked against the 1-rank one (same global problem).

    PATH=<dir with enzyme-cc>:$PATH python -m benchmarks.mpi_stencil [--points M]
        [--steps S] [--reps R] [--opt -O2]
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from array import array
from pathlib import Path

KERNEL = Path(__file__).resolve().parent / "kernels" / "mpi_stencil.c"


def _run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode:
        sys.exit(f"mpi_stencil: {' '.join(cmd)} failed:\n{r.stdout}{r.stderr}")
    return r.stdout


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.mpi_stencil")
    ap.add_argument("--points", type=int, default=200_000)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--opt", default="-O2")
    a = ap.parse_args(argv)
    for tool in ("enzyme-cc", "mpicc", "mpirun"):
        if shutil.which(tool) is None:
            print(f"skipped: {tool} not on PATH (Debian: openmpi-bin libopenmpi-dev)")
            return 0
    cflags = shlex.split(_run(["mpicc", "--showme:compile"]))
    libs = shlex.split(_run(["mpicc", "--showme:link"]))
    flags = ["--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    with tempfile.TemporaryDirectory() as d:
        exe = Path(d) / "mpi_stencil"
        _run(["enzyme-cc", a.opt, str(KERNEL), *cflags, "-o", str(exe), *libs, "-lm"])
        grads = {}
        for np_ in (1, 2):
            out = Path(d) / f"g{np_}.bin"
            line = _run(["mpirun", "-np", str(np_), *flags, str(exe), str(a.points),
                         str(a.steps), str(a.reps), str(out)], timeout=600).strip()
            print(line)
            g = array("d")
            g.frombytes(out.read_bytes())
            grads[np_] = (g, line)
        g1, g2 = grads[1][0], grads[2][0]
        err = max(abs(x - y) / max(1.0, abs(x)) for x, y in zip(g1, g2, strict=True))
        print(f"2-rank gradient vs 1-rank: max relative difference {err:.1e} "
              f"({'ok' if err <= 1e-12 else 'MISMATCH'})")

        def times(line):
            w = line.split()
            return float(w[w.index("primal") + 1]), float(w[w.index("gradient") + 1])

        (p1, g1t), (p2, g2t) = times(grads[1][1]), times(grads[2][1])
        print(f"speed-up 1 -> 2 ranks: primal {p1 / p2:.2f}x, gradient {g1t / g2t:.2f}x")
        return 0 if err <= 1e-12 else 1


if __name__ == "__main__":
    sys.exit(main())
