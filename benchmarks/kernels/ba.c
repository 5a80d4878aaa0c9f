/* BA: bundle adjustment as Microsoft ADBench defines it — reprojection error of each
 * observation with the standard camera model (Rodrigues rotation, centre, focal length,
 * principal point, two radial distortion terms: 11 parameters per camera), weighted,
 * plus the Zach robustifier's weight error 1 - w^2.  The derivative is ADBench's sparse
 * Jacobian: per observation the 2x15 block of its reprojection error w.r.t. its camera
 * (11), point (3) and weight (1), computed with one reverse pass per row, then the
 * derivatives of the weight errors.  Sizes: n_cams n_points n_obs.
 */
#define KERNEL_NAME "ba"
#define BENCH_CUSTOM
#include "bench.h"

static long NC, NP, NO;
static double *CAMS, *PTS, *WS, *FEATS;
static int64_t *OBS; /* NO * 2: camera index, point index */
static double *ERRS; /* 2*NO reprojection errors then NO weight errors */

static void rodrigues_rotate_point(const real *rot, const real *X, real *out) {
    real sqtheta = rot[0] * rot[0] + rot[1] * rot[1] + rot[2] * rot[2];
    if (sqtheta != 0.0) {
        real theta = sqrt(sqtheta);
        real costheta = cos(theta), sintheta = sin(theta);
        real theta_inv = 1.0 / theta;
        real w0 = rot[0] * theta_inv, w1 = rot[1] * theta_inv, w2 = rot[2] * theta_inv;
        real c0 = w1 * X[2] - w2 * X[1], c1 = w2 * X[0] - w0 * X[2], c2 = w0 * X[1] - w1 * X[0];
        real tmp = (w0 * X[0] + w1 * X[1] + w2 * X[2]) * (1.0 - costheta);
        out[0] = X[0] * costheta + c0 * sintheta + w0 * tmp;
        out[1] = X[1] * costheta + c1 * sintheta + w1 * tmp;
        out[2] = X[2] * costheta + c2 * sintheta + w2 * tmp;
    } else {
        out[0] = X[0] + rot[1] * X[2] - rot[2] * X[1];
        out[1] = X[1] + rot[2] * X[0] - rot[0] * X[2];
        out[2] = X[2] + rot[0] * X[1] - rot[1] * X[0];
    }
}

static void project(const real *cam, const real *X, real *proj) {
    real Xo[3], Xcam[3];
    for (int i = 0; i < 3; i++) Xo[i] = X[i] - cam[3 + i];
    rodrigues_rotate_point(cam, Xo, Xcam);
    real p0 = Xcam[0] / Xcam[2], p1 = Xcam[1] / Xcam[2];
    real rsq = p0 * p0 + p1 * p1;
    real Ld = 1.0 + cam[9] * rsq + cam[10] * rsq * rsq;
    proj[0] = p0 * Ld * cam[6] + cam[7];
    proj[1] = p1 * Ld * cam[6] + cam[8];
}

static void compute_reproj_error(const real *cam, const real *X, const real *w, const double *feat,
                                 real *err) {
    real proj[2];
    project(cam, X, proj);
    err[0] = (*w) * (proj[0] - feat[0]);
    err[1] = (*w) * (proj[1] - feat[1]);
}

static long fd_count(void) { return NO * 31; }

/* derivative layout: per observation 2 rows x [cam 11 | point 3 | weight 1], then one
 * entry d(1 - w^2)/dw per observation */
#ifndef BENCH_ADOLC
static double primal_run(void) {
    for (long i = 0; i < NO; i++)
        compute_reproj_error(CAMS + 11 * OBS[2 * i], PTS + 3 * OBS[2 * i + 1], WS + i, FEATS + 2 * i,
                             ERRS + 2 * i);
    for (long i = 0; i < NO; i++) ERRS[2 * NO + i] = 1.0 - WS[i] * WS[i];
    return ERRS[0] + ERRS[3 * NO - 1];
}

static void gradient_run(double *G) {
    double err[2];
    for (long i = 0; i < NO; i++) {
        for (int r = 0; r < 2; r++) {
            double *row = G + 30 * i + 15 * r;
            double derr[2] = {r == 0, r == 1};
            memset(row, 0, 15 * sizeof(double));
            __enzyme_autodiff((void *)compute_reproj_error, enzyme_dup, CAMS + 11 * OBS[2 * i], row,
                              enzyme_dup, PTS + 3 * OBS[2 * i + 1], row + 11, enzyme_dup, WS + i,
                              row + 14, enzyme_const, FEATS + 2 * i, enzyme_dupnoneed, err, derr);
        }
    }
    for (long i = 0; i < NO; i++) G[30 * NO + i] = -2.0 * WS[i];
}
#else
static double primal_run(void) { return 0.0; }

/* ADOL-C: the reprojection error is recorded once, with the feature as two more
 * independent variables, and the tape reused for every observation (ADOL-C asks for a
 * new recording when a branch would change: rc < 0). */
static void tape_reproj(const double *in) {
    trace_on(2);
    adouble a[17], e[2];
    for (int j = 0; j < 17; j++) a[j] <<= in[j];
    real proj[2];
    project(a, a + 11, proj);
    e[0] = a[14] * (proj[0] - a[15]);
    e[1] = a[14] * (proj[1] - a[16]);
    double out[2];
    e[0] >>= out[0];
    e[1] >>= out[1];
    trace_off();
}

static void gradient_run(double *G) {
    double in[17];
    double J0[17], J1[17];
    double *J[2] = {J0, J1};
    for (long i = 0; i < NO; i++) {
        memcpy(in, CAMS + 11 * OBS[2 * i], 11 * sizeof(double));
        memcpy(in + 11, PTS + 3 * OBS[2 * i + 1], 3 * sizeof(double));
        in[14] = WS[i];
        in[15] = FEATS[2 * i];
        in[16] = FEATS[2 * i + 1];
        if (i == 0) tape_reproj(in);
        if (jacobian(2, 2, 17, in, J) < 0) {
            tape_reproj(in);
            jacobian(2, 2, 17, in, J);
        }
        memcpy(G + 30 * i, J0, 15 * sizeof(double));
        memcpy(G + 30 * i + 15, J1, 15 * sizeof(double));
    }
    for (long i = 0; i < NO; i++) G[30 * NO + i] = -2.0 * WS[i];
}
#endif

static double reproj_row(long i, int r, int c, double delta) {
    double in[15], err[2];
    memcpy(in, CAMS + 11 * OBS[2 * i], 11 * sizeof(double));
    memcpy(in + 11, PTS + 3 * OBS[2 * i + 1], 3 * sizeof(double));
    in[14] = WS[i];
    in[c] += delta;
#ifdef BENCH_ADOLC
    (void)r;
    (void)err;
    return 0.0;
#else
    compute_reproj_error(in, in + 11, in + 14, FEATS + 2 * i, err);
    return err[r];
#endif
}

static double fd_entry(long j, long *gidx) {
    if (j >= 30 * NO) {
        long i = j - 30 * NO;
        double w = WS[i], h = 1e-6;
        *gidx = j;
        return ((1.0 - (w + h) * (w + h)) - (1.0 - (w - h) * (w - h))) / (2 * h);
    }
    long i = j / 30;
    int r = (int)(j % 30) / 15, c = (int)(j % 15);
    double base = c < 11 ? CAMS[11 * OBS[2 * i] + c] : c < 14 ? PTS[3 * OBS[2 * i + 1] + c - 11] : WS[i];
    double h = 1e-6 * (fabs(base) > 1.0 ? fabs(base) : 1.0);
    *gidx = j;
    return (reproj_row(i, r, c, h) - reproj_row(i, r, c, -h)) / (2 * h);
}

static void setup(const long *sz, int nsz) {
    NC = nsz > 0 ? sz[0] : 21;
    NP = nsz > 1 ? sz[1] : 11315;
    NO = nsz > 2 ? sz[2] : 36455;
    CAMS = ALLOC(double, 11 * NC);
    for (long c = 0; c < NC; c++) {
        double *cam = CAMS + 11 * c;
        for (int j = 0; j < 3; j++) cam[j] = 0.1 * bench_normal();        /* rotation */
        for (int j = 0; j < 2; j++) cam[3 + j] = bench_normal();          /* centre */
        cam[5] = -10.0 + bench_normal();
        cam[6] = 500.0 + 50.0 * bench_uniform();                          /* focal */
        cam[7] = bench_normal();                                          /* principal pt */
        cam[8] = bench_normal();
        cam[9] = 1e-3 * bench_normal();                                   /* distortion */
        cam[10] = 1e-4 * bench_normal();
    }
    PTS = ALLOC(double, 3 * NP);
    for (long i = 0; i < 3 * NP; i++) PTS[i] = bench_normal();
    WS = ALLOC(double, NO);
    FEATS = ALLOC(double, 2 * NO);
    OBS = ALLOC(int64_t, 2 * NO);
    for (long i = 0; i < NO; i++) {
        OBS[2 * i] = i % NC;
        OBS[2 * i + 1] = i < NP ? i : bench_index(NP);
        WS[i] = bench_range(0.5, 1.5);
        FEATS[2 * i] = bench_range(-50.0, 50.0);
        FEATS[2 * i + 1] = bench_range(-50.0, 50.0);
    }
    ERRS = ALLOC(double, 3 * NO);
    bench_n = 11 * NC + 3 * NP + NO;
    bench_m = 31 * NO;
    bench_x = CAMS; /* (the inputs are dumped array by array) */
    static char buf[160];
    snprintf(buf, sizeof buf, "\"n_cams\": %ld, \"n_points\": %ld, \"n_obs\": %ld", NC, NP, NO);
    bench_sizes(buf);
    bench_dump_d("cams", CAMS, 11 * NC);
    bench_dump_d("points", PTS, 3 * NP);
    bench_dump_d("weights", WS, NO);
    bench_dump_d("features", FEATS, 2 * NO);
    bench_dump_i("obs", OBS, 2 * NO);
}

#include "bench_main.h"
