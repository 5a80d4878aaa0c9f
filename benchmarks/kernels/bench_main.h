/* main() of every benchmark kernel; see bench.h.  Included at the end of a kernel
 * file, after setup() and objective() (or the BENCH_CUSTOM hooks).
 *
 * usage: KERNEL [--reps R] [--min-time S] [--fd-samples K] [--fd-budget S]
 *               [--dump DIR] [--no-primal] [--no-grad] SIZE...
 * prints one JSON object on stdout.
 *
 * Run with LD_PRELOAD=libbenchmem.so (benchmarks/memcount.c) it also reports the peak
 * live heap bytes of the first (cold) primal call and of the first gradient call:
 * "primal_heap_peak" / "grad_heap_peak" (-1 without the preload).  The first call is
 * the one measured because a tool that keeps buffers between calls (a pool) allocates
 * them then.
 */
#ifndef KERNEL_NAME
#error "define KERNEL_NAME"
#endif

static volatile double bench_sink;

/* the heap counter's window, when libbenchmem.so is preloaded */
static void (*bench_mem_begin)(void);
static long long (*bench_mem_end)(void);
static void bench_mem_init(void) {
    bench_mem_begin = (void (*)(void))dlsym(RTLD_DEFAULT, "benchmem_begin");
    bench_mem_end = (long long (*)(void))dlsym(RTLD_DEFAULT, "benchmem_end");
    if (!bench_mem_begin || !bench_mem_end) bench_mem_begin = 0, bench_mem_end = 0;
}

#ifdef BENCH_SCALAR
/* an opaque call, so that the optimiser cannot hoist or merge repeated primals */
static real (*volatile bench_objective_fp)(const real *) = objective;

static long fd_count(void) { return bench_n; }

#ifndef BENCH_ADOLC
static double primal_run(void) { return bench_objective_fp(bench_x); }
static void gradient_run(double *G) {
    memset(G, 0, sizeof(double) * (size_t)bench_n);
    __enzyme_autodiff((void *)objective, enzyme_dup, bench_x, G);
}
static double fd_entry(long j, long *gidx) {
    double xj = bench_x[j];
    double h = 1e-6 * (fabs(xj) > 1.0 ? fabs(xj) : 1.0);
    volatile double xp = xj + h, xm = xj - h;
    bench_x[j] = xp;
    double fp = bench_objective_fp(bench_x);
    bench_x[j] = xm;
    double fm = bench_objective_fp(bench_x);
    bench_x[j] = xj;
    *gidx = j;
    return (fp - fm) / (xp - xm);
}
#else
static double primal_run(void) {
    adouble *ax = new adouble[bench_n];
    for (long i = 0; i < bench_n; i++) ax[i] = bench_x[i];
    double v = bench_objective_fp(ax).value();
    delete[] ax;
    return v;
}
/* ADOL-C: record the tape and reverse it, every call (the tape depends on branches
 * taken by the inputs, so a user with changing inputs must re-record). */
static void gradient_run(double *G) {
    trace_on(1);
    adouble *ax = new adouble[bench_n];
    for (long i = 0; i < bench_n; i++) ax[i] <<= bench_x[i];
    adouble y = bench_objective_fp(ax);
    double yv;
    y >>= yv;
    delete[] ax;
    trace_off();
    gradient(1, (int)bench_n, bench_x, G);
}
static double fd_entry(long j, long *gidx) { *gidx = j; return 0.0; }
#endif
#endif /* BENCH_SCALAR */

static int bench_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static double bench_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(double), bench_cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* FNV-1a over the bytes of every registered input array: the derivative must not
 * write into constant inputs (or into the primal of active ones). */
static uint64_t bench_inputs_hash(void) {
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < bench_narrays; i++) {
        const unsigned char *p = (const unsigned char *)bench_arrays[i].ptr;
        for (long j = 0; j < 8 * bench_arrays[i].count; j++) h = (h ^ p[j]) * 1099511628211ull;
    }
    return h;
}

static void bench_write_inputs(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/inputs.bin", dir);
    FILE *f = fopen(path, "wb");
    if (!f) { perror(path); exit(2); }
    fprintf(f, "{\"kernel\": \"%s\", \"sizes\": {%s}, \"arrays\": [", KERNEL_NAME, bench_sizes_json);
    for (int i = 0; i < bench_narrays; i++)
        fprintf(f, "%s{\"name\": \"%s\", \"type\": \"%s\", \"count\": %ld}", i ? ", " : "",
                bench_arrays[i].name, bench_arrays[i].is_int ? "i64" : "f64", bench_arrays[i].count);
    fprintf(f, "]}\n");
    for (int i = 0; i < bench_narrays; i++)
        fwrite(bench_arrays[i].ptr, 8, (size_t)bench_arrays[i].count, f);
    fclose(f);
}

static void bench_write_grad(const char *dir, const double *G) {
    char path[4096];
    snprintf(path, sizeof path, "%s/grad.bin", dir);
    FILE *f = fopen(path, "wb");
    if (!f) { perror(path); exit(2); }
    fwrite(G, sizeof(double), (size_t)bench_m, f);
    fclose(f);
}

int main(int argc, char **argv) {
    int reps = 10, fd_samples = 16, do_primal = 1, do_grad = 1;
    double min_time = 0.02, fd_budget = 1.0;
    const char *dump = NULL;
    long sizes[16];
    int nsizes = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--min-time") && i + 1 < argc) min_time = atof(argv[++i]);
        else if (!strcmp(argv[i], "--fd-samples") && i + 1 < argc) fd_samples = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--fd-budget") && i + 1 < argc) fd_budget = atof(argv[++i]);
        else if (!strcmp(argv[i], "--dump") && i + 1 < argc) dump = argv[++i];
        else if (!strcmp(argv[i], "--no-primal")) do_primal = 0;
        else if (!strcmp(argv[i], "--no-grad")) do_grad = 0;
        else if (nsizes < 16) sizes[nsizes++] = atol(argv[i]);
    }
    if (reps < 1) reps = 1;
    bench_seed(42);
    setup(sizes, nsizes);
    if (bench_m == 0) bench_m = bench_n;
    if (dump) bench_write_inputs(dump);
    uint64_t inputs_hash = bench_inputs_hash();
    double *G = (double *)calloc((size_t)bench_m, sizeof(double));
    double value = 0.0;

    /* warm-up (also calibrates the batch size so one timed batch lasts >= min_time),
     * and the heap peaks of these first calls */
    long long heap_p = -1, heap_g = -1;
    bench_mem_init();
    double t0 = bench_now();
    if (do_primal) {
        if (bench_mem_begin) bench_mem_begin();
        value = primal_run();
        if (bench_mem_end) heap_p = bench_mem_end();
    }
    double t1 = bench_now();
    if (do_grad) {
        if (bench_mem_begin) bench_mem_begin();
        gradient_run(G);
        if (bench_mem_end) heap_g = bench_mem_end();
    }
    double t2 = bench_now();
    long inner_p = (long)ceil(min_time / ((t1 - t0) > 1e-9 ? (t1 - t0) : 1e-9));
    long inner_g = (long)ceil(min_time / ((t2 - t1) > 1e-9 ? (t2 - t1) : 1e-9));
    if (inner_p < 1) inner_p = 1;
    if (inner_g < 1) inner_g = 1;
    if (do_primal) bench_sink = primal_run();
    if (do_grad) gradient_run(G);

    /* interleaved repeats: primal batch, derivative batch, ... */
    double *tp = (double *)calloc((size_t)reps, sizeof(double));
    double *tg = (double *)calloc((size_t)reps, sizeof(double));
    for (int r = 0; r < reps; r++) {
        if (do_primal) {
            double a = bench_now();
            for (long j = 0; j < inner_p; j++) {
                bench_sink = primal_run();
                __asm__ volatile("" ::: "memory");
            }
            tp[r] = (bench_now() - a) / (double)inner_p;
        }
        if (do_grad) {
            double a = bench_now();
            for (long j = 0; j < inner_g; j++) {
                gradient_run(G);
                __asm__ volatile("" ::: "memory");
            }
            tg[r] = (bench_now() - a) / (double)inner_g;
        }
    }
    double primal_s = do_primal ? bench_median(tp, reps) : -1.0;
    double grad_s = do_grad ? bench_median(tg, reps) : -1.0;
    if (do_grad) gradient_run(G);

    /* finite differences: a sample of entries for the check, and the full set's time */
    double fd_max_err = -1.0, fd_time = -1.0, fd_per_entry = 0.0;
    int fd_estimated = 0;
    long nfd = fd_count();
    if (fd_samples > 0 && do_grad && nfd > 0) {
        double gmax = 0.0;
        for (long i = 0; i < bench_m; i++) gmax = fabs(G[i]) > gmax ? fabs(G[i]) : gmax;
        int s = fd_samples < nfd ? fd_samples : (int)nfd;
        double a = bench_now();
        fd_max_err = 0.0;
        for (int i = 0; i < s; i++) {
            long j = s > 1 ? (long)((double)i * (double)(nfd - 1) / (double)(s - 1)) : 0;
            long gi;
            double fd = fd_entry(j, &gi);
            double g = G[gi];
            double scale = fabs(g) > fabs(fd) ? fabs(g) : fabs(fd);
            if (scale < 1e-6 * gmax) scale = 1e-6 * gmax;
            if (scale < 1e-300) scale = 1e-300;
            double err = fabs(fd - g) / scale;
            if (err > fd_max_err) fd_max_err = err;
        }
        fd_per_entry = (bench_now() - a) / (double)s;
        if (fd_per_entry * (double)nfd <= fd_budget) {
            double b = bench_now();
            double acc = 0.0;
            for (long j = 0; j < nfd; j++) {
                long gi;
                acc += fd_entry(j, &gi);
            }
            fd_time = bench_now() - b;
            bench_sink = acc;
        } else {
            fd_time = fd_per_entry * (double)nfd;
            fd_estimated = 1;
        }
    }
    double gnorm = 0.0;
    for (long i = 0; i < bench_m; i++) gnorm += G[i] * G[i];
    if (dump) bench_write_grad(dump, G);
    int inputs_modified = bench_inputs_hash() != inputs_hash;
    printf("{\"kernel\": \"%s\", \"sizes\": {%s}, \"n\": %ld, \"m\": %ld, \"value\": %.17g, "
           "\"primal_s\": %.6e, \"grad_s\": %.6e, \"reps\": %d, \"inner_primal\": %ld, "
           "\"inner_grad\": %ld, \"grad_norm\": %.17g, \"fd_max_rel_err\": %.3e, "
           "\"fd_s\": %.6e, \"fd_estimated\": %s, \"fd_entries\": %ld, \"inputs_modified\": %s, "
           "\"primal_heap_peak\": %lld, \"grad_heap_peak\": %lld}\n",
           KERNEL_NAME, bench_sizes_json, bench_n, bench_m, value, primal_s, grad_s, reps,
           inner_p, inner_g, sqrt(gnorm), fd_max_err, fd_time, fd_estimated ? "true" : "false", nfd,
           inputs_modified ? "true" : "false", heap_p, heap_g);
    return 0;
}
