"""Forward mode through enzyme-cc: the inner-product identity <J v, w> = <v, J^T w>
between forward and reverse mode on generated programs (hypothesis), and vector
mode (enzyme_width 1, 2, 4, 8; enzyme_dupv) against separate width-1 calls."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings, strategies as st

from helpers import build_and_run, parse_values

PROGRAMS_TRIED = []

LEAVES = ["x[0]", "x[1]", "x[2]", "s", "t", "0.75"]


@st.composite
def expr(draw, depth=3):
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(LEAVES))
    a = draw(expr(depth - 1))
    kind = draw(st.integers(0, 7))
    if kind < 3:
        return f"({a} {'+-*'[kind]} {draw(expr(depth - 1))})"
    if kind == 3:
        b = draw(expr(depth - 1))
        return f"({a} / (1.5 + {b} * {b}))"
    if kind == 4:
        return f"{draw(st.sampled_from(['sin', 'cos', 'tanh', 'atan', 'exp']))}(0.5 * {a})"
    if kind == 5:
        return f"sqrt(1.0 + {a} * {a})"
    if kind == 6:
        return f"helper({a}, x[{draw(st.integers(0, 2))}])"
    return f"({a} > 0.1 ? {a} * {a} : 0.5 * {a})"


@st.composite
def program(draw, k):
    """f_k(const double *x, double *y): x has 3 entries, y 2 (written)."""
    lines = [f"void f{k}(const double *x, double *y) {{", "  double s = 0.5 * x[0], t = x[1];",
             "  double a[3] = {x[0], x[1], x[2]};"]
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):
            n = draw(st.integers(1, 4))
            lines += [f"  for (int i = 0; i < {n}; i++) {{",
                      f"    s = 0.5 * s + 0.3 * tanh({draw(expr(2))});",
                      "    a[i % 3] = 0.8 * a[(i + 1) % 3] + 0.2 * s;", "  }"]
        else:
            lines.append(f"  t = t + 0.2 * tanh({draw(expr(3))});")
    lines += [f"  y[0] = s + a[0] * {draw(expr(2))};", f"  y[1] = t * a[2] + {draw(expr(2))};",
              "}"]
    return "\n".join(lines)


HEADER = """#include <math.h>
#include <stdio.h>
int enzyme_dup, enzyme_const, enzyme_dupnoneed;
void __enzyme_fwddiff(void *, ...);
void __enzyme_autodiff(void *, ...);
__attribute__((noinline)) static double helper(double a, double b) { return a * sin(b) + b; }
"""


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_inner_product_identity_forward_vs_reverse(tmp_path_factory, data):
    n = 8
    progs = [data.draw(program(k)) for k in range(n)]
    opt = data.draw(st.sampled_from(["-O0", "-O2"]))
    rnd = random.Random(data.draw(st.integers(0, 2**31)))
    x = [rnd.uniform(-1.2, 1.2) for _ in range(3)]
    main = ["int main(void) {", f"  double x[3] = {{{x[0]!r}, {x[1]!r}, {x[2]!r}}};"]
    for k in range(n):
        v = [rnd.uniform(-1, 1) for _ in range(3)]
        w = [rnd.uniform(-1, 1) for _ in range(2)]
        main += [
            f"  {{ double v[3] = {{{v[0]!r}, {v[1]!r}, {v[2]!r}}}, w[2] = {{{w[0]!r}, {w[1]!r}}};",
            "    double y[2], jv[2] = {0, 0}, dx[3] = {0, 0, 0}, dy[2] = {w[0], w[1]};",
            f"    __enzyme_fwddiff((void *)f{k}, enzyme_dup, x, v, enzyme_dupnoneed, y, jv);",
            f"    __enzyme_autodiff((void *)f{k}, enzyme_dup, x, dx, enzyme_dup, y, dy);",
            f'    printf("ip{k} %.17g %.17g\\n", jv[0] * w[0] + jv[1] * w[1],'
            " v[0] * dx[0] + v[1] * dx[1] + v[2] * dx[2]); }"]
    main.append("  return 0; }")
    src = HEADER + "\n".join(progs) + "\n" + "\n".join(main)
    out = build_and_run(tmp_path_factory.mktemp("ip"), src, opt)
    assert out.returncode == 0, out.stderr
    vals = parse_values(out.stdout)
    PROGRAMS_TRIED.append(n)
    for k in range(n):
        fwd, rev = vals[f"ip{k}"]
        assert abs(fwd - rev) <= 1e-10 * max(abs(fwd), abs(rev), 1e-300) or fwd == rev, \
            (progs[k], fwd, rev, opt)


def teardown_module(module):
    import sys
    print(f"\ninner-product programs tried: {sum(PROGRAMS_TRIED)}", file=sys.stderr)


VECTOR = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int enzyme_dup, enzyme_const, enzyme_dupv, enzyme_width, enzyme_dupnoneed;
typedef struct { double d[8]; } D8;
typedef struct { double d[4]; } D4;
typedef struct { double d[2]; } D2;
double __enzyme_fwddiff(void *, ...);
D2 __enzyme_fwddiff_w2(void *, ...);
D4 __enzyme_fwddiff_w4(void *, ...);
D8 __enzyme_fwddiff_w8(void *, ...);
void __enzyme_fwddiff_v(void *, ...);

__attribute__((noinline)) double sq(double a) { return a * a; }
double f(const double *x, int n) {       /* calls, loops, malloc, libm */
  double *t = malloc(n * sizeof(double)), s = 0;
  for (int i = 0; i < n; i++) t[i] = sin(x[i]) * x[(i + 1) % n];
  for (int i = 0; i < n; i++) s += sq(t[i]) + exp(0.1 * t[i]);
  free(t);
  return s;
}
double g(double a, double b) { return a * cos(b) + pow(a, 2.5); }
void h(const double *x, double *y) { memcpy(y, x, 3 * sizeof(double)); y[1] *= y[2]; }

#define N 5
int main(void) {
  double x[N] = {0.3, -0.8, 1.1, 0.45, -0.2};
  double dirs[8][N];
  for (int k = 0; k < 8; k++)
    for (int i = 0; i < N; i++) dirs[k][i] = sin(1.3 * k + 0.7 * i);
  double one[8];
  for (int k = 0; k < 8; k++) one[k] = __enzyme_fwddiff((void *)f, enzyme_dup, x, dirs[k], enzyme_const, N);
  printf("one %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g\n", one[0], one[1], one[2], one[3], one[4], one[5], one[6], one[7]);
  double w1 = __enzyme_fwddiff((void *)f, enzyme_width, 1, enzyme_dup, x, dirs[0], enzyme_const, N);
  printf("w1 %.17g\n", w1);
  D2 w2 = __enzyme_fwddiff_w2((void *)f, enzyme_width, 2, enzyme_dup, x, dirs[0], dirs[1], enzyme_const, N);
  printf("w2 %.17g %.17g\n", w2.d[0], w2.d[1]);
  D4 w4 = __enzyme_fwddiff_w4((void *)f, enzyme_width, 4, enzyme_dupv, (long)sizeof(dirs[0]), x, dirs[0], enzyme_const, N);
  printf("w4 %.17g %.17g %.17g %.17g\n", w4.d[0], w4.d[1], w4.d[2], w4.d[3]);
  D8 w8 = __enzyme_fwddiff_w8((void *)f, enzyme_width, 8, enzyme_dup, x, dirs[0], dirs[1], dirs[2], dirs[3], dirs[4], dirs[5], dirs[6], dirs[7], enzyme_const, N);
  printf("w8 %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g\n", w8.d[0], w8.d[1], w8.d[2], w8.d[3], w8.d[4], w8.d[5], w8.d[6], w8.d[7]);
  /* scalar arguments: lanes of tangents */
  double ga = __enzyme_fwddiff((void *)g, enzyme_dup, 1.3, 1.0, enzyme_dup, 0.4, 0.0);
  double gb = __enzyme_fwddiff((void *)g, enzyme_dup, 1.3, 0.0, enzyme_dup, 0.4, 1.0);
  D2 gv = __enzyme_fwddiff_w2((void *)g, enzyme_width, 2, enzyme_dup, 1.3, 1.0, 0.0, enzyme_dup, 0.4, 0.0, 1.0);
  printf("g %.17g %.17g %.17g %.17g\n", ga, gb, gv.d[0], gv.d[1]);
  /* memcpy, output array, width 2 with dupnoneed output */
  double y[3], dy[2][3], v[2][3] = {{1, 2, 3}, {-1, 0.5, 0.25}};
  __enzyme_fwddiff_v((void *)h, enzyme_width, 2, enzyme_dup, x, v[0], v[1], enzyme_dupnoneed, y, dy[0], dy[1]);
  printf("h %.17g %.17g %.17g %.17g %.17g %.17g\n", dy[0][0], dy[0][1], dy[0][2], dy[1][0], dy[1][1], dy[1][2]);
  return 0;
}
"""


def test_vector_widths_match_separate_calls(tmp_path):
    for opt in ("-O0", "-O2"):
        out = build_and_run(tmp_path, VECTOR, opt)
        assert out.returncode == 0, out.stderr
        v = parse_values(out.stdout)
        one = v["one"]
        for key, n in (("w1", 1), ("w2", 2), ("w4", 4), ("w8", 8)):
            for got, want in zip(v[key], one[:n]):
                assert abs(got - want) <= 1e-12 * max(abs(want), 1), (opt, key, got, want)
        ga, gb, g0, g1 = v["g"]
        a, b = 1.3, 0.4
        import math
        assert abs(ga - (math.cos(b) + 2.5 * a ** 1.5)) < 1e-12
        assert abs(gb - (-a * math.sin(b))) < 1e-12
        assert (g0, g1) == (ga, gb)
        x = [0.3, -0.8, 1.1]
        vv = [[1, 2, 3], [-1, 0.5, 0.25]]
        h = v["h"]
        for k in range(2):
            want = [vv[k][0], vv[k][1] * x[2] + x[1] * vv[k][2], vv[k][2]]
            assert all(abs(p - q) < 1e-12 for p, q in zip(h[3 * k:3 * k + 3], want)), (opt, h)
