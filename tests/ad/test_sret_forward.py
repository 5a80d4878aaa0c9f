"""Forward mode of a function that returns a struct in memory (``sret``: on x86-64, more
than 16 bytes), the entry point declared to return the same struct: the tangent struct
is the shadow of the function's sret parameter, written into the call's result, as in
Enzyme.  Before: "too few arguments for 'vscale': parameter 3 of 3 is missing" (the
call's own sret was not matched with the function's); real Enzyme 15 builds it."""

from __future__ import annotations

import pytest

from test_never_silent import run

PROGRAM = r"""
typedef struct { double x, y, z, w; } vec4;
vec4 vscale(vec4 v, double s) {
    vec4 r = {v.x * s, v.y * s * s, sin(v.z), v.w * v.x};
    return r;
}
typedef struct { double a[5]; } out5;
__attribute__((noinline)) static void fill(out5 *o, const double *p, int n) {
    for (int i = 0; i < 5; i++) o->a[i] = p[i % n] * p[(i + 1) % n];
}
out5 pairs(const double *p, int n) { out5 o; fill(&o, p, n); return o; }
extern vec4 __enzyme_fwddiff_v(void *, ...);
extern out5 __enzyme_fwddiff_o(void *, ...);
int main(void) {
    vec4 v = {0.3, -0.4, 1.2, 2.0}, tv = {1, 1, 0.5, 0.5};
    vec4 t = __enzyme_fwddiff_v((void *)vscale, v, tv, 1.5, 0.25);
    check("x", t.x, 1.0 * 1.5 + 0.3 * 0.25);
    check("y", t.y, 1.0 * 2.25 + -0.4 * 2 * 1.5 * 0.25);
    check("z", t.z, cos(1.2) * 0.5);
    check("w", t.w, 0.5 * 0.3 + 2.0 * 1.0);
    t = __enzyme_fwddiff_v((void *)vscale, enzyme_dup, &v, &tv, enzyme_const, 1.5);
    check("const s, y", t.y, 2.25);
    double p[3] = {0.5, -1.5, 2.0}, dp[3] = {0, 1, 0};
    out5 o = __enzyme_fwddiff_o((void *)pairs, enzyme_dup, p, dp, enzyme_const, 3);
    check("a0 = p0 p1", o.a[0], 0.5);
    check("a1 = p1 p2", o.a[1], 2.0);
    check("a2 = p2 p0", o.a[2], 0.0);
    check("a4 = p1 p2", o.a[4], 2.0);
    return fails != 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2"])
def test_forward_mode_of_a_struct_returned_in_memory(tmp_path, opt):
    assert run(tmp_path, PROGRAM, opt).count("ok ") == 9
