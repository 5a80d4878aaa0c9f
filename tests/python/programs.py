"""C and C++ sources shared by the Python-interface tests, written the way people
write them (no const where it could be, float and double, in-out arrays, int labels)."""

import pathlib

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
MLP_C = EXAMPLES / "mlp.c"

# Shapes of Enzyme's integration tests (sumsquare, a least-squares fit, a stencil
# that writes its output, a float kernel, scalars mixed with arrays).
KERNELS = r"""
#include <math.h>

double sumsq(double *x, int n) {            /* not const: people forget */
    double s = 0;
    for (int i = 0; i < n; i++) s += x[i] * x[i];
    return s;
}

double lsq(const double *a, const double *xs, const double *ys, int n, double scale) {
    double r = 0;
    for (int i = 0; i < n; i++) {
        double e = scale * (a[0] + a[1] * xs[i] + a[2] * sin(xs[i])) - ys[i];
        r += e * e;
    }
    return 0.5 * r;
}

void stencil(const double *u, double *out, int n, double c) {
    for (int i = 0; i < n; i++) {
        double l = i > 0 ? u[i - 1] : 0.0, r = i + 1 < n ? u[i + 1] : 0.0;
        out[i] = c * (l - 2 * u[i] + r) + exp(-u[i]);
    }
}

void scale_inplace(double *v, int n, double k) { for (int i = 0; i < n; i++) v[i] = k * v[i] * v[i]; }

float dotf(const float *a, const float *b, int n) {
    float s = 0;
    for (int i = 0; i < n; i++) s += a[i] * b[i] * b[i];
    return s;
}

double rowsum(const double m[][3], int rows, const double w[3]) {
    double s = 0;
    for (int r = 0; r < rows; r++)
        for (int k = 0; k < 3; k++) s += m[r][k] * m[r][k] * w[k];
    return s;
}

int count_positive(const double *x, int n) { int c = 0; for (int i = 0; i < n; i++) c += x[i] > 0; return c; }

struct point { double x, y; };
double norm_point(const struct point *p) { return sqrt(p->x * p->x + p->y * p->y); }

static double helper(double x) { return x * x; }
double uses_helper(double x) { return helper(x) + 1.0; }
"""

CXX = r"""
#include <cmath>
#include <numeric>

namespace geo {
double area(const double *xy, int n) {           // shoelace formula
    double a = 0;
    for (int i = 0; i < n; i++) {
        int j = (i + 1) % n;
        a += xy[2 * i] * xy[2 * j + 1] - xy[2 * j] * xy[2 * i + 1];
    }
    return 0.5 * a;
}
}

template <typename T> T cube(T v) { return v * v * v; }

double energy(const double *x, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += cube(x[i]) + std::exp(-x[i]);
    return s;
}

float energy(const float *x, int n) { return (float)n * x[0]; }   // an overload

extern "C" double logsumexp(const double *x, int n) {
    double m = x[0];
    for (int i = 1; i < n; i++) m = std::fmax(m, x[i]);
    double s = 0;
    for (int i = 0; i < n; i++) s += std::exp(x[i] - m);
    return m + std::log(s);
}
"""
