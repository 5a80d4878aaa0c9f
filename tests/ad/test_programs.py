"""Whole programs: gradients vs central differences, error diagnostics, and a
valgrind leak check of a gradient that caches inside a while loop."""

from __future__ import annotations


import pytest

from helpers import build_and_run, enzyme_cc, parse_values

WHILE_CACHE = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
int enzyme_dup, enzyme_const;
double __enzyme_autodiff(void *, ...);
/* data-dependent trip count, loop-carried state, a heap buffer and a helper call */
__attribute__((noinline)) double g(double a, double b) { return a * sin(b) + b; }
double f(double *x, int n) {
    double *t = malloc(n * sizeof(double));
    double y = x[0], s = 0.0;
    int k = 0;
    while (fabs(y) < 50.0 && k < 100) {
        y = g(y, x[k % n]) * 1.1 + 0.5;
        t[k % n] = y;
        k++;
    }
    for (int i = 0; i < n; i++) s += t[i] * x[i];
    free(t);
    return s + y;
}
int main(void) {
    double x[4] = {0.7, 1.3, -0.4, 0.9}, dx[4] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 4);
    for (int k = 0; k < 4; k++) {
        double s = x[k], h = 1e-6, p = s + h, m = s - h;
        x[k] = p; double fp = f(x, 4); x[k] = m; double fm = f(x, 4); x[k] = s;
        printf("d%d %.17g %.17g\n", k, dx[k], (fp - fm) / (p - m));
    }
    return 0;
}
"""


def _matches_differences(out, rel=1e-6, floor=1.0):
    """The program ran and each printed derivative agrees with its central difference."""
    assert out.returncode == 0, out.stderr
    for name, (got, want) in parse_values(out.stdout).items():
        assert abs(got - want) <= rel * max(abs(want), floor), (name, got, want)


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_while_loop_cache_gradient(tmp_path, opt):
    _matches_differences(build_and_run(tmp_path, WHILE_CACHE, opt))


def test_no_leaks_while_loop_cache(tmp_path, valgrind):
    out = build_and_run(tmp_path, WHILE_CACHE, "-O2",
                        runner=(valgrind, "--leak-check=full", "--error-exitcode=9",
                                "--errors-for-leak-kinds=definite,indirect,possible"))
    assert out.returncode == 0, out.stderr[-3000:]
    assert "All heap blocks were freed" in out.stderr


def test_preopt_off_gives_same_gradient(tmp_path):
    out = build_and_run(tmp_path, WHILE_CACHE, "-O2", extra=("-fenzyme-preopt=0",))
    assert out.returncode == 0, out.stderr
    for name, (got, want) in parse_values(out.stdout).items():
        assert abs(got - want) <= 1e-6 * max(abs(want), 1), name


def _compile_error(tmp_path, src):
    p = tmp_path / "e.c"
    p.write_text(src)
    r = enzyme_cc(["-O2", "-g", str(p), "-o", str(tmp_path / "e"), "-lm"], tmp_path)
    assert r.returncode != 0
    return r.stderr


def test_error_undefined_external_names_function_and_line(tmp_path):
    err = _compile_error(tmp_path, "double __enzyme_autodiff(void*, double);\n"
                         "extern double mystery(double);\n"
                         "double f(double x) {\n  return mystery(x) * x;\n}\n"
                         "int main(void) { return (int)__enzyme_autodiff((void*)f, 1.0); }\n")
    assert "e.c:4:" in err and "mystery" in err and "error:" in err and "note:" in err


def test_error_missing_shadow(tmp_path):
    err = _compile_error(tmp_path, "double __enzyme_autodiff(void*, ...);\n"
                         "double f(double *x) { return x[0] * x[0]; }\n"
                         "int main(void) { double x[1] = {1};\n"
                         "  return (int)__enzyme_autodiff((void*)f, x); }\n")
    assert "missing argument shadow" in err and "e.c:4:" in err


def test_error_illegal_marker(tmp_path):
    err = _compile_error(tmp_path, "int enzyme_bogus;\n"
                         "double __enzyme_autodiff(void*, ...);\n"
                         "double f(double x) { return x * x; }\n"
                         "int main(void) {\n"
                         "  return (int)__enzyme_autodiff((void*)f, enzyme_bogus, 1.0); }\n")
    assert "illegal enzyme metadata classification" in err


def test_error_too_few_arguments(tmp_path):
    err = _compile_error(tmp_path, "double __enzyme_autodiff(void*, ...);\n"
                         "double f(double x, double y) { return x * y; }\n"
                         "int main(void) {\n"
                         "  return (int)__enzyme_autodiff((void*)f, 1.0); }\n")
    assert "too few arguments" in err


# Round BA, a 2D shallow-water flux sweep as published: a state struct of 2D arrays
# copied by value (`tmp = *s; ... *s = tmp`), neighbours by periodic index arithmetic,
# the x/y direction loop (two trips) choosing fluxes with ternaries, called twice.  At
# -O2 the pre-AD pipeline's NewGVN (its "phi of ops", an LLVM 22 miscompilation:
# `opt-22 -passes=newgvn` alone changes what the function computes) rewrote the
# direction loop wrongly, and the derivative -- exact for the rewritten function --
# went to the wrong cells: 0 for 6.9e-4, 2.4e-3 for 0, silently.  The pre-AD NewGVN
# runs without phi of ops (llvm.NEWGVN_PHI_OF_OPS).
FLUX_SWEEP = r"""
#include <stdio.h>
#include <string.h>
int enzyme_dup, enzyme_const;
void __enzyme_autodiff(void *, ...);
#define NX 2
#define NY 3
typedef struct { double h[NY][NX], hu[NY][NX], hv[NY][NX]; } State;
static void fluxes(double h, double hu, double hv, double g, int dir, double F[3]) {
  F[0] = dir ? hv : hu; F[1] = 0; F[2] = dir ? 0.5 * g * h * h : 0;
}
static void step(State *s, double g) {
  State tmp = *s;
  for (int j = 0; j < NY; j++)
    for (int i = 0; i < NX; i++) {
      double acc[3] = {0, 0, 0};
      for (int dir = 0; dir < 2; dir++)
        for (int side = -1; side <= 1; side += 2) {
          int i2 = dir ? i : (i + side + NX) % NX, j2 = dir ? (j + side + NY) % NY : j;
          double FL[3], FR[3];
          fluxes(s->h[j][i], s->hu[j][i], s->hv[j][i], g, dir, FL);
          fluxes(s->h[j2][i2], s->hu[j2][i2], s->hv[j2][i2], g, dir, FR);
          for (int c = 0; c < 3; c += 2) acc[c] += side * (0.5 * (FL[c] + FR[c]));
        }
      tmp.h[j][i] -= 0.01 * acc[0]; tmp.hv[j][i] -= 0.01 * acc[2];
    }
  *s = tmp;
}
double f(const double *h0, double g) {
  State s;
  for (int k = 0; k < NX * NY; k++) {
    s.h[k / NX][k % NX] = h0[k]; s.hu[k / NX][k % NX] = 0.1; s.hv[k / NX][k % NX] = 0.05;
  }
  step(&s, g); step(&s, g);
  return s.h[1][0] * s.h[1][0];
}
int main(void) {
  double h[NX * NY], d[NX * NY] = {0};
  for (int k = 0; k < NX * NY; k++) h[k] = 1 + 0.1 * k * k;
  __enzyme_autodiff((void *)f, enzyme_dup, h, d, enzyme_const, 9.81);
  for (int k = 0; k < NX * NY; k++) {
    double s = h[k], e = 1e-6;
    h[k] = s + e; double fp = f(h, 9.81); h[k] = s - e; double fm = f(h, 9.81); h[k] = s;
    printf("d%d %.17g %.17g\n", k, d[k], (fp - fm) / (2 * e));
  }
  return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_state_copied_by_value_around_a_direction_loop(tmp_path, opt):
    _matches_differences(build_and_run(tmp_path, FLUX_SWEEP, opt), floor=1e-3)
