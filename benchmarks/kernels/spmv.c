/* Sparse matrix-vector products: v <- tanh(A v) repeated `iters` times with A in CSR
 * (constant, ~nnz_per_row entries per row, random columns), loss = sum of squares of
 * the result.  Reverse mode scatters through the column indices.
 * Active input: the starting vector (n).  Sizes: n nnz_per_row iters.
 */
#define KERNEL_NAME "spmv"
#define BENCH_SCALAR
#include "bench.h"

static long NR;
static int ITERS;
static int64_t *ROWPTR, *COLS;
static double *VALS;

static real objective(const real *x) {
    const long n = NR;
    real *v = ALLOC_REAL(n);
    real *w = ALLOC_REAL(n);
    for (long i = 0; i < n; i++) v[i] = x[i];
    for (int it = 0; it < ITERS; it++) {
        for (long i = 0; i < n; i++) {
            real s = 0.0;
            for (int64_t p = ROWPTR[i]; p < ROWPTR[i + 1]; p++) s = s + VALS[p] * v[COLS[p]];
            w[i] = tanh(s);
        }
        real *t = v;
        v = w;
        w = t;
    }
    real loss = 0.0;
    for (long i = 0; i < n; i++) loss = loss + v[i] * v[i];
    FREE_REAL(v);
    FREE_REAL(w);
    return loss;
}

static void setup(const long *sz, int nsz) {
    NR = nsz > 0 ? sz[0] : 10000;
    long per_row = nsz > 1 ? sz[1] : 8;
    ITERS = nsz > 2 ? (int)sz[2] : 4;
    ROWPTR = ALLOC(int64_t, NR + 1);
    COLS = ALLOC(int64_t, NR * per_row);
    VALS = ALLOC(double, NR * per_row);
    ROWPTR[0] = 0;
    for (long i = 0; i < NR; i++) {
        for (long p = 0; p < per_row; p++) {
            COLS[i * per_row + p] = bench_index(NR);
            VALS[i * per_row + p] = bench_normal() / sqrt((double)per_row);
        }
        ROWPTR[i + 1] = (i + 1) * per_row;
    }
    bench_n = NR;
    bench_x = ALLOC(double, bench_n);
    for (long i = 0; i < bench_n; i++) bench_x[i] = bench_normal();
    static char buf[128];
    snprintf(buf, sizeof buf, "\"n\": %ld, \"nnz_per_row\": %ld, \"iters\": %d", NR, per_row, ITERS);
    bench_sizes(buf);
    bench_dump_d("x", bench_x, bench_n);
    bench_dump_i("rowptr", ROWPTR, NR + 1);
    bench_dump_i("cols", COLS, NR * per_row);
    bench_dump_d("vals", VALS, NR * per_row);
}

#include "bench_main.h"
