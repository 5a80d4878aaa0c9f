"""libm calls in the private copies touch no memory (``memory(none)``, as Enzyme's
preprocessing marks them): loop bounds read from globals around ``exp``/``log`` are
loaded once, so those loops are counted (cached in sized buffers) instead of while
loops.  A function that reads ``errno`` keeps its calls as they are: the check of
``errno`` after ``exp`` must still see what ``exp`` set."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_loop_caches import _cache_log
from test_never_silent import OPTS, PRELUDE, run
from helpers import build_and_run, enzyme_cc, parse_values

# a log-sum-exp per point over components whose counts live in globals (set from argc,
# so LLVM can neither fold them nor shrink them to a flag), as in a GMM written with
# file-scope sizes
GLOBAL_BOUNDS = r"""
static int K, D;
double f(const double *w, const double *x, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) {
        double t = 0;
        for (int k = 0; k < K; k++) {
            double q = 0;
            for (int d = 0; d < D; d++) q += exp(w[k * D + d]) * x[i * D + d];
            t += log(1 + q * q);
        }
        s += t;
    }
    return s;
}
int main(int argc, char **argv) {
    (void)argv;
    K = 2 + argc; D = 1 + argc;      /* 3 and 2 */
    enum { N = 4 };
    double w[6], dw[6] = {0}, x[N * 2];
    for (int j = 0; j < 6; j++) w[j] = 0.1 * j - 0.2;
    for (int j = 0; j < N * 2; j++) x[j] = 0.3 * (j % 5) - 0.5;
    __enzyme_autodiff((void *)f, enzyme_dup, w, dw, enzyme_const, x, enzyme_const, N);
    for (int j = 0; j < 6; j++) {
        double h = 1e-6, s = w[j];
        w[j] = s + h; double fp = f(w, x, N);
        w[j] = s - h; double fm = f(w, x, N);
        w[j] = s;
        check("dw", dw[j], (fp - fm) / (2 * h));
        double v[6] = {0};
        v[j] = 1;
        check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, w, v, enzyme_const, x,
                                        enzyme_const, N), dw[j]);
    }
    return fails;
}
"""

ERRNO = r"""
#include <errno.h>
static __attribute__((noinline)) int underflowed(void) { return errno == ERANGE; }
double g(const double *x) {
    errno = 0;
    double y = exp(x[0]) * x[1];
    if (underflowed())     /* exp underflowed: the fallback is x[1] */
        return x[1];
    return y;
}
int main(void) {
    double x[2] = {-1000, 2}, dx[2] = {0};
    __enzyme_autodiff((void *)g, enzyme_dup, x, dx);
    check("underflowed dx0", dx[0], 0);
    check("underflowed dx1", dx[1], 1);
    double y[2] = {0.5, 2}, dy[2] = {0};
    __enzyme_autodiff((void *)g, enzyme_dup, y, dy);
    check("dy0", dy[0], exp(0.5) * 2);
    check("dy1", dy[1], exp(0.5));
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_loop_bounds_from_globals_around_libm_calls(tmp_path, opt):
    run(tmp_path, GLOBAL_BOUNDS, opt)


def test_loop_bounds_from_globals_make_counted_loops(tmp_path):
    src = tmp_path / "t.c"
    src.write_text(PRELUDE + GLOBAL_BOUNDS)
    r = enzyme_cc(["-O2", "-v", str(src), "-o", str(tmp_path / "t"), "-lm"], tmp_path)
    assert r.returncode == 0, r.stderr
    _, loops = _cache_log(r.stderr, "f")
    assert loops, r.stderr
    kinds = [kind for _, kind in loops.values()]
    assert not [k for k in kinds if k.startswith("while loop")], kinds


@pytest.mark.parametrize("opt", OPTS)
def test_errno_read_after_a_libm_call_is_kept(tmp_path, opt):
    run(tmp_path, ERRNO, opt)


# Shadows as aligned as the memory they shadow.  Performance code declares buffers
# 32-byte aligned for AVX (a local `aligned(32)`, aligned_alloc, posix_memalign) and
# reads them with aligned loads (_mm256_load_ps, vmovaps), which the derivative code
# repeats on the shadows: shadows from calloc (16-byte aligned) made the built program
# segfault at -O0 and -O1 (a BLIS-style packed GEMM too; real Enzyme 15 right).
ALIGNED = r"""
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
int enzyme_dup;
void __enzyme_autodiff(void *, ...);
float __enzyme_fwddiff(void *, ...);
__attribute__((noinline)) static void sq8(float *restrict t, const float *x) {
  __m256 v = _mm256_loadu_ps(x);
  _mm256_store_ps(t, _mm256_mul_ps(v, v));
}
float f(const float *x) {
  char pad[3]; (void)pad;
  float t[8] __attribute__((aligned(32)));
  sq8(t, x);
  float *h = aligned_alloc(32, 16 * sizeof(float));
  float *q = NULL;
  if (posix_memalign((void **)&q, 64, 8 * sizeof(float))) return 0;
  for (int i = 0; i < 16; i++) h[i] = x[i % 8] * (i + 1);
  _mm256_store_ps(q, _mm256_mul_ps(_mm256_load_ps(h), _mm256_load_ps(h + 8)));
  __m256 a = _mm256_mul_ps(_mm256_load_ps(t), _mm256_load_ps(q));
  float o[8];
  _mm256_storeu_ps(o, a);
  free(h); free(q);
  float s = 0;
  for (int i = 0; i < 8; i++) s += o[i];
  return s;
}
int main(void) {
  float x[8], dx[8] = {0};
  for (int i = 0; i < 8; i++) x[i] = 0.5f + 0.1f * i;
  for (int rep = 0; rep < 6; rep++) {      /* heap addresses vary */
    void *junk = malloc(16 * (rep + 1));
    for (int i = 0; i < 8; i++) dx[i] = 0;
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx);
    free(junk);
  }
  printf("rev"); for (int i = 0; i < 8; i++) printf(" %.9g", dx[i]); printf("\n");
  printf("fwd");
  for (int i = 0; i < 8; i++) {
    float t[8] = {0}; t[i] = 1;
    printf(" %.9g", __enzyme_fwddiff((void *)f, enzyme_dup, x, t));
  }
  printf("\n");
  return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2"])
def test_shadows_are_aligned_like_their_memory(tmp_path, opt):
    if "avx2" not in Path("/proc/cpuinfo").read_text():
        pytest.skip("the program uses AVX2 (this CPU has none)")
    out = build_and_run(tmp_path, ALIGNED, opt, extra=["-mavx2", "-mfma"])
    assert out.returncode == 0, out.stdout + out.stderr
    v = parse_values(out.stdout)
    # s = sum_i x_i^2 * x_i * (i+1) * x_i * (i+9) = sum_i (i+1)(i+9) x_i^4
    x = [0.5 + 0.1 * i for i in range(8)]
    want = [4 * (i + 1) * (i + 9) * x[i] ** 3 for i in range(8)]
    assert v["rev"] == pytest.approx(want, rel=1e-5)
    assert v["fwd"] == pytest.approx(want, rel=1e-5)
