/* GMM: negative log-likelihood of a Gaussian mixture with a Wishart prior on the
 * inverse covariances, exactly as Microsoft ADBench defines it (gmm_objective).
 * Active inputs, packed into one vector x = [alphas (k) | means (k*d) | icf (k*d(d+1)/2)];
 * icf holds, per component, the log of Q's diagonal (d) then Q's strict lower triangle
 * column by column.  Sizes: d k n.
 */
#define KERNEL_NAME "gmm"
#define BENCH_SCALAR
#include "bench.h"

static int D, K, N;
static double *X;              /* n*d data points */
static double W_GAMMA = 1.0;   /* Wishart prior */
static int W_M = 0;

static real logsumexp(const real *v, int n) {
    real mx = v[0];
    for (int i = 1; i < n; i++)
        if (v[i] > mx) mx = v[i];
    real s = 0.0;
    for (int i = 0; i < n; i++) s = s + exp(v[i] - mx);
    return log(s) + mx;
}

static double log_gamma_distrib(double a, int p) {
    double out = 0.25 * p * (p - 1) * log(3.141592653589793);
    for (int j = 1; j <= p; j++) out += lgamma(a + 0.5 * (1 - j));
    return out;
}

static real objective(const real *x) {
    const int d = D, k = K, n = N;
    const int icf_sz = d * (d + 1) / 2;
    const real *alphas = x, *means = x + k, *icf = x + k + k * d;
    real *sum_qs = ALLOC_REAL(k);
    real *qdiags = ALLOC_REAL(k * d);
    real *xc = ALLOC_REAL(d);
    real *qxc = ALLOC_REAL(d);
    real *main_term = ALLOC_REAL(k);

    for (int ik = 0; ik < k; ik++) {
        sum_qs[ik] = 0.0;
        for (int id = 0; id < d; id++) {
            sum_qs[ik] = sum_qs[ik] + icf[ik * icf_sz + id];
            qdiags[ik * d + id] = exp(icf[ik * icf_sz + id]);
        }
    }
    real slse = 0.0;
    for (int ix = 0; ix < n; ix++) {
        for (int ik = 0; ik < k; ik++) {
            for (int id = 0; id < d; id++) xc[id] = X[ix * d + id] - means[ik * d + id];
            /* Q * xc with Q = diag(qdiag) + strict lower triangle */
            const real *qd = qdiags + ik * d;
            const real *lt = icf + ik * icf_sz + d;
            for (int id = 0; id < d; id++) qxc[id] = qd[id] * xc[id];
            int li = 0;
            for (int i = 0; i < d; i++)
                for (int j = i + 1; j < d; j++) {
                    qxc[j] = qxc[j] + lt[li] * xc[i];
                    li++;
                }
            real sq = 0.0;
            for (int id = 0; id < d; id++) sq = sq + qxc[id] * qxc[id];
            main_term[ik] = alphas[ik] + sum_qs[ik] - 0.5 * sq;
        }
        slse = slse + logsumexp(main_term, k);
    }
    real lse_alphas = logsumexp(alphas, k);
    const double constant = -n * d * 0.5 * log(2 * 3.141592653589793);

    /* Wishart prior */
    const int wn = d + W_M + 1;
    const double C = wn * d * (log(W_GAMMA) - 0.5 * log(2.0)) - log_gamma_distrib(0.5 * wn, d);
    real prior = 0.0;
    for (int ik = 0; ik < k; ik++) {
        real frob = 0.0;
        for (int id = 0; id < d; id++) frob = frob + qdiags[ik * d + id] * qdiags[ik * d + id];
        for (int i = d; i < icf_sz; i++) frob = frob + icf[ik * icf_sz + i] * icf[ik * icf_sz + i];
        prior = prior + 0.5 * W_GAMMA * W_GAMMA * frob - W_M * sum_qs[ik];
    }
    prior = prior - k * C;
    real err = constant + slse - n * lse_alphas + prior;

    FREE_REAL(sum_qs);
    FREE_REAL(qdiags);
    FREE_REAL(xc);
    FREE_REAL(qxc);
    FREE_REAL(main_term);
    return err;
}

static void setup(const long *sz, int nsz) {
    D = nsz > 0 ? (int)sz[0] : 2;
    K = nsz > 1 ? (int)sz[1] : 5;
    N = nsz > 2 ? (int)sz[2] : 100;
    const int icf_sz = D * (D + 1) / 2;
    bench_n = K + K * D + K * icf_sz;
    bench_x = ALLOC(double, bench_n);
    double *alphas = bench_x, *means = bench_x + K, *icf = bench_x + K + K * D;
    for (int i = 0; i < K; i++) alphas[i] = bench_normal();
    for (int i = 0; i < K * D; i++) means[i] = bench_uniform();
    for (int i = 0; i < K * icf_sz; i++) icf[i] = bench_normal() * 0.1;
    X = ALLOC(double, (long)N * D);
    for (long i = 0; i < (long)N * D; i++) X[i] = bench_normal();
    static double wishart[2];
    wishart[0] = W_GAMMA;
    wishart[1] = W_M;
    static char buf[128];
    snprintf(buf, sizeof buf, "\"d\": %d, \"k\": %d, \"n\": %d", D, K, N);
    bench_sizes(buf);
    bench_dump_d("x", bench_x, bench_n);
    bench_dump_d("data", X, (long)N * D);
    bench_dump_d("wishart", wishart, 2);
}

#include "bench_main.h"
