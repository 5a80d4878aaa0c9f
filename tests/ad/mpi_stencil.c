/* A 1-D domain decomposition: M global points split into contiguous blocks
 * (one per rank), T explicit steps of a nonlinear diffusion, halo exchange by
 * MPI_Send/MPI_Recv ordered by rank parity (even ranks send first), zero
 * Dirichlet boundaries.  Each rank returns its part of the loss; J = sum over
 * ranks.  The reverse-mode gradient of J with respect to the initial state is
 * checked against central differences (collectively) and gathered to rank 0,
 * which prints it ("stencil_grad ...") so that runs on different rank counts
 * can be compared; forward mode is checked against the same differences along
 * a direction.  Prints "FAIL ..." lines on mismatch. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int enzyme_dup, enzyme_const;
double __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);

#define M 24
#define STEPS 6

static void halo(double *u, int n, double *hl, double *hr, int me, int np)
{
    *hl = 0.0;
    *hr = 0.0;
    if (me % 2 == 0) {
        if (me + 1 < np) {
            MPI_Send(&u[n - 1], 1, MPI_DOUBLE, me + 1, 1, MPI_COMM_WORLD);
            MPI_Recv(hr, 1, MPI_DOUBLE, me + 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        if (me > 0) {
            MPI_Send(&u[0], 1, MPI_DOUBLE, me - 1, 2, MPI_COMM_WORLD);
            MPI_Recv(hl, 1, MPI_DOUBLE, me - 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    } else {
        if (me > 0) {
            MPI_Recv(hl, 1, MPI_DOUBLE, me - 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&u[0], 1, MPI_DOUBLE, me - 1, 2, MPI_COMM_WORLD);
        }
        if (me + 1 < np) {
            MPI_Recv(hr, 1, MPI_DOUBLE, me + 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&u[n - 1], 1, MPI_DOUBLE, me + 1, 1, MPI_COMM_WORLD);
        }
    }
}

double stencil(const double *u0, int n, int steps)
{
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    double *u = malloc(sizeof(double) * n), *v = malloc(sizeof(double) * n);
    memcpy(u, u0, sizeof(double) * n);
    for (int t = 0; t < steps; t++) {
        double hl, hr;
        halo(u, n, &hl, &hr, me, np);
        for (int i = 0; i < n; i++) {
            double l = i > 0 ? u[i - 1] : hl, r = i < n - 1 ? u[i + 1] : hr;
            v[i] = u[i] + 0.2 * (l - 2.0 * u[i] + r) - 0.05 * u[i] * u[i] * u[i];
        }
        double *w = u;
        u = v;
        v = w;
    }
    double loss = 0.0;
    for (int i = 0; i < n; i++) {
        int g = me * n + i;
        loss += (1.0 + 0.1 * g) * u[i] * u[i];
    }
    free(u);
    free(v);
    return loss;
}

static int n_fail;

static void check(const char *what, int i, double got, double want, int me)
{
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    if (!(fabs(got - want) <= 1e-6 * scale)) {
        printf("FAIL %s[%d] rank %d got %.15g want %.15g\n", what, i, me, got, want);
        n_fail++;
    }
}

static double total(const double *u, int n)
{
    double j = stencil(u, n, STEPS), s = 0.0;
    MPI_Allreduce(&j, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return s;
}

int main(int argc, char **argv)
{
    int me, np;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (M % np) {
        if (me == 0)
            printf("FAIL %d ranks do not divide %d points\n", np, M);
        MPI_Finalize();
        return 1;
    }
    int n = M / np;
    double u[M], du[M], fd[M], dir[M], g[M];
    for (int i = 0; i < n; i++) {
        int gi = me * n + i;
        u[i] = sin(0.7 * gi) + 0.3;
        dir[i] = cos(0.3 * gi);
    }
    memset(du, 0, sizeof du);
    __enzyme_autodiff((void *)stencil, enzyme_dup, u, du, enzyme_const, n, enzyme_const, STEPS);
    for (int q = 0; q < np; q++)
        for (int i = 0; i < n; i++) {
            double s = u[i], h = 1e-6;
            if (me == q)
                u[i] = s + h;
            double jp = total(u, n);
            if (me == q)
                u[i] = s - h;
            double jm = total(u, n);
            u[i] = s;
            if (me == q)
                fd[i] = (jp - jm) / (2 * h);
        }
    for (int i = 0; i < n; i++)
        check("reverse", me * n + i, du[i], fd[i], me);
    double t = __enzyme_fwddiff((void *)stencil, enzyme_dup, u, dir, enzyme_const, n,
                                enzyme_const, STEPS);
    double ts = 0.0, up[M], um[M];
    MPI_Allreduce(&t, &ts, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < n; i++) {
        up[i] = u[i] + 1e-6 * dir[i];
        um[i] = u[i] - 1e-6 * dir[i];
    }
    double want = (total(up, n) - total(um, n)) / 2e-6;
    check("forward", 0, ts, want, me);
    MPI_Gather(du, n, MPI_DOUBLE, g, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (me == 0) {
        printf("stencil_grad");
        for (int i = 0; i < M; i++)
            printf(" %.17e", g[i]);
        printf("\n");
    }
    int all = 0;
    MPI_Allreduce(&n_fail, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0)
        printf("checked %d ranks, %d failures\n", np, all);
    MPI_Finalize();
    return all ? 1 : 0;
}
