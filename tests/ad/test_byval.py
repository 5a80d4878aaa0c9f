"""Structs passed by value in memory (``byval``: on x86-64, more than 16 bytes) to the
function differentiated, which updates its copy through a non-inlined call before
using it.  The generated functions' parameters lacked ``byval``, so the call site
handed them the caller's object itself -- here a constant initialiser in read-only
data -- and the callee's write went there: the derivative was taken at the unscaled
value (reverse and forward wrong at -O1/-O2, forward at -O0; real Enzyme 15 is right).
Now they take ``byval`` like the primal, and the overwrite analysis counts a by-value
parameter as the function's own local memory (its values are kept for the reverse
sweep, not read again from a fresh copy).  The shadow of such an argument, passed by
value at the call site too, is given to forward mode as a private copy: the tangent
the callee updates is not the caller's (at -O2 clang passes a constant initialiser
there; writing it gave d/db = 0).  In reverse mode the shadow is the caller's object,
passed by address (``&v, &dv``, as Enzyme reads the signature) or by value (``v, dv``,
as Enzyme does too: the driver passes it by reference, so that clang does not assume
the call leaves it unchanged): the adjoint accumulates there."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from helpers import build_and_run, enzyme_cc
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
  Vec3 tv{0, 0, 0};     // (dv holds the reverse sweep's adjoints now, as in Enzyme)
  double f = __enzyme_fwddiff((void *)field, enzyme_dup, v, tv, s, 1.0);
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
    out = build_and_run(tmp_path, CXX_PROGRAM, opt, cxx=True)
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
# same wrong numbers).  The parameter is now a local the function copies it into
# (rewrites.copy_byval_params): the copy's adjoint goes back to the caller's shadow.
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


# Derivative functions that take a struct by value (``keep_byval``) were called
# without ``byval`` at the call: LLVM still made the copy, but its dead-store
# elimination took the parameter for the callee's own memory and removed the caller's
# stores into the point passed -- the gradient of an SDF scene evaluated at 8 points
# (round S) was garbage at -O2 (valgrind: uninitialised reads in the reverse sweep;
# real Enzyme 15 right).  The calls now carry the callee's ``byval``.
SDF_PROGRAM = r"""
typedef struct { double x, y, z; } vec3;
typedef struct { vec3 sph_c; double sph_r; vec3 box_c, box_b; double box_round; double tor_R, tor_r; vec3 cap_a, cap_b; double cap_r; } scene;
static vec3 v3(double x, double y, double z) { vec3 v = {x, y, z}; return v; }
static vec3 sub(vec3 a, vec3 b) { return v3(a.x - b.x, a.y - b.y, a.z - b.z); }
static double dot(vec3 a, vec3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
static double length(vec3 a) { return sqrt(dot(a, a)); }
static vec3 vabs(vec3 a) { return v3(fabs(a.x), fabs(a.y), fabs(a.z)); }
static vec3 vmax0(vec3 a) { return v3(fmax(a.x, 0.0), fmax(a.y, 0.0), fmax(a.z, 0.0)); }
static double clamp(double x, double lo, double hi) { return fmin(fmax(x, lo), hi); }
static double mix(double a, double b, double t) { return a * (1 - t) + b * t; }
static double sd_sphere(vec3 p, vec3 c, double r) { return length(sub(p, c)) - r; }
static double sd_round_box(vec3 p, vec3 b, double r) {
  vec3 q = sub(vabs(p), b);
  return length(vmax0(q)) + fmin(fmax(q.x, fmax(q.y, q.z)), 0.0) - r;
}
static double sd_capsule(vec3 p, vec3 a, vec3 b, double r) {
  vec3 pa = sub(p, a), ba = sub(b, a);
  double h = dot(pa, ba) / dot(ba, ba);
  return length(v3(pa.x - ba.x * h, pa.y - ba.y * h, pa.z - ba.z * h)) - r;
}
static double smin(double a, double b, double k) {
  double h = 0.5 + 0.5 * (b - a) / k;
  return mix(b, a, h) - k * h * (1.0 - h);
}
static double map(const scene *s, vec3 p, double k) {
  double d = sd_sphere(p, s->sph_c, s->sph_r);
  d = smin(d, sd_round_box(sub(p, s->box_c), s->box_b, s->box_round), k);
  d = fmin(d, sd_capsule(p, s->cap_a, s->cap_b, s->cap_r));
  return d;
}
double scene_loss(const scene *s, double k, const double *ro) {    /* ro: unused */
  double L = 0;
  for (int i = 0; i < 8; i++) {
    vec3 p = v3(-1.0 + 0.2 * i, 0.3 * sin(1.3 * i), 0.25 * cos(0.7 * i));
    double d = map(s, p, k);
    L += d * d;
  }
  L += map(s, v3(0.05, 0.02, -2.0), k);
  return L;
}
int main(void) {
  scene s = {{0.0, 0.0, 0.4}, 0.5, {0.6, 0.1, 0.3}, {0.3, 0.2, 0.25}, 0.05, 0.5, 0.12,
             {-0.8, -0.3, 0.2}, {-0.4, 0.4, 0.1}, 0.15};
  double ro[3] = {0.05, 0.02, -2.0};
  double k = 0.2;
  scene ds; memset(&ds, 0, sizeof ds);
  double dk = 0;
  dk = __enzyme_autodiff_d((void*)scene_loss, enzyme_dup, &s, &ds, enzyme_out, k, enzyme_const, ro);
  double h = 1e-6;
  check("dk", dk, (scene_loss(&s, k + h, ro) - scene_loss(&s, k - h, ro)) / (2 * h));
  double *p = (double*)&s, *dp = (double*)&ds;
  for (int i = 0; i < (int)(sizeof s / sizeof(double)); i++) {
    double v = p[i];
    p[i] = v + h; double a = scene_loss(&s, k, ro);
    p[i] = v - h; double b = scene_loss(&s, k, ro);
    p[i] = v;
    char nm[32]; sprintf(nm, "ds%d", i); check(nm, dp[i], (a - b) / (2 * h));
  }
  return fails != 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2", "-O3"])
def test_points_passed_by_value_in_a_loop(tmp_path, opt):
    assert run(tmp_path, SDF_PROGRAM, opt).count("ok ") == 21


def test_calls_of_derivatives_carry_byval(tmp_path):
    src = Path(tmp_path) / "t.c"
    src.write_text(PRELUDE + SDF_PROGRAM)
    r = enzyme_cc(["-O2", "-save-temps", str(src), "-o", str(Path(tmp_path) / "t"), "-lm"],
                  tmp_path)
    assert r.returncode == 0, r.stderr
    ir = (Path(tmp_path) / "t.enzyme.ll").read_text()
    calls = [line for line in ir.splitlines() if "call " in line and "@augmented_map(" in line]
    assert calls and all("byval(%struct.vec3)" in line for line in calls), calls
    # the reverse function reads no by-value argument (its values are on the tape) and
    # takes none: a copy at its call would read the augmented call's frame, gone by then
    rev = [line for line in ir.splitlines() if "@diffe_map(" in line]
    assert rev and not any("byval" in line for line in rev), rev


# Round AF (graphics code): structs passed by value (24 bytes: ``byval``) to functions
# (1) chosen from a table of function pointers -- the indirect call to the augmented
# function lacked ``byval`` (a direct call takes it from the callee; an indirect one
# only from itself), so every argument arrived one register off: a gradient of garbage
# at -O0, a smashed stack in a larger program at -O2 (Enzyme 15 right); (2) forwarded
# by value to further calls in a loop -- the reverse function took ``byval`` too, and
# its call copied the struct from a local of the augmented call's frame, returned long
# before (valgrind: reads below the stack pointer; the values were never used).
BY_VALUE_THROUGH_POINTERS = r"""
typedef struct { double x, y, z; } vec3;
static vec3 mk(double x, double y, double z) { vec3 v = {x, y, z}; return v; }
static vec3 sub(vec3 a, vec3 b) { return mk(a.x - b.x, a.y - b.y, a.z - b.z); }
static double dot(vec3 a, vec3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
static double lambert(vec3 n, vec3 l, double k) { return k * fmax(dot(n, l), 0.0); }
static double phong(vec3 n, vec3 l, double k) { double c = dot(n, l); return k * c * c * c; }
static double tint(vec3 n, vec3 l, double k) { return k * sin(n.z) * l.x; }
static double (*const BRDF[3])(vec3, vec3, double) = {lambert, phong, tint};
static double hit(vec3 c, double r, vec3 o, vec3 d, double *t_out) {
    vec3 oc = sub(o, c);
    double b = dot(oc, d);
    *t_out = b * b - dot(oc, oc) + r * r;
    return b;
}
double shade(const vec3 *c, const double *r, const int *kind, int n) {
    vec3 o = mk(0, 0, 4), d = mk(0.1, -0.2, -1);
    double s = 0;
    for (int i = 0; i < n; i++) {
        double t;
        double b = hit(c[i], r[i], o, d, &t);
        s += t + BRDF[kind[i]](c[i], mk(0.3, 0.5, b), r[i]);
    }
    return s;
}
int main(void) {
    vec3 c[3] = {{-0.3, 0.1, 0.5}, {0.5, -0.2, -0.5}, {0.2, 0.7, 0.1}}, dc[3];
    double r[3] = {0.7, 0.9, 0.4}, dr[3] = {0}, h = 1e-6;
    int kind[3] = {0, 1, 2};
    memset(dc, 0, sizeof dc);
    __enzyme_autodiff((void *)shade, enzyme_dup, c, dc, enzyme_dup, r, dr,
                      enzyme_const, kind, enzyme_const, 3);
    /* the 9 coordinates of c, then the 3 radii: reverse against central differences,
       forward along each coordinate of c */
    for (int i = 0; i < 12; i++) {
        double *x = i < 9 ? (double *)c + i : r + (i - 9), v = *x;
        *x = v + h; double a = shade(c, r, kind, 3);
        *x = v - h; double b = shade(c, r, kind, 3);
        *x = v;
        check("rev", i < 9 ? ((double *)dc)[i] : dr[i - 9], (a - b) / (2 * h));
        if (i >= 9) continue;
        vec3 tc[3]; memset(tc, 0, sizeof tc);
        double tr[3] = {0};
        ((double *)tc)[i] = 1;
        check("fwd dc", __enzyme_fwddiff_d((void *)shade, enzyme_dup, c, tc, enzyme_dup, r, tr,
                                           enzyme_const, kind, enzyme_const, 3), (a - b) / (2 * h));
    }
    return fails != 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_structs_by_value_through_function_pointers(tmp_path, opt, valgrind):
    assert run(tmp_path, BY_VALUE_THROUGH_POINTERS, opt, valgrind).count("ok ") == 21


# A struct of constants passed by value to a function that updates its copy with
# active values (``q.v[k] += lam * q.v[k] * q.v[k]``): at -O0 LLVM passes the
# constant initialiser itself (byval makes the copy), which has no shadow, and the
# callee's stores into its own copy were refused ("an active value is stored into
# memory that has no shadow"; round S, a templated solver taking std::array by value;
# real Enzyme 15 builds it).  The function's copy is a local now
# (rewrites.copy_byval_params), with a shadow of its own.
CONSTANT_BY_VALUE = r"""
typedef struct { double v[3]; } arr3;
static double step(arr3 q, double lam) {
    for (int k = 0; k < 3; k++) q.v[k] += lam * q.v[k] * q.v[k];
    return q.v[0] + 2 * q.v[1] + 3 * q.v[2];
}
double score(double lam) {
    arr3 q0 = {{0.2, 0.3, 0.4}};
    return step(q0, lam) * lam;
}
int main(void) {
    double lam = 0.5, s = 0.2 + 0.6 + 1.2, c = 0.04 + 2 * 0.09 + 3 * 0.16;
    double want = s + 2 * lam * c;                  /* (s + lam c) lam */
    check("reverse", __enzyme_autodiff_d((void *)score, enzyme_out, lam), want);
    check("forward", __enzyme_fwddiff_d((void *)score, lam, 1.0), want);
    return fails != 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2"])
def test_constant_struct_passed_by_value_and_updated(tmp_path, opt):
    assert run(tmp_path, CONSTANT_BY_VALUE, opt).count("ok ") == 2


# A struct passed by value that holds a pointer into active data, advanced by the
# callee in its own copy, called twice with the caller's struct and recursively with
# the callee's (round U): the augmented forward sweep advanced the pointer in the
# caller's shadow, so the second call's adjoints went one element on -- half the
# gradient at every level, and at -O0 the adjoint added into the primal input (real
# Enzyme 15 wrong too).  The copy is a local now (rewrites.copy_byval_params): the
# pointer is advanced in the local's shadow.
ADVANCED_POINTER = r"""
typedef struct { const double *c; long n; long pad; } Seq;   /* 24 bytes: in memory */
static double sum(Seq q) {
    if (q.n == 0) return 0;
    double a = q.c[0];
    q.c++; q.n--;
    return a * a + sum(q);
}
double f(const double *c) { Seq q = {c, 2, 0}; return sum(q) + 3 * sum(q); }
int main(void) {
    double c[2] = {3.0, 5.0}, dc[2] = {0, 0};
    __enzyme_autodiff((void *)f, enzyme_dup, c, dc);
    check("d/dc0", dc[0], 8 * 3.0);
    check("d/dc1", dc[1], 8 * 5.0);
    check("c0 kept", c[0], 3.0);
    check("c1 kept", c[1], 5.0);
    double t[2] = {1, 0};
    check("forward d/dc0", __enzyme_fwddiff_d((void *)f, enzyme_dup, c, t), 8 * 3.0);
    return fails != 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2", "-O3"])
def test_struct_by_value_with_a_pointer_advanced_by_the_callee(tmp_path, opt):
    assert run(tmp_path, ADVANCED_POINTER, opt).count("ok ") == 5


# Round S's inverse-kinematics program as its author wrote it: templated fixed-size
# matrices on std::array, a damped-least-squares solver taking the joint angles by
# value (a 24-byte byval struct), lambdas for the kinematics.  By-value parameters are
# now a local the function copies the parameter into (rewrites.copy_byval_params):
# an earlier fix of this stop gave each sweep a private shadow instead, and the
# forward sweep's shadow pointers, kept for the reverse sweep, pointed into its own
# frame -- 7 of 8 derivatives wrong at -O0, silently.
IK_PROGRAM = r"""
// IK by damped least squares, templated fixed-size matrices on std::array, a lambda
// end-effector function handed to a templated numerical-Jacobian-free solver that
// uses an analytic Jacobian; Cholesky solve of (J J^T + l^2 I). Reverse via the C API on a
// wrapper taking std::array by const reference; forward via __enzyme_fwddiff.
#include <stdio.h>
#include <math.h>
#include <string.h>
#include <stdlib.h>
#ifdef __cplusplus
extern "C" {
#endif
extern int enzyme_dup, enzyme_const, enzyme_out, enzyme_dupnoneed;
extern double __enzyme_autodiff(void*, ...);
extern double __enzyme_fwddiff(void*, ...);
#ifdef __cplusplus
}
#endif
static int g_fail = 0;
static void chk(const char* name, double got, double exp) {
  double tol = (getenv("CHKTOL")?atof(getenv("CHKTOL")):1e-5) * fabs(exp) + 1e-7;
  int ok = fabs(got - exp) <= tol && got == got;
  if (!ok) g_fail++;
  printf("%s %s got=%.12g exp=%.12g\n", ok ? "PASS" : "FAIL", name, got, exp);
}
static void primal(const char* name, double v) { printf("PRIMAL %s %.15g\n", name, v); }
static int finish(void) { printf(g_fail ? "RESULT FAIL %d\n" : "RESULT OK\n", g_fail); return 0; }
#ifdef NO_AD
#define AD(...) do{}while(0)
#else
#define AD(...) do{ __VA_ARGS__; }while(0)
#endif
#include <array>
template <int R, int C> struct Mat {
  std::array<double, R * C> a{};
  double &operator()(int i, int j) { return a[i * C + j]; }
  double operator()(int i, int j) const { return a[i * C + j]; }
};
template <int R, int K, int C> Mat<R, C> operator*(const Mat<R, K> &A, const Mat<K, C> &B) {
  Mat<R, C> M;
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) {
      double s = 0;
      for (int k = 0; k < K; k++) s += A(i, k) * B(k, j);
      M(i, j) = s;
    }
  return M;
}
template <int R, int C> Mat<C, R> transpose(const Mat<R, C> &A) {
  Mat<C, R> T;
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) T(j, i) = A(i, j);
  return T;
}
template <int N> std::array<double, N> cholesky_solve(Mat<N, N> A, std::array<double, N> b) {
  for (int j = 0; j < N; j++) {
    double s = A(j, j);
    for (int k = 0; k < j; k++) s -= A(j, k) * A(j, k);
    A(j, j) = std::sqrt(s);
    for (int i = j + 1; i < N; i++) {
      double t = A(i, j);
      for (int k = 0; k < j; k++) t -= A(i, k) * A(j, k);
      A(i, j) = t / A(j, j);
    }
  }
  for (int i = 0; i < N; i++) {
    double s = b[i];
    for (int k = 0; k < i; k++) s -= A(i, k) * b[k];
    b[i] = s / A(i, i);
  }
  for (int i = N - 1; i >= 0; i--) {
    double s = b[i];
    for (int k = i + 1; k < N; k++) s -= A(k, i) * b[k];
    b[i] = s / A(i, i);
  }
  return b;
}
constexpr int NJ = 3;
struct Arm { std::array<double, NJ> len; };
// planar arm: end effector (x, y)
static std::array<double, 2> ee(const Arm &arm, const std::array<double, NJ> &q) {
  double x = 0, y = 0, phi = 0;
  for (int i = 0; i < NJ; i++) { phi += q[i]; x += arm.len[i] * std::cos(phi); y += arm.len[i] * std::sin(phi); }
  return {x, y};
}
static Mat<2, NJ> jac(const Arm &arm, const std::array<double, NJ> &q) {
  Mat<2, NJ> J;
  double phi = 0; std::array<double, NJ> c, s;
  for (int i = 0; i < NJ; i++) { phi += q[i]; c[i] = arm.len[i] * std::cos(phi); s[i] = arm.len[i] * std::sin(phi); }
  for (int j = 0; j < NJ; j++) {
    double jx = 0, jy = 0;
    for (int i = j; i < NJ; i++) { jx -= s[i]; jy += c[i]; }
    J(0, j) = jx; J(1, j) = jy;
  }
  return J;
}
template <class Fk, class Jk>
std::array<double, NJ> dls(Fk &&fk, Jk &&jk, std::array<double, NJ> q, const std::array<double, 2> &target,
                           double lambda, int iters) {
  for (int it = 0; it < iters; it++) {
    auto p = fk(q);
    std::array<double, 2> e = {target[0] - p[0], target[1] - p[1]};
    Mat<2, NJ> J = jk(q);
    Mat<2, 2> A = J * transpose(J);
    A(0, 0) += lambda * lambda; A(1, 1) += lambda * lambda;
    auto y = cholesky_solve<2>(A, e);
    for (int k = 0; k < NJ; k++) q[k] += J(0, k) * y[0] + J(1, k) * y[1];
  }
  return q;
}
double solve_and_score(const Arm &arm, const std::array<double, 2> &target, double lambda) {
  std::array<double, NJ> q0 = {0.2, 0.3, 0.4};
  auto q = dls([&](const std::array<double, NJ> &qq) { return ee(arm, qq); },
               [&](const std::array<double, NJ> &qq) { return jac(arm, qq); }, q0, target, lambda, 10);
  double s = 0;
  for (int i = 0; i < NJ; i++) s += (i + 1) * q[i];
  return s;
}
int main() {
  Arm arm{{1.0, 0.8, 0.5}}, darm{{0, 0, 0}};
  std::array<double, 2> tg = {1.2, 1.1}, dtg = {0, 0};
  double lam = 0.2;
  primal("score", solve_and_score(arm, tg, lam));
  double dlam = 0;
  AD(dlam = __enzyme_autodiff((void*)solve_and_score, enzyme_dup, &arm, &darm, enzyme_dup, &tg, &dtg, enzyme_out, lam));
  double h = 1e-6;
  chk("dlam", dlam, (solve_and_score(arm, tg, lam + h) - solve_and_score(arm, tg, lam - h)) / (2 * h));
  for (int i = 0; i < 2; i++) {
    double s = tg[i];
    tg[i] = s + h; double a = solve_and_score(arm, tg, lam); tg[i] = s - h; double b = solve_and_score(arm, tg, lam); tg[i] = s;
    char nm[32]; sprintf(nm, "dtg%d", i); chk(nm, dtg[i], (a - b) / (2 * h));
  }
  for (int i = 0; i < NJ; i++) {
    double s = arm.len[i];
    arm.len[i] = s + h; double a = solve_and_score(arm, tg, lam); arm.len[i] = s - h; double b = solve_and_score(arm, tg, lam); arm.len[i] = s;
    char nm[32]; sprintf(nm, "dlen%d", i); chk(nm, darm.len[i], (a - b) / (2 * h));
  }
  Arm tarm{{0.1, -0.2, 0.3}};
  std::array<double, 2> ttg = {0.5, -0.5};
  double fw = 0;
  AD(fw = __enzyme_fwddiff((void*)solve_and_score, enzyme_dup, &arm, &tarm, enzyme_dup, &tg, &ttg, lam, 0.25));
  double exp_fw = 0.25 * dlam + 0.5 * dtg[0] - 0.5 * dtg[1];
  for (int i = 0; i < NJ; i++) exp_fw += tarm.len[i] * darm.len[i];
  chk("fwd_dir", fw, exp_fw);
  return finish();
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_ik_solver_taking_std_array_by_value(tmp_path, opt):
    out = build_and_run(tmp_path, IK_PROGRAM, opt, extra=("-std=c++17",), cxx=True)
    assert "RESULT OK" in out.stdout and "FAIL" not in out.stdout, out.stdout


# Round AG: two tables of function pointers taking and returning structs of 24 and 72
# bytes -- both ``void (ptr sret, ptr byval)`` in LLVM's types -- in one function: each
# indirect call took the other table's functions as candidates too, and the call to
# the 72-byte one carried the 24-byte ``byval``, so two thirds of the struct (and of
# its derivatives) were never copied (dp = 1 for 18 at -O0; Enzyme 15 right).
TWO_SIZES = r"""
typedef struct { double a, b, c; } S24;
typedef struct { double v[9]; } S72;
static S24 f24(S24 s) { S24 r = { s.a * s.b, s.c, s.a }; return r; }
static S72 f72(S72 s) { S72 r; for (int i = 0; i < 9; i++) r.v[i] = s.v[i] * s.v[i]; return r; }
static S24 (*T24[1])(S24) = {f24};
static S72 (*T72[1])(S72) = {f72};
static int use24 = 0;
double loss(const double *p) {
    double s = 0;
    if (use24) { S24 a = {p[0], p[0], p[0]}; a = T24[0](a); s += a.a; }
    S72 a;
    for (int i = 0; i < 9; i++) a.v[i] = p[0] + i;
    a = T72[0](a);
    return s + a.v[0] + a.v[8];         /* p^2 + (p+8)^2, and p^2 more with use24 */
}
int main(void) {
    for (use24 = 0; use24 < 2; use24++) {
        double p[1] = {0.5}, g[1] = {0}, t[1] = {1}, want = 2 * 0.5 + 2 * 8.5 + use24 * 2 * 0.5;
        __enzyme_autodiff((void *)loss, enzyme_dup, p, g);
        check("rev", g[0], want);
        check("fwd", __enzyme_fwddiff_d((void *)loss, enzyme_dup, p, t), want);
    }
    return fails != 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_function_pointer_tables_of_two_struct_sizes(tmp_path, opt):
    assert run(tmp_path, TWO_SIZES, opt).count("ok ") == 4


# Round AG: {long double, double} passed and returned by value is copied with memcpy,
# whose adjoint has no rule for x86_fp80 fields yet; the error said the memory mixed
# floats and pointers (there are none) -- it names the kinds now.
LONG_DOUBLE_PAIR = r"""
typedef struct { long double hi; double lo; } ldd;
__attribute__((noinline)) static ldd acc(ldd a, double v) { a.hi += v; a.lo += v * v; return a; }
double loss(const double *p) {
    ldd a = {0.0L, 0.0};
    a = acc(a, p[0]);
    return (double)a.hi + a.lo;
}
int main(void) {
    double p[1] = {0.5}, g[1] = {0};
    __enzyme_autodiff((void *)loss, enzyme_dup, p, g);
    return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_struct_with_a_long_double_copied_names_the_kinds(tmp_path, opt):
    from test_never_silent import build_error
    err = build_error(tmp_path, LONG_DOUBLE_PAIR, opt)
    assert "mixes double and long double" in err and "pointers" not in err, err


# Round BV (darknet's `layer` and a camera struct passed by value): `__enzyme_autodiff(
# loss, enzyme_dup, L, dL)` with the structs by value.  The adjoints of dL's float
# fields went into a private copy and were lost -- 0, silently (Enzyme 15 right); the
# pointer field's shadow (da) was right.  At -O2 clang had also folded the caller's
# read of dL.scale after the call to its value before it (a byval argument is a copy).
# The driver passes such structs by reference now, and the adjoints land in dL, also
# when the unit is compiled with -c and linked afterwards.
SHADOW_BY_VALUE = r"""
typedef struct { int w, h; float scale; float *data; } layer;
typedef struct { double fx, fy, cx, cy; } camera;
float loss(layer l) {
    float s = 0;
    for (int i = 0; i < l.w; i++) s += l.scale * l.data[i] * l.data[i];
    return s;
}
double project(camera k, double x) { return k.fx * x * x + k.cx * k.fy; }
int main(void) {
    float a[3] = {1, 2, 3}, da[3] = {0};
    layer L = {3, 1, 2.0f, a}, dL = {3, 1, 0.0f, da};
    __enzyme_autodiff((void *)loss, enzyme_dup, L, dL);
    check("d/dscale", dL.scale, 14);
    for (int i = 0; i < 3; i++) check("d/da", da[i], 4 * a[i]);
    camera k = {2, 3, 4, 5}, dk = {0, 0, 0, 0};
    __enzyme_autodiff((void *)project, enzyme_dup, k, dk, enzyme_const, 1.5);
    check("d/dfx", dk.fx, 2.25); check("d/dfy", dk.fy, 4);
    check("d/dcx", dk.cx, 3); check("d/dcy", dk.cy, 0);
    return fails != 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2"])
def test_reverse_adjoint_of_a_shadow_passed_by_value(tmp_path, opt):
    assert run(tmp_path, SHADOW_BY_VALUE, opt).count("ok ") == 8


def test_shadow_passed_by_value_in_a_unit_compiled_apart(tmp_path):
    src = Path(tmp_path) / "t.c"
    src.write_text(PRELUDE + SHADOW_BY_VALUE)
    obj, exe = Path(tmp_path) / "t.o", Path(tmp_path) / "t"
    for args in (["-O2", "-c", str(src), "-o", str(obj)], ["-O2", str(obj), "-o", str(exe), "-lm"]):
        r = enzyme_cc(args, tmp_path)
        assert r.returncode == 0, r.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.count("ok ") == 8, out.stdout + out.stderr


# The same in C++, where clang copies the named structs into temporaries first (an
# `agg.tmp` memcpy'd just before the call), inside a try block (an invoke): the adjoint
# reached the temporary.  The call takes the caller's struct itself.
CXX_SHADOW_BY_VALUE = r"""
#include <cstdio>
#include <stdexcept>
extern "C" { int enzyme_dup, enzyme_const; void __enzyme_autodiff(void *, ...); }
struct K { double fx, fy, cx, cy; };
double f(K k, double x) {
  if (x > 100) throw std::runtime_error("too far");
  return k.fx * x * x + k.cx * k.fy;
}
int main() {
  K k{2, 3, 4, 5}, dk{0, 0, 0, 0};
  try { __enzyme_autodiff((void *)f, enzyme_dup, k, dk, enzyme_const, 1.5); }
  catch (std::exception &e) { std::puts(e.what()); }
  std::printf("%.17g %.17g %.17g %.17g\n", dk.fx, dk.fy, dk.cx, dk.cy);
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2"])
def test_cxx_shadow_passed_by_value_through_a_temporary(tmp_path, opt):
    out = build_and_run(tmp_path, CXX_SHADOW_BY_VALUE, opt, cxx=True)
    assert [float(t) for t in out.stdout.split()] == [2.25, 4.0, 3.0, 0.0], out.stdout



# A struct of at most 16 bytes passed by value to the function differentiated goes in
# registers, as one or two values; with every piece constant (an enzyme_const struct of
# a double and an int: the int piece is constant by default) the binding is right and
# builds.  Pieces that would take shadows are refused (test_misuse).
SMALL_STRUCT_CONSTANT = r"""
typedef struct { double scale; int n; } cfg;
double f(cfg c, const double *x) {
    double s = 0;
    for (int i = 0; i < c.n; i++) s += c.scale * x[i] * x[i];
    return s;
}
int main(void) {
    cfg c = { 1.5, 3 };
    double x[3] = { 1, 2, 3 }, dx[3] = { 0 };
    __enzyme_autodiff((void *)f, enzyme_const, c, enzyme_dup, x, dx);
    for (int i = 0; i < 3; i++) check("rev", dx[i], 3.0 * x[i]);
    return fails;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_small_struct_by_value_all_constant(tmp_path, opt):
    run(tmp_path, SMALL_STRUCT_CONSTANT, opt)
