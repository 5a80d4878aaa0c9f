"""Math with two results: ``modf`` (clang 22 emits ``llvm.modf``, {fraction, integral
part}), GNU ``sincos(x, &s, &c)`` (a libm call storing both, or ``llvm.sincos`` under
``-fno-math-errno``/``-ffast-math``) and ``llvm.frexp`` ({mantissa, exponent}, in a
module given as IR).  These were compile errors ("cannot differentiate call to external
function 'llvm.modf.f64'"); now the derivatives of both results follow, in reverse,
forward and vector forward mode, against central differences and each other."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from helpers import enzyme_cc
from test_never_silent import PRELUDE

# reverse mode against central differences, then forward mode and width-2 vector mode
# against the directional derivatives <grad, v> and <grad, w>
MODES = r"""
typedef struct { double d[2]; } D2;
D2 __enzyme_fwddiff_w2(void *, ...);
int enzyme_width;
#define CHECK_MODES(f, x, v, w, N) do {                                                \
    double dx[N] = {0}, dv = 0, dw = 0;                                                 \
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, N);                   \
    for (int k = 0; k < N; k++) {                                                       \
        double s = x[k], h = 1e-6;                                                      \
        x[k] = s + h; double p = f(x, N);                                               \
        x[k] = s - h; double m = f(x, N);                                               \
        x[k] = s;                                                                       \
        char what[32];                                                                  \
        snprintf(what, sizeof what, "reverse d%d", k);                                  \
        check(what, dx[k], (p - m) / (2 * h));                                          \
        dv += dx[k] * v[k];                                                             \
        dw += dx[k] * w[k];                                                             \
    }                                                                                   \
    check("forward", __enzyme_fwddiff_d((void *)f, enzyme_dup, x, v, enzyme_const, N), dv); \
    D2 both = __enzyme_fwddiff_w2((void *)f, enzyme_width, 2, enzyme_dup, x, v, w,       \
                                  enzyme_const, N);                                     \
    check("width 2 lane 0", both.d[0], dv);                                             \
    check("width 2 lane 1", both.d[1], dw);                                             \
} while (0)
"""

PROGRAM = MODES + r"""
void sincos(double, double *, double *);
void sincosf(float, float *, float *);

/* a periodic table lookup (fraction and cell from modf) and a rotation (sincos): both
 * results of each used */
double f(const double *x, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) {
        double cell, fr = modf(x[i] * 3.7, &cell);
        double sn, cs;
        sincos(x[i] + 0.25 * fr, &sn, &cs);
        s += fr * fr * (1.0 + cell) + sn * x[(i + 1) % n] - cs * cs * fr;
    }
    return s;
}
/* float sincos: sin x cos x = sin(2x) / 2, whose derivative is cos 2x */
double fl(const double *x, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) {
        float sf, cf;
        sincosf((float)x[i], &sf, &cf);
        s += (double)(sf * cf);
    }
    return s;
}

#define N 4
int main(void) {
    double x[N] = {0.3, 1.7, -0.4, 2.2};
    double v[N] = {0.5, -1.0, 0.25, 2.0}, w[N] = {-0.3, 0.1, 1.5, 0.7};
    CHECK_MODES(f, x, v, w, N);
    double dl[N] = {0};
    __enzyme_autodiff((void *)fl, enzyme_dup, x, dl, enzyme_const, N);
    double tl = __enzyme_fwddiff_d((void *)fl, enzyme_dup, x, v, enzyme_const, N), want = 0;
    for (int k = 0; k < N; k++) {
        double c2 = cos(2.0 * (float)x[k]);
        int ok = fabs(dl[k] - c2) <= 1e-5;      /* float arithmetic */
        printf("%s float d%d got %.8g want %.8g\n", ok ? "ok" : "FAIL", k, dl[k], c2);
        fails += !ok;
        want += c2 * v[k];
    }
    int ok = fabs(tl - want) <= 1e-5 * (1 + fabs(want));
    printf("%s float forward got %.8g want %.8g\n", ok ? "ok" : "FAIL", tl, want);
    fails += !ok;
    return fails;
}
"""


def _run(tmp_path, flags):
    src = Path(tmp_path) / "t.c"
    src.write_text(PRELUDE + PROGRAM)
    exe = Path(tmp_path) / "t"
    r = enzyme_cc(flags + [str(src), "-o", str(exe), "-lm"], tmp_path)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "FAIL" not in out.stdout, out.stdout + out.stderr
    return out.stdout


@pytest.mark.parametrize("flags", [["-O0"], ["-O2"], ["-O2", "-fno-math-errno"]],
                         ids=["O0", "O2", "O2-intrinsics"])
def test_modf_and_sincos_in_every_mode(tmp_path, flags):
    out = _run(tmp_path, flags)
    assert out.count("ok reverse") == 4 and "ok forward" in out and \
        out.count("ok width 2") == 2 and out.count("ok float") == 5, out


# llvm.frexp as clang does not emit it for C's frexp (it keeps the libm call): a module
# written in IR, differentiated by enzyme-cc beside a C main
FREXP_IR = r"""
declare { double, i32 } @llvm.frexp.f64.i32(double)
declare double @llvm.sin.f64(double)

define double @g(double %x) {
  %r = call { double, i32 } @llvm.frexp.f64.i32(double %x)
  %m = extractvalue { double, i32 } %r, 0
  %e = extractvalue { double, i32 } %r, 1
  %ef = sitofp i32 %e to double
  %s = call double @llvm.sin.f64(double %x)
  %a = fmul double %m, %m
  %b = fmul double %a, %ef
  %c = fadd double %b, %s
  ret double %c
}
"""

FREXP_MAIN = r"""
double g(double);
int main(void) {
    double xs[4] = {0.3, 1.7, -5.5, 12.0};
    for (int i = 0; i < 4; i++) {
        double x = xs[i], h = 1e-7;
        double d = __enzyme_autodiff_d((void *)g, enzyme_out, x);
        double t = __enzyme_fwddiff_d((void *)g, enzyme_dup, x, 1.0);
        double fd = (g(x + h) - g(x - h)) / (2 * h);
        check("reverse", d, fd);
        check("forward", t, fd);
    }
    return fails;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_frexp_intrinsic(tmp_path, opt):
    ll = Path(tmp_path) / "g.ll"
    ll.write_text(FREXP_IR)
    src = Path(tmp_path) / "m.c"
    src.write_text(PRELUDE + FREXP_MAIN)
    exe = Path(tmp_path) / "t"
    r = enzyme_cc([opt, str(src), str(ll), "-o", str(exe), "-lm"], tmp_path)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "FAIL" not in out.stdout, out.stdout + out.stderr
    assert out.stdout.count("ok reverse") == 4 and out.stdout.count("ok forward") == 4
