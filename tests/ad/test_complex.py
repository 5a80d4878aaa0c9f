"""Complex arithmetic in differentiated code (ad/complex.py): C99 ``double complex``
(cexp, clog, csqrt, cpow, cabs, carg, complex * and /, i.e. __muldc3/__divdc3) and C++
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
