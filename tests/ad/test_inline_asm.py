"""Inline assembly inside differentiated code.

Assembly that only computes its result from its operands -- no ``volatile``, no
``memory`` clobber, no operand in memory -- carries derivatives only through what uses
its result.  Where that is only comparisons (Eigen's ``maxCoeff()`` in a convergence
test: SSE ``maxpd`` in inline assembly under clang) nothing needs its derivative and the
program builds (round BM: it was "an indirect call with active arguments", where Enzyme
15 builds it).  Where its result does carry a derivative, the error names the assembly.
A compiler barrier (``asm volatile("" ::: "memory")``) touches no value and builds.
The forms Eigen uses under clang (SSE/AVX min and max, FMA) are replaced by the IR they
compute (``ad/inline_asm.py``) and differentiated like it.
"""

from __future__ import annotations

import platform
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
static double asm_sqrt(double a) { double r; __asm__("sqrtsd %1, %0" : "=x"(r) : "x"(a)); return r; }
"""

# the largest residual only decides whether the step is taken (maxsd: rewritten as IR;
# sqrtsd: assembly EnzymePy does not know, whose result is only compared)
ONLY_COMPARED = PRELUDE + r"""
double step(const double *x, int n) {
  double worst = 0, s = 0;
  for (int i = 0; i < n; i++) {
    double r = x[i] * x[i] - 1.0;
    worst = asm_max(worst, r);
    s += sin(x[i]) * r;
  }
  __asm__ __volatile__("" ::: "memory");    /* a compiler barrier */
  if (asm_sqrt(s * s + 1.0) > 1e6) return 0.0;   /* assembly only compared */
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

# assembly EnzymePy does not know whose result carries a derivative
RETURNED = PRELUDE + r"""
double peak(const double *x) { return asm_sqrt(x[0] * x[0] + x[1]); }
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


# an optimisation barrier around rounding by adding and subtracting 2^52 (Eigen's SSE2
# rint): as arithmetic its derivative would be 1, rounding's is 0 -- refused, not
# taken for the identity it computes
BARRIER = PRELUDE + r"""
static double rint_sse2(double a) {
  double r = a + 4503599627370496.0;
  __asm__("" : "+x"(r));
  return r - 4503599627370496.0;
}
double stepped(const double *x) { return rint_sse2(x[0] * 10.0) * x[1]; }
int main(void) {
  double x[2] = {1.23, 0.5}, g[2] = {0};
  __enzyme_autodiff((void *)stepped, enzyme_dup, x, g);
  printf("%g %g\n", g[0], g[1]);
  return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
@pytest.mark.parametrize("program,message", [
    (RETURNED, "inline assembly 'sqrtsd $1, $0'"), (BARRIER, "an optimisation barrier")])
def test_assembly_carrying_a_derivative_is_an_error_naming_it(tmp_path, opt, program,
                                                              message):
    src = Path(tmp_path) / "r.c"
    src.write_text(program)
    exe = Path(tmp_path) / "r"
    r = enzyme_cc([opt, str(src), "-o", str(exe), "-lm"], tmp_path)
    assert r.returncode != 0 and not exe.exists()
    assert message in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


# Eigen's packet functions under clang, spelled as Eigen spells them: SSE `maxpd` /
# `minps` (two operands, the destination tied), AVX `vmaxpd` / `vminpd` (three), FMA
# `vfmadd231pd` -- whose results carry derivatives (the range reduction of a vectorised
# log, every matrix product with -mfma).  They are replaced by the IR they compute.
# (And SSE's conversions to integers and SSE4.1's rounding, intrinsics, carry none.)
PACKETS = r"""
#include <immintrin.h>
#include <math.h>
#include <stdio.h>
int enzyme_dup, enzyme_const;
double __enzyme_autodiff(void *, ...);
static __m128d pmax(__m128d a, __m128d b) { __m128d r = b; __asm__("maxpd %[a], %[r]" : [r] "+x"(r) : [a] "x"(a)); return r; }
static __m128 pminf(__m128 a, __m128 b) { __m128 r = b; __asm__("minps %[a], %[r]" : [r] "+x"(r) : [a] "x"(a)); return r; }
static __m256d vmax(__m256d a, __m256d b) { __m256d r; __asm__("vmaxpd %[a], %[b], %[r]" : [r] "=x"(r) : [a] "x"(a), [b] "x"(b)); return r; }
static __m256d vmin(__m256d a, __m256d b) { __m256d r; __asm__("vminpd %[a], %[b], %[r]" : [r] "=x"(r) : [a] "x"(a), [b] "x"(b)); return r; }
static __m256d fmadd(__m256d a, __m256d b, __m256d c) { __m256d r = c; __asm__("vfmadd231pd %[a], %[b], %[r]" : [r] "+x"(r) : [a] "x"(a), [b] "x"(b)); return r; }
double f(const double *x) {
  __m128d m = pmax(_mm_loadu_pd(x), _mm_loadu_pd(x + 2));        /* max(x0,x2), max(x1,x3) */
  __m128 s = pminf(_mm_set_ps((float)x[0], 1.f, 2.f, (float)x[1]), _mm_set1_ps(1.5f));
  __m256d a = _mm256_loadu_pd(x), b = _mm256_loadu_pd(x + 4);
  __m256d hi = vmax(a, b), lo = vmin(a, b), p = fmadd(a, b, hi);
  double t[4], u[4], v[4], w[2]; float q[4];
  _mm256_storeu_pd(t, hi); _mm256_storeu_pd(u, lo); _mm256_storeu_pd(v, p);
  _mm_storeu_pd(w, m); _mm_storeu_ps(q, s);
  /* an index from rounded values (Eigen's exp rounds its exponent this way): no derivative */
  int k = _mm_cvtsi128_si32(_mm_cvtpd_epi32(_mm_loadu_pd(x + 2))) & 3;
  double r = w[0] * w[1] + q[0] * 3.0 + x[4 + k] * x[k];
  /* SSE4.1 rounding (Eigen's floor and rint with -msse4.1): derivative 0 */
  __m128d fl = _mm_floor_pd(_mm_mul_pd(_mm_loadu_pd(x + 4), _mm_set1_pd(3.0)));
  double fv[2]; _mm_storeu_pd(fv, fl);
  r += (fv[0] + fv[1]) * x[1] + x[4] * 3.0 - fv[0];
  for (int i = 0; i < 4; i++) r += t[i] * (i + 1) + u[i] * u[i] + v[i];
  return r;
}
int main(void) {
  double x[8] = {0.5, 2.0, 1.7, -1.0, 1.25, -0.5, 3.0, 0.75}, g[8] = {0}, h = 1e-6;
  __enzyme_autodiff((void *)f, enzyme_dup, x, g);
  int bad = 0;
  for (int i = 0; i < 8; i++) {
    double s = x[i]; x[i] = s + h; double fp = f(x); x[i] = s - h; double fm = f(x); x[i] = s;
    double fd = (fp - fm) / (2 * h);
    printf("%d %.12g %.12g\n", i, g[i], fd);
    bad += fabs(g[i] - fd) > 1e-6 * (1 + fabs(fd));
  }
  return bad;
}
"""


def _cpu_has(*flags) -> bool:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return all(f" {f}" in text for f in flags)


@pytest.mark.skipif(platform.machine() != "x86_64" or not _cpu_has("avx2", "fma"),
                    reason="x86 assembly, run on a CPU with AVX2 and FMA")
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_eigen_style_packet_assembly_is_differentiated(tmp_path, opt):
    out = build_and_run(tmp_path, PACKETS, f"{opt} -mavx2 -mfma")
    assert out.returncode == 0, out.stdout + out.stderr
    assert len(out.stdout.splitlines()) == 8


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


# Round BN: Eigen's vectorised log (`a.log().sum()` over a Map) takes the exponent apart
# with integer operations on the float bits; the sign-mask rewrite took a bitcast from
# integer lanes for one from floats: an internal error.  It is a compile error naming
# the construct now (-DEIGEN_DONT_VECTORIZE builds it).
EIGEN_LOG = r"""
#include <Eigen/Dense>
extern "C" { int enzyme_dup, enzyme_const; double __enzyme_autodiff(void *, ...); }
double f(const double *x, int n) {
  Eigen::Map<const Eigen::ArrayXd> a(x, n);
  return a.log().sum();
}
int main() {
  double x[4] = {0.3, 0.5, 0.7, 1.1}, d[4] = {0};
  __enzyme_autodiff((void *)f, enzyme_dup, x, d, enzyme_const, 4);
  return 0;
}
"""


@pytest.mark.skipif(not (EIGEN / "Eigen").is_dir(), reason="needs Eigen's headers")
def test_eigen_vectorised_log_is_an_error_not_a_crash(tmp_path):
    src = Path(tmp_path) / "log.cpp"
    src.write_text(EIGEN_LOG)
    exe = Path(tmp_path) / "log"
    r = enzyme_cc(["-O2", f"-I{EIGEN}", str(src), "-o", str(exe)], tmp_path, cxx=True)
    assert r.returncode != 0 and not exe.exists()
    assert "internal error" not in r.stderr and "integer operations" in r.stderr, r.stderr
