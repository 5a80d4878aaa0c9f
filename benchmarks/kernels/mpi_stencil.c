/* MPI benchmark kernel (issue 13 item 4): a 1-D nonlinear diffusion on M global
 * points split into contiguous blocks, one per rank, STEPS explicit steps with
 * halo exchange by MPI_Send/MPI_Recv (even ranks send first), zero Dirichlet
 * boundaries; each rank returns its part of a weighted sum of squares.
 * usage: mpi_stencil M STEPS REPS OUT: times the primal and the gradient
 * (reverse mode, __enzyme_autodiff) REPS times each (the slowest rank of each
 * call, median over the calls), prints them, and rank 0 writes the gathered
 * global gradient (M doubles) to OUT. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int enzyme_dup, enzyme_const;
double __enzyme_autodiff(void *, ...);

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

double stencil(const double *u0, int n, int steps, int offset)
{
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    double *u = malloc(sizeof(double) * n), *v = malloc(sizeof(double) * n);
    memcpy(u, u0, sizeof(double) * n);
    for (int t = 0; t < steps; t++) {
        double hl, hr;
        halo(u, n, &hl, &hr, me, np);
        v[0] = u[0] + 0.2 * (hl - 2.0 * u[0] + u[1]) - 0.05 * u[0] * u[0] * u[0];
        for (int i = 1; i < n - 1; i++)
            v[i] = u[i] + 0.2 * (u[i - 1] - 2.0 * u[i] + u[i + 1]) - 0.05 * u[i] * u[i] * u[i];
        v[n - 1] = u[n - 1] + 0.2 * (u[n - 2] - 2.0 * u[n - 1] + hr) -
                   0.05 * u[n - 1] * u[n - 1] * u[n - 1];
        double *w = u;
        u = v;
        v = w;
    }
    double loss = 0.0;
    for (int i = 0; i < n; i++)
        loss += (1.0 + 1e-5 * (offset + i)) * u[i] * u[i];
    free(u);
    free(v);
    return loss;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int me, np;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc < 5) {
        if (me == 0)
            fprintf(stderr, "usage: mpi_stencil M STEPS REPS OUT\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int M = atoi(argv[1]), steps = atoi(argv[2]), reps = atoi(argv[3]);
    if (M % np || M / np < 2) {
        if (me == 0)
            fprintf(stderr, "mpi_stencil: %d ranks must divide %d points\n", np, M);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int n = M / np;
    double *u = malloc(sizeof(double) * n), *du = malloc(sizeof(double) * n);
    double *tp = malloc(sizeof(double) * reps), *tg = malloc(sizeof(double) * reps);
    for (int i = 0; i < n; i++)
        u[i] = 0.5 * sin(1e-3 * (me * n + i)) + 0.3;
    double sink = 0.0;
    for (int k = -1; k < reps; k++) {   /* k = -1: warm-up */
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        sink += stencil(u, n, steps, me * n);
        double t1 = MPI_Wtime() - t0, tmax;
        MPI_Allreduce(&t1, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        memset(du, 0, sizeof(double) * n);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        __enzyme_autodiff((void *)stencil, enzyme_dup, u, du, enzyme_const, n, enzyme_const,
                          steps, enzyme_const, me * n);
        double t2 = MPI_Wtime() - t0, gmax;
        MPI_Allreduce(&t2, &gmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (k >= 0) {
            tp[k] = tmax;
            tg[k] = gmax;
        }
    }
    qsort(tp, reps, sizeof(double), cmp);
    qsort(tg, reps, sizeof(double), cmp);
    double *g = me == 0 ? malloc(sizeof(double) * M) : NULL;
    MPI_Gather(du, n, MPI_DOUBLE, g, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (me == 0) {
        FILE *f = fopen(argv[4], "wb");
        if (!f || fwrite(g, sizeof(double), M, f) != (size_t)M || fclose(f)) {
            fprintf(stderr, "mpi_stencil: cannot write %s\n", argv[4]);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        printf("ranks %d M %d steps %d primal %.6e s gradient %.6e s ratio %.2f (%g)\n", np, M,
               steps, tp[reps / 2], tg[reps / 2], tg[reps / 2] / tp[reps / 2], sink);
    }
    MPI_Finalize();
    return 0;
}
