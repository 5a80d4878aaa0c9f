"""x86 SIMD code (ad/simd.py, and the x86 entries of ad/rules.py's LIBM).

Masked vector loads and stores: AVX's ``_mm256_maskload_ps``,
``_mm256_maskstore_ps``, ``_mm_maskload_pd``, ``_mm_maskload_ps`` and the generic
``llvm.masked.load``/``store`` that LLVM turns them into, in reverse and forward mode.

Before: "the LLVM intrinsic 'llvm.masked.load.v8f32.p0' touches values that carry
derivatives and has no derivative rule" at every -O level (round L's AVX kernels handle
the tail of an array this way; real Enzyme 15 builds them at -O2).  Every array and
every shadow ends where an inaccessible page begins, so touching a masked-off lane, in
the primal or in the derivative code, faults.  The tail masks are known only at run
time (branches per lane); ``head3``'s is constant (no branches).

Lane-wise math and horizontal additions: ``_mm256_max_ps``/``min`` (a ReLU and a clamp),
``_mm256_rcp_ps``/``rsqrt`` (approximations, differentiated as 1/x and 1/sqrt(x) at their
value), ``_mm256_hadd_ps``/``_mm_hsub_ps``/``_mm256_hadd_pd``... Before: "the LLVM
intrinsic 'llvm.x86.avx.max.ps.256' touches values that carry derivatives and has no
derivative rule" (real Enzyme 15 refuses them too).  Reference: the same computation
in double with exact reciprocals, lane by lane in plain C, by central differences.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import build_and_run

PROGRAM = r"""#include <immintrin.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
int enzyme_dup, enzyme_const;
void __enzyme_autodiff(void *, ...);
float __enzyme_fwddiff(void *, ...);
double __enzyme_fwddiffd(void *, ...) __asm__("__enzyme_fwddiff");

/* lanes k < r are on: the AVX tail idiom */
static __m256i tail8(int r) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(r), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* y[i] = x[i] * w[i]; returns sum of x[i]^2 * w[i], the tail under a mask */
float kernel_ps(const float *x, const float *w, float *y, int n) {
  __m256 acc = _mm256_setzero_ps();
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(w + i);
    _mm256_storeu_ps(y + i, _mm256_mul_ps(a, b));
    acc = _mm256_fmadd_ps(_mm256_mul_ps(a, a), b, acc);
  }
  if (i < n) {
    __m256i m = tail8(n - i);
    __m256 a = _mm256_maskload_ps(x + i, m), b = _mm256_maskload_ps(w + i, m);
    _mm256_maskstore_ps(y + i, m, _mm256_mul_ps(a, b));
    acc = _mm256_fmadd_ps(_mm256_mul_ps(a, a), b, acc);
  }
  float t[8];
  _mm256_storeu_ps(t, acc);
  return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
}

/* the same in double, the tail in 128-bit pieces: sum of sin(x[i]) * x[i] */
double kernel_pd(const double *x, int n) {
  __m128d acc = _mm_setzero_pd();
  for (int i = 0; i < n; i += 2) {
    __m128i m = _mm_set_epi64x(0, -1);           /* lane 0 only ... */
    if (i + 1 < n) m = _mm_set_epi64x(-1, -1);   /* ... unless both exist */
    __m128d a = _mm_maskload_pd(x + i, m);
    double s[2];
    _mm_storeu_pd(s, a);
    __m128d sn = _mm_set_pd(__builtin_sin(s[1]), __builtin_sin(s[0]));
    acc = _mm_add_pd(acc, _mm_mul_pd(sn, a));
  }
  double t[2];
  _mm_storeu_pd(t, acc);
  return t[0] + t[1];
}

/* a constant mask: the first three lanes of a vector, the rest from the pass-through */
float head3(const float *x) {
  __m128 v = _mm_maskload_ps(x, _mm_setr_epi32(-1, -1, -1, 0));
  __m128 s = _mm_mul_ps(v, _mm_add_ps(v, _mm_set1_ps(1.0f)));
  float t[4];
  _mm_storeu_ps(t, s);
  return t[0] + 2 * t[1] + 3 * t[2] + t[3];
}

/* n floats ending where an inaccessible page begins: touching a masked-off lane of the
   array (or of its shadow) faults */
static float *fenced(int n) {
  long pg = sysconf(_SC_PAGESIZE);
  char *p = mmap(0, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  mprotect(p + pg, pg, PROT_NONE);
  return (float *)(p + pg) - n;
}

int main(void) {
  enum { N = 13 };
  float *x = fenced(N), *w = fenced(N), *y = fenced(N);
  float *dx = fenced(N), *dw = fenced(N), *dy = fenced(N);
  for (int i = 0; i < N; i++) { x[i] = 0.1f * i - 0.5f; w[i] = 1.0f + 0.05f * i; }
  memset(dx, 0, N * 4); memset(dw, 0, N * 4);
  for (int i = 0; i < N; i++) dy[i] = 0.5f + 0.1f * i;   /* seed on the output y */
  __enzyme_autodiff((void *)kernel_ps, enzyme_dup, x, dx, enzyme_dup, w, dw, enzyme_dup, y, dy,
                    enzyme_const, N);
  /* analytic: d/dx_i = 2 x_i w_i + seed_i w_i; d/dw_i = x_i^2 + seed_i x_i */
  for (int i = 0; i < N; i++) {
    float s = 0.5f + 0.1f * i;
    printf("ps %d %.9g %.9g %.9g %.9g\n", i, dx[i], 2 * x[i] * w[i] + s * w[i], dw[i],
           x[i] * x[i] + s * x[i]);
  }
  for (int i = 0; i < N; i++) dy[i] = 0;
  for (int k = 0; k < N; k += 6) {   /* forward mode: one tangent per input */
    float *tx = fenced(N), *tw = fenced(N);
    memset(tx, 0, N * 4); memset(tw, 0, N * 4); tx[k] = 1;
    float t = __enzyme_fwddiff((void *)kernel_ps, enzyme_dup, x, tx, enzyme_const, w,
                               enzyme_dup, y, dy, enzyme_const, N);
    printf("fw %d %.9g %.9g %.9g %.9g\n", k, t, 2 * x[k] * w[k], dy[k], w[k]);
  }
  double *xd = (double *)fenced(2 * 7), *dxd = (double *)fenced(2 * 7);
  for (int i = 0; i < 7; i++) { xd[i] = 0.3 * i - 1.0; dxd[i] = 0; }
  __enzyme_autodiff((void *)kernel_pd, enzyme_dup, xd, dxd, enzyme_const, 7);
  for (int i = 0; i < 7; i++) {
    double tt[7] = {0}; tt[i] = 1;
    double f = __enzyme_fwddiffd((void *)kernel_pd, enzyme_dup, xd, tt, enzyme_const, 7);
    printf("pd %d %.17g %.17g %.17g\n", i, dxd[i], f, __builtin_cos(xd[i]) * xd[i] + __builtin_sin(xd[i]));
  }
  float *h = fenced(3), *dh = fenced(3);
  for (int i = 0; i < 3; i++) { h[i] = 0.25f * (i + 1); dh[i] = 0; }
  __enzyme_autodiff((void *)head3, enzyme_dup, h, dh);
  for (int i = 0; i < 3; i++)   /* d/dh_i (i+1) (h_i^2 + h_i) */
    printf("h3 %d %.9g %.9g\n", i, dh[i], (i + 1) * (2 * h[i] + 1));
  return 0;
}
"""


def _avx2():
    if "avx2" not in Path("/proc/cpuinfo").read_text():
        pytest.skip("the program uses AVX2 and FMA (this CPU has none)")


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2", "-O3"])
def test_masked_loads_and_stores(tmp_path, opt):
    _avx2()
    out = build_and_run(tmp_path, PROGRAM, opt, extra=["-mavx2", "-mfma"])
    assert out.returncode == 0, out.stdout + out.stderr
    rows = {}
    for line in out.stdout.splitlines():
        kind, i, *vals = line.split()
        rows.setdefault(kind, []).append([float(v) for v in vals])
    assert len(rows["ps"]) == 13 and len(rows["fw"]) == 3
    assert len(rows["pd"]) == 7 and len(rows["h3"]) == 3
    for got_x, want_x, got_w, want_w in rows["ps"]:    # reverse, analytic
        assert got_x == pytest.approx(want_x, rel=1e-5, abs=1e-6)
        assert got_w == pytest.approx(want_w, rel=1e-5, abs=1e-6)
    for t, want_t, ty, want_ty in rows["fw"]:          # forward: result and y's tangent
        assert t == pytest.approx(want_t, rel=1e-5, abs=1e-6)
        assert ty == pytest.approx(want_ty, rel=1e-5, abs=1e-6)
    for rev, fwd, want in rows["pd"]:
        assert rev == pytest.approx(want, rel=1e-12, abs=1e-14)
        assert fwd == pytest.approx(want, rel=1e-12, abs=1e-14)
    for got, want in rows["h3"]:
        assert got == pytest.approx(want, rel=1e-6)


LANEWISE = r"""#include <immintrin.h>
#include <stdio.h>
#include <math.h>
int enzyme_dup, enzyme_const;
void __enzyme_autodiff(void *, ...);
float __enzyme_fwddiff(void *, ...);
double __enzyme_fwddiffd(void *, ...) __asm__("__enzyme_fwddiff");
/* a ReLU layer, a clamp and a horizontal sum, as SIMD inference code writes them */
float relu_sum(const float *x, const float *w, int n) {
  __m256 acc = _mm256_setzero_ps(), zero = _mm256_setzero_ps(), cap = _mm256_set1_ps(1.2f);
  for (int i = 0; i < n; i += 8) {
    __m256 a = _mm256_mul_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(w + i));
    a = _mm256_min_ps(_mm256_max_ps(a, zero), cap);
    acc = _mm256_add_ps(acc, _mm256_mul_ps(a, _mm256_rcp_ps(_mm256_add_ps(_mm256_loadu_ps(w + i), cap))));
  }
  __m256 h = _mm256_hadd_ps(acc, acc);
  h = _mm256_hadd_ps(h, _mm256_rsqrt_ps(_mm256_add_ps(acc, cap)));
  __m128 lo = _mm256_castps256_ps128(h), hi = _mm256_extractf128_ps(h, 1);
  __m128 s = _mm_hsub_ps(_mm_add_ps(lo, hi), lo);
  float t[4];
  _mm_storeu_ps(t, s);
  return t[0] + 0.5f * t[1] + 0.25f * t[2] + t[3];
}
/* relu_sum in double, lane by lane, with the exact 1/x and 1/sqrt(x) */
static void hadd4(const double *a, const double *b, double *r, int sub) {   /* 128-bit block */
  double s = sub ? -1 : 1;
  r[0] = a[0] + s * a[1]; r[1] = a[2] + s * a[3]; r[2] = b[0] + s * b[1]; r[3] = b[2] + s * b[3];
}
double relu_ref(const double *x, const double *w, int n) {
  double acc[8] = {0}, h1[8], g[8], h2[8], u[4], s[4];
  for (int i = 0; i < n; i += 8)
    for (int k = 0; k < 8; k++) {
      double a = fmin(fmax(x[i + k] * w[i + k], 0.0), 1.2);
      acc[k] += a / (w[i + k] + 1.2);
    }
  for (int k = 0; k < 8; k++) g[k] = 1 / sqrt(acc[k] + 1.2);
  hadd4(acc, acc, h1, 0); hadd4(acc + 4, acc + 4, h1 + 4, 0);
  hadd4(h1, g, h2, 0); hadd4(h1 + 4, g + 4, h2 + 4, 0);
  for (int k = 0; k < 4; k++) u[k] = h2[k] + h2[k + 4];
  hadd4(u, h2, s, 1);
  return s[0] + 0.5 * s[1] + 0.25 * s[2] + s[3];
}
double pd(const double *x) {
  __m256d a = _mm256_loadu_pd(x), b = _mm256_loadu_pd(x + 4);
  __m256d m = _mm256_max_pd(_mm256_mul_pd(a, b), _mm256_min_pd(a, b));
  __m256d h = _mm256_hadd_pd(m, _mm256_hsub_pd(a, m));
  __m128d q = _mm_hadd_pd(_mm256_castpd256_pd128(h), _mm256_extractf128_pd(h, 1));
  double t[2];
  _mm_storeu_pd(t, _mm_max_pd(q, _mm_set1_pd(-100.0)));
  return t[0] * 1.5 + t[1] * t[1];
}
int main(void) {
  enum { N = 16 };
  float x[N], w[N], dx[N] = {0}, dw[N] = {0};
  for (int i = 0; i < N; i++) { x[i] = 0.37f * (i % 7) - 0.9f; w[i] = 0.8f + 0.13f * (i % 5); }
  __enzyme_autodiff((void *)relu_sum, enzyme_dup, x, dx, enzyme_dup, w, dw, enzyme_const, N);
  for (int i = 0; i < N; i++) {
    float tx[N] = {0};
    double xd[N], wd[N], h = 1e-6;
    for (int k = 0; k < N; k++) { xd[k] = x[k]; wd[k] = w[k]; }
    xd[i] += h; double fp = relu_ref(xd, wd, N); xd[i] -= 2 * h; double fm = relu_ref(xd, wd, N);
    tx[i] = 1;
    float fw = __enzyme_fwddiff((void *)relu_sum, enzyme_dup, x, tx, enzyme_const, w, enzyme_const, N);
    printf("x %d %.7g %.7g %.9g\n", i, dx[i], fw, (fp - fm) / (2 * h));
  }
  double y[8] = {0.3, -0.7, 1.1, 0.2, -0.5, 0.9, 1.4, -1.2}, dy[8] = {0};
  __enzyme_autodiff((void *)pd, enzyme_dup, y, dy);
  for (int i = 0; i < 8; i++) {
    double h = 1e-6, s = y[i], ty[8] = {0};
    y[i] = s + h; double fp = pd(y); y[i] = s - h; double fm = pd(y); y[i] = s;
    ty[i] = 1;
    printf("y %d %.15g %.15g %.15g\n", i, dy[i], __enzyme_fwddiffd((void *)pd, enzyme_dup, y, ty), (fp - fm) / (2 * h));
  }
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_lanewise_math_and_horizontal_additions(tmp_path, opt):
    _avx2()
    out = build_and_run(tmp_path, LANEWISE, opt, extra=["-mavx2", "-mfma"])
    assert out.returncode == 0, out.stdout + out.stderr
    rows = {}
    for line in out.stdout.splitlines():
        kind, i, *vals = line.split()
        rows.setdefault(kind, []).append([float(v) for v in vals])
    assert len(rows["x"]) == 16 and len(rows["y"]) == 8
    # float, rcp/rsqrt good to 12 bits: 2e-3 of the largest entry
    scale = max(abs(fd) for _, _, fd in rows["x"])
    assert scale > 0.1
    for rev, fwd, fd in rows["x"]:
        assert rev == pytest.approx(fd, abs=2e-3 * scale)
        assert fwd == pytest.approx(rev, rel=1e-5, abs=1e-7)
    assert sum(1 for rev, _, _ in rows["x"] if rev == 0) >= 4      # ReLU and clamp cut
    for rev, fwd, fd in rows["y"]:
        assert rev == pytest.approx(fd, rel=1e-7, abs=1e-7)
        assert fwd == pytest.approx(rev, rel=1e-14)
