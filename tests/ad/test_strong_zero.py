"""``-fenzyme-strong-zero`` (Enzyme's ``-enzyme-strong-zero``): a zero adjoint or
tangent contributes zero even through an infinite partial derivative.  Without it, a
value computed but discarded on the path taken -- a square root at 0, an exponential
past overflow -- makes the gradient NaN (0 x inf), as in Enzyme; with it, the gradient
is the derivative of the path taken."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import pytest

from helpers import enzyme_cc

PROGRAM = r"""
#include <math.h>
#include <stdio.h>
double __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);
int enzyme_out;
double scale = 0.0;
double f(double x) {
    double r = sqrt(x);              /* used only where x > 0 */
    double big = exp(800 * x);       /* overflows; used only where x > 0.5 */
    if (x > 0.5) return big;
    if (x > 0) return r + x;
    return 3 * x;
}
/* the tangent of scale * x is 0, sqrt's partial derivative at 0 infinite */
double g(double x) { return sqrt(scale * x) + x; }
int main(void) {
    printf("%.17g %.17g %.17g\n", __enzyme_autodiff((void *)f, enzyme_out, 0.0),
           __enzyme_fwddiff((void *)f, 0.0, 1.0), __enzyme_fwddiff((void *)g, 1.0, 1.0));
    return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
@pytest.mark.parametrize("strong", [False, True], ids=["default", "strong-zero"])
def test_zero_times_infinity(tmp_path, opt, strong):
    src = Path(tmp_path) / "t.c"
    src.write_text(PROGRAM)
    exe = Path(tmp_path) / "t"
    flags = ["-fenzyme-strong-zero"] if strong else []
    r = enzyme_cc([opt, *flags, str(src), "-o", str(exe), "-lm"], tmp_path)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    rev_f, fwd_f, fwd_g = (float(v) for v in out.stdout.split())
    assert fwd_f == 3.0          # f's tangents never meet a zero times infinity
    if strong:
        assert (rev_f, fwd_g) == (3.0, 1.0)
    else:
        assert math.isnan(rev_f) and math.isnan(fwd_g)


def test_fno_turns_it_off_again(tmp_path):
    """``-fno-enzyme-strong-zero`` turns it off again (the last spelling wins)."""
    src = Path(tmp_path) / "t.c"
    src.write_text(PROGRAM)
    exe = Path(tmp_path) / "t"
    r = enzyme_cc(["-O2", "-fenzyme-strong-zero", "-fno-enzyme-strong-zero", str(src),
                   "-o", str(exe), "-lm"], tmp_path)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert math.isnan(float(out.stdout.split()[0]))
