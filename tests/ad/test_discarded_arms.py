"""Values a select computes and then discards get exactly zero adjoints.

LLVM (clang's -O1+, and EnzymePy's pre-AD optimisation at every level) flattens
``c ? 0 : a*b / (a+b)`` into a select that computes the division whatever ``c`` is.  Where
the select discards it -- a van Leer limiter at a flat state (a = b = 0), a Roe speed at
uL == uR, a harmonic-mean conductivity between two empty cells -- the division's adjoint
is 0, and its rule made that 0/0 = NaN: the reverse-mode gradient of a whole Burgers or
Euler solver was NaN at every -O level (round M; forward mode and real Enzyme 15 right).
Such values now get Enzyme's strong-zero rule (``adjoint.select_arms_only``).
Reference: analytic values; at a point where the arm is taken, central differences.
"""

from __future__ import annotations

import pytest
from helpers import build_and_run, parse_values

PROGRAM = r"""
#include <math.h>
#include <stdio.h>
int enzyme_dup, enzyme_const;
void __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);

double van_leer(const double *u) {       /* the limiter of a slope pair */
  double a = u[0], b = u[1];
  return (a * b <= 0) ? 0.0 : 2 * a * b / (a + b);
}

double roe(const double *u) {            /* Burgers' Roe flux */
  double uL = u[0], uR = u[1];
  double fL = 0.5 * uL * uL, fR = 0.5 * uR * uR;
  double a = (uL != uR) ? (fR - fL) / (uR - uL) : uL;
  return 0.5 * (fL + fR) - 0.5 * fabs(a) * (uR - uL);
}

double conductance(const double *k) {   /* harmonic mean, an if statement, and a log */
  double h = 0;
  if (k[0] + k[1] > 0) h = 2 * k[0] * k[1] / (k[0] + k[1]);
  double g = k[0] > 0 ? log(k[0]) : 0.0;
  return h + g;
}

/* the gradient by reverse and forward mode, and central differences (a macro: the
   entry points need the function itself) */
#define BOTH(name, f, u0, u1) do {                                                   \
  double u[2] = {u0, u1}, du[2] = {0}, t0[2] = {1, 0}, t1[2] = {0, 1}, h = 1e-6;     \
  __enzyme_autodiff((void *)f, enzyme_dup, u, du);                                   \
  double f0 = __enzyme_fwddiff((void *)f, enzyme_dup, u, t0);                        \
  double f1 = __enzyme_fwddiff((void *)f, enzyme_dup, u, t1);                        \
  double p[2] = {u0 + h, u1}, m[2] = {u0 - h, u1}, q[2] = {u0, u1 + h}, r[2] = {u0, u1 - h}; \
  printf("%s %.15g %.15g %.15g %.15g %.15g %.15g\n", name, du[0], du[1], f0, f1,     \
         (f(p) - f(m)) / (2 * h), (f(q) - f(r)) / (2 * h));                          \
} while (0)

int main(void) {
  BOTH("vl_flat", van_leer, 0.0, 0.0);
  BOTH("vl_smooth", van_leer, 0.3, 0.7);
  BOTH("roe_flat", roe, 0.2, 0.2);
  BOTH("roe_smooth", roe, 0.2, 0.5);
  BOTH("k_empty", conductance, 0.0, 0.0);
  BOTH("k_smooth", conductance, 1.5, 0.5);
  return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2", "-O3"])
def test_discarded_select_arms_give_zero_adjoints(tmp_path, opt):
    out = build_and_run(tmp_path, PROGRAM, opt)
    assert out.returncode == 0, out.stdout + out.stderr
    v = parse_values(out.stdout)
    # at the flat/empty states the discarded arm does not count: analytic values
    assert v["vl_flat"][:4] == [0.0, 0.0, 0.0, 0.0]
    assert v["roe_flat"][:4] == pytest.approx([0.2, 0.0, 0.2, 0.0], abs=1e-15)
    assert v["k_empty"][:4] == [0.0, 0.0, 0.0, 0.0]
    for name in ("vl_smooth", "roe_smooth", "k_smooth"):
        rev0, rev1, fwd0, fwd1, fd0, fd1 = v[name]
        assert [rev0, rev1] == pytest.approx([fd0, fd1], rel=1e-6, abs=1e-9), name
        assert [fwd0, fwd1] == pytest.approx([rev0, rev1], rel=1e-13), name
