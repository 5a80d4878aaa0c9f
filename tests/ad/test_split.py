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
  /* enzyme_nofree: the tape (and the loop's cache) stays for another reverse pass; the
     last one, without enzyme_nofree, frees it all */
  __enzyme_reverse_gn((void *)g, enzyme_dup, xg, dg, enzyme_const, 3, 1.0, enzyme_nofree, enzyme_tape, t);
  __enzyme_reverse_gn((void *)g, enzyme_dup, xg, dg, enzyme_const, 3, 1.0, enzyme_nofree, enzyme_tape, t);
  __enzyme_reverse_g((void *)g, enzyme_dup, xg, dg, enzyme_const, 3, 1.0, t);
  printf("loop %.17g %.17g %.17g\n", dg[0], dg[1], dg[2]);
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
    assert 0 < v["size"][0] <= 96 and v["size"][1] == v["size"][0]
    assert v["loop"] == [12.0, 48.0, 108.0]    # 3x^2, four reverse passes


# One augmented forward pass, one reverse pass per Jacobian row (enzyme_nofree), the
# last row's reverse freeing the tape: a helper with its own loop caches, a heap
# temporary (its shadow lives until the reverse pass), a while loop whose trip count
# depends on the data.  Before: the first reverse pass used the tape up -- the next
# read before its start (-nan at -O2, a segfault at -O0; real Enzyme 15 right); with
# enzyme_allocated, two reverse passes on the caller's buffer gave -nan.
ROWS = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
int enzyme_dup, enzyme_const, enzyme_nofree, enzyme_allocated, enzyme_tape;
void *__enzyme_augmentfwd(void *, ...);
void __enzyme_reverse(void *, ...);
double __enzyme_autodiff(void *, ...);
__attribute__((noinline)) static double smooth(const double *x, int n, int k) {
  double s = 0;
  for (int i = 0; i < n; i++) s += sin(x[i] * (k + 1)) * x[(i + k) % n];
  return s;
}
void model(const double *x, double *y, int n) {
  double *tmp = malloc(n * sizeof(double));
  for (int k = 0; k < n; k++) tmp[k] = smooth(x, n, k);
  for (int k = 0; k < n; k++) {
    double v = tmp[k] * tmp[(k + 1) % n];
    while (fabs(v) > 1.0) v *= 0.5;
    y[k] = v + exp(x[k]);
  }
  free(tmp);
}
void scaled(const double *x, double *y) { y[0] = x[0] * x[0] * x[1]; }
int main(void) {
  enum { N = 3 };
  double x[N] = {0.3, -0.7, 1.1}, y[N], dy[N];
  double J[N][N] = {{0}}, R[N][N] = {{0}};
  double dx[N] = {0};
  for (int r = 0; r < N; r++) dy[r] = 0;
  void *t = __enzyme_augmentfwd((void *)model, enzyme_dup, x, dx, enzyme_dup, y, dy,
                                enzyme_const, N);
  for (int r = 0; r < N; r++) {
    for (int c = 0; c < N; c++) dx[c] = 0;
    dy[r] = 1;
    if (r < N - 1)
      __enzyme_reverse((void *)model, enzyme_dup, x, dx, enzyme_dup, y, dy, enzyme_const, N,
                       enzyme_nofree, t);
    else
      __enzyme_reverse((void *)model, enzyme_dup, x, dx, enzyme_dup, y, dy, enzyme_const, N, t);
    for (int c = 0; c < N; c++) J[r][c] = dx[c];
  }
  for (int r = 0; r < N; r++) {     /* each row again, by combined mode */
    double ddx[N] = {0}, yy[N], ddy[N] = {0};
    ddy[r] = 1;
    __enzyme_autodiff((void *)model, enzyme_dup, x, ddx, enzyme_dup, yy, ddy, enzyme_const, N);
    for (int c = 0; c < N; c++) R[r][c] = ddx[c];
  }
  for (int r = 0; r < N; r++)
    printf("row %.17g %.17g %.17g %.17g %.17g %.17g\n", J[r][0], J[r][1], J[r][2],
           R[r][0], R[r][1], R[r][2]);
  double u[2] = {1.5, 2.0}, du[2] = {0, 0}, w = 0, dw = 1;
  char buf[256];
  __enzyme_augmentfwd((void *)scaled, enzyme_allocated, 256, enzyme_tape, buf,
                      enzyme_dup, u, du, enzyme_dup, &w, &dw);
  for (int k = 0; k < 2; k++) {
    dw = 1;
    __enzyme_reverse((void *)scaled, enzyme_allocated, 256, enzyme_tape, buf,
                     enzyme_dup, u, du, enzyme_dup, &w, &dw);
  }
  printf("allocated %.17g %.17g\n", du[0], du[1]);
  return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_reverse_passes_on_one_tape(tmp_path, opt, valgrind):
    runner = (valgrind, "-q", "--leak-check=full", "--errors-for-leak-kinds=all",
              "--error-exitcode=3")
    out = build_and_run(tmp_path, ROWS, opt, runner=runner)
    assert out.returncode == 0, out.stdout + out.stderr
    rows = [line.split()[1:] for line in out.stdout.splitlines() if line.startswith("row")]
    assert len(rows) == 3
    for row in rows:
        split, combined = [float(v) for v in row[:3]], [float(v) for v in row[3:]]
        assert split == pytest.approx(combined, rel=1e-13, abs=1e-15), row
        assert any(abs(v) > 1e-3 for v in combined)
    v = parse_values(out.stdout)
    assert v["allocated"] == pytest.approx([2 * 2 * 1.5 * 2.0, 2 * 1.5 * 1.5], rel=1e-15)


# Enzyme's allocatedtape test, as it is written: the tape's size from
# __enzyme_augmentsize in a variable, then malloc'd; and sizeof(double) for a tape
# holding one double.  Before: "enzyme_allocated must be followed by an integer
# constant", and "tape too small ... needs 32" for sizeof(double) (EnzymePy's 24-byte
# header lived in the caller's buffer).  A size too small, known only when the program
# runs, aborts with a message.
ALLOCATED = r"""
#include <stdio.h>
#include <stdlib.h>
void __enzyme_reverse(void *, ...);
void *__enzyme_augmentfwd(void *, ...);
int __enzyme_augmentsize(void *, ...);
int enzyme_tape, enzyme_allocated, enzyme_dup;
void square(double *x, double *y) { *y = *x * *x; }
int main(int argc, char **argv) {
  double x = 3.0, dx = 0.0, y, dy = 0.0;
  int size = __enzyme_augmentsize((void *)square, enzyme_dup, enzyme_dup);
  if (argc > 1) size = atoi(argv[1]);
  void *data = malloc(size);
  __enzyme_augmentfwd((void *)square, enzyme_allocated, size, enzyme_tape, data,
                      enzyme_dup, &x, &dx, enzyme_dup, &y, &dy);
  x = -7; dy = 1.0;    /* the reverse pass reads x from the tape */
  __enzyme_reverse((void *)square, enzyme_allocated, size, enzyme_tape, data,
                   enzyme_dup, &x, &dx, enzyme_dup, &y, &dy);
  printf("variable %d %.17g %.17g\n", size, y, dx);
  free(data);
  double buf[1];
  dx = 0; x = 3.0;
  __enzyme_augmentfwd((void *)square, enzyme_allocated, sizeof(double), enzyme_tape, buf,
                      enzyme_dup, &x, &dx, enzyme_dup, &y, &dy);
  x = -7; dy = 1.0;
  __enzyme_reverse((void *)square, enzyme_allocated, sizeof(double), enzyme_tape, buf,
                   enzyme_dup, &x, &dx, enzyme_dup, &y, &dy);
  printf("sizeof %.17g\n", dx);
  return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_caller_allocated_tape_as_enzyme_programs_size_it(tmp_path, opt):
    import subprocess
    out = build_and_run(tmp_path, ALLOCATED, opt)
    assert out.returncode == 0, out.stdout + out.stderr
    v = parse_values(out.stdout)
    assert v["variable"] == [8, 9.0, 6.0] and v["sizeof"] == [6.0]
    short = subprocess.run([str(tmp_path / "prog"), "4"], capture_output=True, text=True)
    assert short.returncode != 0 and "variable" not in short.stdout
    assert "enzyme_allocated gives fewer bytes than the tape of 'square' needs (8" \
        in short.stderr
