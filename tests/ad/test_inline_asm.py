"""Inline assembly inside differentiated code.

Assembly that only computes its result from its operands -- no ``volatile``, no
``memory`` clobber, no operand in memory -- carries derivatives only through what uses
its result.  Where that is only comparisons (Eigen's ``maxCoeff()`` in a convergence
test: SSE ``maxpd`` in inline assembly under clang) nothing needs its derivative and the
program builds (round BM: it was "an indirect call with active arguments", where Enzyme
15 builds it).  Where its result does carry a derivative, the error names the assembly.
A compiler barrier (``asm volatile("" ::: "memory")``) touches no value and builds.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import build_and_run, enzyme_cc

PRELUDE = r"""
#include <math.h>
#include <stdio.h>
int enzyme_dup, enzyme_const;
double __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);
static double asm_max(double a, double b) {
  double m = a;
  __asm__("maxsd %1, %0" : "+x"(m) : "x"(b));
  return m;
}
"""

# the largest residual only decides whether the step is taken
ONLY_COMPARED = PRELUDE + r"""
double step(const double *x, int n) {
  double worst = 0, s = 0;
  for (int i = 0; i < n; i++) {
    double r = x[i] * x[i] - 1.0;
    worst = asm_max(worst, r);
    s += sin(x[i]) * r;
  }
  __asm__ __volatile__("" ::: "memory");    /* a compiler barrier */
  return worst > 100.0 ? 0.0 : s;
}
int main(void) {
  double x[3] = {0.5, 1.5, -0.8}, g[3] = {0}, t[3] = {0, 1, 0};
  __enzyme_autodiff((void *)step, enzyme_dup, x, g, enzyme_const, 3);
  double d = __enzyme_fwddiff((void *)step, enzyme_dup, x, t, enzyme_const, 3);
  for (int i = 0; i < 3; i++) {
    double want = cos(x[i]) * (x[i] * x[i] - 1.0) + sin(x[i]) * 2 * x[i];
    printf("%.17g %.17g\n", g[i], want);
  }
  printf("%.17g %.17g\n", d, cos(x[1]) * (x[1] * x[1] - 1.0) + sin(x[1]) * 2 * x[1]);
  return 0;
}
"""

# the maximum is the result: its derivative is needed
RETURNED = PRELUDE + r"""
double peak(const double *x) { return asm_max(x[0] * x[0], x[1]); }
int main(void) {
  double x[2] = {1.5, 0.5}, g[2] = {0};
  __enzyme_autodiff((void *)peak, enzyme_dup, x, g);
  printf("%g %g\n", g[0], g[1]);
  return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O1", "-O2"])
def test_assembly_whose_result_only_feeds_a_comparison(tmp_path, opt):
    out = build_and_run(tmp_path, ONLY_COMPARED, opt)
    assert out.returncode == 0, out.stderr
    for line in out.stdout.splitlines():
        got, want = (float(v) for v in line.split())
        assert got == pytest.approx(want, rel=1e-12), out.stdout


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_assembly_carrying_a_derivative_is_an_error_naming_it(tmp_path, opt):
    src = Path(tmp_path) / "r.c"
    src.write_text(RETURNED)
    exe = Path(tmp_path) / "r"
    r = enzyme_cc([opt, str(src), "-o", str(exe), "-lm"], tmp_path)
    assert r.returncode != 0 and not exe.exists()
    assert "inline assembly 'maxsd $1, $0'" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


EIGEN = Path("/usr/include/eigen3")

MAX_COEFF = r"""
#include <cstdio>
#include <Eigen/Dense>
extern "C" { int enzyme_dup; double __enzyme_autodiff(void *, ...);
             double __enzyme_fwddiff(void *, ...); }
double f(const double *x) {
  Eigen::Vector4d a(x[0] * x[0], x[1], x[2], x[3]);
  double m = a.maxCoeff();              // only tested, like a convergence check
  return m > 100.0 ? 0.0 : a(0) + a.sum() * x[1];
}
int main() {
  double x[4] = {1.5, 2.5, 0.5, 1.0}, t[4] = {0, 1, 0, 0}, g[4] = {0};
  double d = __enzyme_fwddiff((void *)f, enzyme_dup, x, t);
  __enzyme_autodiff((void *)f, enzyme_dup, x, g);
  std::printf("%.17g %.17g %.17g %.17g %.17g\n", g[0], g[1], g[2], g[3], d);
  return 0;
}
"""


@pytest.mark.skipif(not (EIGEN / "Eigen").is_dir(), reason="needs Eigen's headers")
def test_eigen_max_coeff_in_a_test(tmp_path):
    out = build_and_run(tmp_path, MAX_COEFF, "-O2", extra=(f"-I{EIGEN}",), cxx=True)
    assert out.returncode == 0, out.stderr
    x = [1.5, 2.5, 0.5, 1.0]
    s = x[0] ** 2 + x[1] + x[2] + x[3]
    want = [2 * x[0] + 2 * x[0] * x[1], s + x[1], x[1], x[1], s + x[1]]
    assert [float(v) for v in out.stdout.split()] == pytest.approx(want, rel=1e-13)
