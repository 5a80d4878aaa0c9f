"""Structs passed by value in memory (``byval``: on x86-64, more than 16 bytes) to the
function differentiated, which updates its copy through a non-inlined call before
using it.  The generated functions' parameters lacked ``byval``, so the call site
handed them the caller's object itself -- here a constant initialiser in read-only
data -- and the callee's write went there: the derivative was taken at the unscaled
value (reverse and forward wrong at -O1/-O2, forward at -O0; real Enzyme 15 is right).
Now they take ``byval`` like the primal, and the overwrite analysis counts a by-value
parameter as the function's own local memory (its values are kept for the reverse
sweep, not read again from a fresh copy).  The shadow of such an argument, passed by
value at the call site too, is given to the derivative as a private copy: the tangent
the callee updates is not the caller's (at -O2 clang passes a constant initialiser
there; writing it gave d/db = 0).  Passed by address (``&v, &dv``, as Enzyme reads the
signature), the reverse mode's shadow is the caller's: the adjoint accumulates there."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from helpers import enzyme_cc
from test_never_silent import PRELUDE, run

C_PROGRAM = PRELUDE + r"""
typedef struct { double a, b, c, d; } Params;
__attribute__((noinline)) static void rescale(Params *p, double s) { p->a *= s; p->c += s * p->b; }
double g(Params p, double x) {
    rescale(&p, x);
    return sin(p.a) + p.c * p.d;
}
/* d/dx, and the tangents along p.a, p.b, p.d */
int main(void) {
    Params p = {0.7, 1.3, -0.4, 2.0}, dp = {0, 0, 0, 0};
    double x = 0.9, ca = cos(p.a * x);
    double want_x = ca * p.a + p.b * p.d;
    check("reverse d/dx", __enzyme_autodiff_d((void *)g, enzyme_dup, p, dp, x), want_x);
    Params t = {1, 0, 0, 0};
    Params z = {0, 0, 0, 0};
    check("forward d/dx", __enzyme_fwddiff_d((void *)g, enzyme_dup, p, z, x, 1.0), want_x);
    check("forward d/da", __enzyme_fwddiff_d((void *)g, enzyme_dup, p, t, enzyme_const, x), ca * x);
    t = z; t.b = 1;
    check("forward d/db", __enzyme_fwddiff_d((void *)g, enzyme_dup, p, t, enzyme_const, x), x * p.d);
    t = z; t.d = 1;
    check("forward d/dd", __enzyme_fwddiff_d((void *)g, enzyme_dup, p, t, enzyme_const, x),
          p.c + x * p.b);
    return fails != 0;
}
"""

CXX_PROGRAM = r"""
#include <cmath>
#include <cstdio>
extern "C" { int enzyme_dup, enzyme_const, enzyme_out; double __enzyme_autodiff(void *, ...);
             double __enzyme_fwddiff(void *, ...); }
struct Vec3 {
  double x, y, z;
  __attribute__((noinline)) void scale(double s) { x *= s; y *= s; z *= s; }
};
double field(Vec3 v, double s) {
  v.scale(s);
  return std::sin(v.x) + v.y * v.z;     // v = s v0: d/ds = cos(s x0) x0 + 2 s y0 z0
}
int main() {
  Vec3 v{0.7, 1.3, -0.4}, dv{0, 0, 0};
  double s = 0.9, want = std::cos(s * 0.7) * 0.7 + 2 * s * 1.3 * -0.4;
  double r = __enzyme_autodiff((void *)field, enzyme_dup, v, dv, enzyme_out, s);
  double f = __enzyme_fwddiff((void *)field, enzyme_dup, v, dv, s, 1.0);
  std::printf("%.17g %.17g %.17g\n", r, f, want);
  return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2"])
def test_struct_by_value_updated_by_a_call(tmp_path, opt):
    src = Path(tmp_path) / "b.c"
    src.write_text(C_PROGRAM)
    exe = Path(tmp_path) / "b"
    r = enzyme_cc([opt, str(src), "-o", str(exe), "-lm"], tmp_path)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "FAIL" not in out.stdout, out.stdout + out.stderr
    assert out.stdout.count("ok ") == 5, out.stdout


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_cxx_value_object_scaled_by_a_member(tmp_path, opt):
    src = Path(tmp_path) / "v.cpp"
    src.write_text(CXX_PROGRAM)
    exe = Path(tmp_path) / "v"
    r = enzyme_cc([opt, str(src), "-o", str(exe)], tmp_path, cxx=True)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    rev, fwd, want = (float(t) for t in out.stdout.split())
    assert rev == pytest.approx(want, rel=1e-13) and fwd == pytest.approx(want, rel=1e-13)


# Reverse mode with the struct's address and its shadow's address, as Enzyme reads the
# IR signature (``ptr byval``): the adjoint accumulates into the caller's dv.  A
# private copy of the shadow (right for a shadow passed by value, which is already a
# copy) threw the gradient away: dv stayed 0.
ADDRESS_PROGRAM = r"""
typedef struct { double x, y, z, w; } vec4;
__attribute__((noinline)) static void shift(vec4 *v, double s) { v->z += s * v->x; }
double v4norm(vec4 v) { shift(&v, 0.5); return sqrt(v.x * v.x + v.y * v.y + v.z * v.z) * v.w; }
int main(void) {
    vec4 v = {0.3, -0.4, 1.2, 2.0}, dv = {0, 0, 0, 0};
    __enzyme_autodiff((void *)v4norm, enzyme_dup, &v, &dv);
    double z = 1.2 + 0.5 * 0.3, r = sqrt(0.09 + 0.16 + z * z);
    check("d/dx", dv.x, (0.3 + 0.5 * z) / r * 2.0);
    check("d/dy", dv.y, -0.4 / r * 2.0);
    check("d/dz", dv.z, z / r * 2.0);
    check("d/dw", dv.w, r);
    vec4 dv2 = {1, 1, 1, 1};
    __enzyme_autodiff((void *)v4norm, &v, &dv2);     /* unmarked: duplicated, accumulates */
    check("accumulated d/dw", dv2.w, 1.0 + r);
    vec4 t = {0, 0, 0, 1}, t0 = t;
    check("forward d/dw", __enzyme_fwddiff_d((void *)v4norm, enzyme_dup, &v, &t), r);
    check("tangent kept", t.w + t.x + t.z, t0.w);
    return fails != 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_reverse_adjoint_reaches_the_callers_shadow(tmp_path, opt):
    assert run(tmp_path, ADDRESS_PROGRAM, opt).count("ok ") == 7



# A struct parameter reassigned (``a = qnorm(a)``) in a function the derivative calls
# twice: the callee's derivative worked on the caller's shadow as if it were its own
# copy's, so the reverse sweep moved (and zeroed) adjoints the caller had gathered from
# the other call, and forward mode left the first call's tangent in the caller's shadow
# for the second: all four gradients wrong at -O0 (round S; real Enzyme 15 prints the
# same wrong numbers).  The derivative now keeps a private shadow of the copy: the
# adjoints it gathers are added to the caller's at its end.
TWICE_PROGRAM = r"""
typedef struct { double w, x, y, z; } quat;
static quat qnorm(quat q) {
    double n = sqrt(q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z);
    quat r = {q.w / n, q.x / n, q.y / n, q.z / n};
    return r;
}
static double f(quat a, double t) {
    a = qnorm(a);
    return sin(t * a.w) + a.x * a.y;
}
double loss(const quat *k) {
    double E = 0;
    for (int s = 0; s < 2; s++) E += f(k[0], 1.0 + s) * (s + 1);
    return E + k[0].z * f(k[0], 0.5);
}
int main(void) {
    quat k[1] = {{1, 0.1, 0.2, 0.3}}, dk[1] = {{0, 0, 0, 0}};
    __enzyme_autodiff((void *)loss, enzyme_dup, k, dk);
    for (int i = 0; i < 4; i++) {
        double *p = &k[0].w, s = p[i], h = 1e-6;
        p[i] = s + h; double a = loss(k);
        p[i] = s - h; double b = loss(k);
        p[i] = s;
        quat t[1] = {{0, 0, 0, 0}};
        (&t[0].w)[i] = 1;
        char what[32];
        sprintf(what, "reverse %d", i);
        check(what, (&dk[0].w)[i], (a - b) / (2 * h));
        sprintf(what, "forward %d", i);
        check(what, __enzyme_fwddiff_d((void *)loss, enzyme_dup, k, t), (a - b) / (2 * h));
    }
    return fails != 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2"])
def test_struct_parameter_reassigned_in_a_function_called_twice(tmp_path, opt):
    assert run(tmp_path, TWICE_PROGRAM, opt).count("ok ") == 8
