"""Misuse of the Enzyme API is a compile error naming the call site (or the global)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers import enzyme_cc

HEAD = """#include <math.h>
int enzyme_dup, enzyme_const, enzyme_width, enzyme_allocated, enzyme_tape, enzyme_bogus, enzyme_dupv;
typedef struct { double d[2]; } D2;
double __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);
D2 __enzyme_fwddiff2(void *, ...);
void *__enzyme_augmentfwd(void *, ...);
double sq(double x) { return x * x; }
double sum(double *x) { double s = 0; for (int i = 0; i < 3; i++) s += x[i] * x[i]; return s; }
double two(double *x) { return x[0] * x[1]; }
double rsum(double *x, int n) { return n ? x[0] * x[0] + rsum(x + 1, n - 1) : 0; }
typedef struct { double re, im; } cpx;
double mag(cpx z, double s) { return s * (z.re * z.re + z.im * z.im); }
typedef struct { int n; double *w; } vec;
double dot(vec v, const double *x) { double s = 0; for (int i = 0; i < v.n; i++) s += v.w[i] * x[i]; return s; }
"""

CASES = {
    "unknown_marker": ("int main(void) { return (int)__enzyme_autodiff((void *)sq, enzyme_bogus, 1.0); }",
                       r"illegal enzyme metadata classification 'enzyme_bogus'"),
    "width_mismatch": ("int main(void) { double x[2] = {1, 2}, a[2], b[2];\n"
                       "  return (int)__enzyme_fwddiff((void *)two, enzyme_width, 2, enzyme_dup, x, a, b); }",
                       r"width mismatch"),
    "width_missing_lane": ("int main(void) { double x[2] = {1, 2}, a[2];\n"
                           "  D2 d = __enzyme_fwddiff2((void *)two, enzyme_width, 2, enzyme_dup, x, a); return (int)d.d[0]; }",
                           r"missing argument shadow.*width mismatch|missing argument shadow"),
    "rule_length": ("void *__enzyme_register_gradient_sq[2] = {(void *)sq, (void *)sq};\n"
                    "int main(void) { return (int)__enzyme_autodiff((void *)sq, 1.0); }",
                    r"__enzyme_register_gradient_sq' must be an array of 3 functions"),
    "two_rules": ("double sq_aug(double x) { return x; }\n"
                  "void *__enzyme_register_gradient_a[3] = {(void *)sq, (void *)sq_aug, (void *)sq};\n"
                  "void *__enzyme_register_gradient_b[3] = {(void *)sq, (void *)sq, (void *)sq_aug};\n"
                  "int main(void) { return (int)__enzyme_autodiff((void *)sq, 1.0); }",
                  r"two gradient rules for 'sq': '__enzyme_register_gradient_a' and "
                  r"'__enzyme_register_gradient_b'"),
    "dupv_old_order": ("int main(void) { double x[2] = {1, 2}, a[2][2];\n"
                       "  D2 d = __enzyme_fwddiff2((void *)two, enzyme_width, 2, enzyme_dupv, x, a, 16L);\n"
                       "  return (int)d.d[0]; }",
                       r"enzyme_dupv must be followed by the integer byte stride \(x, dxs, "
                       r"byte_stride is not Enzyme's order\)"),
    "tape_too_small": ("int main(void) { char buf[4]; double x[2] = {1, 2}, d[2];\n"
                       "  __enzyme_augmentfwd((void *)two, enzyme_allocated, 4, enzyme_tape, buf, enzyme_dup, x, d);\n"
                       "  return 0; }",
                       r"tape too small: enzyme_allocated 4 bytes"),
    "tape_not_static": ("int main(void) { char buf[512]; double x[3] = {1, 2, 3}, d[3];\n"
                        "  __enzyme_augmentfwd((void *)rsum, enzyme_allocated, 512, enzyme_tape, buf, enzyme_dup, x, d, 3);\n"
                        "  return 0; }",
                        r"no size known at compile time"),
    # round BY: a struct of at most 16 bytes by value goes as two values (x86-64); the
    # markers and shadows paired with those (z.im taken for the tangent of z.re: a
    # wrong tangent, silently, as in Enzyme 15)
    "struct_in_registers_forward": (
        "int main(void) { cpx z = {1, 2}, dz = {1, 0};\n"
        "  return (int)__enzyme_fwddiff((void *)mag, z, dz, 2.0, 0.0); }",
        r"parameters 1 to 2 are the pieces of a struct passed by value in registers"),
    "struct_in_registers_const": (
        "int main(void) { double w[2] = {1, 2}, x[2] = {3, 4}, dx[2]; vec v = {2, w};\n"
        "  return (int)__enzyme_autodiff((void *)dot, enzyme_const, v, enzyme_dup, x, dx); }",
        r"parameters 1 to 2 are the pieces of a struct passed by value in registers"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_misuse_is_a_compile_error_at_the_call_site(tmp_path, name):
    body, pattern = CASES[name]
    src = Path(tmp_path) / "bad.c"
    src.write_text(HEAD + body + "\n")
    r = enzyme_cc(["-g", "-O0", str(src), "-o", str(Path(tmp_path) / "bad"), "-lm"], tmp_path)
    assert r.returncode != 0
    assert re.search(pattern, r.stderr), r.stderr
    assert "error:" in r.stderr and "Traceback" not in r.stderr
    if name not in ("rule_length", "two_rules"):   # the rule array is named instead of a call site
        assert re.search(r"bad\.c:1[5-7]", r.stderr), r.stderr
    else:
        assert "__enzyme_register_gradient_" in r.stderr


ENTRY_THROUGH_LOCAL = r"""#include <stdio.h>
extern double __enzyme_autodiff(void *, ...);
typedef struct { double a, b; } pair;
double f(double x, double y) { return x * x * y; }
int main(void) {
  pair (*fn)(void *, ...) = (pair (*)(void *, ...))__enzyme_autodiff;
  pair g = fn((void *)f, 1.5, 2.0);
  printf("%.17g %.17g\n", g.a, g.b);
  return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2"])
def test_entry_point_called_through_a_local_pointer(tmp_path, opt):
    """``fn = (T)__enzyme_autodiff; fn(f, x, y)``: at -O0 the entry point is read back
    from a local (an indirect call, which left an undefined symbol at link time); the
    local is promoted and the call lowered like a direct one."""
    from helpers import build_and_run
    out = build_and_run(tmp_path, ENTRY_THROUGH_LOCAL, opt=opt)
    assert out.returncode == 0, out.stderr
    a, b = (float(v) for v in out.stdout.split())
    assert a == pytest.approx(2 * 1.5 * 2.0, rel=1e-15) and b == pytest.approx(1.5 * 1.5, rel=1e-15)


def test_entry_point_kept_in_a_global_is_a_compile_error(tmp_path):
    src = Path(tmp_path) / "bad.c"
    src.write_text("extern double __enzyme_autodiff(void *, ...);\n"
                   "typedef double (*ad_t)(void *, ...);\n"
                   "ad_t volatile AD = __enzyme_autodiff;\n"
                   "double f(double x) { return x * x; }\n"
                   "int main(void) { return (int)AD((void *)f, 3.0); }\n")
    for opt in ("-O0", "-O2"):
        out = Path(tmp_path) / "bad"
        r = enzyme_cc([opt, str(src), "-o", str(out)], tmp_path)
        assert r.returncode == 1, r.stderr
        assert re.search(r"initializer of 'AD'.*__enzyme_autodiff is used as a value", r.stderr)
        assert "call __enzyme_autodiff(...) directly" in r.stderr
        assert "undefined reference" not in r.stderr and "Traceback" not in r.stderr
        assert not out.exists()
