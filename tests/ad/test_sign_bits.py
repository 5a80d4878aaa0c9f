"""Sign-bit masks applied to floats as integers (ad/sign_bits.py).

SIMD code flips, clears or sets the sign of chosen lanes with a bitwise operation on
the floats' bits: ``_mm_xor_pd(v, _mm_set_pd(-0.0, 0.0))``, ``_mm_andnot_pd(-0.0, v)``
for an absolute value, Eigen's ``pxor`` in the quaternion product and the 4x4
``inverse()``.  These were a compile error (round Q; real Enzyme 15 builds some); now
the lanes become ``fneg``/``fabs``.  A mask that is not a sign mask stays an error.
Reference: central differences, forward against reverse; analytic values.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from helpers import enzyme_cc

EIGEN = Path("/usr/include/eigen3")

SSE = r"""#include <emmintrin.h>
#include <stdio.h>
int enzyme_dup, enzyme_const;
void __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);
float __enzyme_fwddiff_f(void *, ...);

static double dot2(__m128d v, double a, double b) {
    double o[2];
    _mm_storeu_pd(o, v);
    return a * o[0] + b * o[1];
}

double fd(const double *x) {                      /* sign flips on double lanes */
    __m128d v = _mm_loadu_pd(x);                   /* x0, x1 */
    __m128d u = _mm_set_pd(x[2], -x[3] * x[1]);    /* -x3 x1, x2 */
    double s = 0;
    s += dot2(_mm_xor_pd(v, _mm_set_pd(-0.0, 0.0)), 1.5, -2.0);     /* x0, -x1 */
    s += dot2(_mm_andnot_pd(_mm_set1_pd(-0.0), u), 0.5, 3.0);       /* |-x3 x1|, |x2| */
    s += dot2(_mm_or_pd(v, _mm_set_pd(0.0, -0.0)), 2.5, 1.0);       /* -|x0|, x1 */
    s += dot2(_mm_and_pd(u, _mm_castsi128_pd(_mm_set_epi64x(-1, 0x7fffffffffffffffLL))),
              -1.0, 4.0);                                            /* |-x3 x1|, x2 */
    s += dot2(_mm_and_pd(v, _mm_set_pd(-0.0, 0.0)), 7.0, 9.0);      /* 0, copysign(0, x1) */
    return s * x[0];
}

float ff(const float *x) {                         /* and on float lanes */
    __m128 v = _mm_set_ps(x[3], x[2] * x[0], x[1], x[0]);
    __m128 r = _mm_xor_ps(v, _mm_set_ps(-0.0f, 0.0f, -0.0f, 0.0f));
    r = _mm_mul_ps(r, _mm_andnot_ps(_mm_set_ps(0.0f, -0.0f, 0.0f, -0.0f), v));
    float o[4];
    _mm_storeu_ps(o, r);
    return o[0] + 2 * o[1] + 3 * o[2] + 4 * o[3];
}

int main(void) {
    double x[4] = {0.7, -1.3, 2.1, 0.4};
    for (int k = 0; k < 4; ++k) {
        double g[4] = {0}, d[4] = {0}, h = 1e-6, p[4], m[4];
        d[k] = 1;
        __enzyme_autodiff((void *)fd, enzyme_dup, x, g);
        double t = __enzyme_fwddiff((void *)fd, enzyme_dup, x, d);
        for (int i = 0; i < 4; ++i) p[i] = m[i] = x[i];
        p[k] += h; m[k] -= h;
        printf("double %d %.12g %.12g %.12g\n", k, g[k], t, (fd(p) - fd(m)) / (2 * h));
    }
    float y[4] = {0.7f, -1.3f, 2.1f, -0.4f};
    for (int k = 0; k < 4; ++k) {
        float g[4] = {0}, d[4] = {0}, h = 1e-2f, p[4], m[4];
        d[k] = 1;
        __enzyme_autodiff((void *)ff, enzyme_dup, y, g);
        float t = __enzyme_fwddiff_f((void *)ff, enzyme_dup, y, d);
        for (int i = 0; i < 4; ++i) p[i] = m[i] = y[i];
        p[k] += h; m[k] -= h;
        printf("float %d %.7g %.7g %.7g\n", k, g[k], t, (ff(p) - ff(m)) / (2 * h));
    }
    return 0;
}
"""

SPLAT = r"""
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

NOT_A_SIGN = SPLAT.replace(
    "v2i m = {0, (long long)0x8000000000000000ull};         /* flip lane 1's sign */",
    "v2i m = {0, 1};                                        /* lane 1's last bit */")
assert NOT_A_SIGN != SPLAT

GEOMETRY = r"""
#include <Eigen/Dense>
#include <Eigen/Geometry>
#include <cstdio>
extern "C" { int enzyme_dup; void __enzyme_autodiff(void *, ...); double __enzyme_fwddiff(void *, ...); }
using namespace Eigen;
static double f(const double *p) {
    Quaterniond q(p[0], p[1], p[2], p[3]);
    Quaterniond r = q * Quaterniond(0.5, 0.5, -0.5, 0.5) * q;
    Matrix4d M = Matrix4d::Identity() * 3;
    M(0, 1) = p[0]; M(1, 2) = p[1]; M(2, 3) = 0.7; M(3, 0) = p[2] * p[3];
    return r.x() + 2 * r.y() + 3 * r.z() + 4 * r.w() + M.inverse().sum();
}
int main() {
    double p[4] = {0.9, 0.1, -0.3, 0.2};
    for (int k = 0; k < 4; ++k) {
        double g[4] = {0, 0, 0, 0}, d[4] = {0, 0, 0, 0}, h = 1e-6, a[4], b[4];
        d[k] = 1;
        __enzyme_autodiff((void *)f, enzyme_dup, p, g);
        double t = __enzyme_fwddiff((void *)f, enzyme_dup, p, d);
        for (int i = 0; i < 4; ++i) a[i] = b[i] = p[i];
        a[k] += h; b[k] -= h;
        printf("eigen %d %.12g %.12g %.12g\n", k, g[k], t, (f(a) - f(b)) / (2 * h));
    }
}
"""


def _build(tmp_path, source, opt, cxx=False, extra=()):
    src = Path(tmp_path) / ("p.cpp" if cxx else "p.c")
    src.write_text(source)
    exe = Path(tmp_path) / "p"
    return enzyme_cc([opt, *extra, str(src), "-o", str(exe)], tmp_path, cxx=cxx), exe


def _check_lines(exe, rel):
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines
    for line in lines:
        _name, _k, rev, fwd, fd = line.split()
        assert float(rev) == pytest.approx(float(fd), rel=rel, abs=rel), line
        assert float(fwd) == pytest.approx(float(rev), rel=1e-6), line
    return lines


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2", "-O3"])
def test_sse_sign_masks(tmp_path, opt):
    r, exe = _build(tmp_path, SSE, opt)
    assert r.returncode == 0, r.stderr
    lines = _check_lines(exe, 1e-4)    # (the float half's differences: 1e-4)
    assert len(lines) == 8


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2"])
def test_sign_flip_of_a_splat_made_as_integers(tmp_path, opt):
    r, exe = _build(tmp_path, SPLAT, opt)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert float(out.stdout) == -2          # 3x - 5x


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_a_mask_that_is_not_a_sign_mask_is_an_error(tmp_path, opt):
    r, exe = _build(tmp_path, NOT_A_SIGN, opt)
    assert r.returncode != 0 and not exe.exists()
    assert "floating-point values moved through integer operations" in r.stderr, r.stderr


# Inlined into f (libc++'s build with the ziglang clang does it, as does a higher inline
# threshold), the 4x4 inverse computes 1/det as ``fdiv <1.0, poison>, %d``: the reverse
# sweep's lane 1 was 0 x poison, which lane-moving adjoints carried to d/dp0 -- 0 at
# -O2 instead of the right value (adjoint.poison_lane_users).
@pytest.mark.skipif(not EIGEN.is_dir(), reason="needs Eigen (libeigen3-dev)")
@pytest.mark.parametrize("opt,inline", [("-O1", []), ("-O2", []),
                                        ("-O2", ["-mllvm", "-inline-threshold=2000"])])
def test_eigen_quaternion_product_and_4x4_inverse(tmp_path, opt, inline):
    # (at -O0 Eigen's pxor is a function of two run-time vectors: still an error)
    r, exe = _build(tmp_path, GEOMETRY, opt, cxx=True,
                    extra=["-std=c++17", f"-I{EIGEN}", *inline])
    assert r.returncode == 0, r.stderr
    assert len(_check_lines(exe, 1e-6)) == 4


def test_verbose_names_the_rewrite(tmp_path):
    r, _ = _build(tmp_path, SSE, "-O2", extra=["-v"])
    assert r.returncode == 0, r.stderr
    assert "rewrites before AD: sign masks on float bits" in r.stderr, r.stderr


# The mask with a poison lane (-O1 folds away the lane the program never reads) and a
# local array read as integer lanes (round U): the rewrite did not apply, and activity
# had dropped the local's shadow -- nothing loaded from it as a float reached the
# result -- so the gradient was 0 at -O0/-O1, silently, and a mask that is no sign
# mask was no error either.
LOOP_FILLED = r"""
#include <emmintrin.h>
#include <stdio.h>
int enzyme_dup;
void __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);
double f(const double *x) {
    double t[2];
    for (int i = 0; i < 2; i++) t[i] = 2 * x[i];
    __m128d a = _mm_andnot_pd(_mm_set1_pd(-0.0), _mm_loadu_pd(t));
    double p[2];
    _mm_storeu_pd(p, a);
    return p[1];
}
int main(void) {
    double x[2] = {0.7, -1.3}, dx[2] = {0, 0}, t[2] = {0, 1};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx);
    printf("%g %g %g\n", dx[0], dx[1], __enzyme_fwddiff((void *)f, enzyme_dup, x, t));
    return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2"])
def test_sign_mask_on_a_local_filled_in_a_loop(tmp_path, opt):
    r, exe = _build(tmp_path, LOOP_FILLED, opt)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert [float(v) for v in out.stdout.split()] == [0, -2, -2]    # |2 x1|, x1 < 0


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2"])
def test_other_mask_on_a_local_filled_in_a_loop_is_an_error(tmp_path, opt):
    src = LOOP_FILLED.replace("_mm_andnot_pd(_mm_set1_pd(-0.0), _mm_loadu_pd(t))",
                              "_mm_xor_pd(_mm_loadu_pd(t), _mm_castsi128_pd(_mm_set1_epi64x(1)))")
    r, exe = _build(tmp_path, src, opt)
    assert r.returncode != 0 and not exe.exists()
    assert "floating-point values moved through integer operations" in r.stderr, r.stderr


# The lanes a mask makes, stored as integers (-O0/-O1 store ``and <4 x i32>`` straight
# into the float array it reads back): no bitcast to float followed the mask, so the
# rewrite did not apply and the check, which looked at bitcasts only, saw nothing -- a
# zero gradient in both modes, silently, also before this stop (round U's AVX program).
# The rewrite now takes the float type from the memory read, and an integer store of
# rearranged float bits into float memory is a compile error.
STORED_LANES = r"""
#include <emmintrin.h>
#include <stdio.h>
int enzyme_dup;
void __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);
double f(const double *x) {
    float xf[4], p[4];
    for (int i = 0; i < 4; i++) xf[i] = (float)x[i];
    __m128 c = _mm_loadu_ps(xf);
    _mm_storeu_ps(p, _mm_andnot_ps(_mm_set1_ps(-0.0f), c));   /* |xf|, stored as is */
    double s = 0;
    for (int i = 0; i < 4; i++) s += p[i] * p[i] * (i + 1);
    return s;
}
int main(void) {
    double x[4] = {0.5, -1.5, 2.0, -0.25};
    for (int k = 0; k < 4; k++) {
        double g[4] = {0}, t[4] = {0};
        t[k] = 1;
        __enzyme_autodiff((void *)f, enzyme_dup, x, g);
        printf("%g %g\n", g[k], __enzyme_fwddiff((void *)f, enzyme_dup, x, t));
    }
    return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2"])
def test_sign_mask_lanes_stored_as_integers(tmp_path, opt):
    r, exe = _build(tmp_path, STORED_LANES, opt)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    # 2 x_k (k + 1) at x = (0.5, -1.5, 2, -0.25), reverse then forward
    assert [float(v) for v in out.stdout.split()] == [1, 1, -6, -6, 12, 12, -2, -2]


@pytest.mark.parametrize("opt", ["-O0", "-O1"])
def test_other_mask_lanes_stored_as_integers_is_an_error(tmp_path, opt):
    src = STORED_LANES.replace("_mm_andnot_ps(_mm_set1_ps(-0.0f), c)",
                               "_mm_xor_ps(_mm_castsi128_ps(_mm_set1_epi32(1)), c)")
    r, exe = _build(tmp_path, src, opt)
    assert r.returncode != 0 and not exe.exists()
    assert "floating-point values moved through integer operations" in r.stderr, r.stderr
