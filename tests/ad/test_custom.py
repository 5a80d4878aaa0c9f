"""Custom derivatives and inactive markers through enzyme-cc: registered rules are
called (counters), function_like gives a libm rule, and each inactive mechanism
contributes no derivative."""

from __future__ import annotations

import math

import pytest

from helpers import build_and_run, parse_values

CUSTOM = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
int enzyme_dup, enzyme_const;
double __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);
static int n_aug, n_rev, n_fwd;

/* No noinline anywhere: at -O1 and up enzyme-cc keeps the functions with a rule,
   function_like or inactive out of line itself (clang's inliner would otherwise copy
   their bodies into f and h, and the bodies would be differentiated). */
/* reverse rule */
double cube(double x) { return x * x * x; }
typedef struct { void *tape; double r; } cube_aug_t;
typedef struct { double dx; } cube_rev_t;
cube_aug_t cube_aug(double x) { cube_aug_t a = {0, x * x * x}; n_aug++; return a; }
cube_rev_t cube_rev(double x, double d, void *tape) { cube_rev_t r = {3 * x * x * d}; (void)tape; n_rev++; return r; }
void *__enzyme_register_gradient_cube[3] = {(void *)cube, (void *)cube_aug, (void *)cube_rev};
/* forward rule */
double cube_fwd(double x, double dx) { n_fwd++; return 3 * x * x * dx; }
void *__enzyme_register_derivative_cube[2] = {(void *)cube, (void *)cube_fwd};

/* function_like: treated as log1p */
/* the body is half of log1p, so the numbers show that the rule, not the body, is used */
double mylog1p(double x) { return log(1.0 + x) * 0.5; }
void *__enzyme_function_like[2] = {(void *)mylog1p, (void *)"log1p"};

double f(double x) { return cube(x) * 2.0 + mylog1p(x * x); }

/* inactive mechanisms: each term below must contribute nothing */
double by_list(double x) { return x * x; }
void *__enzyme_inactivefn[] = {(void *)by_list};
__attribute__((annotate("enzyme_inactive"))) double by_attr(double x) { return sin(x); }
double scratch, scratch2 __attribute__((annotate("enzyme_inactive")));
void *__enzyme_inactive_global[] = {(void *)&scratch};
double h(double x) {
  /* active values stored into inactive globals (a log): no shadow needed, no error */
  scratch = x * 3.0;
  scratch2 = x * 4.0;
  return x + by_list(x) + by_attr(x);
}

int main(void) {
  double x = 0.7;
  double r = __enzyme_autodiff((void *)f, x);
  printf("rev %.17g %d %d\n", r, n_aug, n_rev);
  double t = __enzyme_fwddiff((void *)f, enzyme_dup, x, 1.0);
  printf("fwd %.17g %d\n", t, n_fwd);
  printf("inactive %.17g %.17g\n", __enzyme_autodiff((void *)h, x),
         __enzyme_fwddiff((void *)h, enzyme_dup, x, 1.0));
  printf("globals %.17g %.17g\n", scratch, scratch2);
  return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2", "-O3"])
def test_custom_rules_are_called_and_inactive_contributes_nothing(tmp_path, opt):
    out = build_and_run(tmp_path, CUSTOM, opt)
    assert out.returncode == 0, out.stderr
    v = parse_values(out.stdout)
    x = 0.7
    want = 6 * x * x + 2 * x / (1 + x * x)
    assert v["rev"][1:] == [1, 1]          # augmented forward and reverse called once each
    assert math.isclose(v["rev"][0], want, rel_tol=1e-12)
    assert v["fwd"][1] == 1
    assert math.isclose(v["fwd"][0], want, rel_tol=1e-12)
    assert v["inactive"] == [1.0, 1.0]
    assert v["globals"] == [x * 3.0, x * 4.0]


# Registration by first element (Enzyme's rule: the global's suffix only makes its name
# unique). The rules give 10x the true derivative of sq so their use is visible in the
# numbers; the functions named like the suffixes are differentiated normally.
BY_FIRST = r"""
#include <math.h>
#include <stdio.h>
double __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);
static int n_aug, n_rev, n_fwd;
__attribute__((noinline)) double sq(double x) { return x * x; }
typedef struct { void *tape; double r; } aug_t;
typedef struct { double dx; } rev_t;
aug_t sq_aug(double x) { aug_t a = {0, x * x}; n_aug++; return a; }
rev_t sq_rev(double x, double d, void *t) { rev_t r = {20 * x * d}; (void)t; n_rev++; return r; }
double sq_fwd(double x, double dx) { n_fwd++; return 20 * x * dx; }
void *__enzyme_register_gradient_one[3] = {(void *)sq, (void *)sq_aug, (void *)sq_rev};
void *__enzyme_register_derivative_two[2] = {(void *)sq, (void *)sq_fwd};
void *__enzyme_register_splitderivative_three[3] = {(void *)sq, (void *)sq_aug, (void *)sq_fwd};
double one(double x) { return x * x * x; }
double two(double x) { return sin(x); }
double three(double x) { return exp(x); }
double f(double x) { return sq(x) + one(x) + two(x) + three(x); }
int main(void) {
  double x = 0.7;
  printf("rev %.17g %d %d\n", __enzyme_autodiff((void *)f, x), n_aug, n_rev);
  printf("fwd %.17g %d\n", __enzyme_fwddiff((void *)f, x, 1.0), n_fwd);
  return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_rules_are_registered_by_their_first_element(tmp_path, opt):
    out = build_and_run(tmp_path, BY_FIRST, opt)
    assert out.returncode == 0, out.stderr
    v = parse_values(out.stdout)
    x = 0.7
    want = 20 * x + 3 * x * x + math.cos(x) + math.exp(x)
    assert v["rev"][1:] == [1, 1]
    assert math.isclose(v["rev"][0], want, rel_tol=1e-12)
    assert v["fwd"][1] == 1
    assert math.isclose(v["fwd"][0], want, rel_tol=1e-12)


# The function given to the entry point has a rule itself.  As in Enzyme (checked with
# real Enzyme 15 on this program), the rule is used, not the body: reverse, forward and
# split mode; a function_like function gets its libm derivative (Enzyme 15 gives 0
# here: it differentiates the body); an inactive function asked for directly is
# differentiated, as Enzyme does (only calls to it are inactive).  Before: the bodies
# were differentiated -- 0 for the quantised root at every -O level.
TOP_LEVEL = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern void *__enzyme_augmentfwd(void *, ...);
extern void __enzyme_reverse(void *, ...);
extern int enzyme_dup;
static int n_rev, n_fwd;
/* y[0] = a quantised square root of x[0]: its body's derivative is 0 */
void qroot(const double *x, double *y) { y[0] = sqrt(floor(x[0] * 1e6) / 1e6); }
void *qroot_aug(const double *x, const double *dx, double *y, double *dy) {
  qroot(x, y); return NULL;
}
void qroot_rev(const double *x, double *dx, double *y, double *dy, void *tape) {
  dx[0] += dy[0] * 0.5 / sqrt(x[0]); dy[0] = 0; n_rev++;
}
void qroot_fwd(const double *x, const double *dx, double *y, double *dy) {
  qroot(x, y); dy[0] = dx[0] * 0.5 / sqrt(x[0]); n_fwd++;
}
void *__enzyme_register_gradient_qroot[3] = {(void *)qroot, (void *)qroot_aug, (void *)qroot_rev};
void *__enzyme_register_derivative_qroot[2] = {(void *)qroot, (void *)qroot_fwd};
double qexp(double x) { return exp(floor(x * 1e6) / 1e6); }
void *__enzyme_function_like[2] = {(void *)qexp, (void *)"exp"};
double clampd(double v) { return v > 2 ? 2 : v; }
void *__enzyme_inactivefn[] = {(void *)clampd};
int main(void) {
  double x = 2.25, dx = 0, y = 0, dy = 1;
  __enzyme_autodiff((void *)qroot, enzyme_dup, &x, &dx, enzyme_dup, &y, &dy);
  printf("rev %.17g %d\n", dx, n_rev);
  dx = 1; dy = 0;
  __enzyme_fwddiff((void *)qroot, enzyme_dup, &x, &dx, enzyme_dup, &y, &dy);
  printf("fwd %.17g %d\n", dy, n_fwd);
  dx = 0; dy = 1;
  void *tape = __enzyme_augmentfwd((void *)qroot, enzyme_dup, &x, &dx, enzyme_dup, &y, &dy);
  __enzyme_reverse((void *)qroot, enzyme_dup, &x, &dx, enzyme_dup, &y, &dy, tape);
  printf("split %.17g %d %.17g\n", dx, n_rev, y);
  printf("like %.17g %.17g\n", __enzyme_autodiff((void *)qexp, 0.5),
         __enzyme_fwddiff((void *)qexp, 0.5, 1.0));
  printf("inactive %.17g\n", __enzyme_autodiff((void *)clampd, 1.5));
  return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_the_function_given_to_the_entry_point_uses_its_rule(tmp_path, opt):
    out = build_and_run(tmp_path, TOP_LEVEL, opt)
    assert out.returncode == 0, out.stderr
    v = parse_values(out.stdout)
    assert v["rev"] == [pytest.approx(1 / 3, rel=1e-12), 1]
    assert v["fwd"] == [pytest.approx(1 / 3, rel=1e-12), 1]
    assert v["split"] == [pytest.approx(1 / 3, rel=1e-12), 2, 1.5]
    assert v["like"] == pytest.approx([math.exp(0.5)] * 2, rel=1e-12)
    assert v["inactive"] == [1.0]


# llm.c's matmul takes `bias` that may be NULL; with a registered gradient, a call
# passing NULL was refused ("needs a shadow for every pointer argument", round W; Enzyme
# 15 builds it).  NULL's shadow is NULL, given to the rules as such.
NULL_ARGUMENT = r"""
#include <stdio.h>
#include <string.h>
int enzyme_dup, enzyme_const;
void __enzyme_autodiff(void *, ...);
void __enzyme_fwddiff(void *, ...);
static int n_rev, n_fwd;
__attribute__((noinline)) void affine(float *out, const float *w, const float *x,
                                      const float *bias) {
    for (int o = 0; o < 2; o++) {
        float v = bias != NULL ? bias[o] : 0.0f;
        for (int i = 0; i < 2; i++) v += w[o * 2 + i] * x[i];
        out[o] = v;
    }
}
void *affine_aug(float *out, float *dout, const float *w, float *dw, const float *x,
                 float *dx, const float *bias, float *dbias) {
    (void)dout; (void)dw; (void)dx; (void)dbias;
    affine(out, w, x, bias);
    return NULL;
}
void affine_rev(float *out, float *dout, const float *w, float *dw, const float *x,
                float *dx, const float *bias, float *dbias, void *tape) {
    (void)out; (void)bias; (void)tape;
    n_rev++;
    for (int o = 0; o < 2; o++) {
        if (dbias != NULL) dbias[o] += dout[o];
        for (int i = 0; i < 2; i++) { dw[o * 2 + i] += dout[o] * x[i]; dx[i] += dout[o] * w[o * 2 + i]; }
    }
    memset(dout, 0, 2 * sizeof(float));
}
void affine_fwd(float *out, float *dout, const float *w, const float *dw, const float *x,
                const float *dx, const float *bias, const float *dbias) {
    n_fwd++;
    affine(out, w, x, bias);
    for (int o = 0; o < 2; o++) {
        float t = dbias != NULL ? dbias[o] : 0.0f;
        for (int i = 0; i < 2; i++) t += dw[o * 2 + i] * x[i] + w[o * 2 + i] * dx[i];
        dout[o] = t;
    }
}
void *__enzyme_register_gradient_affine[3] = {(void *)affine, (void *)affine_aug,
                                              (void *)affine_rev};
void *__enzyme_register_derivative_affine[2] = {(void *)affine, (void *)affine_fwd};
float loss(float *w, float *x, float *out) {
    affine(out, w, x, NULL);
    return out[0] * out[1];
}
void fwd(float *w, float *x, float *out) { affine(out, w, x, NULL); }
int main(void) {
    float w[4] = {1, 2, 3, 4}, dw[4] = {0}, x[2] = {1, -1}, dx[2] = {0}, out[2], dout[2] = {0};
    __enzyme_autodiff((void *)loss, enzyme_dup, w, dw, enzyme_dup, x, dx, enzyme_dup, out, dout);
    printf("dw %g %g %g %g\n", dw[0], dw[1], dw[2], dw[3]);
    printf("dx %g %g\n", dx[0], dx[1]);
    float tw[4] = {1, 0, 0, 0}, tx[2] = {0, 1}, tout[2] = {0};
    __enzyme_fwddiff((void *)fwd, enzyme_dup, w, tw, enzyme_dup, x, tx, enzyme_dup, out, tout);
    printf("tout %g %g\n", tout[0], tout[1]);
    printf("calls %d %d\n", n_rev, n_fwd);
    return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_rules_given_a_null_argument(tmp_path, opt):
    out = build_and_run(tmp_path, NULL_ARGUMENT, opt)
    assert out.returncode == 0, out.stderr
    v = parse_values(out.stdout)
    # out = W x = (-1, -1); d(out0 out1)/dW = [out1 x; out0 x], /dx = W^T (out1, out0)
    assert v["dw"] == [-1, 1, -1, 1], out.stdout
    assert v["dx"] == [-4, -6], out.stdout
    assert v["tout"] == [1 + 2, 4], out.stdout      # dW x + W dx, dW = e11, dx = e2
    assert v["calls"] == [1, 1], out.stdout
