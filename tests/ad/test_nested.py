"""Higher-order derivatives: a function that calls ``__enzyme_autodiff`` or
``__enzyme_fwddiff`` is itself differentiated, in all four nestings (forward over
reverse, reverse over forward, reverse over reverse, forward over forward), and the
Hessian-vector products are compared with analytic Hessians.  The inner functions
are chosen so that their derivative code uses every part of EnzymePy's runtime: loop
caches (counted, growing, and appended to one buffer), the tape of frames (recursion), shadow heap blocks."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from helpers import build_and_run, enzyme_cc, parse_values

HESSIANS = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int enzyme_dup, enzyme_const;
void __enzyme_autodiff(void *, ...);
void __enzyme_fwddiff(void *, ...);
double __enzyme_fwddiff_d(void *, ...);
#define N 4

/* f = prod (1 + x_i^2), a loop-carried product: the reverse sweep caches the partial
   products (a counted loop's buffer) */
double f_prod(const double *x, int n) {
  double s = 1.0;
  for (int i = 0; i < n; i++) s = s * (1.0 + x[i] * x[i]);
  return s;
}
static void h_f_prod(const double *x, double H[N][N]) {
  double P = f_prod(x, N), a[N];
  for (int k = 0; k < N; k++) a[k] = 2 * x[k] / (1 + x[k] * x[k]);
  for (int k = 0; k < N; k++)
    for (int j = 0; j < N; j++) H[k][j] = k == j ? P * 2 / (1 + x[k] * x[k]) : P * a[k] * a[j];
}

/* Horner-like recurrence s <- s x_i + 1 in a while loop that may stop early (the
   trip count is unknown: the cache grows); its Hessian by an exact second-order
   forward recurrence */
double f_while(const double *x, int n) {
  double s = 1.0;
  int i = 0;
  while (i < n && fabs(s) < 1e30) { s = s * x[i] + 1.0; i++; }
  return s;
}
static void h_f_while(const double *x, double H[N][N]) {
  double s = 1.0, g[N] = {0}, h[N][N] = {{0}};
  for (int i = 0; i < N; i++) {
    for (int k = 0; k < N; k++)
      for (int j = 0; j < N; j++)
        h[k][j] = h[k][j] * x[i] + (j == i ? g[k] : 0) + (k == i ? g[j] : 0);
    for (int k = 0; k < N; k++) g[k] = g[k] * x[i] + (k == i ? s : 0);
    s = s * x[i] + 1.0;
  }
  memcpy(H, h, sizeof h);
}

/* f = sum x_i^2 x_{i+1}^2 through a heap temporary (shadow heap blocks) */
double f_heap(const double *x, int n) {
  double *y = malloc(n * sizeof *y);
  for (int i = 0; i < n; i++) y[i] = x[i] * x[i];
  double s = 0.0;
  for (int i = 0; i + 1 < n; i++) s += y[i] * y[i + 1];
  free(y);
  return s;
}
static void h_f_heap(const double *x, double H[N][N]) {
  memset(H, 0, sizeof(double) * N * N);
  for (int i = 0; i + 1 < N; i++) {
    H[i][i] += 2 * x[i + 1] * x[i + 1];
    H[i + 1][i + 1] += 2 * x[i] * x[i];
    H[i][i + 1] += 4 * x[i] * x[i + 1];
    H[i + 1][i] += 4 * x[i] * x[i + 1];
  }
}

/* f = prod sin(x_i) by recursion (frames on the tape) */
static double rec(const double *x, int n) { return n == 0 ? 1.0 : sin(x[0]) * rec(x + 1, n - 1); }
double f_rec(const double *x, int n) { return rec(x, n); }
static void h_f_rec(const double *x, double H[N][N]) {
  double P = f_rec(x, N);
  for (int k = 0; k < N; k++)
    for (int j = 0; j < N; j++) H[k][j] = k == j ? -P : P / (tan(x[k]) * tan(x[j]));
}

/* f = sum_i x_i prod_{j<i} (1 + x_j^2), the products built in place in a heap array
   by a triangular loop nest (the inner trip count is the outer index: its cache
   records are appended to one growing buffer) */
double f_tri(const double *x, int n) {
  double *y = malloc(n * sizeof *y);
  for (int i = 0; i < n; i++) y[i] = x[i];
  for (int i = 0; i < n; i++)
    for (int j = 0; j < i; j++) y[i] = y[i] * (1.0 + x[j] * x[j]);
  double s = 0.0;
  for (int i = 0; i < n; i++) s += y[i];
  free(y);
  return s;
}
static void h_f_tri(const double *x, double H[N][N]) {
  memset(H, 0, sizeof(double) * N * N);
  for (int i = 0; i < N; i++) {
    double P = 1.0;
    for (int j = 0; j < i; j++) P *= 1 + x[j] * x[j];
    for (int j = 0; j < i; j++) {
      double aj = 2 * x[j] / (1 + x[j] * x[j]);
      H[i][j] += P * aj;
      H[j][i] += P * aj;
      for (int k = 0; k < i; k++)
        H[j][k] += x[i] * P * (j == k ? 2 / (1 + x[j] * x[j]) : aj * 2 * x[k] / (1 + x[k] * x[k]));
    }
  }
}

#define NEST(F)                                                                          \
  void grad_##F(const double *x, double *dx, int n) {                                    \
    __enzyme_autodiff((void *)F, enzyme_dup, x, dx, enzyme_const, n);                    \
  }                                                                                      \
  double dir_##F(const double *x, const double *v, int n) {                              \
    return __enzyme_fwddiff_d((void *)F, enzyme_dup, x, v, enzyme_const, n);             \
  }                                                                                      \
  static void check_##F(const double *x, const double *v) {                              \
    double H[N][N], hv[N], vhv = 0;                                                      \
    h_##F(x, H);                                                                         \
    for (int k = 0; k < N; k++) {                                                        \
      hv[k] = 0;                                                                         \
      for (int j = 0; j < N; j++) hv[k] += H[k][j] * v[j];                               \
      vhv += v[k] * hv[k];                                                               \
    }                                                                                    \
    printf(#F "_want");                                                                  \
    for (int k = 0; k < N; k++) printf(" %.17g", hv[k]);                                 \
    printf(" %.17g\n", vhv);                                                             \
    { /* forward over reverse: the tangent of the gradient along v is H v */             \
      double dx[N] = {0}, t[N] = {0}, vv[N];                                             \
      memcpy(vv, v, sizeof vv);                                                          \
      __enzyme_fwddiff((void *)grad_##F, enzyme_dup, x, vv, enzyme_dup, dx, t,          \
                       enzyme_const, N);                                                 \
      printf(#F "_fwdrev");                                                              \
      for (int k = 0; k < N; k++) printf(" %.17g", t[k]);                                \
      printf("\n");                                                                      \
    }                                                                                    \
    { /* reverse over forward: the gradient of v . grad f is H v */                      \
      double dx[N] = {0};                                                                \
      __enzyme_autodiff((void *)dir_##F, enzyme_dup, x, dx, enzyme_const, v,             \
                        enzyme_const, N);                                                \
      printf(#F "_revfwd");                                                              \
      for (int k = 0; k < N; k++) printf(" %.17g", dx[k]);                               \
      printf("\n");                                                                      \
    }                                                                                    \
    { /* reverse over reverse: seed v on the inner gradient's output */                  \
      double dx[N] = {0}, ddx[N], d2[N] = {0};                                           \
      memcpy(ddx, v, sizeof ddx);                                                        \
      __enzyme_autodiff((void *)grad_##F, enzyme_dup, x, d2, enzyme_dup, dx, ddx,        \
                        enzyme_const, N);                                                \
      printf(#F "_revrev");                                                              \
      for (int k = 0; k < N; k++) printf(" %.17g", d2[k]);                               \
      printf("\n");                                                                      \
    }                                                                                    \
    { /* forward over forward: v' H v */                                                 \
      double vv[N];                                                                      \
      memcpy(vv, v, sizeof vv);                                                          \
      printf(#F "_fwdfwd %.17g\n",                                                       \
             __enzyme_fwddiff_d((void *)dir_##F, enzyme_dup, x, vv, enzyme_const, v,     \
                                enzyme_const, N));                                       \
    }                                                                                    \
  }
NEST(f_prod)
NEST(f_while)
NEST(f_heap)
NEST(f_rec)
NEST(f_tri)

int main(void) {
  const double x[N] = {0.3, -0.7, 1.2, 0.5}, v[N] = {1.0, 0.5, -0.25, 2.0};
  check_f_prod(x, v);
  check_f_while(x, v);
  check_f_heap(x, v);
  check_f_rec(x, v);
  check_f_tri(x, v);
  return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_hessian_vector_products_in_all_four_nestings(tmp_path, opt):
    out = build_and_run(tmp_path, HESSIANS, opt)
    assert out.returncode == 0, out.stderr
    v = parse_values(out.stdout)
    for f in ("f_prod", "f_while", "f_heap", "f_rec", "f_tri"):
        want = v[f + "_want"]
        hv, vhv = want[:4], want[4]
        assert max(abs(w) for w in hv) > 0.1   # not a degenerate point
        for nesting in ("fwdrev", "revfwd", "revrev"):
            got = v[f"{f}_{nesting}"]
            for g, w in zip(got, hv, strict=True):
                assert math.isclose(g, w, rel_tol=1e-10, abs_tol=1e-12), (f, nesting, got, hv)
        assert math.isclose(v[f + "_fwdfwd"][0], vhv, rel_tol=1e-10), (f, v[f + "_fwdfwd"], vhv)


# Scalar second and third derivatives, mixed partials, and inner calls of the other
# entry points (split mode, vector forward mode): checked against analytic values.
SCALAR = r"""
#include <math.h>
#include <stdio.h>
int enzyme_const, enzyme_dup, enzyme_width;
double __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);
void *__enzyme_augmentfwd(void *, ...);
void __enzyme_reverse(void *, ...);
typedef struct { double d[2]; } D2;
D2 __enzyme_fwddiff2(void *, ...);

double f(double x) { return exp(x) * sin(x); }
double df_rev(double x) { return __enzyme_autodiff((void *)f, x); }
double df_fwd(double x) { return __enzyme_fwddiff((void *)f, x, 1.0); }
double d2(double x) { return __enzyme_autodiff((void *)df_fwd, x); }
double d3(double x) { return __enzyme_fwddiff((void *)d2, x, 1.0); }

double g(double x, double y) { return x * x * y + sin(x * y); }
double gx(double x, double y) { return __enzyme_autodiff((void *)g, x, enzyme_const, y); }

double sq(double *p) { return p[0] * p[0] * sin(p[1]); }
double split_d0(double *p) {          /* d sq / d p0 = 2 p0 sin p1, by split mode */
  double dp[2] = {0, 0};
  void *tape = __enzyme_augmentfwd((void *)sq, enzyme_dup, p, dp);
  __enzyme_reverse((void *)sq, enzyme_dup, p, dp, 1.0, tape);
  return dp[0];
}
double two(double *p) { return p[0] * p[0] * p[1]; }
double vsum(double *p) {              /* sum of the partials: 2 p0 p1 + p0^2 */
  double e0[2] = {1, 0}, e1[2] = {0, 1};
  D2 r = __enzyme_fwddiff2((void *)two, enzyme_width, 2, enzyme_dup, p, e0, e1);
  return r.d[0] + r.d[1];
}

int main(void) {
  for (double x = -1.1; x < 2; x += 1.3) {
    printf("f2 %.17g %.17g %.17g %.17g\n", __enzyme_fwddiff((void *)df_rev, x, 1.0),
           __enzyme_autodiff((void *)df_rev, x), __enzyme_fwddiff((void *)df_fwd, x, 1.0),
           __enzyme_autodiff((void *)df_fwd, x));
    printf("f3 %.17g %.17g\n", d3(x), __enzyme_autodiff((void *)d2, x));
  }
  double x = 0.9, y = -0.6;
  printf("gxy %.17g %.17g\n", __enzyme_fwddiff((void *)gx, enzyme_const, x, y, 1.0),
         __enzyme_autodiff((void *)gx, enzyme_const, x, y));
  printf("gxx %.17g\n", __enzyme_fwddiff((void *)gx, x, 1.0, enzyme_const, y));
  double p[2] = {0.7, 0.3}, dp[2] = {0, 0}, q[2] = {0.7, 0.3}, dq[2] = {0, 0};
  __enzyme_autodiff((void *)split_d0, enzyme_dup, p, dp);
  __enzyme_autodiff((void *)vsum, enzyme_dup, q, dq);
  printf("split %.17g %.17g\n", dp[0], dp[1]);
  printf("vector %.17g %.17g\n", dq[0], dq[1]);
  return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_scalar_higher_order_and_mixed_partials(tmp_path, opt):
    out = build_and_run(tmp_path, SCALAR, opt)
    assert out.returncode == 0, out.stderr
    lines = [ln.split() for ln in out.stdout.splitlines()]
    f2s = [[float(t) for t in ln[1:]] for ln in lines if ln[0] == "f2"]
    f3s = [[float(t) for t in ln[1:]] for ln in lines if ln[0] == "f3"]
    xs = [-1.1, 0.2, 1.5]
    assert len(f2s) == len(f3s) == 3
    for x, f2, f3 in zip(xs, f2s, f3s, strict=True):
        want2 = 2 * math.exp(x) * math.cos(x)                    # (e^x sin x)''
        want3 = 2 * math.exp(x) * (math.cos(x) - math.sin(x))    # (e^x sin x)'''
        for got in f2:
            assert math.isclose(got, want2, rel_tol=1e-12), (x, f2, want2)
        for got in f3:
            assert math.isclose(got, want3, rel_tol=1e-12), (x, f3, want3)
    v = parse_values(out.stdout)
    x, y = 0.9, -0.6
    gxy = 2 * x + math.cos(x * y) - x * y * math.sin(x * y)
    assert all(math.isclose(g, gxy, rel_tol=1e-12) for g in v["gxy"]), v["gxy"]
    assert math.isclose(v["gxx"][0], 2 * y - y * y * math.sin(x * y), rel_tol=1e-12)
    p0, p1 = 0.7, 0.3
    assert v["split"] == pytest.approx([2 * math.sin(p1), 2 * p0 * math.cos(p1)], rel=1e-12)
    assert v["vector"] == pytest.approx([2 * p1 + 2 * p0, 2 * p0], rel=1e-12)


CXX = r"""
#include <enzyme/utils>
#include <cmath>
#include <cstdio>
double f(double x, double y) { return x * x * std::sin(y); }
double fx(double x, double y) {
  return enzyme::get<0>(enzyme::get<0>(
      enzyme::autodiff<enzyme::Reverse>(f, enzyme::Active<double>(x), enzyme::Const<double>(y))));
}
int main() {
  double x = 0.8, y = 0.4;
  auto r = enzyme::autodiff<enzyme::Forward>(fx, enzyme::Duplicated<double>(x, 0.0),
                                             enzyme::Duplicated<double>(y, 1.0));
  std::printf("fxy %.17g\n", enzyme::get<0>(r));
  auto s = enzyme::autodiff<enzyme::Reverse>(fx, enzyme::Active<double>(x),
                                             enzyme::Active<double>(y));
  std::printf("hess %.17g %.17g\n", enzyme::get<0>(enzyme::get<0>(s)),
              enzyme::get<1>(enzyme::get<0>(s)));
  // Enzyme's spelling of the mode; a Duplicated result gives {primal, tangent}
  auto q = enzyme::autodiff<enzyme::ForwardMode, enzyme::Duplicated<double>>(
      fx, enzyme::Duplicated<double>(x, 1.0), enzyme::Const<double>(y));
  std::printf("fxx %.17g %.17g\n", enzyme::get<0>(q), enzyme::get<1>(q));
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_cxx_interface_nests(tmp_path, opt):
    import subprocess
    src = Path(tmp_path) / "n.cpp"
    src.write_text(CXX)
    exe = Path(tmp_path) / "n"
    r = enzyme_cc(["-std=c++17", opt, str(src), "-o", str(exe)], tmp_path, cxx=True)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    v = parse_values(out.stdout)
    x, y = 0.8, 0.4
    assert math.isclose(v["fxy"][0], 2 * x * math.cos(y), rel_tol=1e-12)
    assert v["hess"] == pytest.approx([2 * math.sin(y), 2 * x * math.cos(y)], rel=1e-12)
    assert v["fxx"] == pytest.approx([2 * x * math.sin(y), 2 * math.sin(y)], rel=1e-12)


def test_recursive_nesting_is_a_compile_error(tmp_path):
    src = Path(tmp_path) / "bad.c"
    src.write_text("double __enzyme_autodiff(void *, ...);\n"
                   "double g(double x) {\n"
                   "  return x * x + (x > 10 ? 0 : __enzyme_autodiff((void *)g, x + 1));\n"
                   "}\n"
                   "int main(void) { return (int)__enzyme_autodiff((void *)g, 1.0); }\n")
    r = enzyme_cc(["-g", "-O0", str(src), "-o", str(Path(tmp_path) / "bad")], tmp_path)
    assert r.returncode != 0
    assert re.search(r"bad\.c:3:\d+: error: recursive nested derivative: __enzyme_autodiff "
                     r"of 'g' in 'g'", r.stderr), r.stderr
    assert "Traceback" not in r.stderr


# Forward over reverse through a function with a custom gradient whose augmented
# forward pass returns no tape ({NULL, result}, the common shape of Enzyme's custom
# rules): the Hessian-vector product differentiates the rule functions' bodies.
# Before: "a pointer without a shadow ... is mixed" in augmented_f (the NULL tape
# pointer, stored on f's tape, had no shadow); real Enzyme 15 builds it.
RULE_HVP = r"""
#include <stdio.h>
#include <stdlib.h>
extern int enzyme_dup;
extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
double cube(double x) { return x * x * x; }
typedef struct { void *tape; double ret; } aug_t;
aug_t cube_aug(double x) { aug_t a = {NULL, x * x * x}; return a; }
double cube_rev(double x, double dret, void *tape) { return 3 * x * x * dret; }
void *__enzyme_register_gradient_cube[3] = {(void *)cube, (void *)cube_aug, (void *)cube_rev};
double f(const double *w) { return cube(w[0]) * w[1] + cube(w[1] * w[0]); }
void grad(const double *w, double *g) {
  g[0] = g[1] = 0;
  __enzyme_autodiff((void *)f, enzyme_dup, w, g);
}
int main(void) {
  double w[2] = {1.5, 2.0}, g[2], v[2] = {0.3, -0.7}, hv[2] = {0, 0};
  __enzyme_fwddiff((void *)grad, enzyme_dup, w, v, enzyme_dup, g, hv);
  printf("g %.17g %.17g\n", g[0], g[1]);
  printf("hv %.17g %.17g\n", hv[0], hv[1]);
  return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_forward_over_reverse_through_a_custom_gradient(tmp_path, opt):
    out = build_and_run(tmp_path, RULE_HVP, opt)
    assert out.returncode == 0, out.stdout + out.stderr
    v = parse_values(out.stdout)
    a, b = 1.5, 2.0
    # f = a^3 b + a^3 b^3
    g = [3 * a * a * b + 3 * a * a * b ** 3, a ** 3 + 3 * a ** 3 * b * b]
    h = [[6 * a * b + 6 * a * b ** 3, 3 * a * a + 9 * a * a * b * b],
         [3 * a * a + 9 * a * a * b * b, 6 * a ** 3 * b]]
    t = [0.3, -0.7]
    assert v["g"] == pytest.approx(g, rel=1e-14)
    assert v["hv"] == pytest.approx([h[0][0] * t[0] + h[0][1] * t[1],
                                     h[1][0] * t[0] + h[1][1] * t[1]], rel=1e-13)
