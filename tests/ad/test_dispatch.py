"""Indirect calls with active arguments (ad/dispatch.py): C++ virtual calls through a
class hierarchy (objects made with ``new``, kept in a std::vector, deleted through the
virtual destructor; an override calling its base's version), C tables of function
pointers (also of libm functions, which have rules but no body), function pointers in
structs and as arguments.  Reverse and forward mode at
-O0 and -O2 against central differences (and each other); a pointer to a function the
program does not define aborts at run time with a message; an indirect call that can only
reach functions enzyme-cc cannot see is a compile error."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import pytest
from helpers import enzyme_cc, parse_values

VIRTUAL = r"""#include <cmath>
#include <cstdio>
#include <vector>
extern "C" { int enzyme_dup, enzyme_const, enzyme_out; double __enzyme_autodiff(void *, ...);
             double __enzyme_fwddiff(void *, ...); }
struct Term {
  virtual ~Term() {}
  virtual double energy(const double *x) const = 0;
  virtual double weight() const { return 1.0; }
};
struct Spring : Term {            // k/2 (x_i - x_j - L)^2
  int i, j; double k, L;
  Spring(int i_, int j_, double k_, double L_) : i(i_), j(j_), k(k_), L(L_) {}
  double energy(const double *x) const override { double d = x[i] - x[j] - L; return 0.5 * k * d * d; }
};
struct Anchor : Term {           // c cosh(x_i)
  int i; double c;
  Anchor(int i_, double c_) : i(i_), c(c_) {}
  double energy(const double *x) const override { return c * std::cosh(x[i]); }
};
struct HeavyAnchor : Anchor {    // overrides again, calls the base non-virtually
  HeavyAnchor(int i_, double c_) : Anchor(i_, c_) {}
  double energy(const double *x) const override { return Anchor::energy(x) + x[i] * x[i] * x[i]; }
  double weight() const override { return 2.0; }
};
double total(const double *x, const int *kind, int m) {
  std::vector<Term *> terms;
  for (int t = 0; t < m; t++) {
    int a = t % 4, b = (t + 1) % 4;
    if (kind[t] == 0) terms.push_back(new Spring(a, b, 1.0 + t, 0.25));
    else if (kind[t] == 1) terms.push_back(new Anchor(a, 0.5));
    else terms.push_back(new HeavyAnchor(a, 0.3));
  }
  double e = 0;
  for (Term *t : terms) e += t->weight() * t->energy(x);
  for (Term *t : terms) delete t;
  return e;
}
int main() {
  int kind[6] = {0, 1, 2, 0, 2, 1};
  double x[4] = {0.3, -0.8, 1.1, 0.45}, dx[4] = {0};
  __enzyme_autodiff((void *)total, enzyme_dup, x, dx, enzyme_const, kind, enzyme_const, 6);
  printf("rev"); for (int k = 0; k < 4; k++) printf(" %.17g", dx[k]);
  printf("\nfwd");
  for (int k = 0; k < 4; k++) { double t[4] = {0}; t[k] = 1;
    printf(" %.17g", __enzyme_fwddiff((void *)total, enzyme_dup, x, t, enzyme_const, kind, enzyme_const, 6)); }
  printf("\nfd");
  for (int k = 0; k < 4; k++) { double s = x[k], h = 1e-6; x[k] = s + h; double fp = total(x, kind, 6);
    x[k] = s - h; double fm = total(x, kind, 6); x[k] = s; printf(" %.17g", (fp - fm) / (2 * h)); }
  printf("\n");
}
"""

TABLES = r"""#include <math.h>
#include <stdio.h>
int enzyme_dup, enzyme_const, enzyme_out;
double __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);
typedef double (*unary)(double);
static double sq(double x) { return x * x; }
static double cube(double x) { return x * x * x; }
static double wave(double x) { return sin(3.0 * x); }
static const unary table[3] = {sq, cube, wave};
struct layer { unary act; double w; };
/* f(x) = sum_i table[op[i]](x_i) + sum_i L[i].act(L[i].w * x_i) */
double f(const double *x, const int *op, const struct layer *L, int n) {
  double s = 0;
  for (int i = 0; i < n; i++) s += table[op[i]](x[i]);
  for (int i = 0; i < n; i++) s += L[i].act(L[i].w * x[i]);
  return s;
}
/* a function pointer argument */
double apply(unary g, double a) { return g(a) * a; }
int main(int argc, char **argv) {
  enum { N = 5 };
  int op[N] = {0, 1, 2, 1, 0};
  struct layer L[N] = {{wave, 0.5}, {sq, 1.5}, {cube, -0.7}, {wave, 2.0}, {sq, 0.1}};
  if (argc > 1) L[2].act = significand; /* no body, no rule: the derivative aborts */
  double x[N] = {0.4, -0.9, 1.3, 0.2, -1.7}, dx[N] = {0};
  __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, op, enzyme_const, L,
                    enzyme_const, N);
  printf("rev"); for (int k = 0; k < N; k++) printf(" %.17g", dx[k]);
  printf("\nfwd");
  for (int k = 0; k < N; k++) { double t[N] = {0}; t[k] = 1;
    printf(" %.17g", __enzyme_fwddiff((void *)f, enzyme_dup, x, t, enzyme_const, op, enzyme_const, L, enzyme_const, N)); }
  printf("\nfd");
  for (int k = 0; k < N; k++) { double s = x[k], h = 1e-6; x[k] = s + h; double fp = f(x, op, L, N);
    x[k] = s - h; double fm = f(x, op, L, N); x[k] = s; printf(" %.17g", (fp - fm) / (2 * h)); }
  printf("\napply %.17g %.17g\n", __enzyme_autodiff((void *)apply, enzyme_const, argc > 2 ? wave : cube, 1.25),
         __enzyme_fwddiff((void *)apply, enzyme_const, cube, enzyme_dup, 1.25, 1.0));
  return 0;
}
"""

NO_CANDIDATE = r"""
#include <math.h>
int enzyme_const;
double __enzyme_autodiff(void *, ...);
double f(double x, int k) {
  double (*g)(double) = k ? significand : gamma;   /* library functions without a rule */
  return g(x) * x;
}
int main(int argc, char **argv) {
  return (int)__enzyme_autodiff((void *)f, 0.5, enzyme_const, argc);
}
"""


def _build(tmp_path, name, source, opt, cxx):
    src = Path(tmp_path) / name
    src.write_text(source)
    exe = Path(tmp_path) / (src.stem + opt[1:])
    r = enzyme_cc([opt, str(src), "-o", str(exe), "-lm"], tmp_path, cxx=cxx)
    return r, exe


def _check(values):
    for k, fd in enumerate(values["fd"]):
        assert values["rev"][k] == pytest.approx(fd, rel=1e-6, abs=1e-8)
        assert values["fwd"][k] == pytest.approx(values["rev"][k], rel=1e-13, abs=1e-14)


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_virtual_calls(tmp_path, opt):
    r, exe = _build(tmp_path, "virt.cpp", VIRTUAL, opt, cxx=True)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    _check(parse_values(out.stdout))


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_function_pointer_tables(tmp_path, opt):
    r, exe = _build(tmp_path, "tables.c", TABLES, opt, cxx=False)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    v = parse_values(out.stdout)
    _check(v)
    a = 1.25   # apply(cube, a) = a^4
    assert v["apply"] == pytest.approx([4 * a ** 3, 4 * a ** 3], rel=1e-14)
    # a pointer to a function the program does not define and that has no rule
    # (significand):
    # abort, with a message
    bad = subprocess.run([str(exe), "bad"], capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0
    assert "enzyme: an indirect call in the derivative of 'f' reached a function that is " \
        "not one of the 3 candidate(s) (functions of type double (double)" in bad.stderr
    assert "rev" not in bad.stdout


def test_indirect_call_without_candidates_is_a_compile_error(tmp_path):
    r, _ = _build(tmp_path, "nocand.c", NO_CANDIDATE, "-O2", cxx=False)
    assert r.returncode == 1
    assert "indirect call (type double (double)) with active arguments: the program " \
        "defines no function of that type" in r.stderr
    assert "Traceback" not in r.stderr


LIBM_TABLE = r"""#include <math.h>
#include <stdio.h>
int enzyme_dup, enzyme_const;
double __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);
static double (*const tab[3])(double) = {sin, cos, tanh};   /* libm: rules, no bodies */
static double sq(double x) { return x * x; }
double (*const mixed[2])(double) = {exp, sq};               /* a rule beside a body */
double f(double x, int k) { return tab[k % 3](x * 2.0) + mixed[k % 2](x); }
int main(void) {
  printf("rev"); for (int k = 0; k < 6; k++) printf(" %.17g", __enzyme_autodiff((void *)f, 0.37, enzyme_const, k));
  printf("\nfwd"); for (int k = 0; k < 6; k++) printf(" %.17g", __enzyme_fwddiff((void *)f, 0.37, 1.0, enzyme_const, k));
  printf("\nfd"); for (int k = 0; k < 6; k++) printf(" %.17g", (f(0.37 + 1e-6, k) - f(0.37 - 1e-6, k)) / 2e-6);
  printf("\n");
  return 0;
}
"""


def _values(tmp_path, name, source, opt):
    """Build the C program ``source``, run it, and parse its ``rev``/``fwd``/``fd`` lines."""
    r, exe = _build(tmp_path, name, source, opt, cxx=False)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return parse_values(out.stdout)


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_libm_functions_through_pointers(tmp_path, opt):
    # a libm function is a candidate through a wrapper that calls it directly (its rule)
    v = _values(tmp_path, "libmtab.c", LIBM_TABLE, opt)
    _check(v)
    x = 0.37
    want = [2 * math.cos(2 * x) + math.exp(x), -2 * math.sin(2 * x) + 2 * x,
            2 / math.cosh(2 * x) ** 2 + math.exp(x), 2 * math.cos(2 * x) + 2 * x,
            -2 * math.sin(2 * x) + math.exp(x), 2 / math.cosh(2 * x) ** 2 + 2 * x]
    assert v["rev"] == pytest.approx(want, rel=1e-13)


# Pointers to member functions, kept in memory and called in a non-inlined helper: the
# callee is a phi of a vtable slot (virtual members) and the pointer itself (the others),
# read from an object that carries derivatives.  A pointer that is only ever called is
# code, its own "shadow"; before: "a pointer without a shadow ... is mixed with
# pointers that have shadows" (-O0 and -O2).
MEMBER_POINTERS = r"""
#include <cmath>
#include <cstdio>
extern "C" { int enzyme_dup, enzyme_const; double __enzyme_autodiff(void *, ...);
             double __enzyme_fwddiff(void *, ...); }
struct Shape {
  double a, b;
  virtual double area(double s) const { return a * b * s; }
  double perimeter(double s) const { return 2 * (a + b) * std::sin(s); }
  virtual ~Shape() {}
};
struct Ellipse : Shape {
  double area(double s) const override { return 3.14159 * a * b * s * s; }
};
typedef double (Shape::*Measure)(double) const;
__attribute__((noinline)) double apply(const Shape &sh, const Measure &m, double s) {
  return (sh.*m)(s);
}
double f(const double *x, int n) {
  Shape r;
  r.a = x[0]; r.b = x[1];
  Ellipse e;
  e.a = x[1] * x[2]; e.b = x[0];
  Measure ms[2] = {&Shape::area, &Shape::perimeter};
  double s = 0;
  for (int k = 0; k < n; k++) s += apply(k % 2 ? (const Shape &)e : r, ms[k % 2 ? 0 : 1], x[k]);
  return s + apply(e, ms[0], 0.5);
}
int main() {
  const int n = 3;
  double x[n] = {0.6, -1.1, 0.35}, dx[n] = {0};
  __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, n);
  std::printf("rev"); for (int k = 0; k < n; k++) std::printf(" %.17g", dx[k]);
  std::printf("\nfwd");
  for (int k = 0; k < n; k++) { double t[n] = {0}; t[k] = 1;
    std::printf(" %.17g", __enzyme_fwddiff((void *)f, enzyme_dup, x, t, enzyme_const, n)); }
  std::printf("\nfd");
  for (int k = 0; k < n; k++) { double s = x[k], h = 1e-6; x[k] = s + h; double fp = f(x, n);
    x[k] = s - h; double fm = f(x, n); x[k] = s; std::printf(" %.17g", (fp - fm) / (2 * h)); }
  std::printf("\n");
  return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_pointers_to_member_functions(tmp_path, opt):
    r, exe = _build(tmp_path, "pmf.cpp", MEMBER_POINTERS, opt, cxx=True)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    _check(parse_values(out.stdout))


# A root finder or quadrature routine (Numerical Recipes, f2c's QUADPACK) calls the user's
# function through a pointer.  The model's parameters reach that function through a global
# (the call passes only inactive values), or the pointer has f2c's unprototyped type
# `double (*)()` (clang calls it as `double (ptr, ...)`, not the function's own type).
CALLBACKS = r"""
#include <math.h>
#include <stdio.h>
int enzyme_dup, enzyme_const, enzyme_out, enzyme_dupnoneed;
double __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);
static double g_p;
static double userf(double x) { return g_p * x * x + sin(g_p * x); }
__attribute__((noinline)) double integrate(double (*func)(double), double a, double b) {
    double s = 0, h = (b - a) / 64;
    for (int i = 0; i < 64; i++) s += (*func)(a + (i + 0.5) * h) * h;
    return s;
}
double obj(double p) {
    g_p = p;
    return integrate(userf, 0.0, 2.0);
}
typedef double doublereal;
typedef doublereal (*D_fp)();
static doublereal cube(doublereal *x) { return *x * *x * *x; }
__attribute__((noinline)) doublereal apply_(D_fp f, doublereal *x) { return (*f)(x); }
void obj2(doublereal *x, doublereal *res) { *res = apply_((D_fp)cube, x); }
int main(void) {
    double p = 0.7, h = 1e-6;
    printf("rev %.12g\n", __enzyme_autodiff((void *)obj, enzyme_out, p));
    printf("fwd %.12g\n", __enzyme_fwddiff((void *)obj, p, 1.0));
    printf("fd %.12g\n", (obj(p + h) - obj(p - h)) / (2 * h));
    double x = 2.0, dx = 0, r = 0, dr = 1.0;
    __enzyme_autodiff((void *)obj2, enzyme_dup, &x, &dx, enzyme_dupnoneed, &r, &dr);
    printf("unprototyped %.12g\n", dx);
    return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_callbacks_reading_globals_and_unprototyped_pointers(tmp_path, opt):
    src = Path(tmp_path) / "cb.c"
    src.write_text(CALLBACKS)
    exe = Path(tmp_path) / "cb"
    r = enzyme_cc([opt, "-Wno-deprecated-non-prototype", str(src), "-o", str(exe), "-lm"],
                  tmp_path)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    v = parse_values(out.stdout)
    assert v["fd"][0] != 0
    assert v["rev"][0] == pytest.approx(v["fd"][0], rel=1e-6), out.stdout
    assert v["fwd"][0] == pytest.approx(v["fd"][0], rel=1e-6), out.stdout
    assert v["unprototyped"][0] == pytest.approx(12.0, rel=1e-12), out.stdout


# Round BL (Enzyme's own tests, ported): a function with a custom gradient or tangent,
# one marked inactive, one function-like, each reached through a table of pointers: the
# derivative aborted at run time ("not one of the 1 candidate(s)": functions with
# rules were left out of the candidates), where a direct call follows the rule.  Each
# now is a candidate through a wrapper that calls it directly.
RULES_TABLE = r"""#include <math.h>
#include <stdio.h>
double __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);
int enzyme_const;
__attribute__((noinline)) double hyp(double x, double y) { return sqrt(x * x + y * y); }
typedef struct { double dx, dy; } G2;
typedef struct { void *tape; double r; } AugR;
static AugR hyp_aug(double x, double y) { AugR a = { 0, hyp(x, y) }; return a; }
static G2 hyp_rev(double x, double y, double d, void *tape) {
    double h = hyp(x, y); G2 g = { 2 * d * x / h, 2 * d * y / h }; return g;   /* 2x: seen */
}
static double hyp_fwd(double x, double dx, double y, double dy) { return 2 * (x * dx + y * dy) / hyp(x, y); }
void *__enzyme_register_gradient_hyp[3] = { (void *)hyp, (void *)hyp_aug, (void *)hyp_rev };
void *__enzyme_register_derivative_hyp[2] = { (void *)hyp, (void *)hyp_fwd };
__attribute__((noinline)) double scale_log(double v, double w) { return v * 10.0 + w; }
void *__enzyme_inactivefn[] = { (void *)scale_log };
__attribute__((noinline)) double myhypot(double x, double y) {  /* Newton's square root */
    double s = x * x + y * y, r = s > 1 ? s : 1;
    for (int i = 0; i < 60; i++) r = 0.5 * (r + s / r);
    return r;
}
void *__enzyme_function_like[2] = { (void *)myhypot, (void *)"hypot" };
static double plus(double a, double b) { return a + b; }
double (*const ops[4])(double, double) = { hyp, scale_log, myhypot, plus };
double user(double a, int k) { return ops[k](a, 2.0 * a) * (k == 1 ? a : 1.0); }
int main(void) {
    printf("rev"); for (int k = 0; k < 4; k++) printf(" %.17g", __enzyme_autodiff((void *)user, 0.5, enzyme_const, k));
    printf("\nfwd"); for (int k = 0; k < 4; k++) printf(" %.17g", __enzyme_fwddiff((void *)user, 0.5, 1.0, enzyme_const, k));
    printf("\n");
    return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_functions_with_rules_through_pointers(tmp_path, opt):
    v = _values(tmp_path, "rules.c", RULES_TABLE, opt)
    a = 0.5
    want = [2 * math.sqrt(5.0),             # the rules' (doubled) derivative of hyp(a, 2a)
            10 * a + 2 * a,                 # scale_log inactive: its value times d(a)/da
            math.sqrt(5.0),                 # myhypot as hypot: d hypot(a, 2a) / da
            3.0]
    assert v["rev"] == pytest.approx(want, rel=1e-12), v
    assert v["fwd"] == pytest.approx(want, rel=1e-12), v
