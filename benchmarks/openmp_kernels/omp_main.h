/* main() of the OpenMP benchmark kernels (benchmarks/openmp.py): times the primal and
 * the gradient (EnzymePy reverse mode through the kernel's `#pragma omp parallel for`)
 * at the thread count OMP_NUM_THREADS gives, medians of interleaved batches, and prints
 * one JSON line.  The kernel defines N_INPUTS, setup(argc, argv, x) and objective(x).
 *   usage: KERNEL REPS SIZE...
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int enzyme_dup, enzyme_const;
void __enzyme_autodiff(void *, ...);

static double (*volatile objective_fp)(const double *) = objective;
static volatile double sink;

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    long n = setup(argc - 2, argv + 2);
    double *x = malloc(n * sizeof(double)), *g = malloc(n * sizeof(double));
    init(x, n);
    double *tp = malloc(reps * sizeof(double)), *tg = malloc(reps * sizeof(double));
    /* warm-up: one of each (pages, thread pool, cache pool) */
    sink = objective_fp(x);
    memset(g, 0, n * sizeof(double));
    __enzyme_autodiff((void *)objective, enzyme_dup, x, g);
    for (int r = 0; r < reps; r++) {
        double t0 = omp_get_wtime();
        sink = objective_fp(x);
        double t1 = omp_get_wtime();
        memset(g, 0, n * sizeof(double));
        __enzyme_autodiff((void *)objective, enzyme_dup, x, g);
        double t2 = omp_get_wtime();
        tp[r] = t1 - t0;
        tg[r] = t2 - t1;
    }
    qsort(tp, reps, sizeof(double), cmp);
    qsort(tg, reps, sizeof(double), cmp);
    double gsum = 0.0, gabs = 0.0;
    for (long i = 0; i < n; i++) {
        gsum += g[i];
        gabs += fabs(g[i]);
    }
    printf("{\"threads\": %d, \"primal_s\": %.6e, \"grad_s\": %.6e, \"value\": %.17g, "
           "\"grad_sum\": %.17g, \"grad_abs\": %.17g}\n", omp_get_max_threads(),
           tp[reps / 2], tg[reps / 2], objective(x), gsum, gabs);
    return 0;
}
