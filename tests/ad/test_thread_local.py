"""Thread-local variables holding values that carry derivatives.

A ``_Thread_local`` accumulator or work array (a per-thread scratch buffer, a logger's
running sum) written by differentiated code gets a shadow global that is thread-local
too: each thread's copy of the variable has its own shadow, reached through the same
``llvm.threadlocal.address``, so threads computing gradients at once do not mix their
adjoints.  It was "an active value is stored into memory that has no shadow" wherever
the variable stayed in memory (-O0; a helper not inlined).  Inside an OpenMP parallel
region the other threads' shadows cannot be cleared before each derivative call: a
compile error naming the variable.  A thread-local pointer variable holding an
``enzyme_dup`` pointer gets a thread-local shadow global the same way.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import build_and_run, enzyme_cc

COMMON = r"""
#include <math.h>
#include <stdio.h>
int enzyme_dup, enzyme_const, enzyme_width;
double __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);
static _Thread_local double acc;
static _Thread_local double work[4];
__attribute__((noinline)) static void add(double v) { acc += v * v; }
double f(const double *x, int n) {
  acc = 0;
  for (int i = 0; i < n; i++) { work[i % 4] = x[i] * x[i]; add(sin(x[i])); }
  return acc * x[0] + work[1] * work[2];
}
static double want(const double *x, int i) {
  double s = 0;
  for (int k = 0; k < 3; k++) s += sin(x[k]) * sin(x[k]);
  return 2 * sin(x[i]) * cos(x[i]) * x[0] + (i == 0 ? s : 0)
         + (i == 1 ? 2 * x[1] * x[2] * x[2] : 0) + (i == 2 ? 2 * x[2] * x[1] * x[1] : 0);
}
static int wrong(double got, double w) { return fabs(got - w) > 1e-12 * (1 + fabs(w)); }
"""

# four threads computing gradients at once, each through its own copy of the variables
THREADS = COMMON + r"""
#include <pthread.h>
static void *worker(void *arg) {
  long k = (long)arg, bad = 0;
  for (int it = 0; it < 2000; it++) {
    double x[3] = {0.3 + 0.1 * k, 0.7 - 0.05 * k, 1.1 + 0.01 * it}, g[3] = {0};
    double t[3] = {0, 1, 0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, g, enzyme_const, 3);
    double d = __enzyme_fwddiff((void *)f, enzyme_dup, x, t, enzyme_const, 3);
    for (int i = 0; i < 3; i++) bad += wrong(g[i], want(x, i));
    bad += wrong(d, want(x, 1));
  }
  return (void *)bad;
}
int main(void) {
  pthread_t th[4];
  for (long k = 0; k < 4; k++) pthread_create(&th[k], 0, worker, (void *)k);
  long bad = 0;
  for (int k = 0; k < 4; k++) { void *r; pthread_join(th[k], &r); bad += (long)r; }
  printf("wrong %ld\n", bad);
  return bad != 0;
}
"""

# forward mode with two tangents at once: a thread-local shadow per lane
VECTOR = COMMON + r"""
typedef struct { double d[2]; } v2;
v2 __enzyme_fwddiff_v2(void *, ...);
int main(void) {
  double x[3] = {0.4, 0.9, 1.3}, t0[3] = {1, 0, 0}, t1[3] = {0, 0, 1};
  v2 d = __enzyme_fwddiff_v2((void *)f, enzyme_width, 2, enzyme_dup, x, t0, t1,
                             enzyme_const, 3);
  printf("%.17g %.17g %.17g %.17g\n", d.d[0], want(x, 0), d.d[1], want(x, 2));
  return wrong(d.d[0], want(x, 0)) || wrong(d.d[1], want(x, 2));
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_threads_computing_gradients_at_once(tmp_path, opt):
    out = build_and_run(tmp_path, THREADS, opt, extra=("-lpthread",))
    assert out.returncode == 0 and out.stdout.strip() == "wrong 0", out.stdout + out.stderr


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_vector_forward_mode(tmp_path, opt):
    out = build_and_run(tmp_path, VECTOR, opt)
    assert out.returncode == 0, out.stdout + out.stderr


# a thread-local pointer to the current input (a per-thread "context"), bound by one
# helper and read by another: its shadow global is thread-local too, and holds each
# thread's shadow of the input; read before the code binds it, the derivative stops
# with a message (what the caller left there has no shadow)
BOUND = r"""
#include <math.h>
#include <pthread.h>
#include <stdio.h>
int enzyme_dup, enzyme_const;
double __enzyme_autodiff(void *, ...);
static _Thread_local double *g_x;
__attribute__((noinline)) static void bind(double *x) { g_x = x; }
__attribute__((noinline)) static double term(int i) { return g_x[i] * g_x[i]; }
double f(double *x, int n) {
#ifdef EARLY
  double s = term(0);
#else
  double s = 0;
#endif
  bind(x);
  for (int i = 0; i < n; i++) s += sin(term(i));
  return s;
}
static double other[3] = {1, 2, 3};
static void *worker(void *arg) {
  long k = (long)arg, bad = 0;
  g_x = other;    /* what the program left there: no shadow */
  for (int it = 0; it < 2000; it++) {
    double x[3] = {0.3 + 0.1 * k, 0.7, 1.1 - 0.001 * it}, g[3] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, g, enzyme_const, 3);
    for (int i = 0; i < 3; i++)
      bad += fabs(g[i] - cos(x[i] * x[i]) * 2 * x[i]) > 1e-12;
  }
  return (void *)bad;
}
int main(void) {
  pthread_t th[3];
  for (long k = 0; k < 3; k++) pthread_create(&th[k], 0, worker, (void *)k);
  long bad = 0;
  for (int k = 0; k < 3; k++) { void *r; pthread_join(th[k], &r); bad += (long)r; }
  printf("wrong %ld\n", bad);
  return bad != 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_thread_local_pointer_to_the_input(tmp_path, opt):
    out = build_and_run(tmp_path, BOUND, opt, extra=("-lpthread",))
    assert out.returncode == 0 and out.stdout.strip() == "wrong 0", out.stdout + out.stderr


def test_thread_local_pointer_read_before_it_is_bound_stops(tmp_path):
    out = build_and_run(tmp_path, BOUND, "-O2", extra=("-DEARLY", "-lpthread"))
    assert out.returncode != 0
    assert "the pointer in global 'g_x' was read by the derivative before" in out.stderr


IN_REGION = r"""
#include <math.h>
int enzyme_dup, enzyme_const;
double __enzyme_autodiff(void *, ...);
static double part;
#pragma omp threadprivate(part)
void f(const double *x, double *out, int n) {
  double s = 0;
#pragma omp parallel reduction(+ : s)
  {
    part = 0;
#pragma omp for
    for (int i = 0; i < n; i++) part += sin(x[i]);
    s += part * part;
  }
  *out = s;
}
int main(void) {
  double x[8] = {0}, g[8] = {0}, o = 0, d = 1;
  __enzyme_autodiff((void *)f, enzyme_dup, x, g, enzyme_dup, &o, &d, enzyme_const, 8);
  return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_threadprivate_inside_a_parallel_region_is_an_error(tmp_path, opt):
    src = Path(tmp_path) / "p.c"
    src.write_text(IN_REGION)
    exe = Path(tmp_path) / "p"
    r = enzyme_cc([opt, "-g", "-fopenmp", str(src), "-o", str(exe), "-lm"], tmp_path)
    assert r.returncode != 0 and not exe.exists(), r.stderr
    assert "p.c:11" in r.stderr and "thread-local variable 'part'" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
