"""Complex arithmetic in differentiated code (ad/complex.py): C99 ``double complex``
(cexp, clog, csqrt, cpow, cabs, carg, csin ... ctanh, complex * and /, i.e.
__muldc3/__divdc3; the same in ``float complex`` and ``long double complex``) and C++
``std::complex<double>`` (std::exp, log, pow, abs, arg, sqrt, norm, operators), reverse
and forward mode at -O0 and -O2, against central differences."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers import enzyme_cc

C_PROGRAM = r"""#include <complex.h>
#include <math.h>
#include <stdio.h>
int enzyme_dup, enzyme_const;
double __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);
double f(double a, double b) {
  double complex z = a + b * I;
  double complex w = cexp(z * z) / (z + 2.0);
  double complex s = csqrt(w) + clog(z) * cpow(z, 0.5 + 0.25 * I);
  return cabs(w) + creal(s) + cimag(z * w) + carg(s);
}
int main() {
  double a = 0.3, b = 0.7;
  double da = __enzyme_autodiff((void *)f, a, enzyme_const, b);
  double db = __enzyme_autodiff((void *)f, enzyme_const, a, b);
  double ta = __enzyme_fwddiff((void *)f, a, 1.0, enzyme_const, b);
  double h = 1e-6;
  printf("a %.17g %.17g %.17g\n", da, ta, (f(a + h, b) - f(a - h, b)) / (2 * h));
  printf("b %.17g %.17g\n", db, (f(a, b + h) - f(a, b - h)) / (2 * h));
}
"""

CXX_PROGRAM = r"""#include <complex>
#include <cstdio>
#include <cmath>
extern "C" { int enzyme_dup, enzyme_const; double __enzyme_autodiff(void *, ...); double __enzyme_fwddiff(void *, ...); }
using cd = std::complex<double>;
double f(const double *p, int n) {
  cd acc(0.0, 0.0);
  for (int i = 0; i + 1 < n; i += 2) {
    cd z(p[i], p[i + 1]);
    acc += std::exp(z * cd(0.0, 1.0)) / (z + 3.0) + std::log(z) * std::pow(z, cd(0.5, 0.1));
  }
  return std::abs(acc) + std::arg(acc) + std::sqrt(acc).real() + std::norm(acc);
}
int main() {
  const int n = 6;
  double p[n] = {0.3, 0.7, -0.4, 1.1, 1.5, -0.2}, dp[n] = {0};
  __enzyme_autodiff((void *)f, enzyme_dup, p, dp, enzyme_const, n);
  for (int k = 0; k < n; k++) {
    double t[n] = {0}; t[k] = 1;
    double fw = __enzyme_fwddiff((void *)f, enzyme_dup, p, t, enzyme_const, n);
    double s = p[k], h = 1e-6; p[k] = s + h; double fp = f(p, n); p[k] = s - h; double fm = f(p, n); p[k] = s;
    printf("d%d %.17g %.17g %.17g\n", k, dp[k], fw, (fp - fm) / (2 * h));
  }
}
"""


def _run(tmp_path, name, source, opt, cxx):
    src = Path(tmp_path) / name
    src.write_text(source)
    r = enzyme_cc([opt, str(src), "-o", str(tmp_path / "prog"), "-lm"], tmp_path, cxx=cxx)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return [[float(t) for t in line.split()[1:]] for line in out.stdout.splitlines()]


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_c99_complex(tmp_path, opt):
    (da, ta, fda), (db, fdb) = _run(tmp_path, "c.c", C_PROGRAM, opt, cxx=False)
    assert da == pytest.approx(fda, rel=1e-7)
    assert ta == pytest.approx(da, rel=1e-13)
    assert db == pytest.approx(fdb, rel=1e-7)


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_std_complex(tmp_path, opt):
    rows = _run(tmp_path, "c.cpp", CXX_PROGRAM, opt, cxx=True)
    assert len(rows) == 6
    for rev, fwd, fd in rows:
        assert rev == pytest.approx(fd, rel=1e-7, abs=1e-8)
        assert fwd == pytest.approx(rev, rel=1e-13)


# float complex and long double complex multiplication and division (__mulsc3,
# __divsc3: four floats to <2 x float>; __mulxc3, __divxc3: four x86_fp80 to a pair).
# Before: "cannot differentiate call to external function '__mulsc3'" (real Enzyme 15
# aborts on the float ones and gets the long double division wrong).  Analytic values:
# f = Re(ab) + Im(ab), g = Re(a/b) + Im(a/b) for a = x0 + i x1, b = x2 - i x3.
PRECISIONS = r"""#include <complex.h>
#include <stdio.h>
int enzyme_dup;
void __enzyme_autodiff(void *, ...);
float fm(const float *x) {
  float complex a = x[0] + I * x[1], b = x[2] - I * x[3], c = a * b;
  return crealf(c) + cimagf(c);
}
float fd(const float *x) {
  float complex a = x[0] + I * x[1], b = x[2] - I * x[3], c = a / b;
  return crealf(c) + cimagf(c);
}
long double lm(const long double *x) {
  long double complex a = x[0] + I * x[1], b = x[2] - I * x[3], c = a * b;
  return creall(c) + cimagl(c);
}
long double ld(const long double *x) {
  long double complex a = x[0] + I * x[1], b = x[2] - I * x[3], c = a / b;
  return creall(c) + cimagl(c);
}
int main() {
  float x[4] = {0.7f, -0.4f, 1.3f, 0.5f}, dm[4] = {0}, dd[4] = {0};
  long double y[4] = {0.7L, -0.4L, 1.3L, 0.5L}, em[4] = {0}, ed[4] = {0};
  __enzyme_autodiff((void *)fm, enzyme_dup, x, dm);
  __enzyme_autodiff((void *)fd, enzyme_dup, x, dd);
  __enzyme_autodiff((void *)lm, enzyme_dup, y, em);
  __enzyme_autodiff((void *)ld, enzyme_dup, y, ed);
  printf("fm %.9g %.9g %.9g %.9g\n", dm[0], dm[1], dm[2], dm[3]);
  printf("fd %.9g %.9g %.9g %.9g\n", dd[0], dd[1], dd[2], dd[3]);
  printf("lm %.17Lg %.17Lg %.17Lg %.17Lg\n", em[0], em[1], em[2], em[3]);
  printf("ld %.17Lg %.17Lg %.17Lg %.17Lg\n", ed[0], ed[1], ed[2], ed[3]);
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_float_and_long_double_complex_products(tmp_path, opt):
    mul, div, lmul, ldiv = _run(tmp_path, "p.c", PRECISIONS, opt, cxx=False)
    x0, x1, x2, x3 = 0.7, -0.4, 1.3, 0.5
    d = x2 * x2 + x3 * x3
    n = x0 * x2 - x1 * x3 + x0 * x3 + x1 * x2
    want_mul = [x2 - x3, x3 + x2, x0 + x1, x1 - x0]
    want_div = [(x2 + x3) / d, (x2 - x3) / d, (x0 + x1) / d - n * 2 * x2 / d ** 2,
                (x0 - x1) / d - n * 2 * x3 / d ** 2]
    assert mul == pytest.approx(want_mul, rel=1e-5)
    assert div == pytest.approx(want_div, rel=1e-5)
    assert lmul == pytest.approx(want_mul, rel=1e-14)
    assert ldiv == pytest.approx(want_div, rel=1e-14)


# The complex functions in float and long double (cexpf ... cpowf take and return
# <2 x float>; cexpl ... cpowl take each complex byval in memory).  Before: "cannot
# differentiate call to external function 'cexpf'".  Reference: central differences of
# the same formula in double complex, in the same program.
FUNCTIONS_PRECISIONS = r"""#include <complex.h>
#include <stdio.h>
int enzyme_dup;
void __enzyme_autodiff(void *, ...);
float __enzyme_fwddiff(void *, ...);
long double __enzyme_fwddiffl(void *, ...) __asm__("__enzyme_fwddiff");
#define BODY(T, S)                                                              \
  T complex z = p[0] + p[1] * I, w = p[2] + p[3] * I;                         \
  T complex r = cexp##S(z) * clog##S(w) + csqrt##S(z * w) + cpow##S(z, w) / w; \
  return cabs##S(r) + carg##S(r) + creal##S(r);
double fd(const double *p) { BODY(double, ) }
float ff(const float *p) { BODY(float, f) }
long double fl(const long double *p) { BODY(long double, l) }
int main() {
  double p[4] = {0.3, 0.7, 1.2, -0.4};
  float q[4], dq[4] = {0};
  long double r[4], dr[4] = {0};
  for (int k = 0; k < 4; k++) { q[k] = p[k]; r[k] = p[k]; }
  __enzyme_autodiff((void *)ff, enzyme_dup, q, dq);
  __enzyme_autodiff((void *)fl, enzyme_dup, r, dr);
  for (int k = 0; k < 4; k++) {
    float tq[4] = {0}; long double tr[4] = {0};
    tq[k] = 1; tr[k] = 1;
    float fq = __enzyme_fwddiff((void *)ff, enzyme_dup, q, tq);
    long double fr = __enzyme_fwddiffl((void *)fl, enzyme_dup, r, tr);
    double a[4], b[4], h = 1e-6;
    for (int j = 0; j < 4; j++) a[j] = b[j] = p[j];
    a[k] += h; b[k] -= h;
    printf("d%d %.9g %.9g %.17Lg %.17Lg %.17g\n", k, dq[k], fq, dr[k], fr,
           (fd(a) - fd(b)) / (2 * h));
  }
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_float_and_long_double_complex_functions(tmp_path, opt):
    rows = _run(tmp_path, "f.c", FUNCTIONS_PRECISIONS, opt, cxx=False)
    assert len(rows) == 4
    for rev_f, fwd_f, rev_l, fwd_l, fd in rows:
        assert rev_f == pytest.approx(fd, rel=1e-4, abs=1e-5)
        assert fwd_f == pytest.approx(rev_f, rel=1e-5)
        assert rev_l == pytest.approx(fd, rel=1e-7, abs=1e-8)
        assert fwd_l == pytest.approx(rev_l, rel=1e-15)


# Round BP (transfer-matrix optics: a thin film's characteristic matrix holds cos and
# sin of a complex phase): csin, ccos, ctan and the hyperbolic three had no rule
# ("cannot differentiate call to external function 'ccos'"; Enzyme 15 has none either).
# In all three precisions, std::complex's std::sin ... std::tanh too (they call the C
# functions), against central differences of the same program's double version (which
# calls glibc's): |Re z| > 22 takes ctanh's other arm.
TRIG = r"""#include <complex.h>
#include <stdio.h>
int enzyme_dup;
void __enzyme_autodiff(void *, ...);
float __enzyme_fwddiff(void *, ...);
long double __enzyme_fwddiffl(void *, ...) __asm__("__enzyme_fwddiff");
#define BODY(T, S)                                                                  \
  T complex z = p[0] + p[1] * I, w = p[2] + p[3] * I;                             \
  T complex r = csin##S(z) * ccos##S(w) + ctan##S(z * 0.5) + csinh##S(w) / ccosh##S(z) \
      + ctanh##S(z + w) + ctanh##S(25 - z) * 0.5 + ctan##S(w - 30 * I);            \
  return creal##S(r) * 0.7 + cimag##S(r) * 1.3;
double fd(const double *p) { BODY(double, ) }
float ff(const float *p) { BODY(float, f) }
long double fl(const long double *p) { BODY(long double, l) }
int main() {
  double p[4] = {0.3, -0.4, 0.8, 0.25}, dp[4] = {0};
  float q[4], dq[4] = {0};
  long double r[4], dr[4] = {0};
  for (int k = 0; k < 4; k++) { q[k] = p[k]; r[k] = p[k]; }
  __enzyme_autodiff((void *)fd, enzyme_dup, p, dp);
  __enzyme_autodiff((void *)ff, enzyme_dup, q, dq);
  __enzyme_autodiff((void *)fl, enzyme_dup, r, dr);
  for (int k = 0; k < 4; k++) {
    float tq[4] = {0}; long double tr[4] = {0};
    tq[k] = 1; tr[k] = 1;
    float fq = __enzyme_fwddiff((void *)ff, enzyme_dup, q, tq);
    long double fr = __enzyme_fwddiffl((void *)fl, enzyme_dup, r, tr);
    double a[4], b[4], h = 1e-6;
    for (int j = 0; j < 4; j++) a[j] = b[j] = p[j];
    a[k] += h; b[k] -= h;
    printf("d%d %.17g %.9g %.9g %.17Lg %.17Lg %.17g\n", k, dp[k], dq[k], fq, dr[k], fr,
           (fd(a) - fd(b)) / (2 * h));
  }
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_complex_trigonometric_and_hyperbolic_functions(tmp_path, opt):
    rows = _run(tmp_path, "t.c", TRIG, opt, cxx=False)
    assert len(rows) == 4
    for rev_d, rev_f, fwd_f, rev_l, fwd_l, fd in rows:
        assert rev_d == pytest.approx(fd, rel=1e-7, abs=1e-8)
        assert rev_f == pytest.approx(fd, rel=1e-4, abs=1e-5)
        assert fwd_f == pytest.approx(rev_f, rel=1e-5)
        assert rev_l == pytest.approx(rev_d, rel=1e-12)
        assert fwd_l == pytest.approx(rev_l, rel=1e-15)
