"""Split mode through enzyme-cc: __enzyme_augmentfwd + __enzyme_reverse (tape
allocated by EnzymePy, or caller-allocated with enzyme_allocated/enzyme_tape) agree
with combined mode, __enzyme_augmentsize is the size to allocate, and valgrind finds
no leak."""

from __future__ import annotations


import pytest

from helpers import build_and_run, parse_values

SPLIT = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
int enzyme_dup, enzyme_const, enzyme_out, enzyme_allocated, enzyme_tape, enzyme_nofree;
typedef struct { void *tape; double primal; } AugR;
double f(double *x, double y) { double s = sin(x[0]) * y; x[1] = s * x[1]; return s * s + x[1]; }
double g(double *x, int n) { double s = 0; for (int i = 0; i < n; i++) s += x[i] * x[i] * x[i]; return s; }
AugR __enzyme_augmentfwd_f(void *, int, double *, double *, double);
void *__enzyme_augmentfwd_ft(void *, int, int, int, void *, int, double *, double *, double);
double __enzyme_reverse_f(void *, int, double *, double *, double, double, void *);
double __enzyme_reverse_ft(void *, int, double *, double *, double, double, int, int, int, void *);
long __enzyme_augmentsize(void *, int, double *, double *, double);
long __enzyme_augmentsize_m(void *, int, int);
double __enzyme_autodiff(void *, ...);
void *__enzyme_augmentfwd_g(void *, int, double *, double *, int, int);
void __enzyme_reverse_g(void *, int, double *, double *, int, int, double, void *);
void __enzyme_reverse_gn(void *, int, double *, double *, int, int, double, int, int, void *);
int main(void) {
  double x[2] = {0.3, 1.7}, dx[2] = {0, 0};
  AugR a = __enzyme_augmentfwd_f((void *)f, enzyme_dup, x, dx, 2.0);
  double dy = __enzyme_reverse_f((void *)f, enzyme_dup, x, dx, 2.0, 0.5, a.tape);
  printf("split %.17g %.17g %.17g %.17g %.17g\n", a.primal, x[1], dx[0], dx[1], dy);
  double x2[2] = {0.3, 1.7}, dx2[2] = {0, 0};
  double p2 = f(x2, 2.0);
  x2[1] = 1.7;
  double dy2 = __enzyme_autodiff((void *)f, enzyme_dup, x2, dx2, 2.0);
  printf("combined %.17g %.17g %.17g %.17g %.17g\n", p2, x2[1], 0.5 * dx2[0], 0.5 * dx2[1], 0.5 * dy2);
  long sz = __enzyme_augmentsize((void *)f, enzyme_dup, x, dx, 2.0);
  char *buf = malloc(sz);
  double x3[2] = {0.3, 1.7}, dx3[2] = {0, 0};
  __enzyme_augmentfwd_ft((void *)f, enzyme_allocated, 96, enzyme_tape, buf, enzyme_dup, x3, dx3, 2.0);
  double dy3 = __enzyme_reverse_ft((void *)f, enzyme_dup, x3, dx3, 2.0, 0.5, enzyme_allocated, 96, enzyme_tape, buf);
  printf("allocated %.17g %.17g %.17g %.17g %.17g\n", a.primal, x3[1], dx3[0], dx3[1], dy3);
  /* Enzyme's allocated-tape idiom: the activity markers alone, no values */
  printf("size %ld %ld\n", sz, __enzyme_augmentsize_m((void *)f, enzyme_dup, enzyme_out));
  free(buf);
  double xg[3] = {1, 2, 3}, dg[3] = {0};
  void *t = __enzyme_augmentfwd_g((void *)g, enzyme_dup, xg, dg, enzyme_const, 3);
  __enzyme_reverse_g((void *)g, enzyme_dup, xg, dg, enzyme_const, 3, 1.0, t);
  t = __enzyme_augmentfwd_g((void *)g, enzyme_dup, xg, dg, enzyme_const, 3);
  __enzyme_reverse_gn((void *)g, enzyme_dup, xg, dg, enzyme_const, 3, 1.0, enzyme_nofree, enzyme_tape, t);
  printf("loop %.17g %.17g %.17g\n", dg[0], dg[1], dg[2]);
  free(*(void **)t);   /* enzyme_nofree: the caller frees the tape's data and header */
  free(t);
  return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_split_matches_combined_and_leaks_nothing(tmp_path, opt, valgrind):
    runner = (valgrind, "-q", "--leak-check=full", "--errors-for-leak-kinds=all",
              "--error-exitcode=3")
    out = build_and_run(tmp_path, SPLIT, opt, runner=runner)
    assert out.returncode == 0, out.stdout + out.stderr
    v = parse_values(out.stdout)
    for key in ("split", "allocated"):
        for got, want in zip(v[key], v["combined"]):
            assert abs(got - want) <= 1e-14 * max(abs(want), 1), (key, v[key], v["combined"])
    assert 24 < v["size"][0] <= 96 and v["size"][1] == v["size"][0]
    assert v["loop"] == [6.0, 24.0, 54.0]
