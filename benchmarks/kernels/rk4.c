/* RK4 integration of the Lorenz-96 system dy_i/dt = (y_{i+1} - y_{i-2}) y_{i-1} - y_i + F
 * (cyclic), fixed step; loss = sum of squares of the final state.
 * Active input: the initial state y0 (n).  Sizes: n steps.
 */
#define KERNEL_NAME "rk4"
#define BENCH_SCALAR
#include "bench.h"

static int NY, STEPS;

static void rhs(int n, const real *y, real *dy) {
    const double F = 8.0;
    for (int i = 0; i < n; i++) {
        int ip = i + 1 == n ? 0 : i + 1;
        int im = i == 0 ? n - 1 : i - 1;
        int im2 = i < 2 ? i + n - 2 : i - 2;
        dy[i] = (y[ip] - y[im2]) * y[im] - y[i] + F;
    }
}

static real objective(const real *y0) {
    const int n = NY, steps = STEPS;
    const double h = 0.001;
    real *y = ALLOC_REAL(n);
    real *tmp = ALLOC_REAL(n);
    real *k1 = ALLOC_REAL(n);
    real *k2 = ALLOC_REAL(n);
    real *k3 = ALLOC_REAL(n);
    real *k4 = ALLOC_REAL(n);
    for (int i = 0; i < n; i++) y[i] = y0[i];
    for (int s = 0; s < steps; s++) {
        rhs(n, y, k1);
        for (int i = 0; i < n; i++) tmp[i] = y[i] + 0.5 * h * k1[i];
        rhs(n, tmp, k2);
        for (int i = 0; i < n; i++) tmp[i] = y[i] + 0.5 * h * k2[i];
        rhs(n, tmp, k3);
        for (int i = 0; i < n; i++) tmp[i] = y[i] + h * k3[i];
        rhs(n, tmp, k4);
        for (int i = 0; i < n; i++) y[i] = y[i] + h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
    }
    real loss = 0.0;
    for (int i = 0; i < n; i++) loss = loss + y[i] * y[i];
    FREE_REAL(y);
    FREE_REAL(tmp);
    FREE_REAL(k1);
    FREE_REAL(k2);
    FREE_REAL(k3);
    FREE_REAL(k4);
    return loss;
}

static void setup(const long *sz, int nsz) {
    NY = nsz > 0 ? (int)sz[0] : 40;
    STEPS = nsz > 1 ? (int)sz[1] : 1000;
    bench_n = NY;
    bench_x = ALLOC(double, bench_n);
    for (long i = 0; i < bench_n; i++) bench_x[i] = 8.0 + bench_normal();
    static char buf[128];
    snprintf(buf, sizeof buf, "\"n\": %d, \"steps\": %d", NY, STEPS);
    bench_sizes(buf);
    bench_dump_d("x", bench_x, bench_n);
}

#include "bench_main.h"
