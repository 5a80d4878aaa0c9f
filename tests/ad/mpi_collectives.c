/* Gradients through MPI calls, reverse (__enzyme_autodiff) and forward
 * (__enzyme_fwddiff) mode, checked against central differences of
 * J = sum over ranks of f(x) taken collectively.  Each rank owns x[N].
 * Every rank's result is an output seeded with 1 (Enzyme's MPI semantics), so
 * the reverse-mode gradient on rank r is dJ/dx_r; forward mode with a
 * direction v on every rank gives each rank's tangent, whose sum over ranks is
 * dJ.v.  Prints "FAIL ..." lines on mismatch and "grad <name> <rank> g..." lines
 * (the test compares those across rank counts where the problem is the same). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int enzyme_dup, enzyme_const;
double __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);
typedef struct { double d[2]; } D2;
D2 __enzyme_fwddiff_w2(void *, ...);
int enzyme_width;

#define N 4
static int rank_, nranks_, n_fail;

/* Allreduce SUM into a separate buffer and in place */
double f_allreduce(const double *x, int n)
{
    double part[2] = {0, 0}, s[2];
    for (int i = 0; i < n; i++) {
        part[0] += x[i] * x[i];
        part[1] += sin(x[i]);
    }
    MPI_Allreduce(part, s, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, part, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return log(1.0 + s[0]) * s[1] + 0.25 * part[0] * part[1];
}

/* elementwise MAX and MIN over ranks */
double f_minmax(const double *x, int n)
{
    double a[N], mx[N], mn[N], r = 0.0;
    for (int i = 0; i < n; i++)
        a[i] = x[i] * (1.0 + 0.1 * i);
    MPI_Allreduce(a, mx, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(a, mn, n, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    for (int i = 0; i < n; i++)
        r += mx[i] * mx[i] + 3.0 * mn[i] + mx[i] * mn[i];
    return r;
}

/* PROD over ranks, then Reduce(MAX) to the root and a Bcast back */
double f_prod(const double *x, int n)
{
    double p[N], m = 0.0;
    MPI_Allreduce((void *)x, p, n, MPI_DOUBLE, MPI_PROD, MPI_COMM_WORLD);
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += p[i] * (i + 1);
    double loc = x[0] * x[1];
    MPI_Reduce(&loc, &m, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Bcast(&m, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return s + m * m;
}

/* Reduce SUM to the last rank (result only there), Gather to rank 0, Scatter
 * back, Allgather */
double f_gather(const double *x, int n)
{
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    double loc = 0.0, tot = 0.0, r = 0.0;
    for (int i = 0; i < n; i++)
        loc += exp(0.3 * x[i]);
    MPI_Reduce(&loc, &tot, 1, MPI_DOUBLE, MPI_SUM, np - 1, MPI_COMM_WORLD);
    if (me == np - 1)
        r += tot * tot;
    double *all = malloc(sizeof(double) * n * np);
    double back[N], ag[64];
    MPI_Gather((void *)x, n, MPI_DOUBLE, all, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (me == 0)
        for (int i = 0; i < n * np; i++)
            all[i] = all[i] * all[i] + (double)i;
    MPI_Scatter(all, n, MPI_DOUBLE, back, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    for (int i = 0; i < n; i++)
        r += sin(back[i]) * x[(i + 1) % n];
    MPI_Allgather(back, 2, MPI_DOUBLE, ag, 2, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int i = 0; i < 2 * np; i++)
        r += 0.1 * (me + 1) * ag[i] * ag[i];
    free(all);
    return r;
}

/* a ring: Sendrecv to the right, then a Recv with MPI_ANY_SOURCE, a Barrier */
double f_ring(const double *x, int n)
{
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    double y[N], z[N], r = 0.0;
    for (int i = 0; i < n; i++)
        y[i] = x[i] * x[i] + x[(i + 1) % n];
    MPI_Sendrecv(y, n, MPI_DOUBLE, (me + 1) % np, 3, z, n, MPI_DOUBLE, (me + np - 1) % np, 3,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int i = 0; i < n; i++)
        r += z[i] * cos(x[i]);
    MPI_Barrier(MPI_COMM_WORLD);
    if (np > 1) {
        double w = r * r;
        if (me != 0) {
            MPI_Send(&w, 1, MPI_DOUBLE, 0, 10 + me, MPI_COMM_WORLD);
        } else {
            MPI_Status st;
            for (int q = 1; q < np; q++) {
                double got;
                MPI_Recv(&got, 1, MPI_DOUBLE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
                r += (st.MPI_SOURCE + 1) * got;
            }
        }
    }
    return r;
}

/* nonblocking: a halo exchange with Isend/Irecv and Waitall, then an Isend/Irecv
 * pair of a computed vector to the left neighbour completed by two MPI_Wait */
double f_nonblocking(const double *x, int n)
{
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    int left = (me + np - 1) % np, right = (me + 1) % np;
    double hl = 0, hr = 0, y[N], z[N], r = 0.0;
    MPI_Request rq[4];
    MPI_Irecv(&hl, 1, MPI_DOUBLE, left, 5, MPI_COMM_WORLD, &rq[0]);
    MPI_Irecv(&hr, 1, MPI_DOUBLE, right, 6, MPI_COMM_WORLD, &rq[1]);
    MPI_Isend((void *)&x[n - 1], 1, MPI_DOUBLE, right, 5, MPI_COMM_WORLD, &rq[2]);
    MPI_Isend((void *)&x[0], 1, MPI_DOUBLE, left, 6, MPI_COMM_WORLD, &rq[3]);
    MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
    for (int i = 0; i < n; i++)
        y[i] = x[i] * (hl + 2.0 * hr) + sin(x[i]);
    MPI_Request a, b;
    MPI_Isend(y, n, MPI_DOUBLE, left, 7, MPI_COMM_WORLD, &a);
    MPI_Irecv(z, n, MPI_DOUBLE, right, 7, MPI_COMM_WORLD, &b);
    MPI_Wait(&b, MPI_STATUS_IGNORE);
    MPI_Wait(&a, MPI_STATUS_IGNORE);
    for (int i = 0; i < n; i++)
        r += z[i] * z[i] * (1.0 + 0.1 * i) + hl * x[i];
    return r;
}

/* MPI_IN_PLACE chosen at run time, the usual idiom for a Reduce to the root */
double f_reduce_in_place(const double *x, int n)
{
    int me;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    double y[N], r = 0.0;
    for (int i = 0; i < n; i++)
        y[i] = x[i] * x[i] + 0.5 * x[(i + 1) % n];
    MPI_Reduce(me == 0 ? MPI_IN_PLACE : y, me == 0 ? y : NULL, n, MPI_DOUBLE, MPI_SUM, 0,
               MPI_COMM_WORLD);
    if (me == 0)
        for (int i = 0; i < n; i++)
            r += sin(y[i]) * (i + 1);
    return r;
}

typedef double (*fn_t)(const double *, int);
typedef void (*grad_t)(double *, double *);
typedef double (*tan_t)(double *, double *);
typedef D2 (*tan2_t)(double *, double *, double *);

/* the differentiated function must be known at compile time at each call site */
#define DIFF(f)                                                                     \
    static void grad_##f(double *x, double *dx)                                     \
    {                                                                               \
        __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, N);           \
    }                                                                               \
    static double tan_##f(double *x, double *v)                                     \
    {                                                                               \
        return __enzyme_fwddiff((void *)f, enzyme_dup, x, v, enzyme_const, N);      \
    }                                                                               \
    static D2 tan2_##f(double *x, double *v, double *w)                             \
    {                                                                               \
        return __enzyme_fwddiff_w2((void *)f, enzyme_width, 2, enzyme_dup, x, v, w, \
                                   enzyme_const, N);                                \
    }
DIFF(f_allreduce)
DIFF(f_minmax)
DIFF(f_prod)
DIFF(f_gather)
DIFF(f_ring)
DIFF(f_nonblocking)
DIFF(f_reduce_in_place)

static double total(fn_t f, const double *x)
{
    double v = f(x, N), s = 0.0;
    MPI_Allreduce(&v, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return s;
}

static void check(const char *name, const char *what, int i, double got, double want)
{
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    if (!(fabs(got - want) <= 1e-6 * scale)) {
        printf("FAIL %s %s[%d] rank %d got %.15g want %.15g\n", name, what, i, rank_, got,
               want);
        n_fail++;
    }
}

static void run(const char *name, fn_t f, grad_t grad, tan_t tan, tan2_t tan2)
{
    double x[N], dx[N], fd[N], v[N];
    for (int i = 0; i < N; i++) {
        x[i] = 0.3 + 0.17 * i + 0.41 * rank_ - 0.05 * ((i + rank_) % 3);
        v[i] = 0.5 - 0.2 * i + 0.3 * rank_;
    }
    /* reverse */
    memset(dx, 0, sizeof dx);
    grad(x, dx);
    for (int q = 0; q < nranks_; q++)
        for (int i = 0; i < N; i++) {
            double save = x[i], h = 1e-6;
            if (rank_ == q)
                x[i] = save + h;
            double jp = total(f, x);
            if (rank_ == q)
                x[i] = save - h;
            double jm = total(f, x);
            x[i] = save;
            if (rank_ == q)
                fd[i] = (jp - jm) / (2 * h);
        }
    for (int i = 0; i < N; i++)
        check(name, "reverse", i, dx[i], fd[i]);
    printf("grad %s %d", name, rank_);
    for (int i = 0; i < N; i++)
        printf(" %.15e", dx[i]);
    printf("\n");
    /* forward: sum over ranks of the tangents = dJ . v */
    double t = tan(x, v), tsum = 0.0;
    MPI_Allreduce(&t, &tsum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double xp[N], xm[N], h = 1e-6;
    for (int i = 0; i < N; i++) {
        xp[i] = x[i] + h * v[i];
        xm[i] = x[i] - h * v[i];
    }
    double fdd = (total(f, xp) - total(f, xm)) / (2 * h);
    check(name, "forward", 0, tsum, fdd);
    /* and against reverse: sum over ranks of dx . v */
    double dot = 0.0, dsum = 0.0;
    for (int i = 0; i < N; i++)
        dot += dx[i] * v[i];
    MPI_Allreduce(&dot, &dsum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    check(name, "forward.vs.reverse", 0, tsum, dsum);
    /* vector forward mode (two directions at once) against two width-1 calls */
    double w[N];
    for (int i = 0; i < N; i++)
        w[i] = cos(1.7 * i + rank_);
    D2 t2 = tan2(x, v, w);
    double tw = tan(x, w);
    check(name, "forward.width2.lane0", 0, t2.d[0], t);
    check(name, "forward.width2.lane1", 0, t2.d[1], tw);
    /* f_ring's receive from MPI_ANY_SOURCE with MPI_ANY_TAG would otherwise match a
     * message of the next test's function from a rank that got there first */
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks_);
    setvbuf(stdout, NULL, _IOLBF, 0);
    run("allreduce", f_allreduce, grad_f_allreduce, tan_f_allreduce, tan2_f_allreduce);
    run("minmax", f_minmax, grad_f_minmax, tan_f_minmax, tan2_f_minmax);
    run("prod", f_prod, grad_f_prod, tan_f_prod, tan2_f_prod);
    run("gather", f_gather, grad_f_gather, tan_f_gather, tan2_f_gather);
    run("ring", f_ring, grad_f_ring, tan_f_ring, tan2_f_ring);
    run("nonblocking", f_nonblocking, grad_f_nonblocking, tan_f_nonblocking, tan2_f_nonblocking);
    run("reduce_in_place", f_reduce_in_place, grad_f_reduce_in_place, tan_f_reduce_in_place,
        tan2_f_reduce_in_place);
    int all = 0;
    MPI_Allreduce(&n_fail, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank_ == 0)
        printf("checked %d ranks, %d failures\n", nranks_, all);
    MPI_Finalize();
    return all ? 1 : 0;
}
