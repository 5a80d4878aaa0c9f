"""An out-parameter stored after every read of the inputs (ADBench's ``*err = ...``,
BA's ``err[0] = ...`` after a call that reads the parameters)
that may alias them: the AD pass recomputes the input loads in the reverse sweep and
undoes those stores there instead of caching the inputs (analysis/overwrite.py).  The
gradient must stay right, and the caller must still see the primal's results, when
the out-parameter does point into an input array."""

from __future__ import annotations

import pytest

from helpers import build_and_run, enzyme_cc, parse_values

ALIAS = r"""
#include <math.h>
#include <stdio.h>
#include <string.h>
int enzyme_dup, enzyme_const;
void __enzyme_autodiff(void *, ...);
/* the result goes through an out-parameter, stored twice at the end with a call in
   between (ADBench's GMM shape); callers may point it into the inputs */
__attribute__((noinline)) double penalty(int n, const double *a) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += log(1.0 + a[i] * a[i]);
    return s;
}
void objective(int n, const double *a, const double *b, double *err) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += a[i] * sin(b[i] * a[i]);
    double m = a[0];
    for (int i = 1; i < n; i++) m = fmax(m, a[i] * b[i]);
    *err = s * m;
    *err = *err + penalty(n, a) * a[n - 1];
}
#define N 6
/* out = the value objective leaves at err (in arr 0 = a, 1 = b, 2 = a separate cell) */
static double run(const double *a0, const double *b0, int where, int at, double *after) {
    double a[N], b[N], cell = 0.0;
    memcpy(a, a0, sizeof a); memcpy(b, b0, sizeof b);
    double *err = where == 0 ? &a[at] : where == 1 ? &b[at] : &cell;
    objective(N, a, b, err);
    if (after) { memcpy(after, a, sizeof a); memcpy(after + N, b, sizeof b); }
    return *err;
}
int main(void) {
    const double a0[N] = {0.4, -0.3, 0.8, 0.2, -0.6, 0.5};
    const double b0[N] = {1.1, 0.7, -0.9, 1.3, 0.6, -0.4};
    const int wheres[3][2] = {{2, 0}, {0, 2}, {1, 1}};
    for (int c = 0; c < 3; c++) {
        int where = wheres[c][0], at = wheres[c][1];
        double a[N], b[N], da[N] = {0}, db[N] = {0}, cell = 0.0, dcell = 0.0;
        memcpy(a, a0, sizeof a); memcpy(b, b0, sizeof b);
        double *err = where == 0 ? &a[at] : where == 1 ? &b[at] : &cell;
        double *derr = where == 0 ? &da[at] : where == 1 ? &db[at] : &dcell;
        *derr = 1.0;
        __enzyme_autodiff((void *)objective, enzyme_const, N, enzyme_dup, a, da,
                          enzyme_dup, b, db, enzyme_dup, err, derr);
        double want[2 * N];
        double out = run(a0, b0, where, at, want);
        printf("c%d_primal %.17g %.17g\n", c, *err, out);
        for (int k = 0; k < N; k++)
            printf("c%d_a%d %.17g %.17g\nc%d_b%d %.17g %.17g\n", c, k, a[k], want[k], c, k,
                   b[k], want[N + k]);
        for (int k = 0; k < 2 * N; k++) {
            double x[2][N];
            memcpy(x[0], a0, sizeof a0); memcpy(x[1], b0, sizeof b0);
            double *p = &x[k / N][k % N], s = *p, h = 1e-6;
            *p = s + h; double fp = run(x[0], x[1], where, at, NULL);
            *p = s - h; double fm = run(x[0], x[1], where, at, NULL);
            printf("c%d_d%d %.17g %.17g\n", c, k, k < N ? da[k] : db[k - N], (fp - fm) / (2 * h));
        }
    }
    return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_out_parameter_into_an_input_gradient_and_results(tmp_path, opt):
    out = build_and_run(tmp_path, ALIAS, opt)
    assert out.returncode == 0, out.stderr
    vals = parse_values(out.stdout)
    # three cases: err separate, err = &a[2], err = &b[1]; each: the primal value at
    # err, the arrays after the call, and 12 gradient entries vs central differences
    assert len(vals) == 3 * (1 + 2 * 6 + 12), sorted(vals)
    nonzero = 0
    for name, (got, want) in vals.items():
        tol = 1e-6 if "_d" in name else 1e-15
        assert abs(got - want) <= tol * max(abs(want), 1.0), (name, got, want)
        nonzero += "_d" in name and abs(want) > 1e-3
    assert nonzero >= 24


def test_out_parameter_loads_are_not_cached(tmp_path):
    """The loads of ``a`` and ``b`` in the loops are recomputed: each loop caches one
    value per iteration (the result of sin, of fmax), not the inputs it reads, and the
    frame keeps the two overwritten values."""
    src = tmp_path / "a.c"
    src.write_text(ALIAS)
    r = enzyme_cc(["-O2", "-v", str(src), "-o", str(tmp_path / "a"), "-lm"], tmp_path)
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stderr.splitlines()
                if ln.startswith("enzyme-cc: cache of objective: "))
    assert line.count("old@") == 2, line
    import re
    log = r.stderr.split("cache of objective: ", 1)[1].split("enzyme-cc:")[0]
    loops = re.findall(r"loop L\d+ .*\((\d+) bytes per iteration\): (.*)", log)
    assert len(loops) == 2 and all(rec == ("8", "p@0") for rec in loops), log


CALLEE = r"""
#include <math.h>
#include <stdio.h>
#include <string.h>
int enzyme_dup, enzyme_const;
void __enzyme_autodiff(void *, ...);
/* BA's shape: a callee reads the parameters and writes a local of its caller, which
   then stores the residuals through an out-parameter that callers may point into the
   parameters */
__attribute__((noinline)) void proj2(const double *c, const double *x, double *out) {
    double t[2];
    t[0] = c[0] * x[0] + sin(c[1] * x[1]);
    t[1] = c[2] * x[1] - cos(c[0] * x[0]);
    out[0] = t[0] / (1.0 + t[1] * t[1]);
    out[1] = t[1] * c[3] + out[0] * x[0];
}
void reproj(const double *c, const double *x, const double *w, double *err) {
    double p[2];
    proj2(c, x, p);
    err[0] = *w * (p[0] - 0.3);
    err[1] = *w * (p[1] + 0.2);
}
#define NC 4
#define NX 2
static void run(const double *c0, const double *x0, int where, int at, double *after) {
    double c[NC], x[NX], w = 1.7, cell[2] = {0, 0};
    memcpy(c, c0, sizeof c); memcpy(x, x0, sizeof x);
    double *err = where == 0 ? &c[at] : where == 1 ? &x[at] : cell;
    reproj(c, x, &w, err);
    memcpy(after, c, sizeof c); memcpy(after + NC, x, sizeof x);
    after[NC + NX] = err[0]; after[NC + NX + 1] = err[1];
}
int main(void) {
    const double c0[NC] = {0.8, -0.4, 1.1, 0.6}, x0[NX] = {0.5, -1.2};
    const int wheres[4][2] = {{2, 0}, {0, 1}, {0, 2}, {1, 0}};
    for (int cs = 0; cs < 4; cs++) {
        int where = wheres[cs][0], at = wheres[cs][1];
        for (int r = 0; r < 2; r++) {          /* seed residual r */
            double c[NC], x[NX], w = 1.7, dw = 0, dc[NC] = {0}, dx[NX] = {0};
            double cell[2] = {0, 0}, dcell[2] = {0, 0};
            memcpy(c, c0, sizeof c); memcpy(x, x0, sizeof x);
            double *err = where == 0 ? &c[at] : where == 1 ? &x[at] : cell;
            double *derr = where == 0 ? &dc[at] : where == 1 ? &dx[at] : dcell;
            derr[r] = 1.0;
            __enzyme_autodiff((void *)reproj, enzyme_dup, c, dc, enzyme_dup, x, dx,
                              enzyme_dup, &w, &dw, enzyme_dup, err, derr);
            double want[NC + NX + 2];
            run(c0, x0, where, at, want);
            for (int k = 0; k < NC; k++) printf("c%d_r%d_c%d %.17g %.17g\n", cs, r, k, c[k], want[k]);
            for (int k = 0; k < NX; k++) printf("c%d_r%d_x%d %.17g %.17g\n", cs, r, k, x[k], want[NC + k]);
            printf("c%d_r%d_e0 %.17g %.17g\nc%d_r%d_e1 %.17g %.17g\n", cs, r, err[0],
                   want[NC + NX], cs, r, err[1], want[NC + NX + 1]);
            for (int k = 0; k < NC + NX; k++) {
                double cc[NC], xx[NX], o[NC + NX + 2];
                memcpy(cc, c0, sizeof cc); memcpy(xx, x0, sizeof xx);
                double *p = k < NC ? &cc[k] : &xx[k - NC], s = *p, h = 1e-6;
                *p = s + h; run(cc, xx, where, at, o); double fp = o[NC + NX + r];
                *p = s - h; run(cc, xx, where, at, o); double fm = o[NC + NX + r];
                printf("c%d_r%d_d%d %.17g %.17g\n", cs, r, k, k < NC ? dc[k] : dx[k - NC],
                       (fp - fm) / (2 * h));
            }
        }
    }
    return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_callee_reads_what_the_caller_overwrites_after_the_call(tmp_path, opt):
    """The callee's loads of ``c`` and ``x`` are recomputed in its reverse (its
    output ``out`` is the caller's local, which aliases nothing; the caller's later
    stores to ``err`` are undone before the callee's reverse runs).  With err separate,
    err = &c[1], err = &c[2] and err = &x[0]: gradients of both residuals vs central
    FD, and the arrays and residuals after the call exact."""
    out = build_and_run(tmp_path, CALLEE, opt)
    assert out.returncode == 0, out.stderr
    vals = parse_values(out.stdout)
    assert len(vals) == 4 * 2 * (4 + 2 + 2 + 6), len(vals)
    for name, (got, want) in vals.items():
        tol = 1e-6 if "_d" in name else 1e-15
        assert abs(got - want) <= tol * max(abs(want), 1.0), (name, got, want)


def test_callee_caches_no_input_loads(tmp_path):
    src = tmp_path / "b.c"
    src.write_text(CALLEE)
    r = enzyme_cc(["-O2", "-v", str(src), "-o", str(tmp_path / "b"), "-lm"], tmp_path)
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stderr.splitlines()
                if ln.startswith("enzyme-cc: cache of proj2: "))
    # sin, cos and the quotient's denominator, not the six loads of c and x
    assert "(24 bytes)" in line, line


HVP = r"""
#include <math.h>
#include <stdio.h>
#include <string.h>
int enzyme_dup, enzyme_const, enzyme_dupnoneed;
void __enzyme_autodiff(void *, ...);
void __enzyme_fwddiff(void *, ...);
__attribute__((noinline)) double penalty(int n, const double *a) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += log(1.0 + a[i] * a[i]);
    return s;
}
void objective(int n, const double *a, const double *b, double *err) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += a[i] * sin(b[i] * a[i]);
    double m = a[0];
    for (int i = 1; i < n; i++) m = fmax(m, a[i] * b[i]);
    *err = s * m;
    *err = *err + penalty(n, a) * a[n - 1];
}
#define N 5
void grad(double *a, double *da, const double *b, double *err) {
    double derr = 1.0;
    __enzyme_autodiff((void *)objective, enzyme_const, N, enzyme_dup, a, da, enzyme_const, b,
                      enzyme_dup, err, &derr);
}
int main(void) {
    double a[N] = {0.4, -0.3, 0.8, 0.2, -0.6}, b[N] = {1.1, 0.7, -0.9, 1.3, 0.6};
    double v[N] = {1.0, -0.5, 0.25, 0.7, -1.2};
    double da[N] = {0}, dda[N] = {0}, err = 0, derr_t = 0;
    __enzyme_fwddiff((void *)grad, enzyme_dup, a, v, enzyme_dup, da, dda, enzyme_const, b,
                     enzyme_dup, &err, &derr_t);
    double h = 1e-6, ap[N], am[N], gp[N] = {0}, gm[N] = {0}, e;
    for (int k = 0; k < N; k++) { ap[k] = a[k] + h * v[k]; am[k] = a[k] - h * v[k]; }
    grad(ap, gp, b, &e); grad(am, gm, b, &e);
    for (int k = 0; k < N; k++) printf("hv%d %.17g %.17g\n", k, dda[k], (gp[k] - gm[k]) / (2 * h));
    return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_forward_over_reverse_with_undone_stores(tmp_path, opt):
    """The gradient (with its undone err stores) differentiated again in forward mode:
    Hessian-vector product vs central differences of the gradient."""
    out = build_and_run(tmp_path, HVP, opt)
    assert out.returncode == 0, out.stderr
    vals = parse_values(out.stdout)
    assert len(vals) == 5
    for name, (got, want) in vals.items():
        assert abs(got - want) <= 1e-6 * max(abs(want), 1.0), (name, got, want)
