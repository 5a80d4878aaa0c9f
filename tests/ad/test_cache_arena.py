"""Small caches (a helper's loop caches, allocated on every call of the helper) come
from the thread's arena (``runtime_pool._arena``): after the first gradient, a gradient
that calls such a helper hundreds of times makes (almost) no heap call, and the
derivatives stay right when the sweeps free out of order (split mode: two forward
sweeps, then their reverses in the same order), when another thread runs the reverse
sweep, and under valgrind (no invalid access, nothing left behind) -- also for the
shadows of a helper's local array, which live as long."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from helpers import enzyme_cc
from test_local_tape import HEAP_COUNT
from test_never_silent import OPTS, PRELUDE, run

# a helper whose loop needs a cache of n values, called once per row from f: one
# small cache block per call
HELPER = r"""
static __attribute__((noinline)) double row(const double *x, int n, double t) {
    double s = 0;
    for (int i = 0; i < n; i++) s += sin(x[i] * t) * x[i];
    return s * s;
}
double f(const double *x, int rows, int n) {
    double s = 0;
    for (int r = 0; r < rows; r++) s += row(x, n, 0.1 + 0.01 * r);
    return s;
}
"""

# a helper with a local array that its (not inlined) callee writes: the local's shadow
# is needed in both sweeps, one per call of the helper
LOCALS = r"""
static __attribute__((noinline)) void rotate(const double *x, double t, double *out) {
    out[0] = cos(t) * x[0] - sin(t) * x[1];
    out[1] = sin(t) * x[0] + cos(t) * x[1];
    out[2] = x[2] * t;
}
static __attribute__((noinline)) double point(const double *x, double t) {
    double p[3];
    rotate(x, t, p);
    return p[0] * p[1] + p[2] * p[2] / (1.0 + p[0] * p[0]);
}
double f(const double *x, int rows, int n) {
    double s = 0;
    for (int r = 0; r < rows; r++) s += point(x + r % (n - 2), 0.1 + 0.01 * r);
    return s;
}
"""
# central differences of f, after either helper
FD = r"""
static double fd(double *x, int k, int rows, int n) {
    double v = x[k], h = 1e-6;
    x[k] = v + h; double p = f(x, rows, n);
    x[k] = v - h; double m = f(x, rows, n);
    x[k] = v;
    return (p - m) / (2 * h);
}
"""
HELPER += FD
LOCALS += FD
HELPERS = {"loop_cache": HELPER, "local_array": LOCALS}

STEADY = HEAP_COUNT + HELPER + r"""
int main(void) {
    enum { N = 12, ROWS = 300 };
    double x[N], dx[N];
    for (int i = 0; i < N; i++) x[i] = 0.2 + 0.07 * i;
    long calls = 0;
    for (int rep = 0; rep < 3; rep++) {
        for (int i = 0; i < N; i++) dx[i] = 0;
        long before = heap_calls;
        __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, ROWS, enzyme_const, N);
        calls = heap_calls - before;
    }
    printf("%s heap calls in the third gradient (%d helper calls): %ld\n",
           calls <= 10 ? "ok" : "FAIL", ROWS, calls);
    fails += calls > 10;
    for (int k = 0; k < N; k++) check("dx", dx[k], fd(x, k, ROWS, N));
    return fails;
}
"""

SPLIT_AND_THREADS = r"""
#include <pthread.h>
int enzyme_tape;
void *__enzyme_augmentfwd(void *, ...);
void __enzyme_reverse(void *, ...);
""" + "%(helper)s" + r"""
enum { N = 8, ROWS = 40 };
struct job { double *x, *dx; void *tape; };
static void *reverse_elsewhere(void *p) {
    struct job *j = p;
    __enzyme_reverse((void *)f, enzyme_dup, j->x, j->dx, enzyme_const, ROWS, enzyme_const, N,
                     1.0, j->tape);
    return 0;
}
int main(void) {
    double x1[N], x2[N], d1[N] = {0}, d2[N] = {0}, d3[N] = {0};
    for (int i = 0; i < N; i++) { x1[i] = 0.3 + 0.05 * i; x2[i] = 1.1 - 0.09 * i; }
    for (int rep = 0; rep < 2; rep++) {
        for (int i = 0; i < N; i++) d1[i] = d2[i] = d3[i] = 0;
        /* out of order: both forward sweeps, then the first one's reverse */
        void *t1 = __enzyme_augmentfwd((void *)f, enzyme_dup, x1, d1, enzyme_const, ROWS,
                                       enzyme_const, N);
        void *t2 = __enzyme_augmentfwd((void *)f, enzyme_dup, x2, d2, enzyme_const, ROWS,
                                       enzyme_const, N);
        __enzyme_reverse((void *)f, enzyme_dup, x1, d1, enzyme_const, ROWS, enzyme_const, N,
                         1.0, t1);
        /* a combined gradient in between, on top of t2's blocks */
        __enzyme_autodiff((void *)f, enzyme_dup, x1, d3, enzyme_const, ROWS, enzyme_const, N);
        /* t2's reverse on another thread: its blocks are freed by a thread that does
         * not own them */
        struct job j = {x2, d2, t2};
        pthread_t th;
        pthread_create(&th, 0, reverse_elsewhere, &j);
        pthread_join(th, 0);
    }
    for (int k = 0; k < N; k++) {
        check("split first", d1[k], fd(x1, k, ROWS, N));
        check("combined", d3[k], d1[k]);
        check("other thread", d2[k], fd(x2, k, ROWS, N));
    }
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_helper_caches_need_no_heap_in_steady_state(tmp_path, opt):
    out = run(tmp_path, STEADY, opt)
    assert "ok heap calls in the third gradient" in out, out
    assert out.count("ok dx") == 12, out


@pytest.mark.parametrize("helper", sorted(HELPERS))
@pytest.mark.parametrize("opt", OPTS)
def test_out_of_order_and_cross_thread_frees(tmp_path, opt, valgrind, helper):
    src = Path(tmp_path) / "t.c"
    src.write_text(PRELUDE + SPLIT_AND_THREADS.replace("%(helper)s", HELPERS[helper]))
    exe = Path(tmp_path) / "t"
    r = enzyme_cc([opt, str(src), "-o", str(exe), "-lm", "-pthread"], tmp_path)
    assert r.returncode == 0, r.stderr
    for cmd in ([str(exe)], [valgrind, "-q", "--leak-check=full", "--errors-for-leak-kinds=all",
                             "--error-exitcode=3", str(exe)]):
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0 and "FAIL" not in out.stdout, out.stdout + out.stderr
        assert out.stdout.count("ok ") == 3 * 8, out.stdout
