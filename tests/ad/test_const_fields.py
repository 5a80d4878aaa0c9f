"""Locals whose fields refer to ``enzyme_const`` data beside fields that refer to
duplicated data: C++ closures capturing by reference (``[&]``) a constant and a
differentiated container, passed by value to a template (two captures: two pointer
arguments; three: ``byval``), a view constructed by an out-of-line constructor once
over constant and once over duplicated data, and a C cursor struct of a constant and a
duplicated pointer advanced by a helper.  Unoptimised (-O0), nothing inlines these
helpers; the analysis follows such a local's fields by offset (``activity._Slot``,
``Activity.callee_const_fields``) where it used to refuse the whole local ("mixed").
Each program checks reverse and forward mode against central differences and that the
constant data is left as it was; a field that holds a constant pointer at one time and
a duplicated one at another stays a compile error at -O0."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from helpers import enzyme_cc
from test_never_silent import OPTS, build_error, run

def refused_as_mixed(tmp_path, body, opt):
    """``body`` is the compile error for pointers with and without a shadow mixed."""
    err = build_error(tmp_path, body, opt)
    assert "is mixed with pointers that have shadows" in err, err


CXX_PRELUDE = r"""
#include <cmath>
#include <cstdio>
#include <vector>
extern "C" {
extern int enzyme_dup, enzyme_const, enzyme_out;
double __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);
}
static int fails;
static void check(const char *what, double got, double want) {
    double scale = std::fabs(want) > 1e-2 ? std::fabs(want) : 1e-2;
    bool ok = std::fabs(got - want) / scale <= 1e-6;
    std::printf("%s %s got %.12g want %.12g\n", ok ? "ok" : "FAIL", what, got, want);
    fails += !ok;
}
"""

CLOSURES = r"""
template <class F> double sum_over(int n, F f) {
    double s = 0;
    for (int i = 0; i < n; i++) s += f(i);
    return s;
}
template <class F> double twice(F f) { return f(0) + f(1); }

// two references: the closure goes as two pointer arguments
double weighted(const std::vector<double> &w, const std::vector<double> &x) {
    return sum_over((int)x.size(), [&](int i) { return w[i] * x[i] * x[i]; });
}
// three references and a closure inside a closure: by value (byval)
double nested(const std::vector<double> &rest, std::vector<double> &pos, double k) {
    return twice([&](int j) {
        return sum_over(2, [&](int i) { return rest[i + j] * pos[i + j] * pos[i + j] * k; });
    });
}

int main() {
    std::vector<double> w{1, 2, 3}, x{0.5, 1.5, 2.5}, dx(3, 0.0);
    __enzyme_autodiff((void *)weighted, enzyme_const, &w, enzyme_dup, &x, &dx);
    for (int i = 0; i < 3; i++) check("weighted rev", dx[i], 2 * w[i] * x[i]);
    std::vector<double> t{1, -0.5, 2};
    check("weighted fwd", __enzyme_fwddiff((void *)weighted, enzyme_const, &w,
                                           enzyme_dup, &x, &t),
          2 * (w[0] * x[0] * t[0] + w[1] * x[1] * t[1] + w[2] * x[2] * t[2]));
    check("w intact", w[0] + 10 * w[1] + 100 * w[2], 321);

    std::vector<double> rest{1.0, 0.5, 2.0}, pos{0.3, 1.2, 1.9}, dpos(3, 0.0);
    double k = 3.0, h = 1e-6;
    double dk = __enzyme_autodiff((void *)nested, enzyme_const, &rest, enzyme_dup, &pos,
                                  &dpos, enzyme_out, k);
    check("nested dk", dk, (nested(rest, pos, k + h) - nested(rest, pos, k - h)) / (2 * h));
    for (int i = 0; i < 3; i++) {
        double s = pos[i];
        pos[i] = s + h; double fp = nested(rest, pos, k);
        pos[i] = s - h; double fm = nested(rest, pos, k);
        pos[i] = s;
        check("nested dpos", dpos[i], (fp - fm) / (2 * h));
    }
    std::vector<double> tp{1, 0, -1};
    std::vector<double> pp(pos), pm(pos);
    for (int i = 0; i < 3; i++) { pp[i] += h * tp[i]; pm[i] -= h * tp[i]; }
    check("nested fwd", __enzyme_fwddiff((void *)nested, enzyme_const, &rest, enzyme_dup,
                                         &pos, &tp, enzyme_const, k),
          (nested(rest, pp, k) - nested(rest, pm, k)) / (2 * h));
    check("rest intact", rest[0] + 10 * rest[1] + 100 * rest[2], 206);
    return fails;
}
"""

VIEW = r"""
struct Vec {
    double *p;
    int n;
    Vec(double *pp, int nn) : p(pp), n(nn) {}
};
double f(double *x, double *y, int n) {
    Vec X(x, n), Y(y, n);
    double s = 0;
    for (int i = 0; i < X.n; i++) s += X.p[i] * X.p[i] * Y.p[i];
    return s;
}
int main() {
    double x[3] = {0.3, -0.7, 1.2}, y[3] = {1.1, 0.4, -0.6}, dx[3] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, y, enzyme_const, 3);
    for (int i = 0; i < 3; i++) check("view rev", dx[i], 2 * x[i] * y[i]);
    double t[3] = {1, 1, 1};
    check("view fwd", __enzyme_fwddiff((void *)f, enzyme_dup, x, t, enzyme_const, y,
                                       enzyme_const, 3),
          2 * (x[0] * y[0] + x[1] * y[1] + x[2] * y[2]));
    check("y intact", y[0] + 10 * y[1] + 100 * y[2], 1.1 + 4 - 60);
    return fails;
}
"""


def _run_cxx(tmp_path, body, opt):
    src = Path(tmp_path) / "t.cpp"
    src.write_text(CXX_PRELUDE + body)
    exe = Path(tmp_path) / "t"
    r = enzyme_cc(["-std=c++17", opt, str(src), "-o", str(exe)], tmp_path, cxx=True)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "FAIL" not in out.stdout, out.stdout + out.stderr
    return out.stdout


@pytest.mark.parametrize("opt", OPTS)
def test_closures_capturing_constant_and_duplicated_data(tmp_path, opt):
    out = _run_cxx(tmp_path, CLOSURES, opt)
    assert out.count("ok ") == 11, out


@pytest.mark.parametrize("opt", OPTS)
def test_view_constructed_over_constant_and_duplicated_data(tmp_path, opt):
    out = _run_cxx(tmp_path, VIEW, opt)
    assert out.count("ok ") == 5, out


CURSOR = r"""
typedef struct { const double *w; double *x; int n; } Cur;
__attribute__((noinline)) static double step(Cur *c) {
    double v = c->w[0] * c->x[0] * c->x[0];
    c->w++; c->x++; c->n--;
    return v;
}
__attribute__((noinline)) static double walk(Cur c) {
    double s = 0;
    while (c.n > 0) s += step(&c);
    return s;
}
double f(const double *w, double *x, int n) {
    Cur c = { w, x, n };
    double s = walk(c);
    Cur d = { w + 1, x + 1, n - 1 };
    s += step(&d) * walk(d);
    return s;
}
int main(void) {
    double w[4] = {1, 2, 3, 4}, x[4] = {0.5, -1.5, 2.0, 0.7}, dx[4] = {0}, h = 1e-6;
    __enzyme_autodiff((void *)f, enzyme_const, w, enzyme_dup, x, dx, enzyme_const, 4);
    for (int i = 0; i < 4; i++) {
        double s = x[i];
        x[i] = s + h; double fp = f(w, x, 4);
        x[i] = s - h; double fm = f(w, x, 4);
        x[i] = s;
        check("cursor rev", dx[i], (fp - fm) / (2 * h));
    }
    check("w intact", w[0] + 10 * w[1] + 100 * w[2] + 1000 * w[3], 4321);
    double t[4] = {1, 0.5, -1, 2}, xp[4], xm[4];
    for (int i = 0; i < 4; i++) { xp[i] = x[i] + h * t[i]; xm[i] = x[i] - h * t[i]; }
    check("cursor fwd", __enzyme_fwddiff_d((void *)f, enzyme_const, w, enzyme_dup, x, t,
                                           enzyme_const, 4),
          (f(w, xp, 4) - f(w, xm, 4)) / (2 * h));
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_cursor_of_constant_and_duplicated_pointers(tmp_path, opt):
    out = run(tmp_path, CURSOR, opt)
    assert out.count("ok ") == 6, out


REASSIGNED = r"""
typedef struct { const double *p; double *q; } Two;
__attribute__((noinline)) static void set(Two *t, const double *p, double *q) {
    t->p = p; t->q = q;
}
__attribute__((noinline)) static double use(Two *t, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += t->p[i] * t->q[i];
    return s;
}
double f(const double *w, double *x, int n) {
    Two t;
    set(&t, w, x);
    double s = use(&t, n);
    set(&t, x, x);      /* the constant field now refers to duplicated data */
    return s + use(&t, n);
}
int main(void) {
    double w[3] = {1, 2, 3}, x[3] = {0.5, -1.5, 2.0}, dx[3] = {0};
    __enzyme_autodiff((void *)f, enzyme_const, w, enzyme_dup, x, dx, enzyme_const, 3);
    for (int i = 0; i < 3; i++) check("rev", dx[i], w[i] + 4 * x[i]);
    check("w intact", w[0] + 10 * w[1] + 100 * w[2], 321);
    return fails;
}
"""


def test_field_holding_constant_then_duplicated_data_is_refused(tmp_path):
    err = build_error(tmp_path, REASSIGNED, "-O0")
    assert "mixed with pointers that have shadows" in err, err


# A layer loop whose input starts at the network's enzyme_const input and then walks
# the activations (llm.c, darknet, WaveNet: `in = x; ... in = acts + l*N`), also chosen
# by a select and passed to an out-of-line layer: a phi of a pointer without a shadow
# and pointers with one was refused ("mixed") at every level (round W; Enzyme 15 builds
# it).  The merge's shadow is the primal pointer where the input is chosen, and every
# access through it checks at run time whether its shadow is the primal memory: there,
# tangents read zero and adjoints go to a zeroed scratch slot (Activity._own_merges).
LAYERS = r"""
__attribute__((noinline)) static void layer(const double *w, const double *in, double *out, int n) {
    for (int i = 0; i < n; i++) out[i] = tanh(w[i] * in[i] + in[(i + 1) % n]);
}
double f(const double *w, double *acts, const double *x, int nl, int n) {
    const double *in = x;
    double s = 0;
    for (int l = 0; l < nl; l++) {
        layer(w + l * n, in, acts + l * n, n);
        s += in[0] * w[l];                          /* read through the merge here too */
        in = acts + l * n;
    }
    const double *last = nl > 0 ? in : x;
    for (int i = 0; i < n; i++) s += last[i] * last[i];
    return s;
}
int main(void) {
    enum { NL = 3, N = 2 };
    double w[NL * N] = {0.5, -0.3, 0.8, 0.2, -0.6, 0.9}, dw[NL * N] = {0};
    double acts[NL * N], dacts[NL * N] = {0}, x[N] = {0.7, -0.4}, h = 1e-6;
    __enzyme_autodiff((void *)f, enzyme_dup, w, dw, enzyme_dup, acts, dacts,
                      enzyme_const, x, enzyme_const, NL, enzyme_const, N);
    for (int k = 0; k < NL * N; k++) {
        double s = w[k];
        w[k] = s + h; double fp = f(w, acts, x, NL, N);
        w[k] = s - h; double fm = f(w, acts, x, NL, N);
        w[k] = s;
        check("rev dw", dw[k], (fp - fm) / (2 * h));
    }
    check("x intact", x[0] + 10 * x[1], 0.7 - 4);
    double t[NL * N] = {1, 0, 0.5, 0, 0, -1}, wp[NL * N], wm[NL * N], tacts[NL * N] = {0};
    for (int k = 0; k < NL * N; k++) { wp[k] = w[k] + h * t[k]; wm[k] = w[k] - h * t[k]; }
    double want = (f(wp, acts, x, NL, N) - f(wm, acts, x, NL, N)) / (2 * h);
    check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, w, t, enzyme_dup, acts, tacts,
                                    enzyme_const, x, enzyme_const, NL, enzyme_const, N), want);
    check("x intact after fwd", x[0] + 10 * x[1], 0.7 - 4);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_layer_loop_starting_at_a_constant_input(tmp_path, opt):
    out = run(tmp_path, LAYERS, opt)
    assert out.count("ok ") == 9, out


# Writing floating-point values through such a merge while it points at the constant
# data (round Y: `p = c ? x : buf; scale(p, s); return sumsq(p)`): the check would drop
# what is stored there, and what is read back would carry no derivative -- 0 in both
# modes.  A merge written through with floats stays a compile error, as the same code
# without the merge (an active value stored into memory without a shadow).
WRITTEN_THROUGH = r"""
__attribute__((noinline)) static void scale(double *p, int n, double s) {
    for (int i = 0; i < n; i++) p[i] *= s;
}
double f(double *x, double *buf, int c, double s) {
    double *p = c ? x : buf;
    scale(p, 3, s);
    double t = 0;
    for (int i = 0; i < 3; i++) t += p[i] * p[i];
    return t;
}
int main(void) {
    double x[3] = {1, 2, 0.5}, buf[3] = {3, 1, 1}, dbuf[3] = {0};
    printf("%g\\n", __enzyme_autodiff_d((void *)f, enzyme_const, x, enzyme_dup, buf, dbuf,
                                       enzyme_const, 1, 1.5));
    return 0;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_merge_written_through_with_floats_is_refused(tmp_path, opt):
    refused_as_mixed(tmp_path, WRITTEN_THROUGH, opt)


# Round AB: a closure capturing (by reference, at -O0: the address of the local holding
# the pointer) an enzyme_const config beside a duplicated array, copied by value into a
# view as C++20's transform_view does.  The config's pointer was taken as carrying no
# derivative -- every access to it seen from the differentiating function reads an
# `int` -- and served as its own shadow: the reverse sweep added the adjoint of
# `cfg->decay`, read in the closure, into the caller's constant config.  Now the
# byte-offset analysis, which follows the pointer into the closure, must agree: where the
# view's consumer stays out of line (at -O0, or `noinline`) this is the "mixed" error (a
# two-level capture, not followed yet); inlined at -O2, right.
CLOSURE_IN_VIEW = r"""
struct Cfg { int n; double decay; };
template <class F> struct View { F f; int n; };
template <class F> ATTR double sumsq(View<F> v) {
    double s = 0;
    for (int i = 0; i < v.n; i++) { double t = v.f(i); s += t * t; }
    return s;
}
double objective(const double *x, const Cfg *cfg) {
    auto f = [&](int i) { return x[i] * std::exp(-cfg->decay * i); };
    return sumsq(View<decltype(f)>{f, cfg->n});
}
int main() {
    Cfg c{3, 0.1};
    double x[3] = {1, 2, 3}, g[3] = {0, 0, 0};
    __enzyme_autodiff((void *)objective, enzyme_dup, x, g, enzyme_const, &c);
    for (int i = 0; i < 3; i++) check("rev", g[i], 2 * x[i] * std::exp(-0.2 * i));
    check("cfg intact", c.decay, 0.1);
    return fails;
}
"""


@pytest.mark.parametrize("attr", ["", "__attribute__((noinline))"], ids=["inline", "noinline"])
@pytest.mark.parametrize("opt", OPTS)
def test_constant_config_captured_beside_duplicated_data_stays_intact(tmp_path, opt, attr):
    src = Path(tmp_path) / "t.cpp"
    src.write_text(CXX_PRELUDE + CLOSURE_IN_VIEW.replace("ATTR", attr))
    exe = Path(tmp_path) / "t"
    r = enzyme_cc(["-std=c++17", opt, str(src), "-o", str(exe)], tmp_path, cxx=True)
    if opt == "-O0" or attr:
        assert r.returncode != 0 and "mixed with pointers that have shadows" in r.stderr, \
            r.stderr
        assert "Traceback" not in r.stderr
        return
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "FAIL" not in out.stdout, out.stdout + out.stderr


# Round AE (numerical libraries): an optimiser's problem struct on the stack -- its
# pointers all refer to enzyme_const data (the design matrix, the labels), beside the
# active regularisation weight -- passed to an out-of-line objective, once with the
# active weight and once for validation with 0.  The struct has a shadow (for its
# double), but with no field holding a duplicated pointer the constant fields were not
# handed to the callee, which read them as shadowed: a null shadow base, a segfault at
# -O0 and -O2 (and, with the reader inlined at -O2, a main compiled to nothing); an
# array of them indexed by a variable had no known offsets to hand over at all.
PROBLEM_STRUCT = r"""
struct problem { const double *X; const double *y; double lambda; int nd; };
__attribute__((noinline)) static double dot(const double *a, const double *b, int n) {
    double r = 0;
    for (int i = 0; i < n; i++) r += a[i] * b[i];
    return r;
}
__attribute__((noinline)) static double logreg(struct problem *P, const double *w, double *g,
                                               int n) {
    double f = 0.5 * P->lambda * dot(w, w, n);
    for (int t = 0; t < n; t++) g[t] = P->lambda * w[t];
    for (int i = 0; i < P->nd; i++) {
        const double *xi = P->X + i * n;
        double z = dot(xi, w, n);
        f += log1p(exp(-z));
        double s = 1.0 / (1.0 + exp(z));
        for (int t = 0; t < n; t++) g[t] -= P->y[i] * s * xi[t];
    }
    return f;
}
double loss(double lambda, const double *X, const double *y) {
    struct problem P = { X, y, lambda, 2 };
    double w[3] = { 0.1, 0.2, 0.3 }, g[3];
    logreg(&P, w, g, 3);
    for (int t = 0; t < 3; t++) w[t] -= g[t];
    struct problem V = { X, y, 0.0, 2 };
    return logreg(&V, w, g, 3);
}
struct scaled { const double *X; double k; };
__attribute__((noinline)) static double first(struct scaled *S, double w) {
    return S->X[0] * w * S->k;
}
double f(double w, const double *X) {
    struct scaled V = { X, 2.0 };
    return first(&V, w);
}
/* an array of such structs filled in a loop, one picked by an index: no field offset is
   known, and none holds a pointer with a shadow */
double pick(double w, const double *X, int k) {
    struct scaled V[2];
    for (int i = 0; i < 2; i++) { V[i].X = X + i; V[i].k = 2.0 + i; }
    return first(&V[k], w);
}
int main(void) {
    double X[6] = { 0.5, -0.2, 0.1, 0.3, 0.1, -0.4 }, y[2] = { 1, -1 }, lam = 0.7, h = 1e-6;
    check("rev picked", __enzyme_autodiff_d((void *)pick, 0.7, enzyme_const, X, 1), 3 * X[1]);
    check("fwd picked", __enzyme_fwddiff_d((void *)pick, 0.7, 1.0, enzyme_const, X, 1), 3 * X[1]);
    double fd = (loss(lam + h, X, y) - loss(lam - h, X, y)) / (2 * h);
    check("rev dlambda", __enzyme_autodiff_d((void *)loss, enzyme_out, lam, enzyme_const, X,
                                             enzyme_const, y), fd);
    check("fwd dlambda", __enzyme_fwddiff_d((void *)loss, lam, 1.0, enzyme_const, X,
                                            enzyme_const, y), fd);
    check("rev dw", __enzyme_autodiff_d((void *)f, 0.7, enzyme_const, X), 2 * X[0]);
    check("fwd dw", __enzyme_fwddiff_d((void *)f, 0.7, 1.0, enzyme_const, X), 2 * X[0]);
    check("X intact", X[0] + X[5], 0.1);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_struct_of_constant_pointers_beside_an_active_double(tmp_path, opt):
    run(tmp_path, PROBLEM_STRUCT, opt)


# Round AE: the callback idiom of numerical libraries -- a params struct on the stack
# holding enzyme_const data beside the active parameter, passed as ``void *`` through a
# driver to a function pointer (GSL's ``gsl_function``, an L-BFGS ``evaluate``).  At
# -O0 the driver's parameter is kept in a local of its own and the callback is reached
# only through the pointer: the local could not be followed ("mixed" refused; Enzyme 15
# right), and forward mode's dispatch did not hand the callback the constant fields (a
# null shadow read once the local was followed).
CALLBACK_PARAMS = r"""
struct problem { const double *X; double lambda; int n; };
typedef double (*eval_t)(void *, double);
static double eval(void *inst, double w) {
    struct problem *P = inst;
    double s = P->lambda * w * w;
    for (int i = 0; i < P->n; i++) s += P->X[i] * sin(w * (i + 1));
    return s;
}
static double eval_other(void *inst, double w) {
    struct problem *P = inst;
    return P->lambda * P->X[0] * w;
}
static double run(eval_t f, void *inst) {
    double w = 1.0;
    for (int it = 0; it < 3; it++) w -= 0.1 * f(inst, w);
    return w;
}
static eval_t pick(int k) { return k ? eval_other : eval; }
double loss(double lambda, const double *X, int k) {
    struct problem P = { X, lambda, 3 };
    return run(pick(k), &P);
}
int main(void) {
    double X[3] = { 0.5, -0.3, 0.2 }, lam = 0.7, h = 1e-6;
    for (int k = 0; k < 2; k++) {
        double fd = (loss(lam + h, X, k) - loss(lam - h, X, k)) / (2 * h);
        check("rev", __enzyme_autodiff_d((void *)loss, enzyme_out, lam, enzyme_const, X,
                                         enzyme_const, k), fd);
        check("fwd", __enzyme_fwddiff_d((void *)loss, lam, 1.0, enzyme_const, X,
                                        enzyme_const, k), fd);
    }
    check("X intact", X[0] + X[1] + X[2], 0.4);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_params_struct_through_a_callback_pointer(tmp_path, opt):
    run(tmp_path, CALLBACK_PARAMS, opt)


# Round AH: an array of problem structs with an integer field beside the constant
# pointer and the active double, one element passed by a variable index: the integer
# stores had no known offset, could have overlapped the pointer fields, and the local
# was not followed (refused as "mixed"; Enzyme 15 builds it and overwrites the
# constant data).  An array of structs is followed field by field within an element
# now; an element whose pointer field holds a duplicated array among constant ones
# stays an error.
SEGMENTS = r"""
typedef struct { const double *xs; int n; double w; } Seg;
__attribute__((noinline)) static double seg_fit(const Seg *s) {
    double r = s->w;
    for (int i = 0; i < s->n; i++) r *= s->xs[i];
    return r;
}
double total(const double *wb, const double *X, int nseg) {
    Seg S[4];
    for (int k = 0; k < nseg; k++) { S[k].xs = X + 2 * k; S[k].n = 2; S[k].w = wb[k]; }
    double e = 0;
    for (int k = 0; k < nseg; k++) e += seg_fit(&S[k]) * wb[k];
    return e;
}
int main(void) {
    double X[8] = {1, 2, 3, 4, 5, 6, 7, 8}, p[4] = {0.1, 0.2, 0.3, 0.4}, g[4] = {0};
    __enzyme_autodiff((void *)total, enzyme_dup, p, g, enzyme_const, X, enzyme_const, 4);
    for (int k = 0; k < 4; k++) {
        double t[4] = {0};
        t[k] = 1;
        check("rev", g[k], 2 * p[k] * X[2 * k] * X[2 * k + 1]);
        check("fwd", __enzyme_fwddiff_d((void *)total, enzyme_dup, p, t, enzyme_const, X,
                                        enzyme_const, 4), 2 * p[k] * X[2 * k] * X[2 * k + 1]);
    }
    check("X intact", X[0] + X[7], 9);
    return fails;
}
"""

SEGMENTS_ONE_DUPLICATED = r"""
typedef struct { const double *xs; int n; double w; } Seg;
__attribute__((noinline)) static double seg_fit(const Seg *s) {
    double r = s->w;
    for (int i = 0; i < s->n; i++) r *= s->xs[i];
    return r;
}
double total(const double *wb, const double *X, double *Y, int j) {
    Seg S[4];
    for (int k = 0; k < 4; k++) { S[k].xs = X + 2 * k; S[k].n = 2; S[k].w = wb[k]; }
    S[j].xs = Y;
    double e = 0;
    for (int k = 0; k < 4; k++) e += seg_fit(&S[k]);
    return e;
}
int main(void) {
    double X[8] = {1, 2, 3, 4, 5, 6, 7, 8}, Y[2] = {1, 1}, dY[2] = {0};
    double p[4] = {0.1, 0.2, 0.3, 0.4}, g[4] = {0};
    __enzyme_autodiff((void *)total, enzyme_dup, p, g, enzyme_const, X, enzyme_dup, Y, dY,
                      enzyme_const, 2);
    return 0;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_array_of_problem_structs_with_an_integer_field(tmp_path, opt):
    run(tmp_path, SEGMENTS, opt)
    refused_as_mixed(tmp_path, SEGMENTS_ONE_DUPLICATED, opt)


# ... and where some field of the array's structs holds duplicated data, a callee given
# one element may read the next (s[1].xs): no field-by-field answer is handed over for
# an array (a first version of the change above crashed on this at both levels).  At
# -O0 it stays the "mixed" error, at -O2 it is right.
SEGMENT_PAIRS = r"""
typedef struct { const double *xs; double *ys; double w; } Seg;
__attribute__((noinline)) static double pair_fit(const Seg *s) {
    return s[0].w * s[0].xs[0] * s[0].ys[0] + s[1].w * s[1].xs[0] * s[1].ys[0];
}
double total(const double *wb, const double *X, double *Y) {
    Seg S[4];
    for (int k = 0; k < 4; k++) { S[k].xs = X + k; S[k].ys = Y + k; S[k].w = wb[k]; }
    double e = 0;
    for (int k = 0; k < 3; k++) e += pair_fit(&S[k]);
    return e;
}
int main(void) {
    double X[4] = {1, 2, 3, 4}, Y[4] = {0.5, 0.25, 2, 1}, dY[4] = {0};
    double p[4] = {0.1, 0.2, 0.3, 0.4}, g[4] = {0};
    int c[4] = {1, 2, 2, 1};
    __enzyme_autodiff((void *)total, enzyme_dup, p, g, enzyme_const, X, enzyme_dup, Y, dY);
    for (int k = 0; k < 4; k++) {
        check("rev dw", g[k], c[k] * X[k] * Y[k]);
        check("rev dY", dY[k], c[k] * p[k] * X[k]);
    }
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_array_of_structs_read_across_elements(tmp_path, opt):
    if opt == "-O0":
        refused_as_mixed(tmp_path, SEGMENT_PAIRS, opt)
    else:
        run(tmp_path, SEGMENT_PAIRS, opt)


# Round AE: the problem struct allocated with malloc instead of on the stack (filled,
# passed to an out-of-line objective, freed): refused as "mixed" where the reader
# stays out of line (Enzyme 15 right).  A block the function allocates and frees, and
# otherwise only loads from, stores to and passes to such callees, is followed like a
# local; one whose pointer field holds duplicated data at one time and constant data at
# another stays an error.
HEAP_PROBLEM = r"""
struct problem { const double *X; double *Y; double scale; int n; };
__attribute__((noinline)) static double g(struct problem *P, double w) {
    double s = 0;
    for (int i = 0; i < P->n; i++) s += P->X[i] * w * P->scale * P->Y[i];
    return s;
}
double f(double w, const double *X, double *Y) {
    struct problem *P = malloc(sizeof *P);
    P->X = X; P->Y = Y; P->scale = 2.0; P->n = 2;
    double r = g(P, w);
    free(P);
    return r;
}
int main(void) {
    double X[2] = { 0.3, 0.5 }, Y[2] = { 1.5, -1 }, dY[2] = {0}, t[2] = {0};
    check("rev dw", __enzyme_autodiff_d((void *)f, 0.7, enzyme_const, X, enzyme_dup, Y, dY),
          2 * (0.3 * 1.5 - 0.5));
    check("rev dY0", dY[0], 2 * 0.7 * 0.3);
    check("rev dY1", dY[1], 2 * 0.7 * 0.5);
    t[1] = 1;
    check("fwd dY1", __enzyme_fwddiff_d((void *)f, 0.7, 0.0, enzyme_const, X, enzyme_dup, Y, t),
          2 * 0.7 * 0.5);
    check("X intact", X[0] + X[1], 0.8);
    return fails;
}
"""

HEAP_PROBLEM_SWITCHED = r"""
struct problem { const double *X; double scale; };
__attribute__((noinline)) static double g(struct problem *P, double w) {
    return P->X[0] * w * P->scale;
}
double f(double w, const double *X, double *Y, int k) {
    struct problem *P = malloc(sizeof *P);
    P->X = k ? X : Y; P->scale = 2.0;
    double r = g(P, w);
    P->X = Y;
    r += g(P, w);
    free(P);
    return r;
}
int main(void) {
    double X[1] = {0.3}, Y[1] = {2}, dY[1] = {0};
    __enzyme_autodiff((void *)f, 0.7, enzyme_const, X, enzyme_dup, Y, dY, enzyme_const, 1);
    return 0;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_problem_struct_on_the_heap(tmp_path, opt):
    run(tmp_path, HEAP_PROBLEM, opt)
    refused_as_mixed(tmp_path, HEAP_PROBLEM_SWITCHED, opt)


# Rounds AE, AH: the params struct one level further down -- GSL's ``gsl_function F =
# {model, &p}`` handed to a quadrature driver as a pointer, the driver calling
# ``F->function(x, F->params)``; a minimiser copying the caller's ``void *params`` into
# its own workspace struct and calling the callback from a helper given the workspace.
# The params struct holds enzyme_const data beside a duplicated array, an active double
# and a counter the callback bumps: both were refused as "mixed" at -O0 and -O2 (Enzyme
# 15 right on the first, wrong on the second).  A local whose address is kept in another
# local is followed when the field holding it is read only by callees that only load
# from, store plain values into, or pass on the memory it points to; the callbacks get
# the constant fields two levels down (``(1, 8, 0)``).  A params field given duplicated
# data at one call and constant data at another stays an error.
GSL_FUNCTION = r"""
typedef struct { double (*function)(double x, void *params); void *params; } gsl_function;
#define GSL_FN_EVAL(F, x) (*((F)->function))(x, (F)->params)
struct model { const double *tab; double *w; double amp; int calls; };
static double integrand(double x, void *params) {
    struct model *m = (struct model *)params;
    m->calls++;
    return m->amp * (m->tab[0] + m->tab[1] * x) * sin(m->w[0] * x) + m->w[1] * x * x;
}
static double integrand_cos(double x, void *params) {
    struct model *m = (struct model *)params;
    return m->amp * m->tab[1] * cos(m->w[1] * x);
}
__attribute__((noinline)) static double simpson(const gsl_function *F, double a, double b,
                                                int n) {
    double h = (b - a) / n, s = GSL_FN_EVAL(F, a) + GSL_FN_EVAL(F, b);
    for (int i = 1; i < n; i++) s += (i % 2 ? 4 : 2) * GSL_FN_EVAL(F, a + i * h);
    return s * h / 3;
}
double flux(double amp, const double *tab, double *w, int which) {
    struct model m = { tab, w, amp, 0 };
    gsl_function F;
    F.function = which ? integrand_cos : integrand;
    F.params = &m;
    return simpson(&F, 0.0, 1.0, 8) * amp + 1e-3 * m.calls;
}
int main(void) {
    double tab[2] = { 0.5, -0.25 }, w[2] = { 1.3, 0.4 }, h = 1e-6;
    for (int which = 0; which < 2; which++) {
        double dw[2] = { 0, 0 }, fd[3];
        fd[0] = (flux(0.7 + h, tab, w, which) - flux(0.7 - h, tab, w, which)) / (2 * h);
        for (int k = 0; k < 2; k++) {
            double wp[2] = { w[0], w[1] }, wm[2] = { w[0], w[1] };
            wp[k] += h; wm[k] -= h;
            fd[1 + k] = (flux(0.7, tab, wp, which) - flux(0.7, tab, wm, which)) / (2 * h);
        }
        check("rev damp", __enzyme_autodiff_d((void *)flux, 0.7, enzyme_const, tab,
                                              enzyme_dup, w, dw, enzyme_const, which), fd[0]);
        check("rev dw0", dw[0], fd[1]);
        check("rev dw1", dw[1], fd[2]);
        double t[2] = { 0, 1 };
        check("fwd dw1", __enzyme_fwddiff_d((void *)flux, 0.7, 0.0, enzyme_const, tab,
                                            enzyme_dup, w, t, enzyme_const, which), fd[2]);
        double zero[2] = { 0, 0 };
        check("fwd damp", __enzyme_fwddiff_d((void *)flux, 0.7, 1.0, enzyme_const, tab,
                                             enzyme_dup, w, zero, enzyme_const, which), fd[0]);
    }
    check("tab intact", tab[0] + tab[1], 0.25);
    return fails;
}
"""

WORKSPACE_DRIVER = r"""
typedef double (*objective)(const double *x, int n, void *params);
typedef struct { objective f; void *params; int n; double step; int evals; } workspace;
__attribute__((noinline)) static double ws_eval(workspace *ws, const double *x) {
    ws->evals++;
    return ws->f(x, ws->n, ws->params);
}
__attribute__((noinline)) static double descend(objective f, void *params, double *x, int n) {
    workspace ws;
    ws.f = f; ws.params = params; ws.n = n; ws.step = 0.1; ws.evals = 0;
    double fx = ws_eval(&ws, x);
    for (int it = 0; it < 4; it++)
        for (int i = 0; i < n; i++) {
            double old = x[i];
            x[i] = old + ws.step; double fp = ws_eval(&ws, x);
            x[i] = old - ws.step; double fm = ws_eval(&ws, x);
            x[i] = old - 0.05 * (fp - fm) / ws.step;
            fx = ws_eval(&ws, x);
        }
    return fx;
}
struct quad { double a, b; const double *target; };
static double misfit(const double *x, int n, void *params) {
    struct quad *q = (struct quad *)params;
    double s = 0;
    for (int i = 0; i < n; i++) {
        double d = x[i] - q->target[i];
        s += q->a * d * d + q->b * d * d * d * d;
    }
    return s;
}
double fit(double a, double b, const double *target) {
    struct quad q = { a, b, target };
    double x[3] = { 0, 0, 0 };
    return descend(misfit, &q, x, 3);
}
int main(void) {
    double target[3] = { 0.5, -0.3, 0.8 }, a = 1.3, b = 0.4, h = 1e-6;
    double fda = (fit(a + h, b, target) - fit(a - h, b, target)) / (2 * h);
    double fdb = (fit(a, b + h, target) - fit(a, b - h, target)) / (2 * h);
    check("rev da", __enzyme_autodiff_d((void *)fit, enzyme_out, a, enzyme_const, b,
                                        enzyme_const, target), fda);
    check("fwd db", __enzyme_fwddiff_d((void *)fit, a, 0.0, b, 1.0, enzyme_const, target),
          fdb);
    check("target intact", target[0] + target[1] + target[2], 1.0);
    return fails;
}
"""

GSL_FUNCTION_SWITCHED = r"""
typedef struct { double (*function)(double x, void *params); void *params; } gsl_function;
struct model { const double *tab; double amp; };
static double integrand(double x, void *params) {
    struct model *m = (struct model *)params;
    return m->amp * m->tab[0] * x;
}
__attribute__((noinline)) static double drive(const gsl_function *F) {
    return F->function(2.0, F->params);
}
double flux(double amp, const double *tab, double *w) {
    struct model m = { tab, amp };
    gsl_function F = { integrand, &m };
    double r = drive(&F);
    m.tab = w;
    return r + drive(&F);
}
int main(void) {
    double tab[1] = { 3 }, w[1] = { 2 }, dw[1] = { 0 };
    __enzyme_autodiff((void *)flux, 1.5, enzyme_const, tab, enzyme_dup, w, dw);
    return 0;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_params_struct_two_levels_down(tmp_path, opt):
    run(tmp_path, GSL_FUNCTION, opt)
    run(tmp_path, WORKSPACE_DRIVER, opt)
    refused_as_mixed(tmp_path, GSL_FUNCTION_SWITCHED, opt)


# Round AL: the heap problem struct as C code writes it -- ``if (!pr) return 0;`` after
# the malloc, freed by a ``problem_free`` helper -- was refused as "mixed" at -O0 and
# -O2 (Enzyme 15 right): the address compared with null, and the block passed to a
# function that frees it, stopped the block being followed.
HEAP_PROBLEM_CHECKED = r"""
typedef struct { const double *t; double *theta; int n; } Problem;
__attribute__((noinline)) static double body(const Problem *pr) {
    double s = 0;
    for (int i = 0; i < pr->n; i++) s += pr->theta[0] * pr->t[i] * pr->theta[1];
    return s * s;
}
__attribute__((noinline)) static void problem_free(Problem *p) { free(p); }
double loss(double *theta, const double *t, int n) {
    Problem *pr = malloc(sizeof *pr);
    if (!pr) return 0;
    pr->t = t; pr->theta = theta; pr->n = n;
    double v = body(pr);
    problem_free(pr);
    return v;
}
int main(void) {
    double t[3] = { 0.5, 0.25, 2 }, th[2] = { 1.5, -0.5 }, d[2] = { 0 }, e[2] = { 0, 1 };
    double s = 2.75 * th[0] * th[1];
    __enzyme_autodiff((void *)loss, enzyme_dup, th, d, enzyme_const, t, enzyme_const, 3);
    check("rev d0", d[0], 2 * s * 2.75 * th[1]);
    check("rev d1", d[1], 2 * s * 2.75 * th[0]);
    check("fwd d1", __enzyme_fwddiff_d((void *)loss, enzyme_dup, th, e, enzyme_const, t,
                                       enzyme_const, 3), 2 * s * 2.75 * th[0]);
    check("t intact", t[0] + t[1] + t[2], 2.75);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_problem_struct_on_the_heap_checked_and_freed_by_a_helper(tmp_path, opt):
    run(tmp_path, HEAP_PROBLEM_CHECKED, opt)


# Round CD (k nearest rows): a record of a distance, a pointer into enzyme_const data
# and a weight, passed by value to a noinline helper that inserts it, by struct copy,
# into a sorted local list.  The record's shadow holds null where the constant pointer
# is (nothing is stored there); the helper's copies moved those null bytes into the
# list's shadow, and the list's pointers were read back as shadows: a segfault in both
# modes, at every level.  The list is followed through the helper's copies now
# (``_Slot.moved_in``): its pointers have no shadow either.  Where the list is the
# caller's (enzyme_dup), its pointers are read as shadows: the copy is refused.
NEAREST_ROWS = r"""
#define K 2
typedef struct { double d2; const double *row; double w; } cand_t;
__attribute__((noinline))
static int insert(cand_t *list, int n, cand_t c) {
    if (n == K && c.d2 >= list[K - 1].d2) return n;
    int pos = n < K ? n : K - 1;
    while (pos > 0 && list[pos - 1].d2 > c.d2) { list[pos] = list[pos - 1]; pos--; }
    list[pos] = c;
    return n < K ? n + 1 : n;
}
#define NEAREST                                                 \
    int n = 0;                                                  \
    for (int r = 0; r < nrows; r++) {                           \
        cand_t c;                                               \
        c.row = data + r;                                       \
        double d = q[0] - c.row[0];                             \
        c.d2 = d * d; c.w = 1.0 / (1.0 + c.d2);                 \
        n = insert(list, n, c);                                 \
    }                                                           \
    double s = 0;                                               \
    for (int i = 0; i < n; i++) s += list[i].w * list[i].row[0]; \
    return s;
double f(const double *q, const double *data, int nrows) {
    cand_t list[K];
    NEAREST
}
double g(const double *q, const double *data, int nrows, cand_t *list) {
    NEAREST
}
int main(void) {
    double q[1] = {0.3}, data[5] = {0.5, -0.25, 1.25, 0.0, 2.0}, h = 1e-6;
    double qp[1] = {0.3 + h}, qm[1] = {0.3 - h};
    double fd = (f(qp, data, 5) - f(qm, data, 5)) / (2 * h);
    double dq[1] = {0}, tq[1] = {1};
    __enzyme_autodiff((void *)f, enzyme_dup, q, dq, enzyme_const, data, enzyme_const, 5);
    check("rev", dq[0], fd);
    check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, q, tq, enzyme_const, data,
                                    enzyme_const, 5), fd);
    check("data intact", data[0] + data[4], 2.5);
#ifdef OUT_LIST
    cand_t list[K], dlist[K];
    __enzyme_autodiff((void *)g, enzyme_dup, q, dq, enzyme_const, data, enzyme_const, 5,
                      enzyme_dup, list, dlist);
#endif
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_record_with_a_constant_pointer_inserted_into_a_local_list(tmp_path, opt):
    run(tmp_path, NEAREST_ROWS, opt)


@pytest.mark.parametrize("opt", OPTS)
def test_record_with_a_constant_pointer_copied_into_a_duplicated_list_is_refused(
        tmp_path, opt):
    err = build_error(tmp_path, "#define OUT_LIST\n" + NEAREST_ROWS, opt)
    assert "copies a record holding a pointer without a shadow" in err, err


# Round CE (an image pyramid's header): a struct of a length and a pointer to
# enzyme_const weights, copied by a noinline helper (``*dst = *src``) into another local
# that the loop reads the weights through.  It was refused ("mixed"): the helper's copy
# was not followed.  Both locals are followed now; neither needs a shadow.
VIEW_COPIED = r"""
typedef struct { int n; const double *data; } View;
__attribute__((noinline)) static void copy_view(const View *src, View *dst) { *dst = *src; }
double loss(double *x, const double *w, int n) {
    View a = {n, w}, b;
    copy_view(&a, &b);
    double s = 0;
    for (int i = 0; i < b.n; i++) s += b.data[i] * x[i] * x[i];
    return s;
}
int main(void) {
    double x[3] = {1, 2, 3}, dx[3] = {0}, w[3] = {0.5, 1, 2}, tx[3] = {0, 0, 1};
    __enzyme_autodiff((void *)loss, enzyme_dup, x, dx, enzyme_const, w, enzyme_const, 3);
    check("rev 0", dx[0], 2 * 0.5 * 1);
    check("rev 2", dx[2], 2 * 2 * 3);
    check("fwd 2", __enzyme_fwddiff_d((void *)loss, enzyme_dup, x, tx, enzyme_const, w,
                                      enzyme_const, 3), 2 * 2 * 3);
    check("w intact", w[0] + w[2], 2.5);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_struct_of_a_constant_pointer_copied_by_a_helper(tmp_path, opt):
    run(tmp_path, VIEW_COPIED, opt)


# The same records kept in a local list without a helper: each copied in whole
# (``list[n++] = c``), two swapped through a temporary.  At -O0 and at -O2 the copies
# are memcpy's between the locals, and the list and the temporary are copied into each
# other: each is taken whole (``Activity.copied_pointers``).  It was refused ("mixed").
ROWS_SWAPPED = r"""
typedef struct { double d2; const double *row; double w; } cand_t;
double f(const double *q, const double *data, int nrows) {
    cand_t list[4];
    int n = 0;
    for (int r = 0; r < nrows && n < 4; r++) {
        cand_t c;
        c.row = data + r;
        double d = q[0] - c.row[0];
        c.d2 = d * d; c.w = 1.0 / (1.0 + c.d2);
        list[n++] = c;
    }
    cand_t tmp = list[0]; list[0] = list[n - 1]; list[n - 1] = tmp;
    double s = 0;
    for (int i = 0; i < n; i++) s += list[i].w * list[i].row[0] * (i + 1);
    return s;
}
int main(void) {
    double q[1] = {0.3}, data[5] = {0.5, -0.25, 1.25, 0.0, 2.0}, h = 1e-6;
    double qp[1] = {0.3 + h}, qm[1] = {0.3 - h};
    double fd = (f(qp, data, 5) - f(qm, data, 5)) / (2 * h);
    double dq[1] = {0}, tq[1] = {1};
    __enzyme_autodiff((void *)f, enzyme_dup, q, dq, enzyme_const, data, enzyme_const, 5);
    check("rev", dq[0], fd);
    check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, q, tq, enzyme_const, data,
                                    enzyme_const, 5), fd);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_records_with_constant_pointers_copied_and_swapped_in_a_local_list(tmp_path, opt):
    run(tmp_path, ROWS_SWAPPED, opt)
