/* 1-D heat stencil with a reaction term (Fisher-KPP), explicit Euler over many time
 * steps, two buffers swapped each step; loss = sum of squares of the final field.
 * Active input: the initial field u0 (n).  Sizes: n steps.
 */
#define KERNEL_NAME "heat1d"
#define BENCH_SCALAR
#include "bench.h"

static int NX, STEPS;

static real objective(const real *u0) {
    const int n = NX, steps = STEPS;
    const double r = 0.25, dt = 0.01;
    real *u = ALLOC_REAL(n);
    real *v = ALLOC_REAL(n);
    for (int i = 0; i < n; i++) u[i] = u0[i];
    for (int s = 0; s < steps; s++) {
        v[0] = u[0];
        v[n - 1] = u[n - 1];
        for (int i = 1; i < n - 1; i++)
            v[i] = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]) + dt * u[i] * (1.0 - u[i]);
        real *t = u;
        u = v;
        v = t;
    }
    real loss = 0.0;
    for (int i = 0; i < n; i++) loss = loss + u[i] * u[i];
    FREE_REAL(u);
    FREE_REAL(v);
    return loss;
}

static void setup(const long *sz, int nsz) {
    NX = nsz > 0 ? (int)sz[0] : 1000;
    STEPS = nsz > 1 ? (int)sz[1] : 1000;
    bench_n = NX;
    bench_x = ALLOC(double, bench_n);
    for (long i = 0; i < bench_n; i++) bench_x[i] = bench_uniform();
    static char buf[128];
    snprintf(buf, sizeof buf, "\"n\": %d, \"steps\": %d", NX, STEPS);
    bench_sizes(buf);
    bench_dump_d("x", bench_x, bench_n);
}

#include "bench_main.h"
