"""Programs built with ``-g`` and optimisation: the derivative code must keep LLVM's
debug-info rules, or LLVM aborts (``!dbg attachment points at wrong subprogram``,
an assertion in the loop vectorizer or in codegen's lexical scopes) where the same
program without ``-g`` builds.

Two ways it broke: a loop copied into a derivative function kept its ``!llvm.loop``
node, whose source locations name the original function; and calls the pass emits
had no location, so what the inliner brought in through them (a custom rule's code,
itself compiled with ``-g``) kept its own function's scope inside ``main``."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from helpers import enzyme_cc
from test_never_silent import PRELUDE

PROGRAM = PRELUDE + r"""
void *__enzyme_augmentfwd(void *, ...);
void __enzyme_reverse(void *, ...);

/* one pass of bubble sort through a swap helper, then a weighted sum: the loops'
 * metadata carries their source lines under -g */
static void swap(double *a, double *b) { double t = *a; *a = *b; *b = t; }
double sorted_weights(double *x, int n) {
    for (int i = 0; i + 1 < n; i++)
        if (x[i] > x[i + 1]) swap(&x[i], &x[i + 1]);
    double s = 0;
    for (int i = 0; i < n; i++) s += x[i] * (i + 1) + 0.1 * x[i] * x[i];
    return s;
}

/* an opaque routine with a custom gradient and a custom tangent, both compiled with
 * -g: the pass calls them from derivative functions that main inlines */
static double cube(double x) { return x * x * x; }
typedef struct { void *tape; double r; } AugR;
static AugR cube_aug(double x) {
    double *t = malloc(sizeof(double));
    *t = x;
    AugR a = {t, x * x * x};
    return a;
}
typedef struct { double dx; } Grad;
static Grad cube_rev(double x, double dret, void *tape) {
    double t = *(double *)tape;
    free(tape);
    Grad g = {dret * 3 * t * t};
    return g;
}
static double cube_fwd(double x, double dx) { return 3 * x * x * dx; }
void *__enzyme_register_gradient_cube[3] = {(void *)cube, (void *)cube_aug, (void *)cube_rev};
void *__enzyme_register_derivative_cube[2] = {(void *)cube, (void *)cube_fwd};

double ring(const double *x, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += cube(x[i]) * sin(x[(i + 1) % n]);
    return s;
}

#define N 5
static void fd(double (*f)(double *, int), const double *x0, double *g) {
    for (int k = 0; k < N; k++) {
        double xp[N], xm[N], h = 1e-6;
        memcpy(xp, x0, sizeof xp);
        memcpy(xm, x0, sizeof xm);
        xp[k] += h;
        xm[k] -= h;
        g[k] = (f(xp, N) - f(xm, N)) / (2 * h);
    }
}
static double ring_(double *x, int n) { return ring(x, n); }

int main(void) {
    const double x0[N] = {0.9, -0.4, 1.3, 0.2, -1.1};
    double x[N], dx[N] = {0}, want[N];
    char what[32];
    fd(sorted_weights, x0, want);
    memcpy(x, x0, sizeof x);
    __enzyme_autodiff((void *)sorted_weights, enzyme_dup, x, dx, enzyme_const, N);
    for (int k = 0; k < N; k++) {
        snprintf(what, sizeof what, "sorted d%d", k);
        check(what, dx[k], want[k]);
    }
    fd(ring_, x0, want);
    double dr[N] = {0}, ds[N] = {0};
    __enzyme_autodiff((void *)ring, enzyme_dup, x0, dr, enzyme_const, N);
    void *tape = __enzyme_augmentfwd((void *)ring, enzyme_dup, x0, ds, enzyme_const, N);
    __enzyme_reverse((void *)ring, enzyme_dup, x0, ds, enzyme_const, N, 1.0, tape);
    double v[N] = {1, 0, 0, 0, 0};
    double t = __enzyme_fwddiff_d((void *)ring, enzyme_dup, x0, v, enzyme_const, N);
    for (int k = 0; k < N; k++) {
        snprintf(what, sizeof what, "ring d%d", k);
        check(what, dr[k], want[k]);
        snprintf(what, sizeof what, "split d%d", k);
        check(what, ds[k], want[k]);
    }
    check("ring tangent", t, want[0]);
    return fails != 0;
}
"""


@pytest.mark.parametrize("opt", ["-O1", "-O2", "-O3"])
def test_derivatives_of_a_program_built_with_debug_info(tmp_path, opt):
    src = Path(tmp_path) / "g.c"
    src.write_text(PROGRAM)
    exe = Path(tmp_path) / "g"
    r = enzyme_cc(["-g", opt, str(src), "-o", str(exe), "-lm", "-save-temps"], tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "FAIL" not in out.stdout, out.stdout + out.stderr
    assert out.stdout.count("ok ") == 3 * 5 + 1, out.stdout
    # the loops copied into derivative functions keep their properties, not their lines
    ir = (Path(tmp_path) / "g.enzyme.ll").read_text()
    md = dict(re.findall(r"^!(\d+) = (.*)$", ir, re.M))
    copied = [ref for fn in re.findall(r"^define [^\n]*@(?:augmented|fwddiffe)\w*\(.*?^}",
                                       ir, re.M | re.S)
              for ref in re.findall(r"!llvm\.loop !(\d+)", fn)]
    assert copied, "no loop metadata in the derivative functions"
    for ref in copied:
        node = md[ref]
        assert "llvm.loop.mustprogress" in " ".join(
            md.get(r, "") for r in re.findall(r"!(\d+)", node)), node
        assert not any("DILocation" in md.get(r, "") for r in re.findall(r"!(\d+)", node)), node


# Round BI (does -g change a verdict?): a pointer kept as a `uintptr_t` in a struct and
# read back into a named local: with -g the local's #dbg_value was one more use of the
# integer load, which then stayed an integer -- "'inttoptr' makes a pointer out of an
# integer ...", at every level, where the build without -g is right.  The copies to
# differentiate drop their variable records before any analysis reads a use list.
NAMED_HANDLE = PRELUDE + r"""
#include <stdint.h>
struct box { uintptr_t handle; };
double sumsq(struct box *b) {
    uintptr_t h = b->handle;
    double *v = (double *)h;
    return v[0] * v[0] + v[1] * v[1] * 3;
}
int main(void) {
    double x[2] = { 1, 2 }, dx[2] = { 0 };
    struct box b = { (uintptr_t)x }, db = { (uintptr_t)dx };
    __enzyme_autodiff((void *)sumsq, enzyme_dup, &b, &db);
    check("dx0", dx[0], 2);
    check("dx1", dx[1], 12);
    return fails != 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2", "-O3"])
def test_debug_records_change_no_verdict(tmp_path, opt):
    src = Path(tmp_path) / "h.c"
    src.write_text(NAMED_HANDLE)
    for g in ([], ["-g"]):
        exe = Path(tmp_path) / "h"
        r = enzyme_cc([*g, opt, str(src), "-o", str(exe), "-lm"], tmp_path)
        assert r.returncode == 0, (g, r.stderr[-3000:])
        out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0 and out.stdout.count("ok ") == 2, out.stdout
