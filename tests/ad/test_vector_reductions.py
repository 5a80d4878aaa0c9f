"""Vector reductions (``llvm.vector.reduce.fmax/fmin`` from clang's
``__builtin_reduce_max/min`` on vector types, ``llvm.vector.reduce.fadd`` in a module given
as IR) in forward and vector forward mode, where they were "cannot differentiate call
to external function 'llvm.vector.reduce.fmax.v4f64'" (reverse mode had rules), against
reverse mode and central differences."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from helpers import enzyme_cc
from test_never_silent import PRELUDE
from test_two_result_math import MODES

PROGRAM = MODES + r"""
typedef double d4 __attribute__((ext_vector_type(4)));

double f(const double *x, int n) {
    d4 v = {x[0], x[1] * x[1], sin(x[2]), x[3] * x[0]};
    return __builtin_reduce_max(v) + 0.5 * __builtin_reduce_min(v * v) + sumv(x, n);
}

#define N 4
int main(void) {
    double x[N] = {0.3, 1.1, -0.4, 0.8};
    double v[N] = {1, -0.5, 0.25, 2}, w[N] = {0.3, 0.9, -1.2, 0.4};
    CHECK_MODES(f, x, v, w, N);
    return fails;
}
"""

# start + the sum of four lanes, as the loop vectorizer writes a reduction (reassoc)
SUMV_IR = r"""
declare double @llvm.vector.reduce.fadd.v4f64(double, <4 x double>)

define double @sumv(ptr %x, i32 %n) {
  %v = load <4 x double>, ptr %x, align 8
  %sq = fmul <4 x double> %v, %v
  %s = call reassoc double @llvm.vector.reduce.fadd.v4f64(double 0.5, <4 x double> %sq)
  ret double %s
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_reductions_in_forward_and_vector_mode(tmp_path, opt):
    src = Path(tmp_path) / "t.c"
    src.write_text(PRELUDE + "double sumv(const double *, int);\n" + PROGRAM)
    ll = Path(tmp_path) / "sumv.ll"
    ll.write_text(SUMV_IR)
    exe = Path(tmp_path) / "t"
    r = enzyme_cc([opt, str(src), str(ll), "-o", str(exe), "-lm"], tmp_path)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "FAIL" not in out.stdout, out.stdout + out.stderr
    assert out.stdout.count("ok reverse") == 4 and "ok forward" in out.stdout
    assert out.stdout.count("ok width 2") == 2, out.stdout
