"""Pointers moved as integers (ad/typed_copies.py ``retype_pointer_moves``, and the
check in ad/kinds.py).

A C++ view holding one reference (Eigen's ``Transpose``) is trivially copyable: its copy
is an 8-byte memcpy that instcombine turns into ``load i64``/``store i64``, and SROA then
reads the pointer back with ``inttoptr``.  The pointer out of ``inttoptr`` had no shadow,
so what was read through it counted as constant: the gradient of ``A * A^T`` (Eigen's
``(A * A.transpose() + 6 I).llt()``) was half its value at -O1..-O3 in both modes,
silently.  An integer loaded out of memory holding such pointers and changed before
``inttoptr`` (pointer bits + 8) is a compile error.
Reference: central differences; forward against reverse.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import enzyme_cc
from test_cxx_containers import _derivatives

VIEW = r"""
#include <cstdio>
#include <cmath>
extern "C" { extern int enzyme_dup, enzyme_const; void __enzyme_autodiff(void *, ...);
             double __enzyme_fwddiff(void *, ...); }
struct Mat { double v[9]; };
struct Tr { const Mat &m; explicit Tr(const Mat &x) : m(x) {} };   // a view: one reference
struct Sum { const Mat &a; Tr t; double c;
             Sum(const Mat &x, Tr y, double z) : a(x), t(y), c(z) {} };
struct Ev { const Mat *a; Tr t; double c;                            // copies the view
            explicit Ev(const Sum &s) : a(&s.a), t(s.t), c(s.c) {}
            double coeff(int i, int j) const {
              double s = c * (i == j);
              for (int k = 0; k < 3; ++k) s += a->v[3 * i + k] * t.m.v[3 * j + k];
              return s; } };
__attribute__((noinline)) void assign(Mat &out, const Sum &s) {
  Ev e(s);
  for (int i = 0; i < 3; ++i) for (int j = 0; j < 3; ++j) out.v[3 * i + j] = e.coeff(i, j);
}
double f(const double *p) {
  Mat A;
  for (int i = 0; i < 9; ++i) A.v[i] = std::sin(p[i % 3] * (i + 1));
  Mat S;
  assign(S, Sum(A, Tr(A), 2.0));      // S = A A^T + 2 I
  double r = 0;
  for (int i = 0; i < 9; ++i) r += S.v[i] * S.v[i];
  return r;
}
"""


LLT = r"""
#include <Eigen/Dense>
#include <cmath>
#include <cstdio>
extern "C" { int enzyme_dup; void __enzyme_autodiff(void *, ...); double __enzyme_fwddiff(void *, ...); }
typedef Eigen::Matrix<double, 6, 6> M;
static double f(const double *p) {
    M A;
    for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 6; ++j) A(i, j) = std::cos(i + 2 * j + p[(i + j) % 3]);
    M S = A * A.transpose() + 6 * M::Identity();
    return S.llt().matrixLLT().sum();
}
"""


BITS = r"""
#include <stdio.h>
#include <stdint.h>
#include <string.h>
int enzyme_dup, enzyme_const;
void __enzyme_autodiff(void *, ...);
struct box { double *p; double w; };
__attribute__((noinline)) double second(const struct box *b) {
    uintptr_t u;
    memcpy(&u, &b->p, sizeof u);
    const double *q = (const double *)(u + sizeof(double));   /* pointer bits + 8 */
    return q[0] * b->w;
}
double f(double *x) {
    struct box b = {x, 3.0};
    return second(&b) * x[0];
}
int main(void) {
    double x[2] = {2, 5}, dx[2] = {0, 0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx);
    printf("%g %g\n", dx[0], dx[1]);
}
"""


# reverse, forward and central differences of f at p, one line per component
# Round BM: Eigen's `2.0 * v` -- clang -O2 copies the evaluator, `{double, const
# Vector2d *}`, as one `<2 x double>` and takes the vector's address back out of lane 1
# (`bitcast` to `<2 x i64>`, `extractelement`, `inttoptr`): that pointer had no shadow,
# and the gradient through every `scalar * vector` was 0, silently, at -O2 and -O3.  The
# C version builds the same IR by hand, at every level.
SCALAR_TIMES_VECTOR = r"""
#include <Eigen/Dense>
#include <cmath>
#include <cstdio>
extern "C" { int enzyme_dup; void __enzyme_autodiff(void *, ...); double __enzyme_fwddiff(void *, ...); }
static double f(const double *p) {
    Eigen::Vector2d a(p[0] * p[0], p[1] * p[2]);
    Eigen::Vector2d w = 2.0 * a;
    Eigen::Vector4d b(p[0], p[1], std::sin(p[2]), p[0] * p[1]);
    Eigen::Vector4d z = 3.0 * b;
    return w(0) + w(1) * w(0) + z.squaredNorm();
}
"""
VECTOR_LANE = r"""
#include <cstdio>
#include <cstring>
extern "C" { int enzyme_dup; void __enzyme_autodiff(void *, ...); double __enzyme_fwddiff(void *, ...); }
typedef double v2 __attribute__((vector_size(16)));
typedef long long l2 __attribute__((vector_size(16)));
struct expr { double c; const double *v; };      /* "c * a": a scalar and a reference */
static double f(const double *p) {
    double a[2] = {p[0] * p[0], p[1] * p[2]};
    expr e = {2.0, a};
    v2 raw; std::memcpy(&raw, &e, 16);
    const double *q = (const double *)((l2)raw)[1];
    return raw[0] * q[0] + q[1] * q[0];
}
"""
CHECK_MAIN = r"""
int main() {
    double p[3] = {0.3, -0.4, 0.8};
    for (int k = 0; k < 3; ++k) {
        double g[3] = {0, 0, 0}, d[3] = {0, 0, 0}; d[k] = 1;
        __enzyme_autodiff((void *)f, enzyme_dup, p, g);
        double t = __enzyme_fwddiff((void *)f, enzyme_dup, p, d);
        double h = 1e-6, q[3] = {p[0], p[1], p[2]}, r[3] = {p[0], p[1], p[2]};
        q[k] += h; r[k] -= h;
        printf("f %d %.12g %.12g %.12g\n", k, g[k], t, (f(q) - f(r)) / (2 * h));
    }
}
"""
EIGEN = Path("/usr/include/eigen3")


def _check(tmp_path, source, opt, extra=()):
    assert _derivatives(tmp_path, source + CHECK_MAIN, opt, extra) == {"f"}


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2", "-O3"])
def test_a_view_copied_as_an_integer(tmp_path, opt):
    _check(tmp_path, VIEW, opt)


@pytest.mark.skipif(not EIGEN.is_dir(), reason="needs Eigen (libeigen3-dev)")
def test_eigen_cholesky_of_a_product_with_a_transpose(tmp_path):
    # -O1: where Eigen's Transpose evaluator is copied as an i64 (at -O0 its l1 norm's
    # pabs is a refusal; at -O2 the copy is folded away)
    _check(tmp_path, LLT, "-O1", ["-std=c++17", f"-I{EIGEN}"])


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_pointer_bits_changed_as_an_integer_is_an_error(tmp_path, opt):
    src = Path(tmp_path) / "prog.c"
    src.write_text(BITS)
    exe = tmp_path / "prog"
    r = enzyme_cc([opt, str(src), "-o", str(exe)], tmp_path)
    assert r.returncode != 0 and not exe.exists()
    assert "'inttoptr' makes a pointer out of an integer" in r.stderr, r.stderr


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2", "-O3"])
def test_a_pointer_taken_out_of_a_vector_lane(tmp_path, opt):
    _check(tmp_path, VECTOR_LANE, opt)


@pytest.mark.skipif(not EIGEN.is_dir(), reason="needs Eigen (libeigen3-dev)")
@pytest.mark.parametrize("opt", ["-O2", "-O3"])
def test_eigen_scalar_times_vector(tmp_path, opt):
    _check(tmp_path, SCALAR_TIMES_VECTOR, opt, [f"-I{EIGEN}"])
