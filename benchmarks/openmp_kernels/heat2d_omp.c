/* 2-D heat stencil (5-point Laplacian, reaction term), explicit Euler over STEPS time
 * steps; each step a `#pragma omp parallel for` over the rows; loss = sum of squares
 * of the final field (a reduction).  The same computation as kernels/heat2d.c.
 *   sizes: n steps
 */
#include <stdlib.h>

static int NX, STEPS;

static double objective(const double *u0)
{
    const int n = NX, steps = STEPS;
    const double r = 0.2, dt = 0.01;
    double *u = malloc(sizeof(double) * n * n), *v = malloc(sizeof(double) * n * n);
#pragma omp parallel for
    for (int i = 0; i < n * n; i++) {
        u[i] = u0[i];
        v[i] = u0[i];
    }
    for (int s = 0; s < steps; s++) {
#pragma omp parallel for
        for (int i = 1; i < n - 1; i++)
            for (int j = 1; j < n - 1; j++) {
                double c = u[i * n + j];
                v[i * n + j] = c + r * (u[(i - 1) * n + j] + u[(i + 1) * n + j] +
                                        u[i * n + j - 1] + u[i * n + j + 1] - 4.0 * c) +
                               dt * c * (1.0 - c);
            }
        double *t = u;
        u = v;
        v = t;
    }
    double loss = 0.0;
#pragma omp parallel for reduction(+ : loss)
    for (int i = 0; i < n * n; i++)
        loss += u[i] * u[i];
    free(u);
    free(v);
    return loss;
}

static long setup(int argc, char **argv)
{
    NX = argc > 0 ? atoi(argv[0]) : 256;
    STEPS = argc > 1 ? atoi(argv[1]) : 50;
    return (long)NX * NX;
}

static void init(double *x, long n)
{
    for (long i = 0; i < n; i++)
        x[i] = 0.5 + 0.4 * ((i * 7919) % 1000) / 1000.0;
}

#include "omp_main.h"
