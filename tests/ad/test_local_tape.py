"""A combined gradient (``__enzyme_autodiff``) whose tape has a size known at compile
time keeps that tape in the caller's frame: no heap call per gradient, and both sweeps
inlined next to each other.  The programs count their own heap calls (they define
``malloc``/``calloc``/``realloc``/``free`` over glibc's ``__libc_*``), compare every
derivative with central differences, and cover branches whose paths push different
amounts, a non-inlined callee with its own tape, two call sites of one gradient, an
``enzyme_out`` scalar, and a loop whose tape grows (which still goes to the heap)."""

from __future__ import annotations

import pytest

from test_never_silent import OPTS, run

HEAP_COUNT = r"""
#include <stddef.h>
extern void *__libc_malloc(size_t), *__libc_calloc(size_t, size_t),
    *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
static long heap_calls;
void *malloc(size_t n) { heap_calls++; return __libc_malloc(n); }
void *calloc(size_t k, size_t n) { heap_calls++; return __libc_calloc(k, n); }
void *realloc(void *p, size_t n) { heap_calls++; return __libc_realloc(p, n); }
void free(void *p) { if (p) heap_calls++; __libc_free(p); }
"""

# a camera-like residual written the way BA's sources write it: an out-parameter pair,
# a branch on the data, a helper that is not inlined and whose derivative needs values
# from the forward sweep
STATIC = HEAP_COUNT + r"""
int enzyme_dupnoneed;
static __attribute__((noinline)) double warp(const double *p, double s) {
    return p[0] * s / (1.0 + p[1] * p[1] * s * s);
}
void resid(const double *p, const double *q, const double *obs, double *err) {
    double r2 = q[0] * q[0] + q[1] * q[1];
    double a, b;
    if (r2 > 0.5) {
        double t = sqrt(r2);
        a = cos(t) * q[0] + sin(t) * p[2];
        b = sin(t) * q[1] - cos(t) * p[2] / t;
    } else {
        a = q[0] + p[2] * r2;
        b = exp(q[1]) * p[2];
    }
    double w = warp(p, a / (1.0 + b * b));
    err[0] = w - obs[0];
    err[1] = (a * b + w * w) / p[3] - obs[1];
}

enum { NOBS = 400 };
int main(void) {
    static double P[4 * 3], Q[2 * NOBS], OBS[2 * NOBS], G[NOBS][2][6];
    for (int j = 0; j < 12; j++) P[j] = 0.4 + 0.13 * j;
    for (int i = 0; i < NOBS; i++) {
        Q[2 * i] = sin(0.7 * i) * 0.9; Q[2 * i + 1] = cos(1.3 * i) * 0.8;
        OBS[2 * i] = 0.1 * (i % 7); OBS[2 * i + 1] = -0.05 * (i % 5);
    }
    double err[2];
    long before = heap_calls;
    for (int i = 0; i < NOBS; i++)
        for (int r = 0; r < 2; r++) {
            double derr[2] = {r == 0, r == 1}, *row = G[i][r];
            const double *p = P + 4 * (i % 3);
            for (int k = 0; k < 6; k++) row[k] = 0;
            if (r == 0)    /* two call sites of the same gradient */
                __enzyme_autodiff((void *)resid, enzyme_dup, p, row, enzyme_dup, Q + 2 * i,
                                  row + 4, enzyme_const, OBS + 2 * i, enzyme_dupnoneed, err,
                                  derr);
            else
                __enzyme_autodiff((void *)resid, enzyme_dup, p, row, enzyme_dup, Q + 2 * i,
                                  row + 4, enzyme_const, OBS + 2 * i, enzyme_dupnoneed, err,
                                  derr);
        }
    long calls = heap_calls - before;
    printf("%s heap calls during %d gradients: %ld\n", calls == 0 ? "ok" : "FAIL",
           2 * NOBS, calls);
    fails += calls != 0;
    for (int i = 0; i < NOBS; i += 37) {
        double *p = P + 4 * (i % 3), *q = Q + 2 * i, e1[2], e2[2];
        for (int r = 0; r < 2; r++)
            for (int k = 0; k < 6; k++) {
                double *v = k < 4 ? &p[k] : &q[k - 4], s = *v, h = 1e-6;
                *v = s + h; resid(p, q, OBS + 2 * i, e1);
                *v = s - h; resid(p, q, OBS + 2 * i, e2);
                *v = s;
                char what[32];
                snprintf(what, sizeof what, "obs %d row %d d%d", i, r, k);
                check(what, G[i][r][k], (e1[r] - e2[r]) / (2 * h));
            }
    }
    return fails;
}
"""

# an active scalar returned by value (enzyme_out), and a loop whose tape grows with n:
# the heap is used there and the gradient is still right
LANES_AND_LOOP = HEAP_COUNT + r"""
double pair(const double *x, double y) { return sin(x[0] * y) * x[1] + x[0] / (1 + y * y); }
double grown(const double *x, int n) {
    double s = 1.0;
    int i = 0;
    while (i < n) { s = s * cos(x[i % 3] + s); i++; }
    return s;
}
int main(void) {
    double x[3] = {0.3, -0.7, 1.1}, y = 0.9;
    double dx[2] = {0};
    long before = heap_calls;
    double dy = __enzyme_autodiff_d((void *)pair, enzyme_dup, x, dx, enzyme_out, y);
    long calls = heap_calls - before;
    printf("%s heap calls in one gradient: %ld\n", calls == 0 ? "ok" : "FAIL", calls);
    fails += calls != 0;
    double h = 1e-6;
    for (int k = 0; k < 2; k++) {
        double s = x[k];
        x[k] = s + h; double fp = pair(x, y);
        x[k] = s - h; double fm = pair(x, y);
        x[k] = s;
        check("pair dx", dx[k], (fp - fm) / (2 * h));
    }
    check("pair dy", dy, (pair(x, y + h) - pair(x, y - h)) / (2 * h));
    double gx[3] = {0};
    __enzyme_autodiff((void *)grown, enzyme_dup, x, gx, enzyme_const, 50);
    for (int k = 0; k < 3; k++) {
        double s = x[k];
        x[k] = s + h; double fp = grown(x, 50);
        x[k] = s - h; double fm = grown(x, 50);
        x[k] = s;
        check("grown dx", gx[k], (fp - fm) / (2 * h));
    }
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_fixed_size_tape_needs_no_heap(tmp_path, opt):
    out = run(tmp_path, STATIC, opt)
    assert "ok heap calls during 800 gradients: 0" in out, out
    assert out.count("ok obs") == 11 * 2 * 6, out


@pytest.mark.parametrize("opt", OPTS)
def test_active_scalar_and_growing_tape(tmp_path, opt):
    out = run(tmp_path, LANES_AND_LOOP, opt)
    assert "ok heap calls in one gradient: 0" in out, out
    assert out.count("ok grown dx") == 3, out
