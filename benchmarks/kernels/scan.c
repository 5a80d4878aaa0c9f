/* Cumulative-product scan, in place over a working copy (each y[i] is overwritten by
 * y[i-1] * y[i], so reverse mode must keep the old values); loss = sum of the prefix
 * products.  Active input: x (n), values near 1.  Sizes: n.
 */
#define KERNEL_NAME "scan"
#define BENCH_SCALAR
#include "bench.h"

static long NS;

static real objective(const real *x) {
    const long n = NS;
    real *y = ALLOC_REAL(n);
    for (long i = 0; i < n; i++) y[i] = x[i];
    for (long i = 1; i < n; i++) y[i] = y[i - 1] * y[i];
    real loss = 0.0;
    for (long i = 0; i < n; i++) loss = loss + y[i];
    FREE_REAL(y);
    return loss;
}

static void setup(const long *sz, int nsz) {
    NS = nsz > 0 ? sz[0] : 100000;
    bench_n = NS;
    bench_x = ALLOC(double, bench_n);
    for (long i = 0; i < bench_n; i++) bench_x[i] = 1.0 + 1e-3 * bench_normal();
    static char buf[128];
    snprintf(buf, sizeof buf, "\"n\": %ld", NS);
    bench_sizes(buf);
    bench_dump_d("x", bench_x, bench_n);
}

#include "bench_main.h"
