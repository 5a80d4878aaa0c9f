"""Vector (batch) reverse mode: __enzyme_autodiff with enzyme_width N (N shadows per
enzyme_dup argument, enzyme_dupv / enzyme_dupnoneedv, enzyme_primal_return) agrees with
N separate width-1 calls for N = 1, 2, 4, 8; __enzyme_batch; misuse errors name the
call site; the same array passed for a parameter read and one written is an error at
compile time where the call site shows it and a checked abort at run time otherwise."""

from __future__ import annotations

import subprocess

import pytest
from helpers import build_and_run, enzyme_cc, parse_values

PROGRAM = r"""
#include <enzyme.h>
#include <stdio.h>
#include <math.h>
typedef struct { double d[2]; } D2;
typedef struct { double d[4]; } D4;
typedef struct { double d[8]; } D8;
typedef struct { double a[2]; double b[2]; } AB2;
typedef struct { double a[4]; double b[4]; double y; } AB4P;
D2 __enzyme_autodiff_w2(void *, ...);
D4 __enzyme_autodiff_w4(void *, ...);
D8 __enzyme_autodiff_w8(void *, ...);
AB2 __enzyme_autodiff_ab2(void *, ...);
AB4P __enzyme_autodiff_ab4p(void *, ...);

/* out[i] = x[i]^2 * a + sin(x[i]) * b ; returns sum out */
double f(double a, const double *x, double *out, int n, double b) {
  double s = 0;
  for (int i = 0; i < n; i++) { out[i] = x[i] * x[i] * a + sin(x[i]) * b; s += out[i]; }
  return s;
}
double coef[3] = {1.0, -2.0, 0.5};
void g(const double *y, int n, double *sum) {
  double s = 0;
  for (int i = 0; i < n; i++) s += coef[i] * y[i] * y[i];
  *sum = s;
}
double h(double x, double c) { return x * x * c; }
float hf(float x, int n) { return x * (float)n; }
typedef struct { double r[4]; } RB4;
typedef struct { float r[2]; } RF2;
RB4 __enzyme_batch_4(void *, ...);
RF2 __enzyme_batch_2f(void *, int, int, int, float, float, int, int);
int main() {
  double x[3] = {0.3, -0.8, 1.1}, out[3];
  double seeds[8][3], dx[8][3] = {{0}}, one_dx[8][3] = {{0}};
  for (int k = 0; k < 8; k++) for (int i = 0; i < 3; i++) seeds[k][i] = 0.5 * k - i + 0.25;
  double one_a[8], one_b[8];
  for (int k = 0; k < 8; k++) {
    double dout[3] = {seeds[k][0], seeds[k][1], seeds[k][2]};
    typedef struct { double a, b; } AB;
    AB r = ((AB (*)(void *, ...))__enzyme_autodiff)((void *)f, 1.5, x, one_dx[k], out, dout, enzyme_const, 3, 0.7);
    one_a[k] = r.a; one_b[k] = r.b;
  }
  printf("one");
  for (int k = 0; k < 8; k++) printf(" %.17g %.17g %.17g %.17g %.17g", one_a[k], one_b[k], one_dx[k][0], one_dx[k][1], one_dx[k][2]);
  printf("\n");
  {
    double dout[2][3]; for (int k = 0; k < 2; k++) for (int i = 0; i < 3; i++) dout[k][i] = seeds[k][i];
    AB2 r = __enzyme_autodiff_ab2((void *)f, enzyme_width, 2, 1.5, x, dx[0], dx[1], out, dout[0], dout[1], enzyme_const, 3, 0.7);
    printf("w2");
    for (int k = 0; k < 2; k++) printf(" %.17g %.17g %.17g %.17g %.17g", r.a[k], r.b[k], dx[k][0], dx[k][1], dx[k][2]);
    printf("\n");
  }
  {
    double dout[4][3]; for (int k = 0; k < 4; k++) for (int i = 0; i < 3; i++) dout[k][i] = seeds[k][i];
    double dxx[4][3] = {{0}};
    AB4P r = __enzyme_autodiff_ab4p((void *)f, enzyme_width, 4, enzyme_primal_return, 1.5, enzyme_dupv, (long)sizeof dxx[0], x, dxx, enzyme_dupnoneedv, (long)sizeof dout[0], out, dout, enzyme_const, 3, 0.7);
    printf("w4");
    for (int k = 0; k < 4; k++) printf(" %.17g %.17g %.17g %.17g %.17g", r.a[k], r.b[k], dxx[k][0], dxx[k][1], dxx[k][2]);
    printf("\nprimal %.17g\n", r.y);
  }
  {
    double dout[3]; for (int i = 0; i < 3; i++) dout[i] = seeds[0][i];
    double d1[3] = {0};
    typedef struct { double a[1]; double b[1]; } AB1;
    AB1 r = ((AB1 (*)(void *, ...))__enzyme_autodiff)((void *)f, enzyme_width, 1, 1.5, x, d1, out, dout, enzyme_const, 3, 0.7);
    printf("w1 %.17g %.17g %.17g %.17g %.17g\n", r.a[0], r.b[0], d1[0], d1[1], d1[2]);
  }
  {
    double dout[8][3]; for (int k = 0; k < 8; k++) for (int i = 0; i < 3; i++) dout[k][i] = seeds[k][i];
    double d8[8][3] = {{0}};
    typedef struct { double a[8]; double b[8]; } AB8;
    AB8 r = ((AB8 (*)(void *, ...))__enzyme_autodiff)((void *)f, enzyme_width, 8, 1.5, enzyme_dupv, (long)sizeof d8[0], x, d8, out, dout[0], dout[1], dout[2], dout[3], dout[4], dout[5], dout[6], dout[7], enzyme_const, 3, 0.7);
    printf("w8");
    for (int k = 0; k < 8; k++) printf(" %.17g %.17g %.17g %.17g %.17g", r.a[k], r.b[k], d8[k][0], d8[k][1], d8[k][2]);
    printf("\n");
  }
  {
    /* only pointer arguments active, a global read (not written): D8 of nothing, shadows */
    double dsum[8] = {0}, dy[8][3] = {{0}}, y[3] = {1, 2, 3};
    double s8[8]; for (int k = 0; k < 8; k++) s8[k] = k + 1;
    __enzyme_autodiff_w8((void *)g, enzyme_width, 8, y, dy[0], dy[1], dy[2], dy[3], dy[4], dy[5], dy[6], dy[7], enzyme_const, 3, enzyme_dupnoneed, dsum, s8 + 0, s8 + 1, s8 + 2, s8 + 3, s8 + 4, s8 + 5, s8 + 6, s8 + 7);
    printf("g8"); for (int k = 0; k < 8; k++) printf(" %.17g %.17g %.17g", dy[k][0], dy[k][1], dy[k][2]); printf("\n");
  }
  {
    RB4 b = __enzyme_batch_4((void *)h, enzyme_width, 4, 1.0, 2.0, 3.0, 4.0, enzyme_scalar, 0.5);
    printf("batch %.17g %.17g %.17g %.17g\n", b.r[0], b.r[1], b.r[2], b.r[3]);
    RF2 c = __enzyme_batch_2f((void *)hf, enzyme_width, 2, enzyme_vector, 1.5f, 2.5f, enzyme_scalar, 2);
    printf("batchf %.9g %.9g\n", c.r[0], c.r[1]);
  }
  return 0;
}
"""

ERRORS = r"""
#include <enzyme.h>
#include <stdlib.h>
typedef struct { double d[2]; } D2;
typedef struct { double d[4]; } D4;
D2 __enzyme_autodiff_w2(void *, ...);
D4 __enzyme_batch_4(void *, ...);
double inplace(double *x) { x[0] = x[0] * x[0]; return x[0]; }
double sq(double x, double y) { return x * x + y; }
void square(const double *in, double *out, int n) { for (int i = 0; i < n; i++) out[i] = in[i] * in[i]; }
double noisy(const double *x) { return x[0] * (1.0 + 1e-3 * (rand() % 7)); }
int main(int argc, char **argv) {
  double x[1] = {2}, d0[1] = {0}, d1[1] = {0};
#if CASE == 1
  __enzyme_autodiff_w2((void *)inplace, enzyme_width, 2, x, d0, d1);
#elif CASE == 2
  __enzyme_autodiff_w2((void *)sq, enzyme_width, 4, 1.0, 2.0);
#elif CASE == 3
  __enzyme_autodiff_w2((void *)inplace, enzyme_width, 2, x, d0);
#elif CASE == 4
  __enzyme_batch_4((void *)sq, enzyme_width, 4, 1.0, 2.0, 3.0, enzyme_scalar, 0.5);
#elif CASE == 5
  __enzyme_batch_4((void *)sq, enzyme_width, 4, enzyme_dup, 1.0, 2.0, 3.0, 4.0, enzyme_scalar, 0.5);
#elif CASE == 6
  __enzyme_autodiff_w2((void *)sq, enzyme_width, 2, enzyme_scalar, 1.0, 2.0);
#elif CASE == 7
  __enzyme_autodiff_w2((void *)square, enzyme_width, 2, enzyme_dup, x, d0, d1,
                       enzyme_dup, x, d0, d1, enzyme_const, 1);
#elif CASE == 8
  __enzyme_autodiff_w2((void *)noisy, enzyme_width, 2, x, d0, d1);
#endif
  return 0;
}
"""


def _close(got, want):
    assert len(got) == len(want), (got, want)
    for a, b in zip(got, want, strict=True):
        assert abs(a - b) <= 1e-13 * max(1.0, abs(b)), (got, want)


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_vector_reverse_matches_separate_calls(tmp_path, opt):
    out = build_and_run(tmp_path, PROGRAM, opt, extra=("-g",))
    assert out.returncode == 0, out.stderr
    v = parse_values(out.stdout)
    one = v["one"]                     # per lane: da, db, dx[0..2]
    for key, n in (("w1", 1), ("w2", 2), ("w4", 4), ("w8", 8)):
        _close(v[key], one[:5 * n])
    # primal (enzyme_primal_return after the derivatives): f at a = 1.5, b = 0.7
    import math
    x = [0.3, -0.8, 1.1]
    _close(v["primal"], [sum(t * t * 1.5 + math.sin(t) * 0.7 for t in x)])
    # only shadows, a global read: dy_i = 2 coef_i y_i * seed_k
    coef, y = [1.0, -2.0, 0.5], [1.0, 2.0, 3.0]
    _close(v["g8"], [2 * c * t * (k + 1) for k in range(8) for c, t in zip(coef, y, strict=True)])
    _close(v["batch"], [0.5, 2.0, 4.5, 8.0])
    _close(v["batchf"], [3.0, 5.0])


@pytest.mark.parametrize("case,message", [
    (1, "e.c:14:3: error: __enzyme_autodiff_w2: enzyme_width 2 (vector reverse mode) needs "
        "'inplace' to give the same result when run again, but it may read parameter 1, "
        "which it writes"),
    (2, "e.c:16:3: error: width mismatch: __enzyme_autodiff_w2 returns { double, double } "
        "(16 bytes) but the call produces 8 value(s) (enzyme_width 4)"),
    (3, "e.c:18:3: error: missing argument shadow for parameter 1 of 'inplace' after the value "
        "(width mismatch: enzyme_width 2 needs 2 shadows)"),
    (4, "e.c:20:3: error: __enzyme_batch_4: parameter 1 of 'sq' needs 4 value(s), one per "
        "lane (width mismatch: enzyme_width 4): found the marker enzyme_scalar"),
    (5, "e.c:22:3: error: __enzyme_batch_4: enzyme_dup is not a batch marker"),
    (6, "e.c:24:3: error: illegal enzyme metadata classification 'enzyme_scalar' "
        "(a __enzyme_batch marker)"),
    # in place, f(x, x): lane 2 ran on the squares of lane 1 (x = 1 16 81, not 1 4 9)
    (7, "e.c:26:3: error: __enzyme_autodiff_w2: enzyme_width 2 (vector reverse mode) needs "
        "'square' to give the same result when run again, but it may read parameter 1, "
        "which it writes"),
    # the generator's state: lane 2 drew other numbers than lane 1
    (8, "e.c:29:3: error: __enzyme_autodiff_w2: enzyme_width 2 (vector reverse mode) needs "
        "'noisy' to give the same result when run again, but it may read the hidden state "
        "of rand(), which it writes"),
])
def test_vector_reverse_misuse(tmp_path, case, message):
    src = tmp_path / "e.c"
    src.write_text(ERRORS.lstrip("\n"))
    r = enzyme_cc(["-O2", "-g", f"-DCASE={case}", str(src), "-o", str(tmp_path / "e")],
                  tmp_path)
    assert r.returncode != 0
    assert message in r.stderr, r.stderr


# The same array passed twice, through a wrapper whose parameters the call site cannot
# tell apart at compile time: checked at run time (square writes through parameter 2
# and reads through parameter 1) -- distinct arrays give the derivative, the same array
# aborts with a message instead of a lane that saw the other lane's output.
IN_PLACE_AT_RUN_TIME = r"""
#include <stdio.h>
typedef struct { double d[2]; } D2;
extern int enzyme_dup, enzyme_const, enzyme_width;
D2 __enzyme_autodiff_w2(void *, ...);
void square(const double *in, double *out, int n) { for (int i = 0; i < n; i++) out[i] = in[i] * in[i]; }
__attribute__((noinline)) void grad2(double *a, double *b, double *da0, double *da1,
                                     double *db0, double *db1) {
  __enzyme_autodiff_w2((void *)square, enzyme_width, 2, enzyme_dup, a, da0, da1,
                       enzyme_dup, b, db0, db1, enzyme_const, 3);
}
int main(int argc, char **argv) {
  double x[3] = {1, 2, 3}, y[3] = {0}, a0[3] = {0}, a1[3] = {0}, b0[3] = {1, 1, 1},
         b1[3] = {10, 10, 10};
  grad2(x, y, a0, a1, b0, b1);
  printf("%g %g %g %g %g %g %g %g %g\n", y[0], y[1], y[2], a0[0], a0[1], a0[2], a1[0], a1[1], a1[2]);
  fflush(stdout);
  if (argc > 1) grad2(x, x, a0, a1, b0, b1);
  return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_same_array_twice_is_checked_at_run_time(tmp_path, opt):
    src = tmp_path / "w.c"
    src.write_text(IN_PLACE_AT_RUN_TIME)
    exe = tmp_path / "w"
    r = enzyme_cc([opt, str(src), "-o", str(exe)], tmp_path)
    assert r.returncode == 0, r.stderr
    ok = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert [float(v) for v in ok.stdout.split()] == [1, 4, 9, 2, 4, 6, 20, 40, 60]
    bad = subprocess.run([str(exe), "same"], capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0
    assert "enzyme: __enzyme_autodiff_w2 with enzyme_width 2 (vector reverse mode) of " \
        "'square': parameters 1 and 2 point to the same memory" in bad.stderr, bad.stderr
