/* 2-D heat stencil (5-point Laplacian) with a reaction term, explicit Euler over many
 * time steps, two buffers swapped each step, fixed boundary; loss = sum of squares of
 * the final field.  Active input: the initial field (n*n).  Sizes: n steps.
 */
#define KERNEL_NAME "heat2d"
#define BENCH_SCALAR
#include "bench.h"

static int NX, STEPS;

static real objective(const real *u0) {
    const int n = NX, steps = STEPS;
    const double r = 0.2, dt = 0.01;
    real *u = ALLOC_REAL(n * n);
    real *v = ALLOC_REAL(n * n);
    for (int i = 0; i < n * n; i++) {
        u[i] = u0[i];
        v[i] = u0[i];
    }
    for (int s = 0; s < steps; s++) {
        for (int i = 1; i < n - 1; i++)
            for (int j = 1; j < n - 1; j++) {
                real c = u[i * n + j];
                v[i * n + j] = c + r * (u[(i - 1) * n + j] + u[(i + 1) * n + j] + u[i * n + j - 1] +
                                        u[i * n + j + 1] - 4.0 * c) + dt * c * (1.0 - c);
            }
        real *t = u;
        u = v;
        v = t;
    }
    real loss = 0.0;
    for (int i = 0; i < n * n; i++) loss = loss + u[i] * u[i];
    FREE_REAL(u);
    FREE_REAL(v);
    return loss;
}

static void setup(const long *sz, int nsz) {
    NX = nsz > 0 ? (int)sz[0] : 64;
    STEPS = nsz > 1 ? (int)sz[1] : 100;
    bench_n = (long)NX * NX;
    bench_x = ALLOC(double, bench_n);
    for (long i = 0; i < bench_n; i++) bench_x[i] = bench_uniform();
    static char buf[128];
    snprintf(buf, sizeof buf, "\"n\": %d, \"steps\": %d", NX, STEPS);
    bench_sizes(buf);
    bench_dump_d("x", bench_x, bench_n);
}

#include "bench_main.h"
