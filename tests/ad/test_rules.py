"""Table-driven: every libm rule and every binary-op rule against analytic
derivatives at several points, in double and float, through enzyme-cc."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import pytest

from enzyme_py.ad.rules import LIBM, libm_rule
from helpers import build_and_run, enzyme_cc, parse_values

def _libm_slope(name, *fixed):
    """d/dx of libm's ``name(*fixed, x)`` by a fourth-order central difference of the C
    library's own values (the Bessel functions, which Python's math lacks)."""
    import ctypes
    import ctypes.util
    fn = getattr(ctypes.CDLL(ctypes.util.find_library("m")), name)
    fn.restype = ctypes.c_double
    fn.argtypes = [ctypes.c_int] * len(fixed) + [ctypes.c_double]

    def slope(x):
        h = 1e-3
        return (8 * (fn(*fixed, x + h) - fn(*fixed, x - h))
                - (fn(*fixed, x + 2 * h) - fn(*fixed, x - 2 * h))) / (12 * h)
    return slope


# analytic derivatives (per argument) of the libm table entries
PI = math.pi
UNARY_CASES = {
    "sin": (lambda x: math.cos(x), [0.3, 1.1, -2.0]),
    "cos": (lambda x: -math.sin(x), [0.3, 1.1, -2.0]),
    "tan": (lambda x: 1 / math.cos(x) ** 2, [0.3, 1.1, -0.4]),
    "asin": (lambda x: 1 / math.sqrt(1 - x * x), [0.3, -0.5]),
    "acos": (lambda x: -1 / math.sqrt(1 - x * x), [0.3, -0.5]),
    "atan": (lambda x: 1 / (1 + x * x), [0.3, 2.0]),
    "sinh": (math.cosh, [0.3, -1.2]),
    "cosh": (math.sinh, [0.3, -1.2]),
    "tanh": (lambda x: 1 - math.tanh(x) ** 2, [0.3, -1.2]),
    "exp": (math.exp, [0.3, -1.2]),
    "exp2": (lambda x: 2 ** x * math.log(2), [0.3, 2.5]),
    "expm1": (math.exp, [0.3, -1.2]),
    "log": (lambda x: 1 / x, [0.3, 2.5]),
    "log2": (lambda x: 1 / (x * math.log(2)), [0.3, 2.5]),
    "log10": (lambda x: 1 / (x * math.log(10)), [0.3, 2.5]),
    "log1p": (lambda x: 1 / (1 + x), [0.3, 2.5]),
    "sqrt": (lambda x: 0.5 / math.sqrt(x), [0.3, 2.5]),
    "cbrt": (lambda x: 1 / (3 * abs(x) ** (2 / 3)), [0.3, 2.5]),
    "fabs": (lambda x: math.copysign(1, x), [0.3, -2.5]),
    "erf": (lambda x: 2 / math.sqrt(PI) * math.exp(-x * x), [0.3, -1.1]),
    "erfc": (lambda x: -2 / math.sqrt(PI) * math.exp(-x * x), [0.3, -1.1]),
    "tgamma": (lambda x: math.gamma(x) * _digamma(x), [0.7, 2.5, 4.2]),
    "lgamma": (lambda x: _digamma(x), [0.7, 2.5, 9.0]),
    "floor": (lambda x: 0.0, [0.3, 2.5]),
    "ceil": (lambda x: 0.0, [0.3, 2.5]),
    "round": (lambda x: 0.0, [0.3, 2.7]),
    "trunc": (lambda x: 0.0, [0.3, 2.7]),
    "asinh": (lambda x: 1 / math.sqrt(x * x + 1), [0.3, -2.0]),
    "acosh": (lambda x: 1 / math.sqrt(x * x - 1), [1.3, 3.0]),
    "atanh": (lambda x: 1 / (1 - x * x), [0.3, -0.6]),
    "logb": (lambda x: 0.0, [0.3, 2.5, 5.0]),
    "j0": (_libm_slope("j0"), [0.3, 2.5]),
    "j1": (_libm_slope("j1"), [0.0, 1.7]),       # 1/2 at 0, where J0 - J1 / x is 0/0
    "y0": (_libm_slope("y0"), [0.8, 3.1]),
    "y1": (_libm_slope("y1"), [0.8, 3.1]),
}
BINARY_CASES = {
    "pow": ((lambda a, b: b * a ** (b - 1), lambda a, b: a ** b * math.log(a)),
            [(1.3, 2.5), (0.7, -1.5)]),
    "atan2": ((lambda a, b: b / (a * a + b * b), lambda a, b: -a / (a * a + b * b)),
              [(0.3, 1.2), (-1.0, 0.5)]),
    "hypot": ((lambda a, b: a / math.hypot(a, b), lambda a, b: b / math.hypot(a, b)),
              [(0.3, 1.2), (-1.0, 0.5)]),
    "fmax": ((lambda a, b: float(a > b), lambda a, b: float(b > a)), [(0.3, 1.2), (2.0, 0.5)]),
    "fmin": ((lambda a, b: float(a < b), lambda a, b: float(b < a)), [(0.3, 1.2), (2.0, 0.5)]),
    "fmod": ((lambda a, b: 1.0, lambda a, b: -math.trunc(a / b)), [(5.3, 1.2), (7.0, 2.5)]),
    "copysign": ((lambda a, b: math.copysign(1, a) * math.copysign(1, b), lambda a, b: 0.0),
                 [(0.3, -1.2), (-2.0, -0.5)]),
    # a - n b, n the integer nearest a / b: 5.3 / 1.2 = 4.42, 7 / 2.5 = 2.8
    "remainder": ((lambda a, b: 1.0, lambda a, b: -float(round(a / b))),
                  [(5.3, 1.2), (7.0, 2.5)]),
    "fdim": ((lambda a, b: float(a > b), lambda a, b: -float(a > b)),
             [(1.3, 0.4), (0.2, 0.9)]),
    # a moved by one unit in the last place towards b
    "nextafter": ((lambda a, b: 1.0, lambda a, b: 0.0), [(0.3, 1.2), (2.0, -0.5)]),
}
OPS = {"fadd": "+", "fsub": "-", "fmul": "*", "fdiv": "/"}
OP_CASES = {
    "fadd": (lambda a, b: 1.0, lambda a, b: 1.0),
    "fsub": (lambda a, b: 1.0, lambda a, b: -1.0),
    "fmul": (lambda a, b: b, lambda a, b: a),
    "fdiv": (lambda a, b: 1 / b, lambda a, b: -a / (b * b)),
}


def _digamma(x):
    """d/dx lgamma(x) by a fourth-order central difference of math.lgamma (independent
    of the series the runtime uses): within about 3e-11 for x >= 0.5."""
    h = 1e-3
    f = math.lgamma
    return (8 * (f(x + h) - f(x - h)) - (f(x + 2 * h) - f(x - 2 * h))) / (12 * h)


# entries with an integer or pointer argument: test_int_and_pointer_arguments
MIXED = {"ldexp", "scalbn", "frexp", "jn", "yn", "lgamma_r", "remquo", "nexttoward"}


def test_every_libm_entry_has_a_case():
    # (the x86 intrinsics' entries have no C function to call: test_simd.py)
    x86 = {b for b in LIBM if b.startswith("x86_")}
    assert set(LIBM) - {"powi", "fma", "roundeven", "rint", "nearbyint", "exp10"} - MIXED \
        - x86 <= set(UNARY_CASES) | set(BINARY_CASES)


MIXED_PROGRAM = r"""
#include <math.h>
#include <stdio.h>
T __enzyme_autodiff(void *, T);
T __enzyme_fwddiff(void *, T, T);
T f_ldexp(T x) { return ldexp##S(x * x, 3); }
T f_scalbn(T x) { return scalbn##S(x, -2) * x; }
T f_frexp(T x) { int e; T m = frexp##S(x * 3, &e); return m * m + e; }
T f_jn(T x) { return jn##S(3, x); }
T f_yn(T x) { return yn##S(2, x); }
T lgamma##S_r(T, int *);
T f_lgamma_r(T x) { int s; T v = lgamma##S_r(x, &s); return v * s; }
T f_remquo(T x) { int q; T r = remquo##S(x * 3, 1.25, &q); return r * x + q; }
T f_nexttoward(T x) { return nexttoward##S(x * x, 10.0L) * x; }
#define P(fn, x) printf(#fn " %.17g %.17g\n", (double)__enzyme_autodiff((void *)fn, x), \
                        (double)__enzyme_fwddiff((void *)fn, x, 1))
int main(void) {
    P(f_ldexp, 1.3); P(f_scalbn, -0.7); P(f_frexp, 1.9); P(f_jn, 1.3); P(f_yn, 2.2);
    P(f_lgamma_r, -0.5); P(f_remquo, 1.9); P(f_nexttoward, 1.3);
    return 0;
}
"""


@pytest.mark.parametrize("ty,opt", [("double", "-O0"), ("double", "-O2"), ("float", "-O2")])
def test_int_and_pointer_arguments(tmp_path, ty, opt):
    src = MIXED_PROGRAM.replace("T ", ty + " ").replace("(T)", f"({ty})")
    src = f"#define T {ty}\n#define S {'f' if ty == 'float' else ''}\n" + src
    src = src.replace("##S", "" if ty == "double" else "f")
    out = build_and_run(tmp_path, src, opt)
    assert out.returncode == 0, out.stderr
    vals = parse_values(out.stdout)
    m, e = math.frexp(3 * 1.9)
    want = {"f_ldexp": 2 * 1.3 * 8, "f_scalbn": 2 * -0.7 / 4,
            "f_frexp": 2 * m * 3 * 2.0 ** -e,
            "f_jn": _libm_slope("jn", 3)(1.3), "f_yn": _libm_slope("yn", 2)(2.2),
            # gamma(-0.5) < 0: lgamma_r's sign is -1, the slope -digamma(-0.5)
            "f_lgamma_r": -_digamma(-0.5),
            # r = 3x - n 1.25 (n = 5 nearest 5.7 / 1.25): d/dx (r x + q) = 3x + r
            "f_remquo": 3 * 1.9 + (3 * 1.9 - 5 * 1.25),
            "f_nexttoward": 3 * 1.3 * 1.3}
    for name, w in want.items():
        # (the Bessel slopes are finite differences of libm: good to about 1e-11)
        rtol = 1e-5 if ty == "float" else 1e-9 if name in ("f_jn", "f_yn", "f_lgamma_r") \
            else 1e-12
        for got in vals[name]:     # reverse, then forward
            assert abs(got - w) <= rtol * max(abs(w), 1), (name, got, w)


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_llvm_modf_has_a_rule(tmp_path, opt):
    # LLVM turns modf into llvm.modf (a {fraction, integer part} result; rules.STRUCT_MATH,
    # more in test_two_result_math.py): d/dx [frac(x^2) x + int(x^2)] = 2 x^2 + frac(x^2)
    src = Path(tmp_path) / "m.c"
    src.write_text("#include <math.h>\n#include <stdio.h>\n"
                   "double __enzyme_autodiff(void *, double);\n"
                   "double f(double x) { double ip; return modf(x * x, &ip) * x + ip; }\n"
                   "int main(void) { printf(\"%.17g\\n\", __enzyme_autodiff((void *)f, 1.6));"
                   " return 0; }\n")
    exe = Path(tmp_path) / "m"
    r = enzyme_cc([opt, str(src), "-o", str(exe), "-lm"], tmp_path)
    assert r.returncode == 0, r.stderr
    got = float(subprocess.run([str(exe)], capture_output=True, text=True).stdout)
    assert abs(got - (2 * 1.6 * 1.6 + (1.6 * 1.6 - 2))) < 1e-12, got


def test_name_lookup():
    assert libm_rule("sinf")[0] == "sin"
    assert libm_rule("erff")[0] == "erf"
    assert libm_rule("erf")[0] == "erf"
    assert libm_rule("llvm.sin.f64")[0] == "sin"
    assert libm_rule("llvm.maxnum.f32")[0] == "fmax"
    assert libm_rule("llvm.fmuladd.v2f64")[0] == "fma"
    assert libm_rule("printf") is None


def _program(ty):
    sfx = "f" if ty == "float" else ""
    lines = ["#include <math.h>", "#include <stdio.h>",
             f"typedef struct {{ {ty} a, b; }} G2;",
             f"{ty} __enzyme_autodiff1(void *, {ty});",
             f"G2 __enzyme_autodiff2(void *, {ty}, {ty});"]
    body = []
    for name, (_, pts) in UNARY_CASES.items():
        lines.append(f"{ty} u_{name}({ty} x) {{ return {name}{sfx}(x); }}")
        for k, x in enumerate(pts):
            body.append(f'printf("u_{name}_{k} %.17g\\n", (double)__enzyme_autodiff1((void*)u_{name}, {x}));')
    for name, (_, pts) in BINARY_CASES.items():
        lines.append(f"{ty} b_{name}({ty} x, {ty} y) {{ return {name}{sfx}(x, y); }}")
        for k, (a, b) in enumerate(pts):
            body.append(f"{{ G2 g = __enzyme_autodiff2((void*)b_{name}, {a}, {b}); "
                        f'printf("b_{name}_{k} %.17g %.17g\\n", (double)g.a, (double)g.b); }}')
    for name, op in OPS.items():
        lines.append(f"{ty} o_{name}({ty} x, {ty} y) {{ return x {op} y; }}")
        body.append(f"{{ G2 g = __enzyme_autodiff2((void*)o_{name}, 1.7, -0.6); "
                    f'printf("o_{name} %.17g %.17g\\n", (double)g.a, (double)g.b); }}')
    lines.append("int main(void) {")
    lines += body
    lines.append("return 0; }")
    return "\n".join(lines)


@pytest.mark.parametrize("ty,opt", [("double", "-O2"), ("float", "-O0")])
def test_rules_against_analytic(tmp_path, ty, opt):
    out = build_and_run(tmp_path, _program(ty), opt)
    assert out.returncode == 0, out.stderr
    vals = parse_values(out.stdout)
    rtol = 1e-9 if ty == "double" else 2e-4
    if ty == "float":
        import struct

        def rnd(v):
            return struct.unpack("f", struct.pack("f", v))[0]
    else:
        def rnd(v):
            return v
    bad = []
    for name, (f, pts) in UNARY_CASES.items():
        for k, x in enumerate(pts):
            want = f(rnd(x))
            got = vals[f"u_{name}_{k}"][0]
            if not abs(got - want) <= rtol * max(abs(want), 1):
                bad.append((name, x, got, want))
    for name, (fs, pts) in BINARY_CASES.items():
        for k, (a, b) in enumerate(pts):
            for j, f in enumerate(fs):
                want = f(rnd(a), rnd(b))
                got = vals[f"b_{name}_{k}"][j]
                if not abs(got - want) <= rtol * max(abs(want), 1):
                    bad.append((name, a, b, j, got, want))
    for name, fs in OP_CASES.items():
        for j, f in enumerate(fs):
            want = f(rnd(1.7), rnd(-0.6))
            got = vals[f"o_{name}"][j]
            if not abs(got - want) <= rtol * max(abs(want), 1):
                bad.append((name, j, got, want))
    assert not bad


INTEGER_RESULTS = r"""
#include <math.h>
#include <stdio.h>
double __enzyme_autodiff(void *, double);
double __enzyme_fwddiff(void *, double, double);
/* floats rounded to integers and exponents read as integers carry no derivative; the
 * integers they give scale x here.  sqrt(x - x): a square root at 0 contributes 0 */
double f(double x) {
    return lround(10 * x) * x + ilogb(x) * x + (double)llrint(x) * x * x + lrintf((float)x)
           + sqrt(x - x) + (double)llround(x * x);
}
int main(void) {
    printf("%.17g %.17g\n", __enzyme_autodiff((void *)f, 1.37), __enzyme_fwddiff((void *)f, 1.37, 1.0));
    return 0;
}
"""


@pytest.mark.parametrize("flags", [["-O0"], ["-O2"], ["-O2", "-fno-math-errno"]],
                         ids=["O0", "O2", "O2-llvm.lround"])
def test_integer_results_are_constants(tmp_path, flags):
    """``lround``/``llround``/``lrint``/``llrint`` and ``ilogb`` (``llvm.lround`` & co.
    without errno) were 'cannot differentiate call to external function'; their integer
    results are piecewise constant, as in Enzyme."""
    src = Path(tmp_path) / "i.c"
    src.write_text(INTEGER_RESULTS)
    exe = Path(tmp_path) / "i"
    r = enzyme_cc([*flags, str(src), "-o", str(exe), "-lm"], tmp_path)
    assert r.returncode == 0, r.stderr
    rev, fwd = (float(v) for v in subprocess.run([str(exe)], capture_output=True,
                                                 text=True).stdout.split())
    want = 14 + 0 + 2 * 1.37 * 1     # lround(13.7), ilogb(1.37), llrint(1.37)
    assert abs(rev - want) < 1e-12 and abs(fwd - want) < 1e-12, (rev, fwd)


KINKS = r"""
#include <math.h>
#include <stdio.h>
typedef struct { double a, b; } pair;
pair __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);
double __enzyme_autodiff1(void *, ...);
double f_min(double x, double y) { return fmin(x, y); }
double f_max(double x, double y) { return fmax(x, y); }
double f_abs(double x) { return fabs(x); }
int main(void) {
    pair a = __enzyme_autodiff((void *)f_min, 1.0, 1.0), b = __enzyme_autodiff((void *)f_max, 1.0, 1.0);
    printf("%g %g %g %g %g %g %g %g %g %g %g\n", a.a, a.b, b.a, b.b,
           __enzyme_autodiff1((void *)f_abs, 0.0), __enzyme_autodiff1((void *)f_abs, -0.0),
           __enzyme_autodiff1((void *)f_abs, -2.0),
           __enzyme_fwddiff((void *)f_min, 1.0, 0.0, 1.0, 1.0),
           __enzyme_fwddiff((void *)f_max, 1.0, 1.0, 1.0, 0.0),
           __enzyme_fwddiff((void *)f_abs, -0.0, 1.0), __enzyme_fwddiff((void *)f_abs, -3.0, 1.0));
    return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_kinks_as_in_enzyme(tmp_path, opt):
    """At the kinks the derivative is a choice; EnzymePy makes real Enzyme 15's (its
    output on this program): fmin's tie goes to y, fmax's to x, fabs'(-0.0) = +1
    (fmin's tie went to x and fabs'(-0.0) was -1 before)."""
    src = Path(tmp_path) / "k.c"
    src.write_text(KINKS)
    exe = Path(tmp_path) / "k"
    r = enzyme_cc([opt, str(src), "-o", str(exe), "-lm"], tmp_path)
    assert r.returncode == 0, r.stderr
    got = [float(v) for v in subprocess.run([str(exe)], capture_output=True,
                                            text=True).stdout.split()]
    assert got == [0, 1, 1, 0, 1, 1, -1, 1, 1, 1, -1]


# Round AN: pow with an active exponent at a base of exactly 0 (a power-law creep model's
# unloaded elements, a p-norm over a vector with zeros): the exponent's partial
# 0^p log 0 = 0 * -inf made the whole gradient NaN, in forward mode even for a zero
# tangent (Enzyme 15 guards it: 0).  The partial is 0 where the base is 0.
POW_AT_ZERO = r"""
#include <math.h>
#include <stdio.h>
int enzyme_const;
double __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);
float __enzyme_autodifff(void *, ...);
double creep(double A, double n, const double *s, int m) {
    double e = 0;
    for (int i = 0; i < m; i++) e += A * pow(s[i], n);
    return e;
}
float normf(float p, float x) { return powf(x, p) + powf(2.0f, p); }
int main(void) {
    volatile double zero = 0;
    double s[3] = { zero, 2.0, 0.5 };
    printf("rev_n %.17g\n", __enzyme_autodiff((void *)creep, enzyme_const, 1.5, 3.0,
                                              enzyme_const, s, enzyme_const, 3));
    printf("fwd_A %.17g\n", __enzyme_fwddiff((void *)creep, 1.5, 1.0, 3.0, 0.0,
                                             enzyme_const, s, enzyme_const, 3));
    printf("fwd_n %.17g\n", __enzyme_fwddiff((void *)creep, 1.5, 0.0, 3.0, 1.0,
                                             enzyme_const, s, enzyme_const, 3));
    printf("rev_p %.9g\n", (double)__enzyme_autodifff((void *)normf, 2.5f, enzyme_const,
                                                       (float)zero));
    return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_pow_with_an_active_exponent_at_a_zero_base(tmp_path, opt):
    out = build_and_run(tmp_path, POW_AT_ZERO, opt)
    assert out.returncode == 0, out.stderr
    got = parse_values(out.stdout)
    dn = 1.5 * (8 * math.log(2) + 0.125 * math.log(0.5))
    assert got["rev_n"] == pytest.approx([dn], rel=1e-12)
    assert got["fwd_n"] == pytest.approx([dn], rel=1e-12)
    assert got["fwd_A"] == pytest.approx([8.125], rel=1e-12)
    assert got["rev_p"] == pytest.approx([2 ** 2.5 * math.log(2)], rel=1e-5)
