"""Backward activity: values whose derivative reaches no output get no derivative code
and nothing cached for them.  The program is a fixed-point iteration whose non-inlined
step returns an error estimate (``fabs`` of a difference, divided) that the caller only
compares with a tolerance and prints: the estimate is computed from active values, but
its derivative is never wanted, so the step's reverse sweep caches only what the update
itself needs.  Derivatives are checked against central differences in both modes."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from helpers import enzyme_cc
from test_never_silent import OPTS, PRELUDE, run

FIXED_POINT = r"""
static int verbose;
int n_unknowns = 4;     /* not a compile-time constant: step's loop stays a loop */
static __attribute__((noinline)) double step(double *x, int n, double a) {
    double err = 0;
    for (int i = 0; i < n; i++) {
        double nx = 0.5 * (x[i] + a / x[i]);
        double seen = nx;           /* only compared: at -O0 a local without a shadow */
        err += fabs(nx - x[i]) / (fabs(nx) + 1e-30);
        x[i] = nx;
        verbose |= seen > 1e300;
    }
    return err;
}

double solve(double a) {
    double x[4] = {1, 2, 3, 4};
    double *hist = malloc(60 * sizeof(double));  /* errors, only printed at the end */
    int it = 0;
    for (; it < 60; it++) {
        hist[it] = step(x, n_unknowns, a);
        if (hist[it] < 1e-12) break;
    }
    if (verbose)
        for (int k = 0; k < it; k++) printf("iteration %d: %g\n", k, hist[k]);
    free(hist);
    return x[0] * x[1] + x[2] - x[3] / 3.0;
}

void solve_into(const double *a, double *out) { *out = solve(*a); }

int main(void) {
    const double h = 1e-6;
    for (double a = 0.5; a < 5; a += 1.25) {
        double fd = (solve(a + h) - solve(a - h)) / (2 * h);
        check("reverse", __enzyme_autodiff_d((void *)solve, enzyme_out, a), fd);
        check("forward", __enzyme_fwddiff_d((void *)solve, a, 1.0), fd);
        double out = 0, dout = 1, da = 0;
        __enzyme_autodiff((void *)solve_into, enzyme_dup, &a, &da, enzyme_dup, &out, &dout);
        check("through memory", da, fd);
    }
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_error_estimate_only_compared(tmp_path, opt):
    run(tmp_path, FIXED_POINT, opt)


def test_error_estimate_is_not_cached(tmp_path):
    """The step's reverse sweep needs one double per iteration (the old x[i], which the
    update overwrites); the error estimate's fabs signs and divisions are not cached,
    and the block of errors gets no shadow (one per gradient: three)."""
    src = Path(tmp_path) / "t.c"
    src.write_text(PRELUDE + FIXED_POINT)
    r = enzyme_cc(["-O2", "-v", str(src), "-o", str(Path(tmp_path) / "t"), "-lm"], tmp_path)
    assert r.returncode == 0, r.stderr
    m = re.search(r"backward activity: (\d+) active value\(s\) reach no output .*, "
                  r"(\d+) local\(s\)/block\(s\) need no shadow", r.stderr)
    assert m and int(m.group(1)) > 0 and int(m.group(2)) == 3, r.stderr

    log = r.stderr[r.stderr.index("enzyme-cc: cache of step:"):]
    m = re.search(r"\((\d+) bytes per iteration\)", log)
    assert m and int(m.group(1)) == 8, log[:600]
    out = subprocess.run([str(Path(tmp_path) / "t")], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0 and "FAIL" not in out.stdout, out.stdout
