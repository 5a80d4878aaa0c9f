"""``-fenzyme-strong-zero`` (Enzyme's ``-enzyme-strong-zero``): a zero adjoint or
tangent contributes zero even through an infinite partial derivative.  Without it, a
value computed but discarded on the path taken -- an exponential past overflow -- or a
zero tangent through a cube root at 0 makes the derivative NaN (0 x inf), as in Enzyme;
with it, the derivative is that of the path taken.  A square root at 0 contributes 0 in
both (Enzyme's rule for ``sqrt``; real Enzyme 15 gives the same numbers for this
program: NaN, NaN, 3, 3 at -O0)."""

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
    double big = exp(1000 * x);      /* overflows past x = 0.71; used only where x > 1 */
    if (x > 1.0) return big;
    if (x > 0) return r + x * x;
    return 3 * x;
}
/* the tangent of scale * x is 0, cbrt's partial derivative at 0 infinite */
double g(double x) { return cbrt(scale * x) + x; }
int main(void) {
    printf("%.17g %.17g %.17g %.17g\n", __enzyme_autodiff((void *)f, enzyme_out, 0.8),
           __enzyme_fwddiff((void *)g, 1.0, 1.0), __enzyme_autodiff((void *)f, enzyme_out, 0.0),
           __enzyme_fwddiff((void *)f, 0.0, 1.0));
    return 0;
}
"""

PATH_TAKEN = 2 * 0.8 + 0.5 / math.sqrt(0.8)    # d/dx (sqrt(x) + x^2) at 0.8


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
    rev_f, fwd_g, rev_f0, fwd_f0 = (float(v) for v in out.stdout.split())
    # at 0 the path taken is 3 x; sqrt's partial derivative there counts as 0
    assert (rev_f0, fwd_f0) == (3.0, 3.0)
    if strong:
        assert rev_f == pytest.approx(PATH_TAKEN, rel=1e-14) and fwd_g == 1.0
    else:
        assert math.isnan(fwd_g)
        if opt == "-O0":    # (at -O2 the discarded exp may be sunk off the path first)
            assert math.isnan(rev_f)


def test_fno_turns_it_off_again(tmp_path):
    """``-fno-enzyme-strong-zero`` turns it off again (the last spelling wins)."""
    src = Path(tmp_path) / "t.c"
    src.write_text(PROGRAM)
    exe = Path(tmp_path) / "t"
    r = enzyme_cc(["-O2", "-fenzyme-strong-zero", "-fno-enzyme-strong-zero", str(src),
                   "-o", str(exe), "-lm"], tmp_path)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert math.isnan(float(out.stdout.split()[1]))
