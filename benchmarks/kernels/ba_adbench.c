/* BA as ADBench's C writes it (ADBench's ba.h objective in the C form of Enzyme's ADBench
 * port): compute_reproj_error(cam, X, w, feat, err) and compute_zach_weight_error(w, err)
 * over separate pointer arguments without `restrict`, helpers (sqsum, cross,
 * rodrigues_rotate_point, radial_distort, project) writing through out-pointers, no
 * globals.  The derivative is ADBench's sparse Jacobian, built as ADBench's Enzyme
 * runner builds it: per observation one reverse pass per row of the reprojection error
 * (w.r.t. camera, point and weight, `enzyme_dupnoneed` on err), then one per weight
 * error.  Same model, inputs and Jacobian layout as ba.c.  Sizes: n_cams n_points n_obs.
 */
#define KERNEL_NAME "ba_adbench"
#define BENCH_CUSTOM
#include "bench.h"

double sqsum(int n, double const *x) {
    int i;
    double res = 0;
    for (i = 0; i < n; i++) res = res + x[i] * x[i];
    return res;
}

void cross(double const *a, double const *b, double *out) {
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
}

void rodrigues_rotate_point(double const *rot, double const *pt, double *rotatedPt) {
    int i;
    double sqtheta = sqsum(3, rot);
    if (sqtheta != 0) {
        double theta, costheta, sintheta, theta_inverse;
        double w[3], w_cross_pt[3], tmp;

        theta = sqrt(sqtheta);
        costheta = cos(theta);
        sintheta = sin(theta);
        theta_inverse = 1.0 / theta;

        for (i = 0; i < 3; i++) w[i] = rot[i] * theta_inverse;

        cross(w, pt, w_cross_pt);

        tmp = (w[0] * pt[0] + w[1] * pt[1] + w[2] * pt[2]) * (1. - costheta);

        for (i = 0; i < 3; i++)
            rotatedPt[i] = pt[i] * costheta + w_cross_pt[i] * sintheta + w[i] * tmp;
    } else {
        double rot_cross_pt[3];
        cross(rot, pt, rot_cross_pt);

        for (i = 0; i < 3; i++) rotatedPt[i] = pt[i] + rot_cross_pt[i];
    }
}

void radial_distort(double const *rad_params, double *proj) {
    double rsq, L;
    rsq = sqsum(2, proj);
    L = 1. + rad_params[0] * rsq + rad_params[1] * rsq * rsq;
    proj[0] = proj[0] * L;
    proj[1] = proj[1] * L;
}

void project(double const *cam, double const *X, double *proj) {
    double const *C = &cam[3];
    double Xo[3], Xcam[3];

    Xo[0] = X[0] - C[0];
    Xo[1] = X[1] - C[1];
    Xo[2] = X[2] - C[2];

    rodrigues_rotate_point(&cam[0], Xo, Xcam);

    proj[0] = Xcam[0] / Xcam[2];
    proj[1] = Xcam[1] / Xcam[2];

    radial_distort(&cam[9], proj);

    proj[0] = proj[0] * cam[6] + cam[7];
    proj[1] = proj[1] * cam[6] + cam[8];
}

void compute_reproj_error(double const *cam, double const *X, double const *w, double const *feat,
                          double *err) {
    double proj[2];
    project(cam, X, proj);

    err[0] = (*w) * (proj[0] - feat[0]);
    err[1] = (*w) * (proj[1] - feat[1]);
}

void compute_zach_weight_error(double const *w, double *err) { *err = 1 - (*w) * (*w); }

/* ---- the benchmark driver (not part of ADBench's objective) ---------------- */

static long NC, NP, NO;
static double *CAMS, *PTS, *WS, *FEATS;
static int64_t *OBS; /* NO * 2: camera index, point index */
static double *ERRS; /* 2*NO reprojection errors then NO weight errors */

static long fd_count(void) { return NO * 31; }

static double primal_run(void) {
    for (long i = 0; i < NO; i++)
        compute_reproj_error(CAMS + 11 * OBS[2 * i], PTS + 3 * OBS[2 * i + 1], WS + i,
                             FEATS + 2 * i, ERRS + 2 * i);
    for (long i = 0; i < NO; i++) compute_zach_weight_error(WS + i, ERRS + 2 * NO + i);
    return ERRS[0] + ERRS[3 * NO - 1];
}

/* derivative layout: per observation 2 rows x [cam 11 | point 3 | weight 1], then one
 * entry d(1 - w^2)/dw per observation */
static void gradient_run(double *G) {
    double err[2];
    for (long i = 0; i < NO; i++) {
        for (int r = 0; r < 2; r++) {
            double *row = G + 30 * i + 15 * r;
            double derr[2] = {r == 0, r == 1};
            memset(row, 0, 15 * sizeof(double));
            __enzyme_autodiff((void *)compute_reproj_error,
                              enzyme_dup, CAMS + 11 * OBS[2 * i], row,
                              enzyme_dup, PTS + 3 * OBS[2 * i + 1], row + 11,
                              enzyme_dup, WS + i, row + 14,
                              enzyme_const, FEATS + 2 * i,
                              enzyme_dupnoneed, err, derr);
        }
    }
    for (long i = 0; i < NO; i++) {
        double e, de = 1.0;
        G[30 * NO + i] = 0.0;
        __enzyme_autodiff((void *)compute_zach_weight_error, enzyme_dup, WS + i, G + 30 * NO + i,
                          enzyme_dupnoneed, &e, &de);
    }
}

static double reproj_row(long i, int r, int c, double delta) {
    double in[15], err[2];
    memcpy(in, CAMS + 11 * OBS[2 * i], 11 * sizeof(double));
    memcpy(in + 11, PTS + 3 * OBS[2 * i + 1], 3 * sizeof(double));
    in[14] = WS[i];
    in[c] += delta;
    compute_reproj_error(in, in + 11, in + 14, FEATS + 2 * i, err);
    return err[r];
}

static double fd_entry(long j, long *gidx) {
    *gidx = j;
    if (j >= 30 * NO) {
        long i = j - 30 * NO;
        double w = WS[i], h = 1e-6, ep, em;
        double wp = w + h, wm = w - h;
        compute_zach_weight_error(&wp, &ep);
        compute_zach_weight_error(&wm, &em);
        return (ep - em) / (2 * h);
    }
    long i = j / 30;
    int r = (int)(j % 30) / 15, c = (int)(j % 15);
    double base = c < 11 ? CAMS[11 * OBS[2 * i] + c] : c < 14 ? PTS[3 * OBS[2 * i + 1] + c - 11] : WS[i];
    double h = 1e-6 * (fabs(base) > 1.0 ? fabs(base) : 1.0);
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
