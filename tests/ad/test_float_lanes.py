"""Floats moved as integer lanes (ad/typed_copies.retype_float_lanes, kinds).

Eigen's matrix-product kernel broadcasts a double with what LLVM spells ``load <4 x
i32>``, ``shufflevector <0, 1, 0, 1>``, ``bitcast to <2 x double>``: the gradient of a
6x6 ``inverse()`` (its blocked LU update) was 1% off in both modes at -O1..-O3,
silently (round Q; real Enzyme 15 refuses the program).  Such shuffles and loads get
their float types back before differentiation.  Integer lanes that are then changed
as integers -- a sign flip of one lane by ``xor`` -- stay a compile error (the
derivative was 0, silently; real Enzyme 15 is right there: not supported yet).
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

XOR_LANE = r"""
#include <stdio.h>
#include <string.h>
int enzyme_dup;
double __enzyme_autodiff(void *, ...);
typedef long long v2i __attribute__((vector_size(16)));
typedef double v2d __attribute__((vector_size(16)));
double f(double x) {
    long long bits;
    memcpy(&bits, &x, 8);
    v2i s = {bits, bits};                                  /* splat as integers */
    v2i m = {0, (long long)0x8000000000000000ull};         /* flip lane 1's sign */
    v2d r = (v2d)(s ^ m);
    return r[0] * 3 + r[1] * 5;                            /* 3x - 5x */
}
int main(void) { printf("%g\n", __enzyme_autodiff((void *)f, 1.5)); return 0; }
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


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2"])
def test_integer_lane_sign_flip_is_an_error(tmp_path, opt):
    src = tmp_path / "x.c"
    src.write_text(XOR_LANE)
    r = enzyme_cc([opt, str(src), "-o", str(tmp_path / "x")], tmp_path)
    assert r.returncode != 0, "expected a compile error"
    assert "floating-point values moved through integer operations" in r.stderr, r.stderr
    assert not (tmp_path / "x").exists()
