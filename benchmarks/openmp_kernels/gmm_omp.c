/* Gaussian mixture log-likelihood with diagonal covariances (ADBench's GMM objective
 * without the Wishart prior and with diagonal Q): K components in D dimensions, N
 * points; a `#pragma omp parallel for reduction(+:s)` over the points, each a
 * log-sum-exp over the components.  Active input: alpha (K), mu (K*D), log q (K*D).
 *   sizes: d k n
 */
#include <math.h>
#include <stdlib.h>

static int D, K, NP;
static double *X;

static double objective(const double *p)
{
    const double *alpha = p, *mu = p + K, *lq = p + K + K * D;
    double s = 0.0;
#pragma omp parallel for reduction(+ : s)
    for (int i = 0; i < NP; i++) {
        double best = -INFINITY, sum = 0.0, t[64];
        for (int k = 0; k < K; k++) {
            double q2 = 0.0, lsum = 0.0;
            for (int d = 0; d < D; d++) {
                double z = exp(lq[k * D + d]) * (X[i * D + d] - mu[k * D + d]);
                q2 += z * z;
                lsum += lq[k * D + d];
            }
            t[k] = alpha[k] + lsum - 0.5 * q2;
            best = t[k] > best ? t[k] : best;
        }
        for (int k = 0; k < K; k++)
            sum += exp(t[k] - best);
        s += best + log(sum);
    }
    double amax = -INFINITY, asum = 0.0;
    for (int k = 0; k < K; k++)
        amax = alpha[k] > amax ? alpha[k] : amax;
    for (int k = 0; k < K; k++)
        asum += exp(alpha[k] - amax);
    return s - NP * (amax + log(asum));
}

static long setup(int argc, char **argv)
{
    D = argc > 0 ? atoi(argv[0]) : 8;
    K = argc > 1 ? atoi(argv[1]) : 10;
    NP = argc > 2 ? atoi(argv[2]) : 20000;
    if (K > 64)
        K = 64;
    X = malloc(sizeof(double) * NP * D);
    for (long i = 0; i < (long)NP * D; i++)
        X[i] = ((i * 104729) % 2000) / 1000.0 - 1.0;
    return K + 2L * K * D;
}

static void init(double *x, long n)
{
    for (long i = 0; i < n; i++)
        x[i] = 0.3 * (((i * 7919) % 1000) / 1000.0 - 0.5);
}

#include "omp_main.h"
