/* Shared harness for the benchmark kernels.
 *
 * Every kernel is one C file written over the type `real`:
 *   - built with enzyme-cc, `real` is double and the derivative comes from
 *     __enzyme_autodiff;
 *   - built with a C++ compiler and -DBENCH_ADOLC, `real` is ADOL-C's adouble and the
 *     same source is taped and reversed by ADOL-C.
 * So EnzymePy and ADOL-C differentiate literally the same objective.
 *
 * A kernel file defines
 *   KERNEL_NAME, setup(sizes, nsizes) (fills bench_x / bench_n, registers its arrays
 *   with bench_dump_*), and either
 *   - BENCH_SCALAR: `static real objective(const real *x)`; the derivative is the
 *     gradient of that scalar w.r.t. x (M = N), or
 *   - BENCH_CUSTOM: primal_run(), gradient_run(G) (G has bench_m entries),
 *     fd_entry(j, &gidx) (central FD estimate of G[gidx], for j < fd_count()),
 * and then includes bench_main.h, which provides main(): deterministic inputs,
 * warm-up, interleaved repeats of primal and derivative, medians, finite-difference
 * checks, and dumps of the inputs and the derivative for the harness.
 */
#ifndef BENCH_H
#define BENCH_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_DEFAULT */
#endif
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef BENCH_ADOLC
#include <adolc/adolc.h>
typedef adouble real;
#define ALLOC_REAL(n) (new adouble[(size_t)(n)])
#define FREE_REAL(p) (delete[](p))
#define VALUE(v) ((v).value())
#else
typedef double real;
#define ALLOC_REAL(n) ((real *)malloc(sizeof(real) * (size_t)(n)))
#define FREE_REAL(p) free(p)
#define VALUE(v) (v)
extern int enzyme_dup, enzyme_const, enzyme_dupnoneed, enzyme_out;
void __enzyme_autodiff(void *, ...);
#endif

#define ALLOC(T, n) ((T *)malloc(sizeof(T) * (size_t)(n)))

/* ---- deterministic inputs: splitmix64 ------------------------------------ */
static uint64_t bench_rng_state = 0x9E3779B97F4A7C15ull;
static void bench_seed(uint64_t s) { bench_rng_state = s * 0x9E3779B97F4A7C15ull + 1; }
static uint64_t bench_next(void) {
    uint64_t z = (bench_rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
/* uniform in [0, 1) */
static double bench_uniform(void) { return (double)(bench_next() >> 11) * (1.0 / 9007199254740992.0); }
static double bench_range(double lo, double hi) { return lo + (hi - lo) * bench_uniform(); }
/* standard normal (Box-Muller) */
static double bench_normal(void) {
    double u1 = bench_uniform(), u2 = bench_uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
static long bench_index(long n) { return (long)(bench_next() % (uint64_t)n); }

/* ---- the active input and the derivative's size ---------------------------- */
static double *bench_x;  /* active inputs */
static long bench_n;     /* their count */
static long bench_m;     /* entries of the derivative (gradient: = bench_n) */

/* ---- arrays to dump for the Python peers / tests --------------------------- */
#define BENCH_MAX_ARRAYS 32
static struct {
    const char *name;
    const void *ptr;
    long count;
    int is_int; /* 0: f64, 1: i64 */
} bench_arrays[BENCH_MAX_ARRAYS];
static int bench_narrays;
static char bench_sizes_json[512];

static void bench_dump_d(const char *name, const double *p, long n) {
    bench_arrays[bench_narrays].name = name;
    bench_arrays[bench_narrays].ptr = p;
    bench_arrays[bench_narrays].count = n;
    bench_arrays[bench_narrays].is_int = 0;
    bench_narrays++;
}
static void bench_dump_i(const char *name, const int64_t *p, long n) {
    bench_arrays[bench_narrays].name = name;
    bench_arrays[bench_narrays].ptr = p;
    bench_arrays[bench_narrays].count = n;
    bench_arrays[bench_narrays].is_int = 1;
    bench_narrays++;
}
/* the kernel's named sizes, as a JSON object body: "d": 10, "k": 25 */
static void bench_sizes(const char *json) {
    strncpy(bench_sizes_json, json, sizeof bench_sizes_json - 1);
}

static double bench_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#endif
