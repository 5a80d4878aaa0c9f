"""Memory without a shadow (constant data reached through globals) must never
receive adjoints: at -O2, clang turns copy loops into memcpy, whose adjoint
once accumulated into the source's primal memory."""

import pytest

from helpers import build_and_run, enzyme_cc, parse_values

SOURCE = r"""
#include <stdio.h>
#include <stdlib.h>
int enzyme_dup, enzyme_const;
void __enzyme_autodiff(void *, ...);
static double *G;

__attribute__((noinline)) double f(double *x, int n) {
    double *state = malloc(n * sizeof(double));
    for (int i = 0; i < n; i++) state[i] = G[i];          /* memcpy at -O2 */
    double s = 0;
    for (int i = 0; i < n; i++) { state[i] *= x[i]; s += state[i] * state[i]; }
    free(state);
    return s;
}

int main(void) {
    enum { N = 6 };
    double x[N], dx[N] = {0};
    G = malloc(N * sizeof(double));
    for (int i = 0; i < N; i++) { G[i] = 0.5 + i; x[i] = 1.0 + 0.25 * i; }
    for (int rep = 0; rep < 2; rep++) {
        for (int i = 0; i < N; i++) dx[i] = 0;
        __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, N);
    }
    printf("G"); for (int i = 0; i < N; i++) printf(" %.17g", G[i]); printf("\n");
    printf("dx"); for (int i = 0; i < N; i++) printf(" %.17g", dx[i]); printf("\n");
    return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_constant_source_of_memcpy_is_untouched(tmp_path, opt):
    out = build_and_run(tmp_path, SOURCE, opt)
    assert out.returncode == 0, out.stderr
    vals = parse_values(out.stdout)
    g = [0.5 + i for i in range(6)]
    x = [1.0 + 0.25 * i for i in range(6)]
    assert vals["G"] == g
    assert vals["dx"] == pytest.approx([2 * x[i] * g[i] ** 2 for i in range(6)], rel=1e-14)


# Without pre-AD optimisation the IR keeps every local variable in an alloca.  A pointer
# to constant data (a global's pointer, an enzyme_const argument) kept in such a local
# once made the local's shadow hold the primal pointer, so adjoints of loads through it
# were accumulated into the program's own data.
MODES = [
    pytest.param("-O0", (), id="O0"),
    pytest.param("-O2", (), id="O2"),
    pytest.param("-O0", ("-fenzyme-preopt=0",), id="O0-nopreopt"),
    pytest.param("-O2", ("-fenzyme-preopt=0", "-Xclang", "-disable-llvm-passes"),
                 id="O2-nopreopt-raw"),
]

LOCALS = r"""
#include <stdio.h>
#include <stdlib.h>
int enzyme_dup, enzyme_const;
void __enzyme_autodiff(void *, ...);
static double *SEQ;
static int D = 5;

static double dot(const double *a, const double *b, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* returns a pointer into constant data although one argument has a shadow */
__attribute__((noinline)) static const double *goal_of(double *x, int t) {
    return SEQ + t + (x == 0);
}

__attribute__((noinline)) double f(double *x, const double *feat, int n) {
    const int d = D;                        /* integer locals copied around */
    int m = d;
    const double *goal = SEQ + n;           /* pointer loaded from a global, kept in a local */
    const double *g2 = goal_of(x, 1);
    double s = 0;
    for (int i = 0; i < m; i++) s += x[i] * x[i] * goal[i] + feat[i] * x[i] + g2[i] * x[i];
    s += dot(x, SEQ, n) + dot(feat, x, n);
    return s;
}

int main(void) {
    enum { N = 5 };
    double x[N], dx[N], feat[N];
    SEQ = malloc(2 * N * sizeof(double));
    for (int i = 0; i < 2 * N; i++) SEQ[i] = 0.5 + i;
    for (int i = 0; i < N; i++) { x[i] = 1.0 + 0.25 * i; feat[i] = 2.0 - 0.5 * i; }
    for (int rep = 0; rep < 2; rep++) {
        for (int i = 0; i < N; i++) dx[i] = 0;
        __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, feat, enzyme_const, N);
    }
    printf("SEQ"); for (int i = 0; i < 2 * N; i++) printf(" %.17g", SEQ[i]); printf("\n");
    printf("feat"); for (int i = 0; i < N; i++) printf(" %.17g", feat[i]); printf("\n");
    printf("dx"); for (int i = 0; i < N; i++) printf(" %.17g", dx[i]); printf("\n");
    return 0;
}
"""


@pytest.mark.parametrize("opt,extra", MODES)
def test_constant_pointers_in_locals_stay_untouched(tmp_path, opt, extra):
    out = build_and_run(tmp_path, LOCALS, opt, extra=extra)
    assert out.returncode == 0, out.stderr
    vals = parse_values(out.stdout)
    seq = [0.5 + i for i in range(10)]
    x = [1.0 + 0.25 * i for i in range(5)]
    feat = [2.0 - 0.5 * i for i in range(5)]
    assert vals["SEQ"] == seq
    assert vals["feat"] == feat
    want = [2 * x[i] * seq[5 + i] + 2 * feat[i] + seq[1 + i] + seq[i] for i in range(5)]
    assert vals["dx"] == pytest.approx(want, rel=1e-14)


MIXED = r"""
#include <stdio.h>
#include <stdlib.h>
int enzyme_dup, enzyme_const;
void __enzyme_autodiff(void *, ...);
static double *SEQ;

__attribute__((noinline)) double f(double *x, int n, int c) {
    const double *p = c ? x : SEQ;          /* sometimes shadowed, sometimes not */
    double s = 0;
    for (int i = 0; i < n; i++) s += p[i] * x[i];
    return s;
}

int main(void) {
    double x[3] = {1, 2, 3};
    SEQ = malloc(3 * sizeof(double));
    for (int i = 0; i < 3; i++) SEQ[i] = i + 0.5;
    for (int c = 0; c < 2; c++) {
        double dx[3] = {0};
        __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 3, enzyme_const, c);
        printf("dx%d %g %g %g\n", c, dx[0], dx[1], dx[2]);
    }
    printf("SEQ %g %g %g\n", SEQ[0], SEQ[1], SEQ[2]);
    return 0;
}
"""


# The merge's shadow is the primal pointer where SEQ (no shadow) is chosen; each access
# through it checks at run time whether its shadow is the primal memory (a compile
# error "a pointer without a shadow ... is mixed" before): SEQ receives no adjoint.
# Without pre-AD optimisation the merged pointer goes through a local variable first,
# which the check does not follow: there it stays that compile error.
@pytest.mark.parametrize("opt,extra", MODES)
def test_mixing_shadowed_and_constant_pointers_is_checked_at_run_time(tmp_path, opt, extra):
    if "-fenzyme-preopt=0" in extra:
        src = tmp_path / "mixed.c"
        src.write_text(MIXED)
        r = enzyme_cc([opt, *extra, str(src), "-o", str(tmp_path / "mixed"), "-lm"],
                      tmp_path)
        assert r.returncode != 0
        assert "in function 'f': error: a pointer without a shadow" in r.stderr, r.stderr
        return
    out = build_and_run(tmp_path, MIXED, opt, extra=extra)
    assert out.returncode == 0, out.stderr
    vals = parse_values(out.stdout)
    assert vals["dx0"] == [0.5, 1.5, 2.5]        # p = SEQ: d/dx = SEQ
    assert vals["dx1"] == [2, 4, 6]              # p = x: d/dx = 2x
    assert vals["SEQ"] == [0.5, 1.5, 2.5]


# A read-only table of floats where pointers with shadows are about too: its shadow is
# a zero-filled twin -- writable for the reverse sweep, whose adjoints for the table are
# dropped there, read-only for forward mode (tangent 0).  Before: the reverse sweep
# used the table as its own shadow and stored adjoints into it (a segfault: it is in
# .rodata), forward mode refused the program.  The shape of quadrature code that takes
# precomputed nodes for common orders and computes them into a heap buffer otherwise.
TABLE_OR_HEAP = r"""
#include <stdio.h>
#include <stdlib.h>
int enzyme_dup, enzyme_const;
double __enzyme_fwddiff(void *, ...);
void __enzyme_autodiff(void *, ...);
static const double W3[3] = {0.5555555555555556, 0.8888888888888888, 0.5555555555555556};

double quad(const double *p, int n) {
    double *wb = malloc(n * sizeof(double));
    for (int i = 0; i < n; i++) wb[i] = 2.0 / n;
    const double *w = n == 3 ? W3 : wb;     /* a table, or computed weights */
    double s = 0;
    for (int i = 0; i < n; i++) s += w[i] * p[i] * p[i];
    free(wb);
    return s;
}

double g(double *x, int c) {
    const double *q = c ? x : W3;   /* a tangent read through W3 would be 0.555... */
    return q[0] * x[1];
}

int main(void) {
    for (int n = 3; n <= 4; n++) {
        double p[4] = {0.7, -0.2, 1.3, 0.4}, dp[4] = {0}, t[4] = {0, 0, 1, 0};
        __enzyme_autodiff((void *)quad, enzyme_dup, p, dp, enzyme_const, n);
        double f = __enzyme_fwddiff((void *)quad, enzyme_dup, p, t, enzyme_const, n);
        printf("quad%d %.17g %.17g %.17g %.17g %.17g\n", n, dp[0], dp[1], dp[2], dp[3], f);
    }
    double x[2] = {2, 3}, dx[2] = {1, 0};
    printf("g %.17g %.17g\n", __enzyme_fwddiff((void *)g, enzyme_dup, x, dx, enzyme_const, 0),
           __enzyme_fwddiff((void *)g, enzyme_dup, x, dx, enzyme_const, 1));
    printf("W3 %.17g %.17g %.17g\n", W3[0], W3[1], W3[2]);
    return 0;
}
"""


@pytest.mark.parametrize("opt,extra", MODES)
def test_read_only_tables_meeting_shadowed_pointers(tmp_path, opt, extra):
    out = build_and_run(tmp_path, TABLE_OR_HEAP, opt, extra=extra)
    assert out.returncode == 0, out.stdout + out.stderr
    v = parse_values(out.stdout)
    p = [0.7, -0.2, 1.3, 0.4]
    w3 = [0.5555555555555556, 0.8888888888888888, 0.5555555555555556]
    assert v["quad3"] == pytest.approx([2 * w3[i] * p[i] for i in range(3)] + [0.0]
                                       + [2 * w3[2] * p[2]], rel=1e-15)
    assert v["quad4"] == pytest.approx([2 * 0.5 * x for x in p] + [2 * 0.5 * p[2]], rel=1e-15)
    assert v["g"] == [0.0, 3.0]     # W3[0] * x1: x1's tangent 0;  x0 * x1: 1 * 3
    assert v["W3"] == w3


# A GSL-style object keeping a pointer to a constant table beside the active data it
# allocates (a spline's knots), made by a function of its own (another file, or -O0):
# the table is passed to it and stored in the object.  Before: "a pointer without a
# shadow ... is mixed" in the constructor (the table went as constant data while the
# object had a shadow); at -O1 (constructor inlined) the reverse sweep stored into the
# table (a segfault).  Now the table goes with its zero twin as its shadow where the
# callee keeps it.
KNOTS = r"""
#include <stdio.h>
#include <stdlib.h>
int enzyme_dup, enzyme_const;
void __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);
static const double KNOTS[4] = {0.5, 1.5, 2.5, 3.0};
typedef struct { const double *xa; double *ya; int n; } interp_t;

__attribute__((noinline)) interp_t *interp_new(const double *xa, int n) {
    interp_t *o = malloc(sizeof *o);
    o->xa = xa; o->n = n;
    o->ya = malloc(n * sizeof(double));
    return o;
}
__attribute__((noinline)) void interp_free(interp_t *o) { free(o->ya); free(o); }

double fit(const double *y, int n) {
    interp_t *o = interp_new(KNOTS, n);
    for (int i = 0; i < n; i++) o->ya[i] = y[i] * y[i];
    double r = 0;
    for (int i = 0; i < n; i++) r += o->xa[i] * o->ya[i];
    interp_free(o);
    return r;
}

int main(void) {
    double y[4] = {1, 2, -3, 0.5}, dy[4] = {0};
    __enzyme_autodiff((void *)fit, enzyme_dup, y, dy, enzyme_const, 4);
    printf("rev"); for (int i = 0; i < 4; i++) printf(" %.17g", dy[i]); printf("\n");
    printf("fwd");
    for (int i = 0; i < 4; i++) {
        double t[4] = {0}; t[i] = 1;
        printf(" %.17g", __enzyme_fwddiff((void *)fit, enzyme_dup, y, t, enzyme_const, 4));
    }
    printf("\nKNOTS %.17g %.17g %.17g %.17g\n", KNOTS[0], KNOTS[1], KNOTS[2], KNOTS[3]);
    return 0;
}
"""


@pytest.mark.parametrize("opt,extra", MODES)
def test_a_constant_table_kept_in_an_object_with_a_shadow(tmp_path, opt, extra):
    out = build_and_run(tmp_path, KNOTS, opt, extra=extra)
    assert out.returncode == 0, out.stdout + out.stderr
    v = parse_values(out.stdout)
    knots, y = [0.5, 1.5, 2.5, 3.0], [1, 2, -3, 0.5]
    want = [2 * k * x for k, x in zip(knots, y)]
    assert v["rev"] == pytest.approx(want, rel=1e-15)
    assert v["fwd"] == pytest.approx(want, rel=1e-15)
    assert v["KNOTS"] == knots


# llm.c's model keeps a token buffer the forward pass memcpy's the batch into, and its
# users make the shadow model by copying the model struct and re-pointing the float
# tensors: the shadow's token buffer is the model's own.  Where type analysis could not
# tell that buffer from floats (a variable index into the struct's size_t array makes
# the whole struct one periodic class at -O0/-O1), the reverse of the memcpy zeroed
# its "shadow" -- the model's tokens -- and forward mode did the same (round W).  A
# shadow that is the primal memory itself is never zeroed.
SHARED_INTS = r"""
#include <stdio.h>
#include <string.h>
#include <stddef.h>
int enzyme_dup, enzyme_const;
void __enzyme_autodiff(void *, ...);
void __enzyme_fwddiff(void *, ...);
typedef struct { float *wte, *wpe; } Params;
typedef struct {
    Params params;
    float *encoded;
    size_t act_sizes[3];
    float *acts_memory;
    size_t num_activations;
    int batch_size, seq_len;
    int *inputs;
    float loss;
} Model;
void forward(Model *model, int *inputs, size_t B, size_t T) {
    if (model->acts_memory == NULL) {
        model->batch_size = B; model->seq_len = T;
        size_t n = 0;
        for (size_t i = 0; i < 3; i++) n += model->act_sizes[i];
        model->num_activations = n;
    }
    memcpy(model->inputs, inputs, B * T * sizeof(int));
    inputs = model->inputs;
    Params p = model->params;
    float *out = model->encoded;
    for (size_t bt = 0; bt < B * T; bt++)
        for (int i = 0; i < 2; i++)
            out[bt * 2 + i] = p.wte[inputs[bt] * 2 + i] + p.wpe[(bt % T) * 2 + i];
    float l = 0.0f;
    for (size_t i = 0; i < B * T * 2; i++) l += out[i] * out[i];
    model->loss = l;
}
int main(void) {
    float wte[8] = {1, 2, 3, 4, 5, 6, 7, 8}, dwte[8] = {0};
    float wpe[4] = {0.5f, 0.25f, -1, 1}, dwpe[4] = {0}, enc[8], denc[8] = {0};
    int buf[4] = {0}, batch[4] = {1, 2, 3, 3};
    Model m = {{wte, wpe}, enc, {8, 0, 0}, enc, 8, 2, 2, buf, 0.0f};
    Model dm = m;                     /* the shadow: a copy, float tensors re-pointed */
    dm.params.wte = dwte; dm.params.wpe = dwpe; dm.encoded = denc; dm.acts_memory = denc;
    dm.loss = 1.0f;
    __enzyme_autodiff((void *)forward, enzyme_dup, &m, &dm, enzyme_const, batch,
                      enzyme_const, (size_t)2, enzyme_const, (size_t)2);
    printf("dwte %g %g %g %g %g %g %g %g\n", dwte[0], dwte[1], dwte[2], dwte[3], dwte[4],
           dwte[5], dwte[6], dwte[7]);
    printf("tokens_rev %d %d %d %d\n", buf[0], buf[1], buf[2], buf[3]);
    memset(buf, 0, sizeof buf);
    Model tm = m;
    float twte[8] = {1, 0, 0, 0, 0, 0, 0, 0}, twpe[4] = {0}, tenc[8] = {0};
    tm.params.wte = twte; tm.params.wpe = twpe; tm.encoded = tenc; tm.acts_memory = tenc;
    __enzyme_fwddiff((void *)forward, enzyme_dup, &m, &tm, enzyme_const, batch,
                     enzyme_const, (size_t)2, enzyme_const, (size_t)2);
    printf("dloss %g\n", tm.loss);
    printf("tokens_fwd %d %d %d %d\n", buf[0], buf[1], buf[2], buf[3]);
    return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2"])
def test_shadow_struct_sharing_an_int_buffer_keeps_it(tmp_path, opt):
    out = build_and_run(tmp_path, SHARED_INTS, opt)
    assert out.returncode == 0, out.stderr
    v = parse_values(out.stdout)
    assert v["dwte"] == [0, 0, 7, 8.5, 8, 14, 27, 34.5], out.stdout
    assert v["tokens_rev"] == [1, 2, 3, 3], out.stdout
    assert v["tokens_fwd"] == [1, 2, 3, 3], out.stdout
    assert v["dloss"] == [0.0], out.stdout      # token 0 is never used: wte[0] no effect
