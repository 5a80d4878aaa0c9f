"""Automatic differentiation through OpenMP (issue 13): programs written the way people
write OpenMP -- a heat stencil stepped by ``parallel for``, a matrix-vector product
with an inner loop per row, ``reduction(+:s)``, static-chunked, dynamic and guided
schedules with a helper called from the loop body, one region with ``for nowait``,
``barrier``, ``single``, ``critical`` and ``atomic``, and a ``num_threads(3)``
clause, a region nested in a parallel loop, an ``if()`` clause and memcpy of shared
windows -- built with ``-fopenmp`` at -O0 and -O2 and run at OMP_NUM_THREADS=1, 2
and 3.  Reverse-mode gradients and forward-mode directional derivatives are
checked against central differences inside the program (``FAIL`` lines), and
must agree across thread counts to rounding.  Constructs without a rule (tasks,
a firstprivate active double) are compile errors naming the construct and line."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from helpers import enzyme_cc

OPTS = ["-O0", "-O2"]

PROGRAM = r"""
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>
int enzyme_dup, enzyme_const, enzyme_out, enzyme_dupnoneed;
void __enzyme_autodiff(void *, ...);
double __enzyme_autodiff_d(void *, ...);
double __enzyme_fwddiff_d(void *, ...);
static int fails;

#define N 23
#define M 7

/* 1-D heat equation, explicit steps; each step a parallel for over the interior */
double heat(const double *u0, double k, int steps)
{
    double a[N], b[N];
    memcpy(a, u0, sizeof a);
    for (int t = 0; t < steps; t++) {
#pragma omp parallel for
        for (int i = 1; i < N - 1; i++)
            b[i] = a[i] + k * (a[i - 1] - 2.0 * a[i] + a[i + 1]);
        b[0] = a[0];
        b[N - 1] = a[N - 1];
        memcpy(a, b, sizeof a);
    }
    double s = 0.0;
#pragma omp parallel for reduction(+ : s)
    for (int i = 0; i < N; i++)
        s += a[i] * a[i] * (1.0 + 0.1 * i);
    return s;
}

/* dense matrix-vector product, rows in parallel, an inner loop per row; then a
   nonlinear loss with a reduction */
double matvec(const double *A, const double *x)
{
    double y[M];
#pragma omp parallel for
    for (int i = 0; i < M; i++) {
        double acc = 0.0;
        for (int j = 0; j < N; j++)
            acc += A[i * N + j] * x[j];
        y[i] = tanh(acc);
    }
    double s = 0.0;
#pragma omp parallel for reduction(+ : s)
    for (int i = 0; i < M; i++)
        s += y[i] * y[i];
    return s;
}

__attribute__((noinline)) static double term(const double *x, int i)
{
    return sin(x[i]) * x[(i + 3) % N] + sqrt(1.0 + x[i] * x[i]);
}

/* schedules other than the default; a helper called from the loop body */
double sched(const double *x)
{
    double s = 0.0, t = 0.0, u = 0.0;
#pragma omp parallel for schedule(static, 3) reduction(+ : s)
    for (int i = 0; i < N; i++)
        s += term(x, i);
#pragma omp parallel for schedule(dynamic, 2) reduction(+ : t)
    for (int i = 0; i < N; i++)
        t += x[i] * exp(0.2 * x[(i + 1) % N]);
#pragma omp parallel for schedule(guided) reduction(+ : u)
    for (int i = 0; i < N; i++)
        u += cos(x[i]) * x[(i + 5) % N];
    return s * t + u;
}

/* one parallel region: for nowait, barrier, single, critical, atomic, max thread */
double region(const double *x, double *w)
{
    double total = 0.0;
#pragma omp parallel
    {
        double part = 0.0;
#pragma omp for nowait
        for (int i = 0; i < N; i++)
            w[i] = x[i] * x[i];
#pragma omp barrier
#pragma omp for
        for (int i = 0; i < N; i++) {
            part += w[(i + 1) % N] * x[i];
#pragma omp atomic
            w[N] += 0.5 * x[i];
        }
#pragma omp single
        w[N + 1] = w[N] * w[0];
#pragma omp critical
        total += part;
    }
    return total + w[N + 1];
}

/* a region that asks for 3 threads whatever OMP_NUM_THREADS says; the element
   i of the result reads x[i-1], x[i], x[i+1] (neighbouring threads' iterations).
   With the if() clause the request comes before the branch between the fork and the
   serialized region (at OMP_NUM_THREADS=1 the gradient aborted: "ran with more threads
   than omp_get_max_threads() ... said") */
int min_parallel = 4;     /* a setting read at run time */
double three(const double *x, double *y)
{
#pragma omp parallel for num_threads(3) if (N > min_parallel)
    for (int i = 0; i < N; i++) {
        double l = i > 0 ? x[i - 1] : 0.0, r = i < N - 1 ? x[i + 1] : 0.0;
        y[i] = l * x[i] + exp(-r * r);
    }
    double s = 0.0;
    for (int i = 0; i < N; i++)
        s += y[i] * (1.0 + 0.01 * i);
    return s;
}

/* two sections accumulating into shared locals: at -O1 and up the outlined region's
   pointers to them say align 1, and the adjoint's atomic additions became calls into
   libatomic ("undefined reference to __atomic_compare_exchange") */
double sections(const double *x, int n)
{
    double a = 0, b = 0;
#pragma omp parallel sections
    {
#pragma omp section
        for (int i = 0; i < n; i++) a += sin(x[i]);
#pragma omp section
        for (int i = 0; i < n; i++) b += x[i] * x[i];
    }
    return a * b;
}
static double f_sections(const double *x) { return sections(x, N); }

/* a local counter updated atomically beside active data (how many terms were
   positive): "'atomicrmw add i32' on memory that carries derivatives" before -- the
   counter's only access in the region is the atomic, and its type came from the
   fork call that passes the local, which type analysis did not follow */
double counted(const double *x)
{
    int positive = 0;
    double s = 0;
#pragma omp parallel for reduction(+ : s)
    for (int i = 0; i < N; i++) {
        if (x[i] > 0.3) {
#pragma omp atomic
            positive++;
        }
        s += x[i] * x[i];
    }
    return s * (1 + positive);
}

static double fd(double (*f)(const double *), double *x, int i)
{
    double save = x[i], h = 1e-6 * (fabs(save) > 1 ? fabs(save) : 1);
    x[i] = save + h;
    double fp = f(x);
    x[i] = save - h;
    double fm = f(x);
    x[i] = save;
    return (fp - fm) / (2 * h);
}

static double A_[M * N];
static double f_heat(const double *x) { return heat(x, 0.2, 5); }
static double f_matvec(const double *x) { return matvec(A_, x); }
static double f_sched(const double *x) { return sched(x); }
static double f_three(const double *x) { double y[N]; return three(x, y); }
static double f_region(const double *x) { double w[N + 2] = {0}; return region(x, w); }

static void check(const char *name, const double *g, double (*f)(const double *), double *x)
{
    printf("%s", name);
    for (int i = 0; i < N; i++)
        printf(" %.17g", g[i]);
    printf("\n");
    for (int i = 0; i < N; i++) {
        double want = fd(f, x, i), scale = fabs(want) > 1e-2 ? fabs(want) : 1e-2;
        if (!(fabs(g[i] - want) / scale <= 1e-5)) {
            printf("FAIL %s[%d] got %.12g want %.12g\n", name, i, g[i], want);
            fails++;
        }
    }
}

int main(void)
{
    double x[N], dx[N], v[N];
    for (int i = 0; i < N; i++) {
        x[i] = 0.4 + 0.05 * i - 0.3 * (i % 4 == 1);
        v[i] = 1.0 - 0.07 * i;
    }
    for (int i = 0; i < M * N; i++)
        A_[i] = 0.05 * ((i * 7) % 11) - 0.2;
    printf("threads %d\n", omp_get_max_threads());

    memset(dx, 0, sizeof dx);
    __enzyme_autodiff((void *)heat, enzyme_dup, x, dx, enzyme_const, 0.2, enzyme_const, 5);
    check("heat", dx, f_heat, x);

    memset(dx, 0, sizeof dx);
    __enzyme_autodiff((void *)matvec, enzyme_const, A_, enzyme_dup, x, dx);
    check("matvec", dx, f_matvec, x);

    memset(dx, 0, sizeof dx);
    __enzyme_autodiff((void *)sched, enzyme_dup, x, dx);
    check("sched", dx, f_sched, x);

    {
        double w[N + 2] = {0}, dw[N + 2] = {0};
        memset(dx, 0, sizeof dx);
        __enzyme_autodiff((void *)region, enzyme_dup, x, dx, enzyme_dup, w, dw);
        check("region", dx, f_region, x);
    }

    {
        double y[N], dy[N] = {0};
        memset(dx, 0, sizeof dx);
        __enzyme_autodiff((void *)three, enzyme_dup, x, dx, enzyme_dupnoneed, y, dy);
        check("three", dx, f_three, x);
    }

    memset(dx, 0, sizeof dx);
    __enzyme_autodiff((void *)sections, enzyme_dup, x, dx, enzyme_const, N);
    check("sections", dx, f_sections, x);

    memset(dx, 0, sizeof dx);
    __enzyme_autodiff((void *)counted, enzyme_dup, x, dx);
    check("counted", dx, counted, x);

    /* forward mode: directional derivatives against the reverse gradients */
    {
        double (*fs[])(const double *) = {f_heat, f_matvec, f_sched, f_region};
        const char *names[] = {"fwd_heat", "fwd_matvec", "fwd_sched", "fwd_region"};
        double fw[4];
        fw[0] = __enzyme_fwddiff_d((void *)heat, enzyme_dup, x, v, enzyme_const, 0.2,
                                   enzyme_const, 5);
        fw[1] = __enzyme_fwddiff_d((void *)matvec, enzyme_const, A_, enzyme_dup, x, v);
        fw[2] = __enzyme_fwddiff_d((void *)sched, enzyme_dup, x, v);
        {
            double w[N + 2] = {0}, dw[N + 2] = {0};
            fw[3] = __enzyme_fwddiff_d((void *)region, enzyme_dup, x, v, enzyme_dup, w, dw);
        }
        for (int k = 0; k < 4; k++) {
            double xp[N], xm[N], eps = 1e-6;
            for (int i = 0; i < N; i++) {
                xp[i] = x[i] + eps * v[i];
                xm[i] = x[i] - eps * v[i];
            }
            double want = (fs[k](xp) - fs[k](xm)) / (2 * eps);
            double scale = fabs(want) > 1e-2 ? fabs(want) : 1e-2;
            printf("%s %.17g\n", names[k], fw[k]);
            if (!(fabs(fw[k] - want) / scale <= 1e-5)) {
                printf("FAIL %s got %.12g want %.12g\n", names[k], fw[k], want);
                fails++;
            }
        }
    }
    return fails ? 1 : 0;
}
"""

NESTED = r"""
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>
int enzyme_dup, enzyme_const, enzyme_out;
void __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff_d(void *, ...);
#define N 20
static int fails;

/* a parallel region inside a function called from a parallel loop (nested: the
   inner team has one thread unless nesting is enabled) */
double inner(const double *x, int i)
{
    double s = 0.0;
#pragma omp parallel for reduction(+ : s)
    for (int j = 0; j < N; j++)
        s += sin(x[j] * (i + 1));
    return s;
}

/* if() clause: below the threshold the region runs serialized */
double outer(const double *x, int n)
{
    double s = 0.0;
#pragma omp parallel for reduction(+ : s) if (n > 5)
    for (int i = 0; i < n; i++)
        s += x[i] * inner(x, i);
    return s;
}

/* memcpy of overlapping windows of shared data into a private buffer */
__attribute__((noinline)) static void grab(double *dst, const double *src, int k)
{
    memcpy(dst, src, k * sizeof(double));
}
double windows(const double *x, int n)
{
    double s = 0.0;
#pragma omp parallel for reduction(+ : s)
    for (int i = 0; i < n - 3; i++) {
        double w[4];
        grab(w, x + i, 4);
        s += w[0] * w[1] + sin(w[2]) * w[3];
    }
    return s;
}

static double v[N];

/* dx: the reverse-mode gradient, fw: the forward-mode derivative along v */
static void check(const char *name, double (*f)(const double *, int), int n, double *x,
                  const double *dx, double fw)
{
    double xp[N], xm[N], eps = 1e-6, dir = 0.0;
    printf("%s%d", name, n);
    for (int i = 0; i < N; i++) {
        double s = x[i], h = 1e-6;
        x[i] = s + h;
        double fp = f(x, n);
        x[i] = s - h;
        double fm = f(x, n);
        x[i] = s;
        double want = (fp - fm) / (2 * h);
        printf(" %.17g", dx[i]);
        if (!(fabs(dx[i] - want) <= 1e-5 * fmax(fabs(want), 1e-2))) {
            printf("\nFAIL %s dx[%d] got %.12g want %.12g\n", name, i, dx[i], want);
            fails++;
        }
        xp[i] = x[i] + eps * v[i];
        xm[i] = x[i] - eps * v[i];
        dir += dx[i] * v[i];
    }
    printf("\n");
    double want = (f(xp, n) - f(xm, n)) / (2 * eps);
    printf("fwd_%s%d %.17g\n", name, n, fw);
    if (!(fabs(fw - want) <= 1e-5 * fmax(fabs(want), 1e-2)) ||
        !(fabs(fw - dir) <= 1e-10 * fmax(fabs(dir), 1e-2))) {
        printf("FAIL fwd %s got %.12g want %.12g (J^T v %.12g)\n", name, fw, want, dir);
        fails++;
    }
}

int main(void)
{
    double x[N];
    for (int i = 0; i < N; i++)
        x[i] = 0.1 * i - 0.5;
    printf("threads %d\n", omp_get_max_threads());
    for (int i = 0; i < N; i++)
        v[i] = 1.0 - 0.05 * i;
    for (int n = 4; n <= N; n += N - 4) {
        double dx[N] = {0};
        __enzyme_autodiff((void *)outer, enzyme_dup, x, dx, enzyme_const, n);
        check("outer", outer, n, x, dx, __enzyme_fwddiff_d((void *)outer, enzyme_dup, x, v,
                                                         enzyme_const, n));
    }
    double dx[N] = {0};
    __enzyme_autodiff((void *)windows, enzyme_dup, x, dx, enzyme_const, N);
    check("windows", windows, N, x, dx, __enzyme_fwddiff_d((void *)windows, enzyme_dup, x, v,
                                                         enzyme_const, N));
    return fails ? 1 : 0;
}
"""

ORDERED = r"""
#include <math.h>
#include <omp.h>
#include <stdio.h>
int enzyme_dup, enzyme_const, enzyme_out;
void __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff_d(void *, ...);
#define N 16
static int fails;

/* max and product reductions: the combining steps' adjoints depend on their order */
double maxprod(const double *x)
{
    double m = -1e300, p = 1.0;
#pragma omp parallel for reduction(max : m) reduction(* : p)
    for (int i = 0; i < N; i++) {
        m = fmax(m, sin(x[i]) * 3.0);
        p *= 1.0 + 0.1 * x[i];
    }
    return m + p;
}

/* a product folded in a critical section, and a lock */
double crit(const double *x)
{
    double y = 1.0, z = 2.0;
    omp_lock_t lock;
    omp_init_lock(&lock);
#pragma omp parallel
    {
        double part = 1.0;
#pragma omp for
        for (int i = 0; i < N; i++)
            part *= 1.0 + 0.05 * x[i] * x[i];
#pragma omp critical
        y *= part;
        omp_set_lock(&lock);
        z *= sqrt(part);
        omp_unset_lock(&lock);
    }
    omp_destroy_lock(&lock);
    return y + z;
}

/* an array section reduction (a histogram), then a nonlinear use of the bins */
double histo(const double *x)
{
    double h[4] = {0, 0, 0, 0};
#pragma omp parallel for reduction(+ : h[:4])
    for (int i = 0; i < N; i++)
        h[i % 4] += x[i] * x[i];
    return h[0] * h[1] + h[2] * h[3] + h[1] * h[1];
}

static void check(const char *name, double (*f)(const double *), double *x, const double *dx,
                  double fw)
{
    double dir = 0.0, xp[N], xm[N];
    printf("%s", name);
    for (int i = 0; i < N; i++) {
        double s = x[i], h = 1e-6;
        x[i] = s + h;
        double fp = f(x);
        x[i] = s - h;
        double fm = f(x);
        x[i] = s;
        double want = (fp - fm) / (2 * h);
        printf(" %.17g", dx[i]);
        if (!(fabs(want - dx[i]) <= 1e-5 * fmax(fabs(want), 1e-2))) {
            printf("\nFAIL %s dx[%d] got %.12g want %.12g\n", name, i, dx[i], want);
            fails++;
        }
        dir += dx[i];
        xp[i] = x[i] + 1e-6;
        xm[i] = x[i] - 1e-6;
    }
    printf("\nfwd_%s %.17g\n", name, fw);
    double want = (f(xp) - f(xm)) / 2e-6;
    if (!(fabs(fw - want) <= 1e-5 * fmax(fabs(want), 1e-2)) ||
        !(fabs(fw - dir) <= 1e-10 * fmax(fabs(dir), 1e-2))) {
        printf("FAIL fwd %s got %.12g want %.12g (sum of gradient %.12g)\n", name, fw, want,
               dir);
        fails++;
    }
}

int main(void)
{
    double x[N], v[N];
    for (int i = 0; i < N; i++) {
        x[i] = 0.1 * i - 0.3;
        v[i] = 1.0;
    }
    printf("threads %d\n", omp_get_max_threads());
    double dx[N] = {0}, dy[N] = {0};
    __enzyme_autodiff((void *)maxprod, enzyme_dup, x, dx);
    check("maxprod", maxprod, x, dx, __enzyme_fwddiff_d((void *)maxprod, enzyme_dup, x, v));
    __enzyme_autodiff((void *)crit, enzyme_dup, x, dy);
    check("crit", crit, x, dy, __enzyme_fwddiff_d((void *)crit, enzyme_dup, x, v));
    double dh[N] = {0};
    __enzyme_autodiff((void *)histo, enzyme_dup, x, dh);
    check("histo", histo, x, dh, __enzyme_fwddiff_d((void *)histo, enzyme_dup, x, v));
    return fails ? 1 : 0;
}
"""

SPLIT = r"""
#include <math.h>
#include <stdio.h>
int enzyme_dup, enzyme_const, enzyme_out, enzyme_width, enzyme_dupv;
void *__enzyme_augmentfwd(void *, ...);
void __enzyme_reverse(void *, ...);
typedef struct { double d[2]; } v2;
v2 __enzyme_fwddiff_v(void *, ...);
#define N 16
double f(const double *x)
{
    double s = 0.0;
#pragma omp parallel for reduction(+ : s)
    for (int i = 0; i < N; i++)
        s += sin(x[i]) * x[(i + 1) % N];
    return s;
}
int main(void)
{
    double x[N], dx[N] = {0}, v[2 * N];
    for (int i = 0; i < N; i++) {
        x[i] = 0.1 * i;
        v[i] = 1.0;
        v[N + i] = (i == 3);
    }
    void *tape = __enzyme_augmentfwd((void *)f, enzyme_dup, x, dx);
    __enzyme_reverse((void *)f, enzyme_dup, x, dx, 1.0, tape);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        double want = cos(x[i]) * x[(i + 1) % N] + sin(x[(i + N - 1) % N]);
        if (fabs(dx[i] - want) > 1e-12) {
            bad++;
            printf("FAIL split mode dx[%d] %g, want %g\n", i, dx[i], want);
        }
    }
    v2 d = __enzyme_fwddiff_v((void *)f, enzyme_width, 2, enzyme_dupv, sizeof(double) * N, x, v);
    double s0 = 0;
    for (int i = 0; i < N; i++)
        s0 += dx[i];
    if (fabs(d.d[0] - s0) > 1e-12 * fabs(s0) || fabs(d.d[1] - dx[3]) > 1e-12) {
        printf("FAIL width 2: %g %g, want %g %g\n", d.d[0], d.d[1], s0, dx[3]);
        bad++;
    }
    printf("%s\n", bad ? "FAIL" : "all ok");
    return bad;
}
"""

HIGHER = r"""
#include <math.h>
#include <stdio.h>
int enzyme_dup, enzyme_const, enzyme_dupnoneed;
double __enzyme_fwddiff(void *, ...);
void __enzyme_autodiff(void *, ...);
#define N 12
double f(const double *x)
{
    double s = 0.0;
#pragma omp parallel for reduction(+ : s)
    for (int i = 0; i < N; i++)
        s += sin(x[i]) * x[(i + 1) % N];
    return s;
}
double df(const double *x, const double *v) { return __enzyme_fwddiff((void *)f, enzyme_dup, x, v); }
int main(void)
{
    double x[N], v[N], w[N], dx[N] = {0};
    for (int i = 0; i < N; i++) {
        x[i] = 0.1 * i;
        v[i] = (i == 2);
        w[i] = (i == 2);
    }
    double h = __enzyme_fwddiff((void *)df, enzyme_dup, x, w, enzyme_const, v);
    __enzyme_autodiff((void *)df, enzyme_dup, x, dx, enzyme_const, v);
    /* d2f/dx2^2 = -sin(x2) x3 ; grad of df along e2: row 2 of H */
    /* df = d f / d x2 = cos(x2) x3 + sin(x1) */
    double want[N] = {0};
    want[1] = cos(x[1]);
    want[2] = -sin(x[2]) * x[3];
    want[3] = cos(x[2]);
    int bad = fabs(h - want[2]) > 1e-12;
    for (int i = 0; i < N; i++)
        bad += fabs(dx[i] - want[i]) > 1e-12;
    printf("%s\n", bad ? "FAIL" : "all ok");
    return bad;
}
"""

HVP = r"""
#include <math.h>
#include <stdio.h>
int enzyme_dup, enzyme_const, enzyme_dupnoneed;
void __enzyme_autodiff(void *, ...);
void __enzyme_fwddiff(void *, ...);
#define N 12
double f(const double *x)
{
    double s = 0.0;
#pragma omp parallel for reduction(+ : s)
    for (int i = 0; i < N; i++)
        s += sin(x[i]) * x[(i + 1) % N];
    return s;
}
void grad(const double *x, double *g)
{
    for (int i = 0; i < N; i++) g[i] = 0;
    __enzyme_autodiff((void *)f, enzyme_dup, x, g);
}
int main(void)
{
    double x[N], v[N], g[N], hv[N];
    for (int i = 0; i < N; i++) { x[i] = 0.1 * i; v[i] = (i == 2); hv[i] = 0; }
    __enzyme_fwddiff((void *)grad, enzyme_dup, x, v, enzyme_dupnoneed, g, hv);
    /* H e2: d/dx2 of g_j. g_j = cos(x_j) x_{j+1} + sin(x_{j-1}) */
    for (int j = 0; j < N; j++) {
        double want = 0;
        if (j == 2) want += -sin(x[2]) * x[3];
        if (j + 1 == 2 || (j == N - 1 && 2 == 0)) want += cos(x[j]);
        if ((j + N - 1) % N == 2) want += cos(x[2]);
        printf("hv[%d] %g want %g\n", j, hv[j], want);
    }
    return 0;
}
"""

TASKS = r"""
#include <math.h>
int enzyme_dup, enzyme_const, enzyme_out;
double __enzyme_autodiff(void *, ...);
double tasks(const double *x, int n)
{
    double s = 0.0;
#pragma omp parallel
#pragma omp single
    for (int i = 0; i < n; i++) {
#pragma omp task shared(s)
        {
#pragma omp atomic
            s += sin(x[i]);
        }
    }
    return s;
}
double g(const double *x, double *dx) { return __enzyme_autodiff((void *)tasks, enzyme_dup, x, dx, enzyme_const, 4); }
int main(void){return 0;}
"""

# firstprivate floats: the region gets its own copy of alpha (and of beta, which each
# thread then changes); clang passes their bits by value to the region.  Before: "a
# floating-point value that carries a derivative is passed into the parallel region by
# value (firstprivate); not supported" (real Enzyme 15 builds it).
FIRSTPRIVATE = r"""
#include <math.h>
#include <omp.h>
#include <stdio.h>
int enzyme_dup, enzyme_const, enzyme_out;
double __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);
#define N 17
double g(double alpha, const double *x, double *y, int n)
{
    float beta = 0.5f * (float)alpha;
#pragma omp parallel for default(none) firstprivate(alpha, beta, n) shared(x, y)
    for (int i = 0; i < n; i++) {
        beta += 0.25f;                      /* the thread's own copy */
        y[i] = alpha * x[i] * x[i] + sin(alpha * i) + 0.0 * beta;
    }
    double s = 0;
    for (int i = 0; i < n; i++) s += y[i] * (1 + 0.1 * i);
    return s;
}
int main(void)
{
    double x[N], dx[N] = {0}, y[N], dy[N] = {0}, a = 0.7, h = 1e-6;
    for (int i = 0; i < N; i++) x[i] = 0.1 * i - 0.4;
    printf("threads %d\n", omp_get_max_threads());
    double da = __enzyme_autodiff((void *)g, enzyme_out, a, enzyme_dup, x, dx, enzyme_dup, y,
                                  dy, enzyme_const, N);
    double t[N] = {0}, ty[N];
    double fa = __enzyme_fwddiff((void *)g, a, 1.0, enzyme_dup, x, t, enzyme_dup, y, ty,
                                 enzyme_const, N);
    double fd = (g(a + h, x, y, N) - g(a - h, x, y, N)) / (2 * h);
    printf("dalpha %.17g %.17g %.17g\n", da, fa, fd);
    printf("dx5 %.17g %.17g\n", dx[5], 2 * a * x[5] * (1 + 0.5));
    return 0;
}
"""


def _build(tmp_path, source, opt, name="t"):
    src = Path(tmp_path) / f"{name}.c"
    src.write_text(source)
    r = enzyme_cc([opt, "-g", "-fopenmp", str(src), "-o", str(Path(tmp_path) / name), "-lm"],
                  tmp_path)
    if r.returncode and "no OpenMP runtime found" in r.stderr:
        if os.environ.get("CI"):
            pytest.fail(r.stderr)
        pytest.skip(r.stderr.strip())
    return r


def _values(stdout):
    out = {}
    for line in stdout.splitlines():
        parts = line.split()
        if parts and parts[0] not in ("threads", "FAIL"):
            out[parts[0]] = [float(x) for x in parts[1:]]
    return out


def _run_threads(tmp_path, source, opt):
    """Build ``source``, run it at 1, 2 and 3 threads: {threads: {name: values}}."""
    r = _build(tmp_path, source, opt)
    assert r.returncode == 0, r.stderr
    runs = {}
    for threads in (1, 2, 3):
        env = dict(os.environ, OMP_NUM_THREADS=str(threads), OMP_DYNAMIC="false")
        out = subprocess.run([str(Path(tmp_path) / "t")], env=env, capture_output=True,
                             text=True, timeout=120)
        assert f"threads {threads}" in out.stdout
        assert "FAIL" not in out.stdout and out.returncode == 0, (threads, out.stdout,
                                                                  out.stderr)
        runs[threads] = _values(out.stdout)
    return runs


def _same_across_threads(runs, names):
    assert set(runs[1]) == names
    for threads in (2, 3):
        for name in names:
            for a, b in zip(runs[1][name], runs[threads][name], strict=True):
                assert abs(a - b) <= 1e-12 * max(abs(a), 1e-2), (name, threads, a, b)


@pytest.mark.parametrize("opt", OPTS)
def test_gradients_through_parallel_regions(tmp_path, opt):
    runs = _run_threads(tmp_path, PROGRAM, opt)
    _same_across_threads(runs, {"heat", "matvec", "sched", "region", "three", "sections",
                                "counted", "fwd_heat",
                                "fwd_matvec", "fwd_sched", "fwd_region"})


@pytest.mark.parametrize("opt", OPTS)
def test_nested_regions_if_clause_and_copies_of_shared_data(tmp_path, opt):
    """A region in a function called from a parallel loop, an ``if()`` clause that
    serializes the region for small n, and memcpy of overlapping windows of shared
    data (the copy's adjoint adds into shared memory: atomically)."""
    runs = _run_threads(tmp_path, NESTED, opt)
    _same_across_threads(runs, {"outer4", "outer20", "windows20", "fwd_outer4",
                                "fwd_outer20", "fwd_windows20"})


@pytest.mark.parametrize("opt", OPTS)
def test_max_and_product_reductions_critical_sections_and_locks(tmp_path, opt):
    """Combining steps whose adjoints depend on their order (``s = s * p``, max) under
    the reduction's lock, a critical section and an omp_lock_t local to the function:
    the reverse sweep runs them in the reverse of the forward order.  And an array
    section reduction."""
    runs = _run_threads(tmp_path, ORDERED, opt)
    _same_across_threads(runs, {"maxprod", "crit", "histo", "fwd_maxprod", "fwd_crit",
                                "fwd_histo"})


@pytest.mark.parametrize("opt", OPTS)
def test_split_mode_and_vector_forward_mode(tmp_path, opt):
    """__enzyme_augmentfwd / __enzyme_reverse (the team of tapes lives in the split
    tape) and __enzyme_fwddiff with enzyme_width 2 through a parallel reduction,
    against the analytic gradient."""
    r = _build(tmp_path, SPLIT, opt)
    assert r.returncode == 0, r.stderr
    for threads in ("1", "3"):
        out = subprocess.run([str(Path(tmp_path) / "t")], capture_output=True, text=True,
                             env=dict(os.environ, OMP_NUM_THREADS=threads), timeout=60)
        assert out.returncode == 0 and out.stdout.strip() == "all ok", out.stdout


@pytest.mark.parametrize("opt", OPTS)
def test_forward_over_forward_and_reverse_over_forward(tmp_path, opt):
    r = _build(tmp_path, HIGHER, opt)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(Path(tmp_path) / "t")], capture_output=True, text=True,
                         env=dict(os.environ, OMP_NUM_THREADS="3"), timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "all ok", out.stdout


def test_higher_order_through_reverse_mode_code_of_a_region_is_an_error(tmp_path):
    r = _build(tmp_path, HVP, "-O2")
    assert r.returncode == 1
    assert "higher-order derivative through reverse-mode derivative code of an OpenMP " \
           "parallel region is not supported" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("opt", OPTS)
def test_tasks_are_an_error_naming_the_construct(tmp_path, opt):
    r = _build(tmp_path, TASKS, opt)
    assert r.returncode == 1
    assert "OpenMP tasks" in r.stderr and "cannot be differentiated" in r.stderr
    assert "t.c:11" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("opt", OPTS)
def test_firstprivate_floats(tmp_path, opt):
    r = _build(tmp_path, FIRSTPRIVATE, opt)
    assert r.returncode == 0, r.stderr
    for threads in (1, 2, 3):
        env = dict(os.environ, OMP_NUM_THREADS=str(threads), OMP_DYNAMIC="false")
        out = subprocess.run([str(Path(tmp_path) / "t")], env=env, capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        v = _values(out.stdout)
        rev, fwd, fd = v["dalpha"]
        assert rev == pytest.approx(fd, rel=1e-6) and fwd == pytest.approx(rev, rel=1e-12)
        assert v["dx5"][0] == pytest.approx(v["dx5"][1], rel=1e-12)


COMBINED = r"""
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>
int enzyme_dup, enzyme_const;
void __enzyme_autodiff(void *, ...);
#define NB 3000
static int fails;
static int self_[3 * NB];

/* The reverse of a region combines each thread's adjoint additions in a table
   (combine.py).  Here: every iteration adds into the same few parameter adjoints
   (p: shared by all threads); adjoints 1024 doubles apart, which share a slot of the
   table and evict each other; an in-place update repeated within an iteration, so the
   reverse reads an adjoint it has just added into; and reads of neighbours written by
   other threads' iterations, across the barrier at the end of a loop. */
double combined(const double *x, const double *p, double *a)
{
    double s = 0.0;
#pragma omp parallel for reduction(+ : s)
    for (int i = 0; i < NB - 2048; i++)
        s += x[i] * x[i + 1024] * p[i % 5] - sin(x[i + 2048]) * p[(i + 2) % 5];
#pragma omp parallel for
    for (int i = 0; i < NB; i++)
        for (int k = 0; k < 3; k++) {
            int j = self_[3 * i + k];   /* == i, but no compiler can tell */
            a[j] = a[j] * (0.5 + 0.1 * p[k]) + x[(i + k * 977) % NB] * x[i];
        }
    double t = 0.0;
#pragma omp parallel for reduction(+ : t)
    for (int i = 0; i < NB; i++)
        t += a[i] * a[(i + 1) % NB] * p[4];
    return s + t;
}

static double x_[NB], p_[5], a0_[NB];

static double eval(void)
{
    double a[NB];
    memcpy(a, a0_, sizeof a);
    return combined(x_, p_, a);
}

static void check(const char *name, const double *g, double *v, int n, int step)
{
    printf("%s", name);
    for (int i = 0; i < n; i += step)
        printf(" %.17g", g[i]);
    printf("\n");
    for (int i = 0; i < n; i += step) {
        double save = v[i], h = 1e-6;
        v[i] = save + h;
        double fp = eval();
        v[i] = save - h;
        double fm = eval();
        v[i] = save;
        double want = (fp - fm) / (2 * h), scale = fabs(want) > 1e-2 ? fabs(want) : 1e-2;
        if (!(fabs(g[i] - want) / scale <= 1e-5)) {
            printf("FAIL %s[%d] got %.12g want %.12g\n", name, i, g[i], want);
            fails++;
        }
    }
}

int main(void)
{
    static double dx[NB], da[NB], a[NB];
    double dp[5] = {0};
    for (int i = 0; i < NB; i++) {
        x_[i] = 0.3 + 0.4 * sin(0.37 * i);
        a0_[i] = 0.2 * cos(0.11 * i);
    }
    for (int k = 0; k < 5; k++)
        p_[k] = 0.5 + 0.2 * k;
    for (int i = 0; i < 3 * NB; i++)
        self_[i] = i / 3;
    printf("threads %d\n", omp_get_max_threads());
    memcpy(a, a0_, sizeof a);
    __enzyme_autodiff((void *)combined, enzyme_dup, x_, dx, enzyme_dup, p_, dp,
                      enzyme_dup, a, da);
    check("dx", dx, x_, NB, 7);
    check("dp", dp, p_, 5, 1);
    check("da", da, a0_, NB, 11);
    return fails ? 1 : 0;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_combined_adjoint_additions(tmp_path, opt):
    """Adjoint additions that a region's reverse combines per thread (combine.py): shared
    parameter adjoints, table slots that evict each other, reads of an adjoint just
    added into, and neighbours across a barrier, at 1-3 threads against central
    differences; the gradients agree across thread counts to rounding."""
    runs = _run_threads(tmp_path, COMBINED, opt)
    _same_across_threads(runs, {"dx", "dp", "da"})


# Round AD: the region reads its input and output through global pointers a setter
# bound to enzyme_dup arguments; the function holding the region has only an integer
# argument, so its call looked inactive (the outlined body the runtime calls was not
# followed when asking whether a call touches a shadow global): every derivative 0.
GLOBAL_POINTERS = r"""
#include <omp.h>
#include <stdio.h>
int enzyme_dup, enzyme_const;
void __enzyme_autodiff(void *, ...);
static double *g_u, *g_out;
__attribute__((noinline)) static void set(double *u, double *out) { g_u = u; g_out = out; }
__attribute__((noinline)) static void sq(int n) {
    #pragma omp parallel for
    for (int i = 0; i < n; i++) g_out[i] = g_u[i] * g_u[i] * (i + 1);
}
void f(double *u, double *out, int n) { set(u, out); sq(n); }
int main(void) {
    double u[6] = {1, 2, 3, 4, -1, 0.5}, du[6] = {0}, out[6], dout[6] = {1, 1, 1, 1, 1, 1};
    __enzyme_autodiff((void *)f, enzyme_dup, u, du, enzyme_dup, out, dout, enzyme_const, 6);
    printf("threads %d\n", omp_get_max_threads());
    printf("du");
    for (int i = 0; i < 6; i++) {
        printf(" %.17g", du[i]);
        if (du[i] != 2 * u[i] * (i + 1)) printf("\nFAIL du[%d] %g\n", i, du[i]);
    }
    printf("\n");
    return 0;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_region_reading_global_pointers(tmp_path, opt):
    runs = _run_threads(tmp_path, GLOBAL_POINTERS, opt)
    _same_across_threads(runs, {"du"})


# Round AO: a CSR matrix kept in a local struct -- enzyme_const column indices beside the
# duplicated values -- read by a parallel loop (the struct is a shared variable of the
# outlined region): refused as "mixed" with -fopenmp, right without (Enzyme 15 right, and
# it writes into the constant x).  What the region does with a shared local is followed
# field by field now, and its constant fields reach the outlined function's derivative.
CSR_STRUCT = r"""
#include <omp.h>
#include <stdio.h>
int enzyme_dup, enzyme_const;
void __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);
typedef struct { const int *col; double *val; int n; } csr_t;
void spmv(double *val, const double *x, double *y, const int *col, int n) {
    csr_t A = { col, val, n };
    #pragma omp parallel for
    for (int k = 0; k < A.n; k++) y[k] = A.val[k] * A.val[k] * x[A.col[k]];
}
double total(double *val, const double *x, const int *col, int n) {
    csr_t A = { col, val, n };
    double s = 0;
    #pragma omp parallel for reduction(+:s)
    for (int k = 0; k < A.n; k++) s += A.val[k] * x[A.col[k]];
    return s;
}
int main(void) {
    int col[4] = { 2, 0, 1, 3 };
    double val[4] = { 1, 2, 3.5, -1 }, dval[4] = { 0 }, x[4] = { 0.5, -1.5, 2, 4 }, y[4];
    double dy[4] = { 1, 1, 1, 1 }, t[4] = { 0, 1, 0, 0 };
    __enzyme_autodiff((void *)spmv, enzyme_dup, val, dval, enzyme_const, x, enzyme_dup, y,
                      dy, enzyme_const, col, enzyme_const, 4);
    printf("threads %d\n", omp_get_max_threads());
    printf("dval");
    for (int k = 0; k < 4; k++) {
        printf(" %.17g", dval[k]);
        if (dval[k] != 2 * val[k] * x[col[k]]) printf("\nFAIL dval[%d] %g\n", k, dval[k]);
    }
    double d = __enzyme_fwddiff((void *)total, enzyme_dup, val, t, enzyme_const, x,
                                enzyme_const, col, enzyme_const, 4);
    printf("\nfwd %.17g\n", d);
    if (d != x[col[1]]) printf("FAIL fwd %g\n", d);
    if (x[0] != 0.5 || x[3] != 4) printf("FAIL x changed\n");
    return 0;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_struct_of_constant_and_duplicated_arrays_shared_with_a_region(tmp_path, opt):
    runs = _run_threads(tmp_path, CSR_STRUCT, opt)
    _same_across_threads(runs, {"dval", "fwd"})
