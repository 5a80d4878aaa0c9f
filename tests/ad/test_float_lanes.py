"""Floats moved as integer lanes (ad/typed_copies.retype_float_lanes, kinds).

Eigen's matrix-product kernel broadcasts a double with what LLVM spells ``load <4 x
i32>``, ``shufflevector <0, 1, 0, 1>``, ``bitcast to <2 x double>``: the gradient of a
6x6 ``inverse()`` (its blocked LU update) was 1% off in both modes at -O1..-O3,
silently (round Q; real Enzyme 15 refuses the program).  Such shuffles and loads get
their float types back before differentiation, and so does an integer load of floats
that is also stored or compared as it is (a vector copy through ``<2 x i64>``: a zero
gradient at every level, silently).  (Sign flips of lanes by ``xor``: test_sign_bits.)
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers import enzyme_cc

EIGEN = Path("/usr/include/eigen3")

INVERSE = r"""
#include <Eigen/Dense>
#include <cstdio>
extern "C" { int enzyme_dup; void __enzyme_autodiff(void *, ...); double __enzyme_fwddiff(void *, ...); }
typedef Eigen::Matrix<double, 6, 6> Mat6;
static double f(const double *p) {
    Mat6 A;
    for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 6; ++j)
            A(i, j) = (i == j ? 6.0 : 0.0) + 1.0 / (1 + i + 2 * j) + (i == 0 && j == 1 ? p[0] : 0.0);
    return A.inverse().sum();
}
int main() {
    double p[1] = {0.3}, g[1] = {0}, d[1] = {1}, h = 1e-6;
    __enzyme_autodiff((void *)f, enzyme_dup, p, g);
    double t = __enzyme_fwddiff((void *)f, enzyme_dup, p, d);
    double q[1] = {p[0] + h}, r[1] = {p[0] - h};
    printf("%.12g %.12g %.12g\n", g[0], t, (f(q) - f(r)) / (2 * h));
}
"""



@pytest.mark.skipif(not EIGEN.is_dir(), reason="needs Eigen (libeigen3-dev)")
@pytest.mark.parametrize("opt", ["-O1", "-O2"])
def test_eigen_inverse_through_the_product_kernel(tmp_path, opt):
    src = tmp_path / "inv.cpp"
    src.write_text(INVERSE)
    r = enzyme_cc([opt, "-std=c++17", f"-I{EIGEN}", str(src), "-o", str(tmp_path / "inv")],
                  tmp_path, cxx=True)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(tmp_path / "inv")], capture_output=True, text=True, timeout=60)
    rev, fwd, fd = (float(v) for v in out.stdout.split())
    assert rev == pytest.approx(fd, rel=1e-6)
    assert fwd == pytest.approx(rev, rel=1e-12)


COPIED = r"""
#include <stdio.h>
#include <string.h>
int enzyme_dup;
void __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);
typedef long long v2i __attribute__((vector_size(16)));
typedef double v2d __attribute__((vector_size(16)));
__attribute__((noinline)) double f(const double *x, double *y, long long *z) {
    v2i a;
    memcpy(&a, x, 16);                      /* doubles read as <2 x i64> ... */
    memcpy(y, &a, 16);                      /* ... copied on as they are ... */
    v2i zero = a == (v2i){0, 0};            /* ... compared as integers ... */
    memcpy(z, &zero, 16);
    v2d d = (v2d)a;                         /* ... and used as doubles */
    return d[0] * d[1];
}
double g(const double *x) {
    double y[2];
    long long z[2];
    return f(x, y, z) + 3 * y[0] + y[1] * y[1] + (double)z[0];
}
int main(void) {
    double x[2] = {2, 5}, dx[2] = {0, 0}, t[2] = {0.5, -1};
    __enzyme_autodiff((void *)g, enzyme_dup, x, dx);
    printf("%g %g %g\n", dx[0], dx[1], __enzyme_fwddiff((void *)g, enzyme_dup, x, t));
    return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2"])
def test_integer_vector_load_of_doubles_copied_and_compared(tmp_path, opt):
    src = tmp_path / "c.c"
    src.write_text(COPIED)
    r = enzyme_cc([opt, str(src), "-o", str(tmp_path / "c")], tmp_path)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(tmp_path / "c")], capture_output=True, text=True, timeout=60)
    # g = x0 x1 + 3 x0 + x1^2: (x1 + 3, x0 + 2 x1) = (8, 12); along (0.5, -1): 4 - 12
    assert [float(v) for v in out.stdout.split()] == [8, 12, -8]
