/* GMM as ADBench's C writes it (the objective of ADBench's gmm.h, in the C form of
 * Enzyme's ADBench port): helper functions over raw pointers, scratch arrays from
 * malloc, data and parameters as separate pointer arguments without `restrict`, no
 * globals, and the result through the out-parameter `err` (stored twice).  The Wishart
 * struct is passed as its two fields.  The same computation as gmm.c; the gradient is
 * w.r.t. alphas, means and icf, with `enzyme_dupnoneed` on `err`.
 * Sizes: d k n.
 */
#define KERNEL_NAME "gmm_adbench"
#define BENCH_CUSTOM
#include "bench.h"

#define PI 3.14159265358979323846

double arr_max(int n, double const *x) {
    int i;
    double m = x[0];
    for (i = 1; i < n; i++) {
        if (m < x[i]) m = x[i];
    }
    return m;
}

double sqnorm(int n, double const *x) {
    int i;
    double res = x[0] * x[0];
    for (i = 1; i < n; i++) res = res + x[i] * x[i];
    return res;
}

void subtract(int d, double const *x, double const *y, double *out) {
    int id;
    for (id = 0; id < d; id++) out[id] = x[id] - y[id];
}

double log_sum_exp(int n, double const *x) {
    int i;
    double mx = arr_max(n, x);
    double semx = 0.0;
    for (i = 0; i < n; i++) semx = semx + exp(x[i] - mx);
    return log(semx) + mx;
}

double log_gamma_distrib(double a, double p) {
    int j;
    double out = 0.25 * p * (p - 1) * log(PI);
    for (j = 1; j <= p; j++) out = out + lgamma(a + 0.5 * (1 - j));
    return out;
}

double log_wishart_prior(int p, int k, double wishart_gamma, int wishart_m, double const *sum_qs,
                         double const *Qdiags, double const *icf) {
    int ik;
    int n = p + wishart_m + 1;
    int icf_sz = p * (p + 1) / 2;
    double C = n * p * (log(wishart_gamma) - 0.5 * log(2)) - log_gamma_distrib(0.5 * n, p);
    double out = 0;
    for (ik = 0; ik < k; ik++) {
        double frobenius = sqnorm(p, &Qdiags[ik * p]) + sqnorm(icf_sz - p, &icf[ik * icf_sz + p]);
        out = out + 0.5 * wishart_gamma * wishart_gamma * (frobenius) - wishart_m * sum_qs[ik];
    }
    return out - k * C;
}

void preprocess_qs(int d, int k, double const *icf, double *sum_qs, double *Qdiags) {
    int ik, id;
    int icf_sz = d * (d + 1) / 2;
    for (ik = 0; ik < k; ik++) {
        sum_qs[ik] = 0.;
        for (id = 0; id < d; id++) {
            double q = icf[ik * icf_sz + id];
            sum_qs[ik] = sum_qs[ik] + q;
            Qdiags[ik * d + id] = exp(q);
        }
    }
}

void Qtimesx(int d, double const *Qdiag, double const *ltri, double const *x, double *out) {
    int i, j;
    for (i = 0; i < d; i++) out[i] = Qdiag[i] * x[i];
    int Lparamsidx = 0;
    for (i = 0; i < d; i++) {
        for (j = i + 1; j < d; j++) {
            out[j] = out[j] + ltri[Lparamsidx] * x[i];
            Lparamsidx++;
        }
    }
}

void gmm_objective(int d, int k, int n, double const *alphas, double const *means,
                   double const *icf, double const *x, double wishart_gamma, int wishart_m,
                   double *err) {
    int ix, ik;
    const double CONSTANT = -n * d * 0.5 * log(2 * PI);
    int icf_sz = d * (d + 1) / 2;

    double *Qdiags = (double *)malloc(d * k * sizeof(double));
    double *sum_qs = (double *)malloc(k * sizeof(double));
    double *xcentered = (double *)malloc(d * sizeof(double));
    double *Qxcentered = (double *)malloc(d * sizeof(double));
    double *main_term = (double *)malloc(k * sizeof(double));

    preprocess_qs(d, k, icf, &sum_qs[0], &Qdiags[0]);

    double slse = 0.;
    for (ix = 0; ix < n; ix++) {
        for (ik = 0; ik < k; ik++) {
            subtract(d, &x[ix * d], &means[ik * d], &xcentered[0]);
            Qtimesx(d, &Qdiags[ik * d], &icf[ik * icf_sz + d], &xcentered[0], &Qxcentered[0]);
            main_term[ik] = alphas[ik] + sum_qs[ik] - 0.5 * sqnorm(d, &Qxcentered[0]);
        }
        slse = slse + log_sum_exp(k, &main_term[0]);
    }

    double lse_alphas = log_sum_exp(k, alphas);
    *err = CONSTANT + slse - n * lse_alphas;
    *err = *err + log_wishart_prior(d, k, wishart_gamma, wishart_m, &sum_qs[0], &Qdiags[0], icf);

    free(Qdiags);
    free(sum_qs);
    free(xcentered);
    free(Qxcentered);
    free(main_term);
}

/* ---- the benchmark driver (not part of ADBench's objective) ---------------- */

static int D, K, N;
static double *PARAMS; /* alphas | means | icf, one block so that the dump matches gmm.c */
static double *DATA;
static double WISHART[2] = {1.0, 0.0}; /* gamma, m */
static void (*volatile objective_fp)(int, int, int, double const *, double const *,
                                     double const *, double const *, double, int,
                                     double *) = gmm_objective;

static double primal_run(void) {
    double err;
    objective_fp(D, K, N, PARAMS, PARAMS + K, PARAMS + K + K * D, DATA, WISHART[0],
                 (int)WISHART[1], &err);
    return err;
}

static void gradient_run(double *G) {
    double err, derr = 1.0;
    memset(G, 0, sizeof(double) * (size_t)bench_n);
    __enzyme_autodiff((void *)gmm_objective, D, K, N,
                      enzyme_dup, PARAMS, G,
                      enzyme_dup, PARAMS + K, G + K,
                      enzyme_dup, PARAMS + K + K * D, G + K + K * D,
                      enzyme_const, DATA, WISHART[0], (int)WISHART[1],
                      enzyme_dupnoneed, &err, &derr);
}

static long fd_count(void) { return bench_n; }

static double fd_entry(long j, long *gidx) {
    double xj = PARAMS[j];
    double h = 1e-6 * (fabs(xj) > 1.0 ? fabs(xj) : 1.0);
    volatile double xp = xj + h, xm = xj - h;
    PARAMS[j] = xp;
    double fp = primal_run();
    PARAMS[j] = xm;
    double fm = primal_run();
    PARAMS[j] = xj;
    *gidx = j;
    return (fp - fm) / (xp - xm);
}

static void setup(const long *sz, int nsz) {
    D = nsz > 0 ? (int)sz[0] : 2;
    K = nsz > 1 ? (int)sz[1] : 5;
    N = nsz > 2 ? (int)sz[2] : 100;
    const int icf_sz = D * (D + 1) / 2;
    bench_n = K + K * D + K * icf_sz;
    PARAMS = ALLOC(double, bench_n);
    double *alphas = PARAMS, *means = PARAMS + K, *icf = PARAMS + K + K * D;
    for (int i = 0; i < K; i++) alphas[i] = bench_normal();
    for (int i = 0; i < K * D; i++) means[i] = bench_uniform();
    for (int i = 0; i < K * icf_sz; i++) icf[i] = bench_normal() * 0.1;
    DATA = ALLOC(double, (long)N * D);
    for (long i = 0; i < (long)N * D; i++) DATA[i] = bench_normal();
    bench_x = PARAMS;
    static char buf[128];
    snprintf(buf, sizeof buf, "\"d\": %d, \"k\": %d, \"n\": %d", D, K, N);
    bench_sizes(buf);
    bench_dump_d("x", PARAMS, bench_n);
    bench_dump_d("data", DATA, (long)N * D);
    bench_dump_d("wishart", WISHART, 2);
}

#include "bench_main.h"
