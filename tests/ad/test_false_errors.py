"""Issue 10's false errors and silently wrong derivatives on programs written the way
people write them (not shaped for the engine): allocation wrappers, ``a = grow(a, n)``
around realloc, a recursive BST insert that returns its argument or a fresh node, a
pointer to constant text advanced through a non-inlined parser, mixed int/double
structs copied by assignment, structs of pointers and doubles initialised from a
constant and copied, text copied into a record that holds pointers, a dynamic array grown by realloc in a non-inlined
``push``, an overlapping left-shift ``memmove``, and a global scratch array holding
active intermediates.  Each program checks reverse and forward mode against analytic
derivatives (or central differences) and prints ``FAIL`` lines; at -O0 and -O2."""

from __future__ import annotations

import pytest

from test_never_silent import OPTS, build_error, run

XMALLOC = r"""
__attribute__((noinline)) static void *xmalloc(size_t n) {
    void *p = malloc(n);
    if (!p) { fprintf(stderr, "out of memory\n"); exit(1); }
    return p;
}
__attribute__((noinline)) static void *xcalloc(size_t n, size_t m) {
    void *p = calloc(n, m);
    if (!p) abort();
    return p;
}
__attribute__((noinline)) static double *grow(double *a, size_t n) {
    double *b = realloc(a, n * sizeof *b);
    if (!b) abort();
    return b;
}
double f(const double *x, int n) {
    double *t = xmalloc(n * sizeof *t);
    double *u = xcalloc(n, sizeof *u);
    for (int i = 0; i < n; i++) { t[i] = x[i] * x[i]; u[i] += 3 * x[i]; }
    double *a = NULL;
    for (int i = 0; i < n; i++) { a = grow(a, i + 1); a[i] = t[i] * u[i]; }
    double s = 0;
    for (int i = 0; i < n; i++) s += a[i] * (i + 1);
    free(t); free(u); free(a);
    return s;          /* sum 3 x_i^3 (i + 1) */
}
int main(void) {
    double x[4] = {1, 2, 0.5, -1}, dx[4] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 4);
    for (int i = 0; i < 4; i++) check("rev dx", dx[i], 9 * x[i] * x[i] * (i + 1));
    for (int i = 0; i < 4; i++) {
        double v[4] = {0};
        v[i] = 1;
        check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, x, v, enzyme_const, 4),
              9 * x[i] * x[i] * (i + 1));
    }
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_allocation_wrappers_and_grow(tmp_path, opt):
    run(tmp_path, XMALLOC, opt)


BST = r"""
typedef struct Node { double key, val; struct Node *l, *r; } Node;
static Node *insert(Node *t, double key, double val) {
    if (!t) {
        Node *n = malloc(sizeof *n);
        n->key = key; n->val = val; n->l = n->r = NULL;
        return n;
    }
    if (key < t->key) t->l = insert(t->l, key, val);
    else t->r = insert(t->r, key, val);
    return t;
}
static double weighted(const Node *t, int depth) {
    return t ? t->val * (depth + 1) + weighted(t->l, depth + 1) + weighted(t->r, depth + 1) : 0;
}
static void destroy(Node *t) { if (t) { destroy(t->l); destroy(t->r); free(t); } }
double f(const double *x, int n) {
    Node *root = NULL;
    for (int i = 0; i < n; i++) root = insert(root, (double)((i * 7) % 5), x[i] * x[i]);
    double s = weighted(root, 0);
    destroy(root);
    return s;
}
int main(void) {
    double x[5] = {1, 2, 3, 4, 5}, dx[5] = {0};
    int depth[5] = {0, 1, 2, 2, 3};   /* keys 0 2 4 1 3 */
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 5);
    for (int i = 0; i < 5; i++) check("rev dx", dx[i], 2 * x[i] * (depth[i] + 1));
    for (int i = 0; i < 5; i++) {
        double v[5] = {0};
        v[i] = 1;
        check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, x, v, enzyme_const, 5),
              2 * x[i] * (depth[i] + 1));
    }
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_recursive_bst_insert(tmp_path, opt):
    run(tmp_path, BST, opt)


PARSE = r"""
__attribute__((noinline)) static int parse_int(const char **pp) {
    const char *p = *pp;
    int v = 0;
    while (*p >= '0' && *p <= '9') v = v * 10 + (*p++ - '0');
    if (*p == ',') p++;
    *pp = p;
    return v;
}
static const char spec[] = "2,3,1";
double f(const double *x) {
    const char *p = spec;
    double s = 0;
    for (int i = 0; i < 3; i++) { int e = parse_int(&p); s += pow(x[i], e); }
    return s;
}
int main(void) {
    double x[3] = {1.5, 2, 3}, dx[3] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx);
    double want[3] = {3, 12, 1};
    for (int i = 0; i < 3; i++) check("rev dx", dx[i], want[i]);
    double v[3] = {1, -1, 2};
    check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, x, v), 3 - 12 + 2);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_pointer_to_constant_text_through_a_parser(tmp_path, opt):
    run(tmp_path, PARSE, opt)


MIXED = r"""
typedef struct { int id; double w; int flags; double b; } Param;
double f(const Param *p, const double *x) {
    Param q = *p;
    Param arr[2];
    arr[0] = q;
    arr[1] = *p;
    arr[1].w *= 2;
    double s = 0;
    for (int i = 0; i < 2; i++) s += arr[i].w * x[i] + arr[i].b + arr[i].id;
    return s;
}
int main(void) {
    Param p = {3, 1.5, 0, 0.5}, dp = {0};
    double x[2] = {2, 3}, dx[2] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, &p, &dp, enzyme_dup, x, dx);
    check("dw", dp.w, x[0] + 2 * x[1]);
    check("db", dp.b, 2);
    check("dx0", dx[0], p.w);
    check("dx1", dx[1], 2 * p.w);
    Param tp = {0, 1, 0, 0.25};
    double v[2] = {0, 1};
    check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, &p, &tp, enzyme_dup, x, v),
          (x[0] + 2 * x[1]) + 2 * 0.25 + 2 * p.w);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_mixed_struct_assignment(tmp_path, opt):
    run(tmp_path, MIXED, opt)


DARRAY = r"""
typedef struct { double *data; size_t len, cap; } DArray;
__attribute__((noinline)) static void da_push(DArray *a, double v) {
    if (a->len >= a->cap) {
        a->cap = a->cap < 4 ? 4 : a->cap * 2;
        a->data = realloc(a->data, a->cap * sizeof *a->data);
    }
    a->data[a->len++] = v;
}
double f(const double *x, int n) {
    DArray a = {NULL, 0, 0};
    for (int i = 0; i < n; i++) da_push(&a, sin(x[i]));
    for (int i = 0; i < n; i++) da_push(&a, x[i] * a.data[i]);   /* grows twice more */
    double s = 0;
    for (size_t i = 0; i < a.len; i++) s += a.data[i];
    free(a.data);
    return s;
}
int main(void) {
    double x[7] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7}, dx[7] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 7);
    for (int i = 0; i < 7; i++)
        check("rev dx", dx[i], cos(x[i]) + sin(x[i]) + x[i] * cos(x[i]));
    for (int i = 0; i < 7; i++) {
        double v[7] = {0};
        v[i] = 1;
        check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, x, v, enzyme_const, 7),
              cos(x[i]) + sin(x[i]) + x[i] * cos(x[i]));
    }
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_dynamic_array_grown_in_push(tmp_path, opt):
    run(tmp_path, DARRAY, opt)


# Round CA: a vector in an output struct grown by realloc inside the differentiated
# function -- from empty, and the caller's own block with a value in it.  The gradient
# was right, then the caller's free(dv.data) crashed (munmap_chunk(): invalid pointer):
# the grown block's shadow came from the pass's own allocator.  It is a plain calloc
# block now, as the caller's free wants it (``AugmentedForward._escaping_realloc``).
OUTPUT_GROWN = r"""
typedef struct { int n, cap; double *data; } Vec;
static void push(Vec *v, double x) {
    if (v->n == v->cap) {
        v->cap = v->cap ? 2 * v->cap : 2;
        v->data = (double *)realloc(v->data, v->cap * sizeof(double));
    }
    v->data[v->n++] = x;
}
double f(const double *x, int n, Vec *out) {
    for (int i = 0; i < n; i++) push(out, x[i] * x[i]);
    double s = 0;
    for (int i = 0; i < out->n; i++) s += sin(out->data[i]) * (i + 1);
    return s;
}
static void fresh(Vec *v, Vec *dv, int given) {
    v->n = 0; v->cap = 0; v->data = NULL;
    if (given) {                  /* the caller's block, one value in it */
        v->cap = 3; v->n = 1;
        v->data = (double *)malloc(3 * sizeof(double)); v->data[0] = 0.5;
    }
    if (dv) { *dv = *v; dv->data = given ? (double *)calloc(3, sizeof(double)) : NULL; }
}
static double fval(const double *x, int n, int given) {
    Vec v; fresh(&v, NULL, given);
    double r = f(x, n, &v);
    free(v.data);
    return r;
}
int main(void) {
    double h = 1e-6;
    for (int given = 0; given <= 1; given++) {
        double x[7] = {0.1, 0.4, -0.3, 0.8, 0.2, -0.6, 0.7}, dx[7] = {0};
        Vec v, dv;
        fresh(&v, &dv, given);
        __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 7, enzyme_dup, &v, &dv);
        for (int i = 0; i < 7; i++) {
            double s = x[i];
            x[i] = s + h; double fp = fval(x, 7, given);
            x[i] = s - h; double fm = fval(x, 7, given);
            x[i] = s;
            check(given ? "rev given" : "rev", dx[i], (fp - fm) / (2 * h));
        }
        if (v.n != 7 + given || v.cap < v.n) printf("FAIL n %d cap %d\n", v.n, v.cap);
        free(v.data);
        free(dv.data);
    }
    return fails;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2", "-O3"])
def test_output_vector_grown_by_realloc(tmp_path, opt, valgrind):
    out = run(tmp_path, OUTPUT_GROWN, opt, valgrind)
    assert out.count("ok rev") == 14, out


# Round CB: coalescent intervals collected into an array a helper grows with realloc
# and hands back through an out-pointer; the function frees it.  The first block's
# shadow is a plain calloc block (it is handed on), and the shadow realloc read a size
# header in front of it: "corrupted size vs. prev_size" (-O0, and -O1/-O2 with the
# helper out of line).
INTERVALS = r"""
typedef struct { double len; int lineages; int coal; } interval_t;
__attribute__((noinline)) static int collect(const double *times, const int *type, int nev, interval_t **out) {
  int cap = 2, n = 0, k = 0; double tprev = 0;
  interval_t *iv = malloc(cap * sizeof *iv);
  for (int e = 0; e < nev; e++) {
    if (k >= 2) {
      if (n == cap) { cap *= 2; iv = realloc(iv, cap * sizeof *iv); }
      iv[n].len = times[e] - tprev; iv[n].lineages = k; iv[n].coal = (type[e] < 0); n++;
    }
    k += (type[e] > 0) ? 1 : -1;
    tprev = times[e];
  }
  *out = iv;
  return n;
}
double f(const double *lt, const double *times, const int *type, int nev) {
  interval_t *iv = NULL; double ll = 0;
  int n = collect(times, type, nev, &iv);
  for (int i = 0; i < n; i++) {
    double th = exp(lt[0]);
    ll += -0.5 * iv[i].lineages * (iv[i].lineages - 1) * iv[i].len / th;
    if (iv[i].coal) ll -= log(th);
  }
  free(iv);
  return ll;
}
int main(void) {
    double times[20]; int type[20], nev = 0;
    for (int i = 0; i < 10; i++) { times[nev] = 0; type[nev++] = +1; }
    for (int i = 0; i < 9; i++) { times[nev] = 0.1 * (i + 1); type[nev++] = -1; }
    double lt[1] = {-0.5}, g[1] = {0}, h = 1e-6;
    __enzyme_autodiff((void *)f, enzyme_dup, lt, g, enzyme_const, times, enzyme_const, type,
                      enzyme_const, nev);
    double p[1] = {lt[0] + h}, m[1] = {lt[0] - h};
    check("rev", g[0], (f(p, times, type, nev) - f(m, times, type, nev)) / (2 * h));
    double t[1] = {1};
    check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, lt, t, enzyme_const, times,
                                    enzyme_const, type, enzyme_const, nev), g[0]);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_intervals_grown_by_realloc_in_a_helper(tmp_path, opt, valgrind):
    run(tmp_path, INTERVALS, opt, valgrind)


# Rounds BY and CA: records holding a pointer and doubles shifted along an array (a
# delay line of taps, each pointing at its input), which -O1 and up make one memmove:
# refused, "memcpy/memset over memory that mixes floating-point values and pointers".
# A memmove within one object by a distance at which the float runs repeat is now
# moved record by record (pointers' shadows forward, adjoints back), in the order the
# overlap needs -- shifted up and down here.
SHIFTED_TAPS = r"""
typedef struct { double w; const double *src; double acc; } Tap;
/* a delay line of taps, each pointing at the input it came from */
double f(const double *in, int n) {
    Tap t[6];
    for (int i = 0; i < 6; i++) { t[i].w = 0.5 + i; t[i].src = &in[0]; t[i].acc = 0; }
    for (int k = 0; k < n; k++) {
        for (int i = 5; i > 0; i--) t[i] = t[i - 1];          /* shift up */
        t[0].src = &in[k]; t[0].acc = in[k] * in[k]; t[0].w = 1.0 + k;
    }
    double s = 0;
    for (int i = 0; i < 6; i++) s += t[i].w * t[i].acc * *t[i].src;
    for (int i = 0; i < 5; i++) t[i] = t[i + 1];              /* shift down */
    for (int i = 0; i < 5; i++) s += sin(t[i].acc) * *t[i].src;
    return s;
}
int main(void) {
    double x[5] = {0.3, -0.7, 1.1, 0.4, 0.9}, dx[5] = {0}, h = 1e-6;
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 5);
    for (int i = 0; i < 5; i++) {
        double s = x[i];
        x[i] = s + h; double fp = f(x, 5);
        x[i] = s - h; double fm = f(x, 5);
        x[i] = s;
        check("rev", dx[i], (fp - fm) / (2 * h));
    }
    return fails;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2", "-O3"])
def test_records_with_pointers_shifted_along_an_array(tmp_path, opt, valgrind):
    out = run(tmp_path, SHIFTED_TAPS, opt, valgrind)
    assert out.count("ok rev") == 5, out


# Round CD: a k-nearest list kept sorted by insertion -- `memmove(list + pos + 1,
# list + pos, (last - pos) * sizeof(cand_t))` of {double d2; const double *row}
# records -- refused at every level as mixing floating-point values and pointers.  A
# memmove of a run-time number of elements by a whole number of elements is moved
# element by element too.
SORTED_INSERT = r"""
#define K 3
typedef struct { double d2; const double *row; } cand_t;
__attribute__((noinline)) static int insert(cand_t *list, int n, cand_t c) {
    int pos = 0;
    while (pos < n && list[pos].d2 <= c.d2) pos++;
    if (pos == K) return n;
    int last = n < K ? n : K - 1;
    memmove(list + pos + 1, list + pos, (last - pos) * sizeof(cand_t));
    list[pos] = c;
    return n < K ? n + 1 : n;
}
double f(const double *q, const double *data, int nrows) {
    cand_t list[K];
    int n = 0;
    for (int r = 0; r < nrows; r++) {
        cand_t c; c.row = data + r; double d = q[0] - data[r]; c.d2 = d * d;
        n = insert(list, n, c);
    }
    double s = 0;
    for (int i = 0; i < n; i++) s += list[i].d2 * list[i].row[0];
    return s;
}
int main(void) {
    double q[1] = {0.3}, dq[1] = {0}, data[5] = {0.5, -0.25, 1.25, 0.0, 2.0}, dd[5] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, q, dq, enzyme_dup, data, dd, enzyme_const, 5);
    double h = 1e-6, qp[1] = {q[0] + h}, qm[1] = {q[0] - h};
    check("rev q", dq[0], (f(qp, data, 5) - f(qm, data, 5)) / (2 * h));
    for (int r = 0; r < 5; r++) {
        double s = data[r];
        data[r] = s + h; double fp = f(q, data, 5);
        data[r] = s - h; double fm = f(q, data, 5);
        data[r] = s;
        check("rev data", dd[r], (fp - fm) / (2 * h));
    }
    return fails;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2", "-O3"])
def test_records_inserted_into_a_sorted_array_by_memmove(tmp_path, opt, valgrind):
    out = run(tmp_path, SORTED_INSERT, opt, valgrind)
    assert out.count("ok rev") == 6, out


MEMMOVE = r"""
double f(const double *x) {
    double z[5];
    for (int i = 0; i < 5; i++) z[i] = 0.5 * x[i] * x[i];
    memmove(z, z + 2, 24);    /* z = z2 z3 z4 z3 z4 */
    double s = 0;
    for (int i = 0; i < 5; i++) s += z[i];
    return s;
}
int main(void) {
    double x[5] = {5, 7, 1, 3, 4}, dx[5] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx);
    double want[5] = {0, 0, 1, 6, 8};
    for (int i = 0; i < 5; i++) check("rev dx", dx[i], want[i]);
    for (int i = 0; i < 5; i++) {
        double v[5] = {0};
        v[i] = 1;
        check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, x, v), want[i]);
    }
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_overlapping_memmove_left_shift(tmp_path, opt):
    run(tmp_path, MEMMOVE, opt)


GLOBALS = r"""
static double scratch[8];                 /* work array for active intermediates */
static double param = 1.5;                /* set by main, only read by f */
static char arena[4096];                  /* a custom allocator's memory */
static size_t arena_top;
static int calls;
static __attribute__((noinline)) void *arena_alloc(size_t n) {
    void *p = arena + arena_top;
    arena_top += (n + 15) & ~(size_t)15;
    return p;
}
static __attribute__((noinline)) double pair_sum(int n) {   /* reads the scratch */
    double s = 0;
    for (int i = 0; i < n; i++) s += scratch[i] * scratch[(i + 1) % n];
    return s;
}
double f(const double *x, int n) {
    calls++;
    double stale = scratch[7];            /* left by an earlier call: derivative 0 */
    for (int i = 0; i < n; i++) scratch[i] = x[i] * x[i];
    double s = pair_sum(n) * param;
    arena_top = 0;
    double *t = arena_alloc(n * sizeof *t);
    for (int i = 0; i < n; i++) t[i] = sin(x[i]);
    for (int i = 0; i < n; i++) s += t[i] * t[i];
    scratch[7] = s;
    return s + 0.5 * stale;
}
int main(void) {
    double x[4] = {1, 2, 0.5, -1.5};
    double want[4];
    for (int i = 0; i < 4; i++) {
        double zl = x[(i + 3) % 4] * x[(i + 3) % 4], zr = x[(i + 1) % 4] * x[(i + 1) % 4];
        want[i] = 2 * x[i] * (zl + zr) * param + 2 * sin(x[i]) * cos(x[i]);
    }
    for (int rep = 0; rep < 2; rep++) {   /* no adjoint leaks from one call into the next */
        double dx[4] = {0};
        __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 4);
        for (int i = 0; i < 4; i++) check("rev dx", dx[i], want[i]);
        for (int i = 0; i < 4; i++) {
            double v[4] = {0};
            v[i] = 1;
            check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, x, v, enzyme_const, 4),
                  want[i]);
        }
    }
    check("primal calls", calls, 10);   /* 2 x (1 reverse + 4 forward) */
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_global_scratch_and_arena_get_shadow_globals(tmp_path, opt):
    run(tmp_path, GLOBALS, opt)


# Static work buffers reached through pointers (round M): a function-local static
# array filled by a helper through its parameter (not inlined at -O0), and two static
# buffers swapped as ping-pong pointers every time step -- "an active value is stored
# into memory that has no shadow" / "a pointer without a shadow ... is mixed" before,
# though -O1+ (inlined helper) and local buffers built (real Enzyme 15: zero gradient
# at -O0, wrong numbers or an assertion on the ping-pong).
STATIC_BUFFERS = r"""
static __attribute__((noinline)) void fill(double *w, const double *x, int n) {
    for (int i = 0; i < n; i++) w[i] = x[i] * x[i];
}
static __attribute__((noinline)) void square(double *out, const double *in, int n) {
    for (int i = 0; i < n; i++) out[i] = in[i] * in[i];
}
static double bufA[4], bufB[4];
double f(const double *x) {
    static double w[4];
    fill(w, x, 4);                              /* w = x^2 */
    double *u = bufA, *un = bufB;
    for (int i = 0; i < 4; i++) u[i] = w[i];
    for (int s = 0; s < 2; s++) {               /* u = w^4 = x^8 */
        square(un, u, 4);
        double *t = u; u = un; un = t;
    }
    return u[0] + u[1] + u[2] + u[3];
}
int main(void) {
    double x[4] = {1, 1.2, 0.5, -1}, dx[4] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx);
    for (int i = 0; i < 4; i++) check("rev", dx[i], 8 * pow(x[i], 7));
    for (int i = 0; i < 4; i++) {
        double v[4] = {0};
        v[i] = 1;
        check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, x, v), 8 * pow(x[i], 7));
    }
    return fails;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2", "-O3"])
def test_static_buffers_reached_through_pointers(tmp_path, opt):
    run(tmp_path, STATIC_BUFFERS, opt)


RECORDS = r"""
typedef struct { double x, v; int alive; int kind; } Particle;
typedef struct { double val; int n; } Acc;
typedef struct { int id; double w; } Rec;
typedef struct { int id; float f; double v; int flag; } Rec2;
static __attribute__((noinline)) Acc make_acc(double v, int n) { Acc a = {v, n}; return a; }
static __attribute__((noinline)) void step(Particle *ps, int n, double dt) {
    for (int i = 0; i < n; i++) {
        Particle p = ps[i];                   /* struct copies, split per field by SROA */
        if (p.alive) { p.x += dt * p.v; p.v *= 0.9; p.kind++; }
        ps[i] = p;
    }
}
static __attribute__((noinline)) void cpy(Particle *d, const Particle *s, int n) {
    while (n--) *d++ = *s++;
}
static __attribute__((noinline)) void sort_recs(Rec *a, int n) {
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (a[j].id < a[i].id) { Rec t = a[i]; a[i] = a[j]; a[j] = t; }
}
static __attribute__((noinline)) void copy_recs(Rec2 *d, const Rec2 *s, int n) {
    for (int i = 0; i < n; i++) d[i] = s[i];  /* int, float, double, int */
}
double f(const double *x, int n) {
    Particle ps[3], qs[3];
    for (int i = 0; i < n; i++) {
        ps[i].x = x[i]; ps[i].v = x[i] * x[i]; ps[i].alive = i != 1; ps[i].kind = i;
    }
    for (int k = 0; k < 2; k++) step(ps, n, 0.5);
    cpy(qs, ps, n);
    Acc a = make_acc(0, 0);
    for (int i = 0; i < n; i++) {
        Acc b = make_acc(a.val + qs[i].x * qs[i].v, a.n + qs[i].kind);
        a = b;
    }
    Rec r[3];
    Rec2 q[3], q2[3];
    for (int i = 0; i < n; i++) { r[i].id = (i * 2) % 3; r[i].w = x[i] * x[i] * x[i]; }
    sort_recs(r, n);
    for (int i = 0; i < n; i++) {
        q[i].id = i; q[i].flag = 1; q[i].v = r[i].w * (i + 1); q[i].f = (float)(x[i] * 0.5);
    }
    copy_recs(q2, q, n);
    double s = a.val + a.n;
    for (int i = 0; i < n; i++) s += q2[i].v + q2[i].flag + (double)q2[i].f * q2[i].f;
    return s;
}
int main(void) {
    double x[3] = {0.5, 1.5, -0.7}, dx[3] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 3);
    for (int k = 0; k < 3; k++) {
        double h = 1e-3, xp[3], xm[3];   /* float fields: a coarser step, a looser check */
        memcpy(xp, x, sizeof xp); memcpy(xm, x, sizeof xm);
        xp[k] += h; xm[k] -= h;
        double fd = (f(xp, 3) - f(xm, 3)) / (2 * h);
        double v[3] = {0};
        v[k] = 1;
        double t = __enzyme_fwddiff_d((void *)f, enzyme_dup, x, v, enzyme_const, 3);
        int ok = fabs(dx[k] - fd) < 1e-4 * (1 + fabs(fd)) && fabs(t - dx[k]) < 1e-9 * (1 + fabs(t));
        printf("%s dx %g fd %g fwd %g\n", ok ? "ok" : "FAIL", dx[k], fd, t);
    }
    return 0;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_struct_copies_of_mixed_records(tmp_path, opt):
    run(tmp_path, RECORDS, opt)


# A record with a heap pointer, a name pointing into its own buffer and text copied into
# that buffer from a literal: the memcpy moves characters into an object that also
# holds a pointer with a shadow ("memcpy of pointers from memory without a shadow into
# memory that has one" at -O0, where the object is one alloca).
NAMED = r"""
typedef struct { double *data; char *name; char buf[16]; } Obj;
static double energy(const Obj *o) { return o->data[0] * o->data[1] + strlen(o->name); }
double f(const double *x, int n) {
    Obj o;
    o.data = malloc(2 * sizeof(double));
    o.data[0] = x[0] * x[1];
    o.data[1] = sin(x[1]);
    o.name = o.buf;
    memcpy(o.buf, "model", 6);
    double r = energy(&o) * x[0];
    free(o.data);
    return r;
}
int main(void) {
    double x[2] = {0.7, -0.4}, dx[2] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 2);
    for (int k = 0; k < 2; k++) {
        double h = 1e-6, xp[2] = {x[0], x[1]}, xm[2] = {x[0], x[1]};
        xp[k] += h; xm[k] -= h;
        double v[2] = {0};
        v[k] = 1;
        char what[16];
        snprintf(what, sizeof what, "rev d%d", k);
        check(what, dx[k], (f(xp, 2) - f(xm, 2)) / (2 * h));
        snprintf(what, sizeof what, "fwd d%d", k);
        check(what, __enzyme_fwddiff_d((void *)f, enzyme_dup, x, v, enzyme_const, 2), dx[k]);
    }
    return fails != 0;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_text_copied_into_a_record_that_holds_pointers(tmp_path, opt):
    run(tmp_path, NAMED, opt)


@pytest.mark.parametrize("opt", OPTS)
def test_static_node_pool_is_a_clear_error(tmp_path, opt):
    # a global holding pointers gets no shadow global: a compile error with a way out,
    # never a dropped derivative
    from test_never_silent import build_error
    err = build_error(tmp_path, r"""
typedef struct Node { double v; struct Node *next; } Node;
static Node pool[64];
static int pool_top;
static Node *node_new(double v, Node *next) {
    Node *n = &pool[pool_top++];
    n->v = v; n->next = next;
    return n;
}
double f(const double *x, int n) {
    pool_top = 0;
    Node *head = NULL;
    for (int i = 0; i < n; i++) head = node_new(x[i] * x[i], head);
    double s = 0;
    for (Node *p = head; p; p = p->next) s += p->v;
    return s;
}
int main(void) {
    double x[3] = {1, 2, 3}, dx[3] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 3);
    printf("%g\n", dx[0]);
    return 0;
}""", opt)
    assert "stored into memory that has no shadow" in err and "static node pool" in err


MUTUAL = r"""
static double acc[2];
static __attribute__((noinline)) void yy(int d);
static __attribute__((noinline)) void zz(void) { acc[1] += acc[0] * acc[0]; }
static __attribute__((noinline)) void xx(int d) { if (d > 0) yy(d - 1); zz(); }
static __attribute__((noinline)) void yy(int d) { if (d > 0) xx(d - 1); }
double f(const double *x) {
    acc[0] = x[0] * x[1];
    acc[1] = 0;
    xx(1);          /* zz once */
    yy(1);          /* once more, through xx: yy uses the global only through recursion */
    return acc[1];  /* 2 (x0 x1)^2 */
}
int main(void) {
    double x[2] = {1.5, 0.5}, dx[2] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx);
    check("rev dx0", dx[0], 4 * x[0] * x[1] * x[1]);
    check("rev dx1", dx[1], 4 * x[0] * x[0] * x[1]);
    double v[2] = {1, -2};
    check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, x, v),
          4 * x[0] * x[1] * x[1] - 8 * x[0] * x[0] * x[1]);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_global_used_through_mutual_recursion(tmp_path, opt):
    run(tmp_path, MUTUAL, opt)


@pytest.mark.parametrize("opt", OPTS)
def test_global_passed_with_dup_and_used_by_name_is_an_error(tmp_path, opt):
    from test_never_silent import build_error
    err = build_error(tmp_path, r"""
static double state[3];
void step(double *s) { state[2] = s[0] * s[1]; s[0] = sin(state[2]); }
int main(void) {
    state[0] = 1; state[1] = 2;
    double d[3] = {1, 0, 0};
    __enzyme_autodiff((void *)step, enzyme_dup, state, d);
    printf("%g %g\n", d[0], d[1]);
    return 0;
}""", opt)
    assert "global 'state' is passed with enzyme_dup" in err and "two shadows" in err


STRUCT_RETURN = r"""
typedef struct { int n; double *data; } Buf;
typedef struct { const char *name; double v; } Named;
static __attribute__((noinline)) Buf buf_sq(const double *x, int n) {
    Buf b = {n, malloc(n * sizeof(double))};
    for (int i = 0; i < n; i++) b.data[i] = x[i] * x[i];
    return b;
}
static __attribute__((noinline)) Named named(double x) { Named n = {"sq", x * x}; return n; }
double f(const double *x) {
    Buf b = buf_sq(x, 2);
    Named a = named(x[0]);
    double s = b.data[0] * b.data[1] + a.v * (a.name[0] == 's' ? 2 : 1);
    free(b.data);
    return s;
}
int main(void) {
    double x[2] = {1.5, 0.5}, dx[2] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx);
    check("rev dx0", dx[0], 2 * x[0] * x[1] * x[1] + 4 * x[0]);
    check("rev dx1", dx[1], 2 * x[1] * x[0] * x[0]);
    double v[2] = {1, 0};
    check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, x, v), 2 * x[0] * x[1] * x[1] + 4 * x[0]);
    return fails;
}
"""


STRUCT_OF_POINTERS = r"""
typedef struct { double *a; int n; double *b; } Pair;
static __attribute__((noinline)) Pair split(double *x, int n, int k) {
    Pair p;
    p.n = n - k;
    p.a = x;                       /* an argument's pointer */
    p.b = malloc(k * sizeof(double));
    for (int i = 0; i < k; i++) p.b[i] = sin(x[n - k + i]) * x[i];
    return p;
}
double f(double *x, int n) {
    Pair p = split(x, n, 2);
    double s = 0;
    for (int i = 0; i < p.n; i++) s += p.a[i] * p.a[i];
    for (int i = 0; i < 2; i++) { p.b[i] *= s; s += p.b[i] * p.b[i]; }
    free(p.b);
    return s;
}
int main(void) {
    double x[4] = {0.3, -0.7, 1.1, 0.4}, dx[4] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 4);
    for (int i = 0; i < 4; i++) {
        double h = 1e-6, xp[4], xm[4];
        memcpy(xp, x, sizeof x); memcpy(xm, x, sizeof x);
        xp[i] += h; xm[i] -= h;
        double fd = (f(xp, 4) - f(xm, 4)) / (2 * h);
        check("rev", dx[i], fd);
        double v[4] = {0}; v[i] = 1;
        check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, x, v, enzyme_const, 4), fd);
    }
    return fails;
}
"""

POINTER_BESIDE_FLOAT = r"""
typedef struct { double *a; double s; } PS;
static __attribute__((noinline)) PS mk(double *x, int n) {
    PS p; p.a = malloc(n * sizeof(double)); p.s = 0;
    for (int i = 0; i < n; i++) { p.a[i] = x[i] * x[i]; p.s += x[i]; }
    return p;
}
double f(double *x, int n) {
    PS p = mk(x, n);
    double s = p.s * p.a[0] + p.a[1];
    free(p.a);
    return s;
}
int main(void) {
    double x[2] = {0.3, -0.7}, dx[2] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 2);
    check("dx0", dx[0], 0.3 * 0.3 + (0.3 - 0.7) * 2 * 0.3);
    check("dx1", dx[1], 0.3 * 0.3 + 2 * -0.7);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
@pytest.mark.parametrize("body", [STRUCT_RETURN, STRUCT_OF_POINTERS], ids=["buf", "pair"])
def test_pointers_returned_inside_a_struct(tmp_path, body, opt):
    # a non-inlined callee returns {int, double *} or {double *, int, double *}: the
    # struct of pointers and integers has a shadow of its own, gradients in both modes
    # (these were a silent zero, then a compile error); a struct holding a pointer to
    # constant text beside a double is fine
    run(tmp_path, body, opt)


# {double, const double *} returned by one out-of-line function and passed on by value to
# another, in forward mode (the error blamed constant data; Enzyme 15 builds it and its
# reverse-mode gradient misses the scale's term)
VIEW_PASSED_ON = r"""
typedef struct { double scale; const double *data; } View;
__attribute__((noinline)) static View mk(const double *x, double s) {
    View v = { s * x[0], x + 1 };
    return v;
}
__attribute__((noinline)) static double use(View v, int n) {
    double t = 0;
    for (int i = 0; i < n; i++) t += v.scale * v.data[i] * v.data[i];
    return t;
}
double f(const double *x, int n) { return use(mk(x, 2.0), n); }
int main(void) {
    double x[4] = {1.5, 2, 3, -1}, t[4] = {1, 0, 0, 0};
    return __enzyme_fwddiff_d((void *)f, enzyme_dup, x, t, enzyme_const, 3) > 0;
}
"""


@pytest.mark.parametrize("opt", OPTS)
@pytest.mark.parametrize("body", [POINTER_BESIDE_FLOAT, VIEW_PASSED_ON], ids=["rev", "fwd"])
def test_pointer_beside_a_float_in_a_returned_struct(tmp_path, body, opt):
    # {double *, double}: no shadow for such a struct; a compile error naming the
    # callee, never a derivative that misses what flows through the pointer
    from test_never_silent import build_error
    err = build_error(tmp_path, body, opt)
    assert "'mk' returns a struct holding a pointer" in err, err


PART_OF_OBJECT = r"""
typedef struct { int n; double pos[3]; char tag[5]; double mass; } Body;
static __attribute__((noinline)) void set(double *p, double v) { *p = v; }
double mylog1p(double x) { return log(1 + x); }
void *__enzyme_function_like[2] = {(void *)mylog1p, (void *)"log1p"};
double f(const double *x) {
    Body b = {3, {0, 0, 0}, "abcd", 0};
    for (int i = 0; i < 3; i++) set(&b.pos[i], x[i] * x[i]);   /* part of a larger object */
    set(&b.mass, mylog1p(x[0]));
    char buf[64];
    double *d = (double *)(buf + 8);                          /* a double inside a char buffer */
    *d = b.pos[1] * b.mass;
    double r = 0;
    memcpy(&r, buf + 8, sizeof r);
    return r + b.pos[0] + b.pos[2] * b.n;
}
int main(void) {
    double x[3] = {0.5, 1.5, -0.7}, dx[3] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx);
    for (int k = 0; k < 3; k++) {
        double h = 1e-6, xp[3], xm[3];
        memcpy(xp, x, sizeof xp); memcpy(xm, x, sizeof xm);
        xp[k] += h; xm[k] -= h;
        double fd = (f(xp) - f(xm)) / (2 * h), v[3] = {0};
        v[k] = 1;
        check("rev fd", dx[k], fd);
        check("fwd fd", __enzyme_fwddiff_d((void *)f, enzyme_dup, x, v), fd);
    }
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_doubles_stored_into_part_of_a_larger_object(tmp_path, opt):
    run(tmp_path, PART_OF_OBJECT, opt)


NULL_RESET = r"""
/* a holder reset to NULL by a non-inlined setter (what libc++'s unique_ptr::reset
   does): the null goes with its shadow, null, into memory that has a shadow */
typedef struct { double *p; double scale; } Holder;
__attribute__((noinline)) static void hold(Holder *h, double *q) { h->p = q; }
double f(double *x, int n) {
    Holder h;
    h.p = 0;
    h.scale = 2.0;
    hold(&h, x);
    double s = 0;
    for (int i = 0; i < n; i++) s += h.scale * h.p[i] * h.p[i];
    hold(&h, NULL);
    if (h.p == NULL) s += x[0];
    return s;          /* sum 2 x_i^2 + x_0 */
}
int main(void) {
    double x[3] = {0.5, -1.5, 2}, dx[3] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 3);
    for (int i = 0; i < 3; i++) check("rev dx", dx[i], 4 * x[i] + (i == 0));
    for (int i = 0; i < 3; i++) {
        double v[3] = {0};
        v[i] = 1;
        check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, x, v, enzyme_const, 3),
              4 * x[i] + (i == 0));
    }
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_null_pointer_stored_by_a_callee_into_shadowed_memory(tmp_path, opt):
    run(tmp_path, NULL_RESET, opt)


# Structs mixing pointer and double fields, initialised from a constant (clang copies
# `{"label", 2.0, 0}` from a private constant with memcpy) and copied by assignment
# (memcpy between two shadowed locals); a non-inlined reader uses every field
POINTER_AND_DOUBLE_FIELDS = r"""
typedef struct { const char *label; double w; double *data; int n; double bias; } Layer;
static double unit(double v) { return v; }
typedef struct { double (*act)(double); double gain; } Act;
__attribute__((noinline)) static double eval(const Layer *l, const Act *a) {
    double s = l->bias;
    for (int i = 0; i < l->n; i++) s += a->gain * a->act(l->w * l->data[i]);
    return s * (l->label[0] == 'h' ? 1.0 : -1.0);
}
double f(double *x, int n) {
    Layer l = {"hidden", 2.0, 0, 0, 0.5};
    Act a = {unit, 1.5};
    l.data = x;
    l.n = n;
    l.w = l.w * x[0];            /* w = 2 x0: active */
    Layer copy = l;              /* struct assignment */
    copy.bias += x[1];
    return eval(&copy, &a) + eval(&l, &a);
}
int main(void) {
    /* f = 2 * (1.5 * 2 x0 * sum x_i) + 0.5 + x1 + 0.5 */
    double x[3] = {0.5, -1.5, 2}, dx[3] = {0};
    double sum = x[0] + x[1] + x[2];
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 3);
    for (int i = 0; i < 3; i++)
        check("rev dx", dx[i], 6 * x[0] + 6 * sum * (i == 0) + (i == 1));
    for (int i = 0; i < 3; i++) {
        double v[3] = {0};
        v[i] = 1;
        check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, x, v, enzyme_const, 3),
              6 * x[0] + 6 * sum * (i == 0) + (i == 1));
    }
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_structs_of_pointers_and_doubles_initialised_and_copied(tmp_path, opt):
    run(tmp_path, POINTER_AND_DOUBLE_FIELDS, opt)


@pytest.mark.parametrize("opt", OPTS)
def test_initialiser_pointing_at_writable_global_is_a_clear_error(tmp_path, opt):
    """The constant initialiser holds a pointer to a writable global array without a
    shadow: the same error as storing that pointer field by field, not a guess."""
    from test_never_silent import build_error
    err = build_error(tmp_path, r"""
typedef struct { const char *name; double w; double *data; } Holder;
double table[2] = {1, 2};
static __attribute__((noinline)) double use(Holder *h) { return h->w * h->data[0]; }
double f(double *x) {
    Holder h = {"t", 2.0, table};
    h.w = x[0] * x[1];
    return use(&h);
}
int main(void) {
    double x[2] = {3, 4}, dx[2] = {0, 0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx);
    printf("%g %g\n", dx[0], dx[1]);
    return 0;
}
""", opt)
    assert "a pointer without a shadow" in err and "enzyme_dup" in err, err


# A buffer reached only through a pointer kept in a struct: a generic array (like GLib's
# GArray) whose noinline copy moves bytes through `void *data`.  The memmove sees no typed
# access to either buffer (both come from loads of `->data`, offset in bytes), so only the
# byte-offset analysis, following the `data` field to the stores of doubles in `f`, can
# say what it moves.  Before it: "memmove into memory that carries derivatives, but type
# analysis cannot tell what the memory holds".
KEPT_POINTER = r"""
typedef struct { size_t elem, len; void *data; } Array;
__attribute__((noinline)) static void array_copy(Array *dst, size_t i, const Array *src,
                                                 size_t j, size_t count) {
    memmove((char *)dst->data + i * dst->elem, (const char *)src->data + j * src->elem,
            count * src->elem);
}
static Array array_new(size_t elem, size_t len) {
    Array a = {elem, len, calloc(len, elem)};
    return a;
}
double f(const double *x, int n) {
    Array a = array_new(sizeof(double), 2 * n), b = array_new(sizeof(double), 2 * n);
    double *ad = a.data;
    for (int k = 0; k < n; k++) { ad[k] = x[k] * x[k]; ad[n + k] = 3 * x[k]; }
    array_copy(&b, 0, &a, n, n);     /* b[0..n)  = 3 x   */
    array_copy(&b, n, &a, 0, n);     /* b[n..2n) = x^2   */
    array_copy(&a, 0, &b, 0, n);     /* a[0..n)  = 3 x (overwrites x^2) */
    double s = 0;
    for (int k = 0; k < n; k++)
        s += ((double *)b.data)[k] * ((double *)b.data)[n + k] + (k + 1) * ad[k];
    free(a.data); free(b.data);
    return s;   /* sum 3 x^3 + 3 (k+1) x */
}
int main(void) {
    double x[3] = {0.5, -1.5, 2.0}, dx[3] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 3);
    for (int i = 0; i < 3; i++) check("rev dx", dx[i], 9 * x[i] * x[i] + 3 * (i + 1));
    for (int i = 0; i < 3; i++) {
        double v[3] = {0};
        v[i] = 1;
        check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, x, v, enzyme_const, 3),
              9 * x[i] * x[i] + 3 * (i + 1));
    }
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_copy_between_buffers_kept_in_structs(tmp_path, opt):
    run(tmp_path, KEPT_POINTER, opt)


# A recursive-descent expression parser (round N): numbers read with strtod, whose end
# pointer the parser follows, and variables looked up by name.  Forward mode at -O0
# segfaulted: the shadow of `end` was zeroed after strtod, and the copy of the name's
# characters read through it (real Enzyme 15: "No forward mode derivative found for
# strtod").  The shadow slot now gets the same pointer: text is its own shadow.
PARSER = r"""
#include <ctype.h>
typedef struct { const char *p; const double *vars; int err; } parser;
static double expr(parser *ps);
static void skip(parser *ps) { while (isspace((unsigned char)*ps->p)) ps->p++; }
static double primary(parser *ps) {
  skip(ps);
  if (*ps->p == '(') { ps->p++; double v = expr(ps); skip(ps); if (*ps->p == ')') ps->p++; else ps->err = 1; return v; }
  if (*ps->p == '-') { ps->p++; return -primary(ps); }
  if (isdigit((unsigned char)*ps->p) || *ps->p == '.') { char *end; double v = strtod(ps->p, &end); ps->p = end; return v; }
  if (isalpha((unsigned char)*ps->p)) {
    char name[16]; int k = 0;
    while (isalnum((unsigned char)*ps->p) && k < 15) name[k++] = *ps->p++;
    name[k] = 0;
    static const struct { const char *nm; double (*fn)(double); } funcs[] = { {"sin", sin}, {"cos", cos}, {"exp", exp}, {"log", log}, {"sqrt", sqrt} };
    for (unsigned i = 0; i < sizeof funcs / sizeof *funcs; i++)
      if (strcmp(name, funcs[i].nm) == 0) { skip(ps); ps->p++; double a = expr(ps); skip(ps); ps->p++; return funcs[i].fn(a); }
    if (k == 1 && name[0] >= 'x' && name[0] <= 'z') return ps->vars[name[0] - 'x'];
    ps->err = 2; return 0;
  }
  ps->err = 3; return 0;
}
static double power(parser *ps) { double b = primary(ps); skip(ps); if (*ps->p == '^') { ps->p++; double e = power(ps); return pow(b, e); } return b; }
static double term(parser *ps) {
  double v = power(ps);
  for (;;) { skip(ps); char c = *ps->p; if (c != '*' && c != '/') return v; ps->p++; double r = power(ps); v = c == '*' ? v * r : v / r; }
}
static double expr(parser *ps) {
  double v = term(ps);
  for (;;) { skip(ps); char c = *ps->p; if (c != '+' && c != '-') return v; ps->p++; double r = term(ps); v = c == '+' ? v + r : v - r; }
}
double eval(const char *src, const double *vars) { parser ps = { src, vars, 0 }; double v = expr(&ps); return ps.err ? NAN : v; }
int main(void) {
    const char *src = "x*sin(y) + x^3/(1 + y*y) - exp(-z*z/2)*sqrt(x+2.5) + log(1.5+cos(x*y))*z^2";
    double v[3] = {0.7, -1.3, 0.4}, dv[3] = {0}, h = 1e-6;
    __enzyme_autodiff((void *)eval, enzyme_const, src, enzyme_dup, v, dv);
    for (int i = 0; i < 3; i++) {
        double a[3] = {v[0], v[1], v[2]}, b[3] = {v[0], v[1], v[2]}, t[3] = {0};
        a[i] += h; b[i] -= h; t[i] = 1;
        double fd = (eval(src, a) - eval(src, b)) / (2 * h);
        check("reverse", dv[i], fd);
        check("forward", __enzyme_fwddiff_d((void *)eval, enzyme_const, src, enzyme_dup, v, t), fd);
    }
    return fails;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2"])
def test_expression_parser_following_strtod(tmp_path, opt):
    run(tmp_path, PARSER, opt)


# Optional weights (round D): `w = w_in ? w_in : uniform` with w_in an enzyme_const
# argument and `uniform` a malloc'd (or local) buffer of ones -- "a pointer without a
# shadow ... is mixed with pointers that have shadows" before (real Enzyme 15 builds
# it).  Nothing active is ever stored into the buffer, so it needs no shadow, and
# neither does the merge.  A buffer that does receive active values keeps its shadow.
OPTIONAL_WEIGHTS = r"""
double wsum(const double *w_in, const double *x, int n) {
    const double *w = w_in;
    double *wu = NULL, loc[8];
    if (w == NULL) {
        wu = n > 8 ? malloc(n * sizeof(double)) : loc;
        memset(wu, 0, n * sizeof(double));
        for (int i = 0; i < n; i++) wu[i] += 1.0 / n;
        w = wu;
    }
    double s = 0;
    for (int i = 0; i < n; i++) s += w[i] * x[i] * x[i];
    if (wu != loc) free(wu);
    return s;
}
int main(void) {
    double x[10], w[10];
    for (int i = 0; i < 10; i++) { x[i] = 0.3 * i - 1; w[i] = 0.1 * (i + 1); }
    for (int mode = 0; mode < 4; mode++) {
        int n = mode & 1 ? 10 : 4;                   /* malloc'd or local ones */
        const double *wp = mode & 2 ? w : NULL;
        double dx[10] = {0};
        __enzyme_autodiff((void *)wsum, enzyme_const, wp, enzyme_dup, x, dx, enzyme_const, n);
        for (int i = 0; i < n; i++) {
            double want = 2 * (wp ? w[i] : 1.0 / n) * x[i], t[10] = {0};
            t[i] = 1;
            check("reverse", dx[i], want);
            check("forward", __enzyme_fwddiff_d((void *)wsum, enzyme_const, wp, enzyme_dup,
                                                x, t, enzyme_const, n), want);
        }
    }
    return fails;
}
"""

# ... and a buffer that does receive active values, merged with the constant data: the
# merge's shadow is the primal pointer where the constant data is chosen, checked at run
# time on each access (Activity._own_merges; a compile error before).
STILL_MIXED = r"""
double wsum(const double *w_in, const double *x, int n) {
    const double *w = w_in;
    double *wu = NULL;
    if (w == NULL) {
        wu = malloc(n * sizeof(double));
        for (int i = 0; i < n; i++) wu[i] = x[i];   /* active values */
        w = wu;
    }
    double s = 0;
    for (int i = 0; i < n; i++) s += w[i] * x[i];
    free(wu);
    return s;
}
int main(void) {
    double x[3] = {1, 2, 3}, w[3] = {0.5, -1, 2};
    for (int given = 0; given < 2; given++) {
        const double *wp = given ? w : NULL;
        double dx[3] = {0};
        __enzyme_autodiff((void *)wsum, enzyme_const, wp, enzyme_dup, x, dx, enzyme_const, 3);
        for (int i = 0; i < 3; i++) {
            double want = given ? w[i] : 2 * x[i], t[3] = {0};
            t[i] = 1;
            check("reverse", dx[i], want);
            check("forward", __enzyme_fwddiff_d((void *)wsum, enzyme_const, wp, enzyme_dup,
                                                x, t, enzyme_const, 3), want);
        }
    }
    check("w intact", w[0] + 10 * w[1] + 100 * w[2], 0.5 - 10 + 200);
    return fails;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2"])
def test_optional_weights_buffer_of_constants(tmp_path, opt):
    run(tmp_path, OPTIONAL_WEIGHTS, opt)


@pytest.mark.parametrize("opt", OPTS)
def test_constant_data_merged_with_active_buffer(tmp_path, opt):
    run(tmp_path, STILL_MIXED, opt)


# An optional output the caller passes as NULL or with enzyme_const (round P: "an active
# value is stored into memory that has no shadow"; real Enzyme 15 builds it).  The
# function differentiated only stores into it (after a NULL test): what lands there
# carries no derivative anywhere.  Read back in the function, it stays an error.
OPTIONAL_OUTPUT = r"""
void f(const double *x, double *y, double *nrm) {
    y[0] = x[0] * x[1];
    if (nrm) *nrm = sqrt(x[0] * x[0] + x[1] * x[1]);
}
int main(void) {
    double x[2] = {3.0, 4.0}, y[1], n;
    for (int k = 0; k < 2; k++) {
        double dx[2] = {0, 0}, dy[1] = {1.0}, *np = k ? &n : NULL;
        __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_dup, y, dy, enzyme_const, np);
        check("reverse dx0", dx[0], 4.0);
        check("reverse dx1", dx[1], 3.0);
        double tx[2] = {1, 0}, ty[1] = {0};
        __enzyme_fwddiff((void *)f, enzyme_dup, x, tx, enzyme_dup, y, ty, enzyme_const, np);
        check("forward dy", ty[0], 4.0);
    }
    check("primal", n, 5.0);
    return fails;
}
"""

OUTPUT_READ_BACK = r"""
__attribute__((noinline)) double twice(const double *p) { return *p * 2; }
double f(const double *x, double *nrm) {
    *nrm = x[0] * x[0];
    return twice(nrm);
}
int main(void) {
    double x[1] = {3.0}, dx[1] = {0}, n;
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, &n);
    printf("%g\n", dx[0]);
    return 0;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_optional_output_passed_as_constant(tmp_path, opt):
    run(tmp_path, OPTIONAL_OUTPUT, opt)


@pytest.mark.parametrize("opt", OPTS)
def test_constant_output_read_back_stays_an_error(tmp_path, opt):
    err = build_error(tmp_path, OUTPUT_READ_BACK, opt)
    assert "an active value is stored into memory that has no shadow" in err, err


# A file-scope scratch array in vector forward mode (round P: "a global that holds
# active intermediate values ... in vector forward mode (enzyme_width > 1) is not
# supported"; real Enzyme 15 right).  Each lane now has a shadow global of its own,
# zeroed before each call like lane 0's.
SCRATCH_WIDTH = r"""
int enzyme_width;
static double scratch[16];
void f(int n, const double *a, double *b) {
    for (int i = 0; i < n; i++) scratch[i] = sin(a[i]) * a[i];
    for (int i = 0; i < n; i++) b[i] += scratch[n - 1 - i] * scratch[i];
}
int main(void) {
    double a[3] = {0.1, 0.2, 0.3};
    for (int rep = 0; rep < 2; rep++) {          /* the lanes' shadows start at zero */
        double b[3] = {0}, da[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, db[3][3] = {{0}};
        __enzyme_fwddiff((void *)f, enzyme_width, 3, enzyme_const, 3,
                         enzyme_dup, a, da[0], da[1], da[2], enzyme_dup, b, db[0], db[1], db[2]);
        for (int k = 0; k < 3; k++)              /* lane k: d b / d a_k */
            for (int i = 0; i < 3; i++) {
                int j = 2 - i;
                double s_i = sin(a[i]) * a[i], s_j = sin(a[j]) * a[j];
                double ds_i = k == i ? cos(a[i]) * a[i] + sin(a[i]) : 0;
                double ds_j = k == j ? cos(a[j]) * a[j] + sin(a[j]) : 0;
                check("lane", db[k][i], ds_j * s_i + s_j * ds_i);
            }
    }
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_scratch_global_in_vector_forward_mode(tmp_path, opt):
    run(tmp_path, SCRATCH_WIDTH, opt)


# Round CA: a file-local helper taking the function as a parameter (a template
# `grad(F f, ...)`, a C `static void grad(double (*f)(...), ...)`) at -O0: "the first
# argument must be a function known at compile time" (-O1 and up inline the helper).
# Such a holder is inlined into its callers, which pass the function.
PASSED_IN = r"""
double sq(const double *x, int n) { double s = 0; for (int i = 0; i < n; i++) s += x[i] * x[i]; return s; }
double sn(const double *x, int n) { double s = 0; for (int i = 0; i < n; i++) s += sin(x[i]); return s; }
static void grad(double (*f)(const double *, int), const double *x, double *dx, int n) {
    for (int i = 0; i < n; i++) dx[i] = 0;
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, n);
}
static double dir(double (*f)(const double *, int), const double *x, const double *v, int n) {
    return __enzyme_fwddiff_d((void *)f, enzyme_dup, x, v, enzyme_const, n);
}
int main(void) {
    double x[2] = {0.5, 2}, dx[2], v[2] = {1, 0};
    grad(sq, x, dx, 2); check("rev sq", dx[1], 4);
    grad(sn, x, dx, 2); check("rev sin", dx[1], cos(2.0));
    check("fwd sq", dir(sq, x, v, 2), 1);
    check("fwd sin", dir(sn, x, v, 2), cos(0.5));
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_function_passed_to_a_file_local_helper(tmp_path, opt):
    run(tmp_path, PASSED_IN, opt)


# Two call sites differing only in the function, in the arms of an if (round R): at -O2
# LLVM merges them into one call on `select c, @f2, @f1` (three: a phi of functions) --
# "the first argument must be a function known at compile time" (real Enzyme 15
# crashes: "Broken module").  The call is split back into one per function
# (promote.split_chosen_targets).
CHOSEN = r"""
double f1(double x) { return x * x; }
double f2(double x) { return sin(x); }
double f3(double x) { return exp(2 * x); }
int main(int argc, char **argv) {
    (void)argv;
    for (int which = 0; which < 3; which++) {
        int w = which + argc - 1;                /* not known to the optimiser */
        double d, t;
        if (w == 0) d = __enzyme_autodiff_d((void *)f1, 0.5);
        else if (w == 1) d = __enzyme_autodiff_d((void *)f2, 0.5);
        else d = __enzyme_autodiff_d((void *)f3, 0.5);
        if (w == 1) t = __enzyme_fwddiff_d((void *)f2, 0.5, 1.0);
        else t = __enzyme_fwddiff_d((void *)f1, 0.5, 1.0);
        double want = w == 0 ? 1.0 : w == 1 ? cos(0.5) : 2 * exp(1.0);
        check("reverse", d, want);
        check("forward", t, w == 1 ? cos(0.5) : 1.0);
    }
    return fails;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2", "-O3"])
def test_call_sites_merged_on_a_select_of_functions(tmp_path, opt):
    run(tmp_path, CHOSEN, opt)


# A helper that stores a pointer into a local pointer variable of its caller
# (``set(&p, w)``), with ``w`` an enzyme_const argument: the variable escaped into the
# call, so it was taken to hold pointers with shadows, and the helper's store of one
# without a shadow was refused ("mixed") at every level once the helper is not inlined
# (round T; real Enzyme 15 builds it).  Activity now follows a local through a call to a
# function that only stores, through that parameter, its other arguments or pointers
# loaded through them.  The same helper given a duplicated pointer keeps the shadow.
STORED_BY_A_HELPER = r"""
typedef struct { const double *lo, *hi; } Range;
__attribute__((noinline)) static void set(const double **dst, const double *src) { *dst = src; }
__attribute__((noinline)) static void upper(const double **dst, const Range *r) { *dst = r->hi; }
double f(const double *theta, const double *w, const Range *r) {
    const double *p, *q, *t;
    set(&p, w);                 /* constant data */
    set(&q, theta);             /* the duplicated argument */
    upper(&t, r);               /* a pointer loaded through a constant struct */
    return p[1] * theta[0] * theta[0] + q[1] * t[0] * 3.0;
}
int main(void) {
    double w[3] = {1, 2, 3}, th[2] = {0.5, -1.5}, g[2] = {0, 0}, lo = 7, hi = 4;
    Range r = {&lo, &hi};
    __enzyme_autodiff((void *)f, enzyme_dup, th, g, enzyme_const, w, enzyme_const, &r);
    /* f = w1 th0^2 + 3 hi th1 */
    check("d/dth0", g[0], 2 * w[1] * th[0]);
    check("d/dth1", g[1], 3 * hi);
    double t[2] = {1, 0};
    check("tangent", __enzyme_fwddiff_d((void *)f, enzyme_dup, th, t, enzyme_const, w,
                                        enzyme_const, &r), 2 * w[1] * th[0]);
    check("w kept", w[1], 2);
    return fails != 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2"])
def test_pointer_stored_into_a_local_by_a_helper(tmp_path, opt):
    assert run(tmp_path, STORED_BY_A_HELPER, opt).count("ok ") == 4


# A running statistic kept in an enzyme_const buffer and updated in place (darknet's
# batchnorm rolling mean, round W): `rm[i] = 0.9f * rm[i] + 0.1f * mean` stores an
# active value into memory without a shadow, and was refused at every level (Enzyme 15
# builds it).  What the function reads back from that buffer goes only into itself, so
# no derivative is lost; the buffer still gets its new value.  Reading it back into the
# result stays a compile error.
RUNNING_STAT = r"""
double f(const double *x, double *rm, int n) {
    double mean = 0;
    for (int i = 0; i < n; i++) mean += x[i];
    mean /= n;
    for (int k = 0; k < 2; k++) rm[k] = 0.9 * rm[k] + 0.1 * (k ? mean * mean : mean);
    return mean * mean READ_BACK;
}
int main(void) {
    double x[3] = {1, 2, 4}, dx[3] = {0}, rm[2] = {0.5, 0.25};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, rm, enzyme_const, 3);
    double mean = 7.0 / 3;
    for (int i = 0; i < 3; i++) check("rev", dx[i], 2 * mean / 3);
    check("rm0", rm[0], 0.9 * 0.5 + 0.1 * mean);
    check("rm1", rm[1], 0.9 * 0.25 + 0.1 * mean * mean);
    double t[3] = {1, 0, 0};
    rm[0] = 0.5; rm[1] = 0.25;
    check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, x, t, enzyme_const, rm,
                                    enzyme_const, 3), 2 * mean / 3);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_running_statistic_in_a_constant_buffer(tmp_path, opt):
    run(tmp_path, RUNNING_STAT.replace("READ_BACK", ""), opt)


def test_running_statistic_read_back_is_refused(tmp_path):
    err = build_error(tmp_path, RUNNING_STAT.replace("READ_BACK", "+ rm[1]"), "-O2")
    assert "stored into memory that has no shadow" in err, err


# Numerical Recipes' Bulirsch-Stoer keeps its extrapolation tableau in file-scope
# pointers (`static double **d, *x`) that the differentiated code allocates with the
# book's matrix()/vector() (round V, pzextr): "an active value is stored into memory
# that has no shadow" at every level (Enzyme 15 builds it).  A global holding a pointer
# that the code stores a block it allocates into gets a shadow global holding the
# block's shadow.  Reading the pointer the caller left there before that store stops
# the program with a message (its memory has no shadow).
NR_GLOBALS = r"""
static double **d, *xs;
static double *vector(long nl, long nh) {
    double *v = (double *)malloc((size_t)(nh - nl + 2) * sizeof(double));
    return v - nl + 1;
}
static void free_vector(double *v, long nl, long nh) { (void)nh; free(v + nl - 1); }
static double **matrix(long nrl, long nrh, long ncl, long nch) {
    long nrow = nrh - nrl + 1, ncol = nch - ncl + 1;
    double **m = (double **)malloc((size_t)(nrow + 1) * sizeof(double *));
    m += 1; m -= nrl;
    m[nrl] = (double *)malloc((size_t)(nrow * ncol + 1) * sizeof(double));
    m[nrl] += 1; m[nrl] -= ncl;
    for (long i = nrl + 1; i <= nrh; i++) m[i] = m[i - 1] + ncol;
    return m;
}
static void free_matrix(double **m, long nrl, long nrh, long ncl, long nch) {
    (void)nrh; (void)nch; free(m[nrl] + ncl - 1); free(m + nrl - 1);
}
__attribute__((noinline)) static void extrap(int k, double h, double *y, int n) {
    xs[k] = h * h;
    for (int j = 1; j <= n; j++) d[j][k] = y[j] * (1 + xs[k]);
}
double f(const double *y0, int n) {
    d = matrix(1, n, 1, 3);
    xs = vector(1, 3);
    double *y = vector(1, n);
    for (int j = 1; j <= n; j++) y[j] = y0[j - 1];
    for (int k = 1; k <= 3; k++) {
        extrap(k, 0.5 / k, y, n);
        for (int j = 1; j <= n; j++) y[j] = sin(y[j]);
    }
    double s = 0;
    for (int j = 1; j <= n; j++)
        for (int k = 1; k <= 3; k++) s += d[j][k] * d[j][k] * k;
    free_vector(y, 1, n); free_vector(xs, 1, 3); free_matrix(d, 1, n, 1, 3);
    return s;
}
int main(void) {
    double y[2] = {0.3, -0.8}, dy[2] = {0}, h = 1e-6;
    __enzyme_autodiff((void *)f, enzyme_dup, y, dy, enzyme_const, 2);
    for (int i = 0; i < 2; i++) {
        double s = y[i];
        y[i] = s + h; double fp = f(y, 2);
        y[i] = s - h; double fm = f(y, 2);
        y[i] = s;
        check("rev", dy[i], (fp - fm) / (2 * h));
    }
    double t[2] = {1, 0.5}, yp[2] = {y[0] + h, y[1] + 0.5 * h}, ym[2] = {y[0] - h, y[1] - 0.5 * h};
    check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, y, t, enzyme_const, 2),
          (f(yp, 2) - f(ym, 2)) / (2 * h));
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_file_scope_pointers_to_scratch_allocated_inside(tmp_path, opt):
    run(tmp_path, NR_GLOBALS, opt)


LEFT_BY_THE_CALLER = r"""
double *work;
double f(double v) {
    work[0] = v * v;               /* the caller's block: it has no shadow */
    double r = work[0];
    work = (double *)malloc(sizeof(double));
    work[0] = r * v;
    r = work[0];
    free(work);
    return r;
}
int main(void) {
    work = (double *)malloc(sizeof(double));
    printf("d %g\n", __enzyme_autodiff_d((void *)f, enzyme_out, 3.0));
    return 0;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_global_pointer_read_before_the_code_sets_it_stops(tmp_path, opt):
    import subprocess
    from pathlib import Path
    from helpers import enzyme_cc
    from test_never_silent import PRELUDE
    src = Path(tmp_path) / "t.c"
    src.write_text(PRELUDE + LEFT_BY_THE_CALLER)
    r = enzyme_cc([opt, str(src), "-o", str(Path(tmp_path) / "t"), "-lm"], tmp_path)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(Path(tmp_path) / "t")], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode != 0 and "d " not in out.stdout, out.stdout
    assert "the pointer in global 'work' was read by the derivative before" in out.stderr


# Rounds BY and BZ (a solver keeping its double workspace in a file-scope pointer,
# allocated or grown on first use): the first derivative call was right, any later one
# (or one after the program's own call) stopped with "the pointer in global 'work' was
# read by the derivative before ...".  A file-local variable that only ever holds
# blocks of malloc/calloc/realloc gets a zeroed shadow of the block's size when read
# first (``analysis.globals.heap_block_only``); the extern `work` above still stops.
WORKSPACES = r"""
static double *work;                 /* grown on demand */
static int cap;
static double *tab;                  /* allocated on first use */
static double *scr;                  /* freed and allocated again each call */
static void ensure(int n) {
    if (cap < n) { work = (double *)realloc(work, n * sizeof(double)); cap = n; }
}
double energy(const double *x, int n) {
    ensure(n);
    if (!tab) tab = (double *)calloc(16, sizeof(double));
    free(scr);
    scr = (double *)malloc(n * sizeof(double));
    for (int i = 0; i < n; i++) {
        work[i] = sin(x[i]) * x[i];
        tab[i % 16] = work[i] + tab[i % 16] * 0.0 + 1.0;
        scr[i] = x[i] * tab[i % 16];
    }
    double s = 0;
    for (int i = 0; i < n; i++) s += work[i] * work[(i + 1) % n] + scr[i] * scr[i];
    return s;
}
int main(void) {
    double h = 1e-6;
    for (int n = 3; n <= 7; n += 2) {
        double x[7], dx[7] = {0}, t[7];
        for (int i = 0; i < n; i++) { x[i] = 0.3 + 0.1 * i; t[i] = 1.0 - 0.2 * i; }
        energy(x, n);                               /* the program's own call first */
        __enzyme_autodiff((void *)energy, enzyme_dup, x, dx, enzyme_const, n);
        __enzyme_autodiff((void *)energy, enzyme_dup, x, dx, enzyme_const, n);
        for (int i = 0; i < n; i++) {
            double s = x[i];
            x[i] = s + h; double fp = energy(x, n);
            x[i] = s - h; double fm = energy(x, n);
            x[i] = s;
            check("rev", dx[i] / 2, (fp - fm) / (2 * h));
        }
        double xp[7], xm[7];
        for (int i = 0; i < n; i++) { xp[i] = x[i] + h * t[i]; xm[i] = x[i] - h * t[i]; }
        double want = (energy(xp, n) - energy(xm, n)) / (2 * h);
        check("fwd", __enzyme_fwddiff_d((void *)energy, enzyme_dup, x, t, enzyme_const, n), want);
    }
    free(work); free(tab); free(scr);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_file_scope_workspaces_kept_between_calls(tmp_path, opt, valgrind):
    out = run(tmp_path, WORKSPACES, opt, valgrind)
    assert out.count("ok rev") == 15 and out.count("ok fwd") == 3, out


# Round CE: a stereo matcher's cost volume in a file-scope buffer grown by realloc and
# handed out by an accessor (`double *get_buf(n)`), allocated by the program's own call
# first: -O0 stopped with "the pointer in global 'g_buf' was read by the derivative
# before ..." (the accessor returns the block, kept in a local at -O0).
ACCESSOR = r"""
static double *g_buf = NULL;
static size_t g_cap = 0;
static double *get_buf(size_t n) {
    if (n > g_cap) { g_buf = realloc(g_buf, n * sizeof(double)); g_cap = n; }
    return g_buf;
}
double loss(const double *x, int n) {
    double *t = get_buf(n);
    for (int i = 0; i < n; i++) t[i] = x[i] * x[i];
    double s = 0;
    for (int i = 0; i < n; i++) s += t[i] * t[(i + 1) % n];
    return s;
}
int main(void) {
    double x[3] = {1, 2, 3}, dx[3] = {0};
    check("primal", loss(x, 3), 4 + 36 + 9);
    for (int k = 0; k < 2; k++)
        __enzyme_autodiff((void *)loss, enzyme_dup, x, dx, enzyme_const, 3);
    check("rev 0", dx[0], 2 * (2 * 1 * 4 + 2 * 1 * 9));
    check("rev 1", dx[1], 2 * (2 * 2 * 1 + 2 * 2 * 9));
    check("fwd", __enzyme_fwddiff_d((void *)loss, enzyme_dup, x, (double[]){0, 0, 1},
                                    enzyme_const, 3), 2 * 3 * 4 + 2 * 3 * 1);
    free(g_buf);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_workspace_handed_out_by_an_accessor(tmp_path, opt, valgrind):
    run(tmp_path, ACCESSOR, opt, valgrind)


# Round CC: observations loaded from a file on the first call into a file-scope
# pointer (a calibration harness); the program's own call comes first.  The derivative
# stopped with "the pointer in global 's_q' was read by the derivative before ...".
LAZY_OBSERVATIONS = r"""
#include <unistd.h>
static double *s_q = NULL;
static int s_n = 0;
static char path[64];
static int load(void) {
    if (s_q) return s_n;
    FILE *f = fopen(path, "rb");
    if (!f) exit(2);
    s_n = 3; s_q = malloc(s_n * sizeof(double));
    if (fread(s_q, sizeof(double), s_n, f) != 3) exit(2);
    fclose(f);
    return s_n;
}
double sse(const double *p) {
    int n = load(); double J = 0;
    for (int t = 0; t < n; ++t) J += (p[0] * t - s_q[t]) * (p[0] * t - s_q[t]);
    return J;
}
int main(void) {
    double q[3] = {1, 2, 3};
    snprintf(path, sizeof path, "/tmp/enzyme_py_obs_%d.bin", (int)getpid());
    FILE *f = fopen(path, "wb"); fwrite(q, sizeof(double), 3, f); fclose(f);
    double p[1] = {0.0}, dp[1] = {0.0};
    check("primal", sse(p), 14);
    __enzyme_autodiff((void *)sse, enzyme_dup, p, dp);
    check("rev", dp[0], -16);
    check("fwd", __enzyme_fwddiff_d((void *)sse, enzyme_dup, p, (double[]){1.0}), -16);
    unlink(path);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_observations_loaded_into_a_file_scope_pointer(tmp_path, opt):
    run(tmp_path, LAZY_OBSERVATIONS, opt)


# Round BY (a power-grid solver keeping its CSR index arrays in file-scope pointers,
# allocated on first use): a block that only ever holds integers needs no shadow, and
# the variable may be read before the derivative stores one -- the program's own first
# call allocated it.  It stopped with "the pointer in global 'g_idx' was read by the
# derivative before ..." (Enzyme 15: a verifier error at -O0, a segfault at -O2).
INTEGER_WORKSPACE = r"""
static int *g_idx = NULL, *g_cnt = NULL, *g_copy = NULL;
double f(const double *x, int n) {
    if (!g_idx) {
        g_idx = malloc(sizeof(int) * n); g_cnt = calloc(n, sizeof(int));
        for (int i = 0; i < n; i++) g_idx[i] = n - 1 - i;
        g_copy = malloc(sizeof(int) * n);
        for (int i = 0; i < n; i++) g_copy[i] = g_idx[i];   /* a memcpy at -O1 and up */
    }
    for (int i = 0; i < n; i++) { g_idx[i] = n - 1 - i; g_cnt[i]++; }
    double s = 0;
    for (int i = 0; i < n; i++) s += x[g_idx[i]] * x[i] * (g_cnt[i] > 0);
    return s;
}
int main(void) {
    double x[3] = { 1, 2, 3 }, dx[3] = { 0 }, t[3] = { 0, 1, 0 };
    check("primal", f(x, 3), 10);      /* allocates the workspace outside the derivative */
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 3);
    check("rev 0", dx[0], 6); check("rev 1", dx[1], 4); check("rev 2", dx[2], 2);
    check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, x, t, enzyme_const, 3), 4);
    free(g_idx); free(g_cnt); free(g_copy);
    g_idx = NULL;                      /* allocated inside the derivative this time */
    for (int i = 0; i < 3; i++) dx[i] = 0;
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 3);
    check("rev again", dx[0], 6);
    free(g_idx); free(g_cnt); free(g_copy);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_integer_workspace_kept_in_file_scope_pointers(tmp_path, opt, valgrind):
    run(tmp_path, INTEGER_WORKSPACE, opt, valgrind)


# Round Z (signal processing): a mixer keeps the buffers of its channels in a file-scope
# array of structs, set by `register_chan` and read by a `render` LLVM does not inline;
# a filter keeps its active taps in a file-scope pointer.  The pointers stored there were
# enzyme_dup arguments: every derivative came out 0, without an error, at -O0 (and at
# -O2 with the reader not inlined).  Such a global now gets a shadow global holding the
# caller's shadows.
GLOBAL_REGISTRY = r"""
typedef struct { const double *buf; double gain; } Chan;
static Chan chans[2];
static const double *taps;
__attribute__((noinline)) void register_chan(int i, const double *b, double g) {
    chans[i].buf = b; chans[i].gain = g;
}
__attribute__((noinline)) double render(int n) {
    double s = 0;
    for (int c = 0; c < 2; c++)
        for (int i = 0; i < n; i++) s += chans[c].gain * chans[c].buf[i] * chans[c].buf[i];
    return s;
}
__attribute__((noinline)) static double fir(const double *x, int n) {
    double y = 0;
    for (int k = 0; k < n; k++) y += taps[k] * x[k];
    return y;
}
double f(const double *a, const double *b, const double *h, const double *x, double g) {
    register_chan(0, a, g);
    register_chan(1, b, 2.0);
    taps = h;
    return render(3) + fir(x, 3) * fir(a, 3);
}
int main(void) {
    double a[3] = {1, 2, 3}, b[3] = {4, 5, 6}, h[3] = {0.5, -1, 0.25}, x[3] = {1, -2, 3};
    double da[3] = {0}, db[3] = {0}, dh[3] = {0}, g = 1.5;
    double fx = h[0] * x[0] + h[1] * x[1] + h[2] * x[2];
    double fa = h[0] * a[0] + h[1] * a[1] + h[2] * a[2];
    double dg = __enzyme_autodiff_d((void *)f, enzyme_dup, a, da, enzyme_dup, b, db,
                                    enzyme_dup, h, dh, enzyme_const, x, enzyme_out, g);
    double aa = 0;
    for (int i = 0; i < 3; i++) aa += a[i] * a[i];
    check("rev dg", dg, aa);
    for (int i = 0; i < 3; i++) {
        check("rev da", da[i], 2 * g * a[i] + fx * h[i]);
        check("rev db", db[i], 4 * b[i]);
        check("rev dh", dh[i], x[i] * fa + fx * a[i]);
    }
    double ta[3] = {1, 0, -1}, tb[3] = {0}, th[3] = {0, 1, 0}, tx[3] = {0};
    double want = 2 * g * (a[0] - a[2]) + fx * (h[0] - h[2]) + x[1] * fa + fx * a[1];
    check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, a, ta, enzyme_dup, b, tb,
                                    enzyme_dup, h, th, enzyme_dup, x, tx,
                                    enzyme_const, g), want);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_dup_pointers_kept_in_globals_get_shadow_globals(tmp_path, opt):
    run(tmp_path, GLOBAL_REGISTRY, opt)


# The same global receiving an enzyme_const pointer: it gets no shadow; reading through
# it reads constant data (derivative zero), as before.
GLOBAL_CONST_POINTER = r"""
static const double *params;
__attribute__((noinline)) static double model(double t) { return params[0] * t + params[1] * t * t; }
double f(const double *p, double t) { params = p; return model(t) * model(t); }
int main(void) {
    double p[2] = {0.5, -1.5}, t = 1.25;
    double m = p[0] * t + p[1] * t * t;
    check("rev", __enzyme_autodiff_d((void *)f, enzyme_const, p, enzyme_out, t),
          2 * m * (p[0] + 2 * p[1] * t));
    check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_const, p, enzyme_dup, t, 1.0),
          2 * m * (p[0] + 2 * p[1] * t));
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_constant_pointer_kept_in_a_global_stays_constant(tmp_path, opt):
    run(tmp_path, GLOBAL_CONST_POINTER, opt)


# ... and both kinds of pointer stored into one global read back elsewhere: no single
# shadow can serve, so a compile error where the pointer with a shadow is stored.
GLOBAL_MIXED_POINTERS = r"""
static const double *cur;
static const double unit[2] = {1, 1};
__attribute__((noinline)) static double use(void) { return cur[0] * cur[1]; }
double f(const double *x, int k) {
    double s = 0;
    cur = unit; s += use();
    if (k) { cur = x; s += use(); }
    return s;
}
int main(void) {
    double x[2] = {3, 5}, dx[2] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 1);
    printf("%g %g\n", dx[0], dx[1]);
    return 0;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_pointers_with_and_without_shadow_in_one_global_is_an_error(tmp_path, opt):
    err = build_error(tmp_path, GLOBAL_MIXED_POINTERS, opt)
    assert "stored into global 'cur'" in err and "gets no shadow" in err, err
    assert "in function 'f'" in err, err
    # marked inactive, the global carries no derivative, by request: no error
    inactive = GLOBAL_MIXED_POINTERS.replace(
        "static const double unit[2] = {1, 1};",
        "static const double unit[2] = {1, 1};\nvoid *__enzyme_inactive_global[] = {(void *)&cur};")
    inactive = inactive.replace('printf("%g %g\\n", dx[0], dx[1]);',
                                'check("dropped", dx[0] + dx[1], 0); check("x", x[0], 3);')
    run(tmp_path, inactive, opt)


# Round Z: SIMD and FFT libraries round a malloc'd block up to an alignment through an
# integer, and keep the raw pointer just before the aligned block.  Refused ("'inttoptr'
# makes a pointer out of an integer...") where Enzyme 15 builds it; the shadow block is
# now rounded the same way.
ALIGNED_ALLOC = r"""
#include <stdint.h>
static void *aligned_malloc(size_t size, size_t align) {
    void *raw = malloc(size + align + sizeof(void *));
    uintptr_t p = ((uintptr_t)raw + sizeof(void *) + align - 1) & ~(uintptr_t)(align - 1);
    ((void **)p)[-1] = raw;
    return (void *)p;
}
static void aligned_free(void *p) { if (p) free(((void **)p)[-1]); }
double f(const double *x, int n) {
    double *t = aligned_malloc(n * sizeof(double), 64);
    if ((uintptr_t)t % 64) abort();
    double *u = (double *)(((uintptr_t)malloc(n * sizeof(double) + 31) + 31) & ~(uintptr_t)31);
    for (int i = 0; i < n; i++) { t[i] = x[i] * x[i]; u[i] = sin(x[i]); }
    double s = 0;
    for (int i = 0; i < n; i++) s += t[i] * u[(i + 1) % n];
    aligned_free(t);
    return s;       /* u's raw block is kept: freeing it needs the raw pointer */
}
int main(void) {
    double x[5] = {0.5, -1, 2, 0.25, 1.5}, dx[5] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 5);
    for (int i = 0; i < 5; i++) {
        int p = (i + 4) % 5;        /* the term whose u is x[i] */
        check("rev", dx[i], 2 * x[i] * sin(x[(i + 1) % 5]) + x[p] * x[p] * cos(x[i]));
    }
    double v[5] = {1, 0, 0, 0, 0};
    check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, x, v, enzyme_const, 5),
          2 * x[0] * sin(x[1]) + x[4] * x[4] * cos(x[0]));
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_blocks_aligned_through_an_integer(tmp_path, opt):
    run(tmp_path, ALIGNED_ALLOC, opt)


# An address made of two pointers' (an XOR-linked list) has no such shadow: still an error.
XOR_LIST = r"""
#include <stdint.h>
typedef struct { double v; uintptr_t link; } Node;
double f(const double *x, int n) {
    Node *nodes = malloc(n * sizeof(Node));
    for (int i = 0; i < n; i++) {
        nodes[i].v = x[i] * x[i];
        uintptr_t prev = i ? (uintptr_t)&nodes[i - 1] : 0;
        uintptr_t next = i + 1 < n ? (uintptr_t)&nodes[i + 1] : 0;
        nodes[i].link = prev ^ next;
    }
    double s = 0;
    uintptr_t prev = 0;
    for (Node *c = nodes; c; ) {
        s += c->v;
        Node *nx = (Node *)(c->link ^ prev);
        prev = (uintptr_t)c;
        c = nx;
    }
    free(nodes);
    return s;
}
int main(void) {
    double x[3] = {1, 2, 3}, dx[3] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 3);
    printf("%g %g %g\n", dx[0], dx[1], dx[2]);
    return 0;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_xor_linked_list_is_an_error(tmp_path, opt):
    err = build_error(tmp_path, XOR_LIST, opt)
    assert "inttoptr" in err, err


# Round AC: a parser keeps its state (a copy of the caller's environment, whose `vals`
# is the enzyme_dup pointer, and a table of names it appends to) in a file-scope
# pointer, and reads back only integers and text through it: no derivative can be lost
# there, so no error (the check above refused it for a while).
PARSER_STATE = r"""
typedef struct { const char *names[8]; double *vals; int n; } env_t;
static env_t *penv;
__attribute__((noinline)) static int lookup(const char *s) {
    for (int i = 0; i < penv->n; i++)
        if (!strcmp(penv->names[i], s)) return i;
    return -1;
}
__attribute__((noinline)) static void define(const char *s) {
    char *nm = malloc(strlen(s) + 1);
    strcpy(nm, s);
    penv->names[penv->n++] = nm;
}
double f(env_t *env) {
    env_t local = *env;
    penv = &local;
    define("z");
    int x = lookup("x"), y = lookup("y"), z = lookup("z");
    double r = env->vals[x] * env->vals[x] * env->vals[y] + (z == 2 ? env->vals[y] : 0);
    for (int i = env->n; i < local.n; i++) free((void *)local.names[i]);
    return r;
}
int main(void) {
    double v[2] = {1.5, -2}, dv[2] = {0};
    env_t e = {{"x", "y"}, v, 2}, de = {{"x", "y"}, dv, 2};
    __enzyme_autodiff((void *)f, enzyme_dup, &e, &de);
    check("rev dx", dv[0], 2 * v[0] * v[1]);
    check("rev dy", dv[1], v[0] * v[0] + 1);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_parser_state_in_a_global_pointer(tmp_path, opt):
    run(tmp_path, PARSER_STATE, opt)


# Round AD (probing the shadow globals above): the pointer stored through a pointer to
# the global (a setter on a global object, `bind(&g_ctx, x)`), or into a function-local
# static reached through an accessor: derivatives 0 at -O0 (and at -O2 where the setter
# is not inlined).  (A thread-local pointer variable was refused then; it gets a
# thread-local shadow global now: test_thread_local.py.)
GLOBAL_SETTERS = r"""
struct ctx { double *p; int n; };
static struct ctx g_ctx;
__attribute__((noinline)) void ctx_bind(struct ctx *c, double *x, int n) { c->p = x; c->n = n; }
__attribute__((noinline)) static double read_ctx(void) {
    double s = 0;
    for (int i = 0; i < g_ctx.n; i++) s += g_ctx.p[i] * g_ctx.p[i];
    return s;
}
__attribute__((noinline)) static double **slot(void) { static double *p; return &p; }
__attribute__((noinline)) static double read_slot(void) { return (*slot())[0] * 3; }
double f(double *x, double *y) {
    ctx_bind(&g_ctx, x, 2);
    *slot() = y;
    return read_ctx() * read_slot();
}
int main(void) {
    double x[2] = {1.5, -2}, y[1] = {0.5}, dx[2] = {0}, dy[1] = {0};
    double q = x[0] * x[0] + x[1] * x[1];
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_dup, y, dy);
    for (int i = 0; i < 2; i++) check("rev dx", dx[i], 2 * x[i] * 3 * y[0]);
    check("rev dy", dy[0], 3 * q);
    double tx[2] = {1, 0}, ty[1] = {1};
    check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, x, tx, enzyme_dup, y, ty),
          2 * x[0] * 3 * y[0] + 3 * q);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_pointers_stored_through_setters_and_accessors(tmp_path, opt):
    run(tmp_path, GLOBAL_SETTERS, opt)


# ... and an address passed down or returned as an integer (a tagged pointer) and turned
# back into a pointer there: the shadow cannot follow the integer (derivatives were 0).
TAGGED_ARGUMENT = r"""
#include <stdint.h>
__attribute__((noinline)) static double sumsq(uintptr_t tagged) {
    double *p = (double *)(tagged & ~(uintptr_t)1);
    return p[0] * p[0];
}
double f(double *x) { return sumsq((uintptr_t)x | 1); }
int main(void) {
    double x = 3, dx = 0;
    __enzyme_autodiff((void *)f, enzyme_dup, &x, &dx);
    printf("%g\n", dx);
    return 0;
}
"""

TAGGED_RESULT = r"""
#include <stdint.h>
__attribute__((noinline)) static uintptr_t tag(double *p) { return (uintptr_t)p | 1; }
double f(double *x) {
    double *p = (double *)(tag(x) & ~(uintptr_t)1);
    return p[0] * p[0];
}
int main(void) {
    double x = 3, dx = 0;
    __enzyme_autodiff((void *)f, enzyme_dup, &x, &dx);
    printf("%g\n", dx);
    return 0;
}
"""


TAGGED_VIEW = r"""
#include <stdint.h>
typedef struct { uintptr_t tagged; int n; } View;
__attribute__((noinline)) static View make_view(double *p, int n, int owned) {
    View v = {(uintptr_t)p | (uintptr_t)(owned & 1), n};
    return v;
}
__attribute__((noinline)) static double view_sumsq(View v) {
    double *p = (double *)(v.tagged & ~(uintptr_t)1), s = 0;
    for (int i = 0; i < v.n; i++) s += p[i] * p[i];
    return s;
}
double f(double *x, int n) { return view_sumsq(make_view(x, n, 0)); }
int main(void) {
    double x[2] = {3, 4}, dx[2] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 2);
    printf("%g %g\n", dx[0], dx[1]);
    return 0;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_integer_addresses_across_calls_are_errors(tmp_path, opt):
    # (round AD: a tagged view built by an out-of-line helper, passed by value: 0 at -O0)
    err = build_error(tmp_path, TAGGED_VIEW, opt)
    assert "passed as an integer to 'view_sumsq'" in err, err
    err = build_error(tmp_path, TAGGED_ARGUMENT, opt)
    assert "passed as an integer to 'sumsq'" in err, err
    err = build_error(tmp_path, TAGGED_RESULT, opt)
    assert "inttoptr" in err, err


# Round AD: a bump allocator aligning with integer arithmetic and checking the arena's
# end picks its result with a select between two addresses of the same block; optimised
# (the arena's top in a register) that select is followed like the arithmetic.  (At -O0
# the top lives in memory as an integer, passed by address: still refused.)
BUMP_ARENA = r"""
#include <stdint.h>
static void *bump(uintptr_t *top, uintptr_t end, size_t n) {
    uintptr_t p = (*top + 15) & ~(uintptr_t)15;
    if (p + n > end) return NULL;
    *top = p + n;
    return (void *)p;
}
double f(const double *x, int n) {
    char *mem = malloc(1024);
    uintptr_t top = (uintptr_t)mem;
    double *y = bump(&top, (uintptr_t)mem + 1024, n * sizeof(double));
    double *z = bump(&top, (uintptr_t)mem + 1024, n * sizeof(double));
    if (!y || !z) abort();
    double s = 0;
    for (int i = 0; i < n; i++) { y[i] = x[i] * x[i]; z[i] = y[i] * x[i]; }
    for (int i = 0; i < n; i++) s += z[i] + y[i];
    free(mem);
    return s;
}
int main(void) {
    double x[3] = {0.5, -2, 1.5}, dx[3] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 3);
    for (int i = 0; i < 3; i++) check("rev", dx[i], 3 * x[i] * x[i] + 2 * x[i]);
    double v[3] = {0, 1, 0};
    check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, x, v, enzyme_const, 3),
          3 * x[1] * x[1] + 2 * x[1]);
    return fails;
}
"""


@pytest.mark.parametrize("opt", ["-O1", "-O2"])
def test_bump_allocator_aligning_with_integers(tmp_path, opt):
    run(tmp_path, BUMP_ARENA, opt)


# Round Z's embedded filter: a file-scope filter state holds the enzyme_dup taps and the
# address of a file-scope delay line the code writes the input into; at -O0 this was a
# zero gradient, then (with the checks above) a compile error.  The delay line, a
# writable global whose address is kept there, takes a shadow global too.
EMBEDDED_FIR = r"""
#define NT 3
static double g_delay[NT - 1 + 4];
static struct { const double *taps; double *delay; int ntaps; } g_fir;
__attribute__((noinline)) static double fir_block(const double *in, int n) {
    double *d = g_fir.delay, s = 0;
    memcpy(d + g_fir.ntaps - 1, in, n * sizeof(double));
    for (int i = 0; i < n; i++) {
        double acc = 0;
        const double *xp = d + i + g_fir.ntaps - 1;
        for (int k = 0; k < g_fir.ntaps; k++) acc += g_fir.taps[k] * *xp--;
        s += acc * acc;
    }
    memmove(d, d + n, (g_fir.ntaps - 1) * sizeof(double));
    return s;
}
double f(const double *taps, const double *x) {
    g_fir.taps = taps; g_fir.delay = g_delay; g_fir.ntaps = NT;
    memset(g_delay, 0, sizeof g_delay);
    return fir_block(x, 4);
}
int main(void) {
    double h[NT] = {0.5, -0.25, 0.125}, x[4] = {1, 2, -1, 0.5}, dh[NT] = {0}, dx[4] = {0};
    const double e = 1e-6;
    __enzyme_autodiff((void *)f, enzyme_dup, h, dh, enzyme_dup, x, dx);
    for (int k = 0; k < NT; k++) {
        double s = h[k];
        h[k] = s + e; double fp = f(h, x);
        h[k] = s - e; double fm = f(h, x);
        h[k] = s;
        check("rev dh", dh[k], (fp - fm) / (2 * e));
    }
    for (int i = 0; i < 4; i++) {
        double s = x[i];
        x[i] = s + e; double fp = f(h, x);
        x[i] = s - e; double fm = f(h, x);
        x[i] = s;
        check("rev dx", dx[i], (fp - fm) / (2 * e));
    }
    double th[NT] = {1, 0, 0}, tx[4] = {0, 1, 0, 0}, hp[NT] = {h[0] + e, h[1], h[2]},
           hm[NT] = {h[0] - e, h[1], h[2]}, xp[4] = {x[0], x[1] + e, x[2], x[3]},
           xm[4] = {x[0], x[1] - e, x[2], x[3]};
    check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, h, th, enzyme_dup, x, tx),
          (f(hp, xp) - f(hm, xm)) / (2 * e));
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_embedded_filter_state_in_globals(tmp_path, opt):
    run(tmp_path, EMBEDDED_FIR, opt)


# round AC (an FMI-style model): the state serialised into a byte buffer by one helper
# and read back by another, each field an 8-byte memcpy -- at -O0 integer copies in two
# functions, each end of one also reached by the other's integer copy
SERIALISED_STATE = r"""
typedef struct { double time; double x[2]; double k; } Model;
__attribute__((noinline)) static void set_state(Model *m, const char *buf) {
    memcpy(&m->time, buf, 8);
    memcpy(m->x, buf + 8, 16);
}
__attribute__((noinline)) static void get_state(const Model *m, char *buf) {
    memcpy(buf, &m->time, 8);
    memcpy(buf + 8, m->x, 16);
}
double f(Model *m) {
    char buf[24];
    get_state(m, buf);
    Model w = *m;
    set_state(&w, buf);
    return w.time * w.x[0] + w.x[1] * w.x[1] * m->k;
}
int main(void) {
    Model m = {0.5, {2.0, 3.0}, 1.5}, dm = {0};
    __enzyme_autodiff((void *)f, &m, &dm);
    check("rev dtime", dm.time, 2.0);
    check("rev dx0", dm.x[0], 0.5);
    check("rev dx1", dm.x[1], 9.0);
    check("rev dk", dm.k, 9.0);
    Model t = {1, {0.1, 0.01}, 0.001};
    check("fwd", __enzyme_fwddiff_d((void *)f, &m, &t), 2 + 0.05 + 0.09 + 0.009);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_state_serialised_through_a_byte_buffer(tmp_path, opt):
    run(tmp_path, SERIALISED_STATE, opt)


# the bytes of a double whose bits the code also changes as an integer, then copied as an
# integer: type analysis sees both, and the copy stays a compile error
BITS_CHANGED_THEN_COPIED = r"""
typedef union { double d; long long i; } U;
__attribute__((noinline)) static void cp(U *dst, const U *src) { memcpy(dst, src, 8); }
double f(double *x) {
    U a, b;
    a.d = *x;
    a.i ^= 1;
    cp(&b, &a);
    return b.d * b.d;
}
int main(void) {
    double x = 1.5, dx = 0;
    __enzyme_autodiff((void *)f, &x, &dx);
    return 0;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_copy_of_bits_also_used_as_an_integer_is_an_error(tmp_path, opt):
    err = build_error(tmp_path, BITS_CHANGED_THEN_COPIED, opt)
    # (refused at the `^=`, whose bits are copied on and read as a double, or at the copy)
    assert "integer-typed copy of memory that may hold floating-point values" in err \
        or "moved through integer operations" in err, err


# Round BB: a value beside a flag returned by value -- libc++'s std::optional<double>,
# `struct { union { char null_state; double val; } u; _Bool engaged; }` -- travels as
# `{ i64, i8 }` (x86-64 ABI), and a helper out of line returning it was refused: "the
# call returns floating-point values ... as an integer" (Enzyme 15 builds it).  The
# integer field the callee fills with a double's bits (or the callers read back as
# one) is given the double's type at the call boundary; a union whose integer member
# is what is returned stays an integer.
OPTIONAL_BY_VALUE = r"""
typedef struct { union { char null_state; double val; } u; _Bool engaged; } opt_d;
typedef struct { union { double d; long long n; } u; int tag; } num;
__attribute__((noinline)) static opt_d get(const double *w, int k) {
    opt_d o;
    if (k < 0) { o.u.null_state = 0; o.engaged = 0; } else { o.u.val = w[k]; o.engaged = 1; }
    return o;
}
__attribute__((noinline)) static num scaled(double x, int as_int) {
    num r;
    if (as_int) { r.u.n = 7; r.tag = 1; } else { r.u.d = 2.5 * x; r.tag = 0; }
    return r;
}
__attribute__((noinline)) static num count(int n) { num r; r.u.n = n; r.tag = 1; return r; }
double f(const double *w) {
    opt_d a = get(w, 0), b = get(w, -1), c = get(w, 1);
    double s = (a.engaged ? a.u.val : 0.0) * (c.engaged ? c.u.val : 1.0) + (b.engaged ? 100 : 0);
    num m = scaled(w[1], 0), n = count(3);
    return s * m.u.d + (double)n.u.n;
}
int main(void) {
    double w[2] = { 2.0, 3.0 }, dw[2] = { 0, 0 }, t[2] = { 0, 1 };
    __enzyme_autodiff((void *)f, enzyme_dup, w, dw);
    check("rev d/dw0", dw[0], 3.0 * 2.5 * 3.0);
    check("rev d/dw1", dw[1], 2.0 * 2.5 * 3.0 * 2);
    check("fwd d/dw1", __enzyme_fwddiff_d((void *)f, enzyme_dup, w, t), 2.0 * 2.5 * 3.0 * 2);
    check("primal", f(w), 2.0 * 3.0 * 2.5 * 3.0 + 3);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_union_beside_a_flag_returned_by_value(tmp_path, opt):
    run(tmp_path, OPTIONAL_BY_VALUE, opt)

# Round BD: ghost rows of a file-scope grid copied by memcpy (`memcpy(U[3], U[2], sizeof
# row)`): the rows' addresses are constant expressions (`@U + 96`), which the object
# analysis did not follow to the global -- "memcpy into memory that carries derivatives,
# but type analysis cannot tell what the memory holds" (Enzyme 15 fails an assertion).
GLOBAL_ROWS = r"""
typedef double Row[4];
static Row U[4];
double run(const double *r0) {
    for (int i = 1; i < 3; i++) { U[i][0] = r0[i]; U[i][1] = 2 * r0[i]; U[i][2] = 0; U[i][3] = 1; }
    memcpy(U[0], U[1], sizeof(Row));
    memcpy(U[3], U[2], sizeof(Row));
    double J = 0;
    for (int i = 0; i < 4; i++) J += U[i][0] * U[i][1];
    return J;
}
int main(void) {
    double r[4] = { 1, 2, 3, 4 }, d[4] = { 0 }, t[4] = { 0, 1, 1, 0 };
    __enzyme_autodiff((void *)run, enzyme_dup, r, d);
    check("rev d1", d[1], 16);
    check("rev d2", d[2], 24);
    check("fwd", __enzyme_fwddiff_d((void *)run, enzyme_dup, r, t), 40);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_rows_of_a_global_grid_copied(tmp_path, opt):
    run(tmp_path, GLOBAL_ROWS, opt)

# Round AH: a quadrature driver keeping the caller's `void *params` (the address of a
# local struct with an active field) in a file-scope pointer read by a thunk: refused at
# -O0, first saying "another pointer stored there has none", then "the address of a
# local variable".  Round BO (an observer registry: a global array holding the address
# of a local accumulator, updated by a noinline function; Enzyme 15 right): a local's
# shadow lives until the reverse sweep of its function is done, so a shadow global may
# hold it -- the global gets one.
PARAMS_IN_A_GLOBAL = r"""
typedef struct { double mu, sigma; } Gauss;
static void *g_params;
static double (*g_fn)(double, void *);
static double thunk(double x) { return g_fn(x, g_params); }
__attribute__((noinline)) static double integrate(double (*fn)(double, void *), void *params) {
    g_fn = fn; g_params = params;
    double s = 0;
    for (int i = 0; i < 8; i++) s += thunk(0.25 * i);
    return s;
}
static double gauss(double x, void *p) {
    Gauss *g = p; double z = (x - g->mu) / g->sigma;
    return exp(-0.5 * z * z);
}
double prob(double mu, double sigma) { Gauss g = {mu, sigma}; return integrate(gauss, &g); }
int main(void) {
    double h = 1e-6, fd = (prob(0.5 + h, 1.0) - prob(0.5 - h, 1.0)) / (2 * h);
    check("rev dmu", __enzyme_autodiff_d((void *)prob, 0.5, enzyme_const, 1.0), fd);
    check("fwd dmu", __enzyme_fwddiff_d((void *)prob, 0.5, 1.0, enzyme_const, 1.0), fd);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_local_params_kept_in_a_global_pointer(tmp_path, opt):
    run(tmp_path, PARAMS_IN_A_GLOBAL, opt)


OBSERVERS_OF_LOCALS = r"""
struct acc { double m; int hits; };
static struct acc *g_obs[4];
static int g_n;
static int *g_count;
__attribute__((noinline)) static void publish(double v) {
    for (int i = 0; i < g_n; i++) {
        g_obs[i]->m = 0.5 * g_obs[i]->m + v * (i + 1);
        g_obs[i]->hits++;
    }
    (*g_count)++;
}
__attribute__((noinline)) static double window(const double *x, int lo, int hi) {
    struct acc a = { 0.0, 0 }, b = { 1.0, 0 };
    int count = 0;
    g_count = &count;
    g_n = 0; g_obs[g_n++] = &a; g_obs[g_n++] = &b;
    for (int i = lo; i < hi; i++) publish(sin(x[i]));
    g_n = 0;
    return a.m * b.m + count;
}
double f(const double *x, int n) {
    struct acc top = { 0.0, 0 };
    int count = 0;
    g_count = &count;
    g_n = 0; g_obs[g_n++] = &top;
    publish(x[0] * x[1]);
    double s = top.m;
    for (int k = 0; k + 2 <= n; k++) s += window(x, k, k + 2) * x[k];
    return s;
}
int main(void) {
    double x[4] = { 0.3, 0.7, -0.2, 1.1 }, dx[4] = { 0 };
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 4);
    for (int i = 0; i < 4; i++) {
        double h = 1e-6, xp[4], xm[4], t[4] = { 0 };
        for (int j = 0; j < 4; j++) xp[j] = xm[j] = x[j];
        xp[i] += h; xm[i] -= h; t[i] = 1;
        double fd = (f(xp, 4) - f(xm, 4)) / (2 * h);
        check("rev", dx[i], fd);
        check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, x, t, enzyme_const, 4), fd);
    }
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_locals_registered_in_a_global_array(tmp_path, opt, valgrind):
    run(tmp_path, OBSERVERS_OF_LOCALS, opt, valgrind)


# Round BR: a re-entrant driver saving the global parameter pointer and restoring it
# (`saved = g_params; g_params = params; ...; g_params = saved;`), nested once: the
# value stored back was "a pointer loaded from memory", refused (Enzyme 15 builds it
# and gives 0).  Its shadow is what the shadow global held.  Round BT: with a pointer
# the caller left there, the check that stops a derivative reading a pointer global
# before the code set its shadow fired on the save; a value only stored back is not
# read through.
SAVED_AND_RESTORED = r"""
static void *g_params;
struct p { double a, b; };
__attribute__((noinline)) static double feval(double x) {
    struct p *q = g_params;
    return q->a * x + q->b * x * x;
}
__attribute__((noinline)) static double drive(void *params, double lo) {
    void *saved = g_params;
    g_params = params;
    double r = 0;
    for (int i = 0; i < 4; i++) r += feval(lo + 0.5 * i);
    g_params = saved;
    return r;
}
double outer(double *x) {
    struct p a = { x[0] * x[0], 0.5 }, b = { x[1], x[0] };
    double s = drive(&a, 1.0);
    g_params = &b;
    s += feval(1.5) * drive(&a, 0.5) + feval(2.0);
    return s;
}
int main(void) {
    double x[2] = { 1.5, -0.5 }, dx[2] = { 0 };
    static struct p before = { 7, 7 };
    g_params = &before;     /* the caller's value, saved and restored without a shadow */
    __enzyme_autodiff((void *)outer, enzyme_dup, x, dx);
    for (int i = 0; i < 2; i++) {
        double h = 1e-6, xp[2] = { x[0], x[1] }, xm[2] = { x[0], x[1] }, t[2] = { 0 };
        xp[i] += h; xm[i] -= h; t[i] = 1;
        double fd = (outer(xp) - outer(xm)) / (2 * h);
        check("rev", dx[i], fd);
        check("fwd", __enzyme_fwddiff_d((void *)outer, enzyme_dup, x, t), fd);
    }
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_global_pointer_saved_and_restored(tmp_path, opt, valgrind):
    run(tmp_path, SAVED_AND_RESTORED, opt, valgrind)


# Round AK: llama2.c's ``Transformer t; t.config = *cfg;`` -- a struct of ints from an
# enzyme_const pointer copied into a local that also holds float pointers (the run
# state): at -O0 the byte-offset analysis merged the copied bytes with the pointers
# beside them, and the copy was refused as "memcpy of pointers from memory without a
# shadow" (Enzyme 15 right).  The declared layout of the destination -- only integer
# fields at those bytes -- says it moves integers.
CONFIG_COPY = r"""
typedef struct { int dim, n_layers, n_heads, seq_len; } Config;
typedef struct { float *q, *k; } RunState;
typedef struct { Config config; RunState state; } Transformer;
static void rope(Transformer *t, int pos) {
    Config *p = &t->config; RunState *s = &t->state;
    for (int l = 0; l < p->n_layers; l++)
        for (int i = 0; i < p->dim; i += 2) {
            float fcr = cosf(pos * 0.5f), fci = sinf(pos * 0.5f);
            for (int v = 0; v < 2; v++) {
                float *vec = v == 0 ? s->q : s->k;
                float v0 = vec[i], v1 = vec[i + 1];
                vec[i] = v0 * fcr - v1 * fci;
                vec[i + 1] = v0 * fci + v1 * fcr;
            }
        }
}
float loss(float *params, Config *cfg, int n_tokens) {
    Transformer t;
    t.config = *cfg;
    t.state.q = params; t.state.k = params + 2;
    for (int pos = 0; pos < n_tokens; pos++) rope(&t, pos);
    return params[0] + 2 * params[1] + 3 * params[2] + 4 * params[3];
}
int main(void) {
    Config c = { 2, 1, 1, 4 };
    float p[4] = { 1, 2, 3, 4 }, dp[4] = { 0 };
    __enzyme_autodiff((void *)loss, enzyme_dup, p, dp, enzyme_const, &c, enzyme_const, 3);
    double c15 = cos(1.5), s15 = sin(1.5);   /* R(1.5)^T applied to (1, 2) and (3, 4) */
    check("dp0", dp[0], c15 + 2 * s15);
    check("dp1", dp[1], -s15 + 2 * c15);
    check("dp2", dp[2], 3 * c15 + 4 * s15);
    check("dp3", dp[3], -3 * s15 + 4 * c15);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_struct_of_ints_copied_into_a_struct_with_pointers(tmp_path, opt):
    run(tmp_path, CONFIG_COPY, opt)


# Round AM, on this stop's checks of narrow integer copies: ``b.flags[i] = a.flags[i]``
# of ``short flags[4]`` in a struct that also holds a double was refused at -O0 (the
# 2-byte copies were taken for bytes of the double).  Only byte copies (``char``: C's
# bytes of anything) and copies of a float's width are checked; a short is a short.
# A ``memcpy`` of the state into an ``enzyme_const`` trajectory buffer the function
# never reads back was refused as a copy into memory without a shadow: like a store
# there, it is an output of the caller's (Enzyme 15 right on both).  ``rand_r`` and
# ``nrand48`` (per-thread Monte Carlo) had no entry: integer results, integer state.
SHORTS_AND_TRAJECTORY = r"""
typedef struct { short flags[4]; double pos; } body_t;
double shorts(double *x) {
    body_t a, b;
    for (int i = 0; i < 4; i++) a.flags[i] = (short)(i * 3);
    for (int i = 0; i < 4; i++) b.flags[i] = a.flags[i];
    a.pos = x[0]; b.pos = x[1];
    double e = a.pos * b.pos;
    if (b.flags[1] & 1) e *= 2;
    return e;
}
__attribute__((noinline)) static void step(double *s) { s[0] = s[0] * s[1]; }
double recorded(double *x, double *trace) {
    double s[2] = { x[0], x[1] };
    for (int t = 0; t < 2; t++) {
        step(s);
        memcpy(trace + 2 * t, s, sizeof s);
    }
    return s[0];
}
double mc(double theta, int n) {
    double s = 0;
    for (int p = 0; p < n; p++) {
        unsigned seed = 1234u + 7919u * p;
        double u = rand_r(&seed) / (double)RAND_MAX;
        unsigned short xs[3] = { 1, 2, (unsigned short)p };
        s += sin(theta * u) + theta * (double)(nrand48(xs) % 1000) / 1000.0;
    }
    return s / n;
}
int main(void) {
    double x[2] = { 3, 5 }, d[2] = { 0 }, tr[4], t[2] = { 1, 0 };
    __enzyme_autodiff((void *)shorts, enzyme_dup, x, d);
    check("shorts d0", d[0], 10);
    check("shorts d1", d[1], 6);
    d[0] = d[1] = 0;
    __enzyme_autodiff((void *)recorded, enzyme_dup, x, d, enzyme_const, tr);
    check("recorded d0", d[0], 25);      /* x0 x1^2 */
    check("recorded d1", d[1], 30);
    check("recorded fwd", __enzyme_fwddiff_d((void *)recorded, enzyme_dup, x, t,
                                             enzyme_const, tr), 25);
    double h = 1e-6, fd = (mc(0.7 + h, 50) - mc(0.7 - h, 50)) / (2 * h);
    check("mc rev", __enzyme_autodiff_d((void *)mc, 0.7, enzyme_const, 50), fd);
    check("mc fwd", __enzyme_fwddiff_d((void *)mc, 0.7, 1.0, enzyme_const, 50), fd);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_short_fields_trajectories_and_reentrant_random_numbers(tmp_path, opt):
    run(tmp_path, SHORTS_AND_TRAJECTORY, opt)


# ... and text: a name copied up to its NUL by a hand-written loop (``while ((*d++ =
# *s++));``) into a record that also holds a double was refused as a byte copy that may
# hold floats once byte copies were checked; a byte also compared with 0 is text.
NAME_COPY = r"""
typedef struct { char name[16]; double w; } item;
__attribute__((noinline)) static void copy_name(char *d, const char *s) { while ((*d++ = *s++)); }
double f(double *x) {
    item a = { "alpha", 0 }, b;
    a.w = x[0];
    copy_name(b.name, a.name);
    b.w = a.w * x[1];
    return b.w * (b.name[0] == 'a' ? 2 : 1);
}
int main(void) {
    double x[2] = { 3, 5 }, d[2] = { 0 }, t[2] = { 1, 0 };
    __enzyme_autodiff((void *)f, enzyme_dup, x, d);
    check("d0", d[0], 10);
    check("d1", d[1], 6);
    check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, x, t), 10);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_name_copied_byte_by_byte_beside_a_double(tmp_path, opt):
    run(tmp_path, NAME_COPY, opt)


# Round AP: a CVODE-style user-data struct holding an enzyme_const pointer, an active
# one and a zero-initialised array of doubles: clang -O0 initialises it by a memcpy from
# a constant global, after which the local could not be followed and the const pointer
# was "mixed with pointers that have shadows" (Enzyme 15 right in reverse mode).  A
# local copied whole from a constant holds the constant's leaves.
USER_DATA_INIT = r"""
typedef struct { const double *A; const double *Ea; double k[3]; } UD;
__attribute__((noinline)) static void set_rates(UD *u) {
    for (int i = 0; i < 3; i++) u->k[i] = u->A[i] * exp(-u->Ea[i]);
}
double f(const double *A, const double *Ea) {
    UD u = { A, Ea, { 0, 0, 0 } };
    set_rates(&u);
    return u.k[0] + 2 * u.k[1] + 3 * u.k[2];
}
int main(void) {
    double A[3] = { 2, 1, 0.5 }, Ea[3] = { 0.5, 1, 1.5 }, dEa[3] = { 0 }, t[3] = { 0, 1, 0 };
    __enzyme_autodiff((void *)f, enzyme_const, A, enzyme_dup, Ea, dEa);
    for (int i = 0; i < 3; i++) check("rev", dEa[i], -(i + 1) * A[i] * exp(-Ea[i]));
    check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_const, A, enzyme_dup, Ea, t),
          -2 * A[1] * exp(-Ea[1]));
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_struct_of_const_and_active_pointers_initialised_from_a_constant(tmp_path, opt):
    run(tmp_path, USER_DATA_INIT, opt)


# Round AR: TinyEKF keeps its workspace in a static struct of pointers into a static
# buffer, set up by a helper (`ws_init(&w, buf)` storing `e->x = v`).  At -O0 the store
# of the buffer's address went through the helper's parameter, which was not known to
# be a global's address: the struct got no shadow global and the stores into the
# buffer were refused (right at -O2; Enzyme 15 builds the filter).  A parameter every
# call passes a global for stores that global's address.
GLOBAL_WORKSPACE = r"""
typedef struct { double *x, *y; } ws_t;
static double buf[8];
static ws_t w;
static void ws_init(ws_t *e, double *v) { e->x = v; e->y = v + 4; }
__attribute__((noinline)) static double combine(const ws_t *e) {
    return e->y[0] + e->y[1] * e->y[2] + e->y[3];
}
double f(const double *x0) {
    ws_init(&w, buf);
    for (int i = 0; i < 4; i++) w.x[i] = x0[i];
    for (int i = 0; i < 4; i++) w.y[i] = w.x[i] * w.x[i];
    return combine(&w);
}
int main(void) {
    double x[4] = { 0.3, 0.5, 0.7, 0.2 }, dx[4] = { 0 }, t[4] = { 0, 0, 1, 0 };
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx);
    double want[4] = { 2 * x[0], 2 * x[1] * x[2] * x[2], 2 * x[2] * x[1] * x[1], 2 * x[3] };
    for (int i = 0; i < 4; i++) check("rev", dx[i], want[i]);
    check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, x, t), want[2]);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_global_struct_pointing_into_a_global_buffer(tmp_path, opt):
    run(tmp_path, GLOBAL_WORKSPACE, opt)


# Round AT: a local struct initialised from constants that include a pointer to a
# `static const` table (`cond_t c = {300.0, NU}`, clang's memcpy from a constant global)
# with a field then set from an active value: reverse mode refused the copy ("a struct
# with pointer fields from memory without a shadow"), and forward mode zeroed the
# local's whole shadow, so the helper following `c->nu` dereferenced a null shadow: a
# segfault (old bugs; Enzyme 15 segfaults too).  The pointers of such a constant get
# their shadows in the local's shadow: a read-only table's zero twin.
CONSTANT_TEMPLATE = r"""
typedef struct { double T; const double *nu; int n; } cond_t;
static const double NU[2] = { -1.0, 2.0 };
__attribute__((noinline)) static double g(const cond_t *c) {
    return c->T * c->T * c->nu[1] + c->nu[0] * c->n;
}
double f(double T) {
    cond_t c = { 300.0, NU, 4 };
    c.T = T;
    return g(&c);
}
int main(void) {
    check("rev", __enzyme_autodiff_d((void *)f, 3.0), 12);
    check("fwd", __enzyme_fwddiff_d((void *)f, 3.0, 1.0), 12);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_local_from_a_constant_with_a_table_pointer(tmp_path, opt, valgrind):
    run(tmp_path, CONSTANT_TEMPLATE, opt, valgrind)


# Round AT: `qrule_t q = (e & 1) ? GAUSS3 : GAUSS2;` -- a quadrature rule copied from one
# of two constant templates holding pointers to static const tables, its Jacobian then
# set from an active value: LLVM copies only the template's first 24 bytes (the field
# set next is left out), which did not count as a copy of the constant.  Copies of a
# constant's first bytes hold the leaves copied.
QUADRATURE_TEMPLATES = r"""
typedef struct { const double *pts; const double *wts; int n; double jac; } qrule_t;
static const double G2P[2] = { -0.57735026918962576, 0.57735026918962576 }, G2W[2] = { 1, 1 };
static const double G3P[3] = { -0.7745966692414834, 0, 0.7745966692414834 },
                    G3W[3] = { 5.0 / 9, 8.0 / 9, 5.0 / 9 };
static const qrule_t GAUSS2 = { G2P, G2W, 2, 1.0 };
static const qrule_t GAUSS3 = { G3P, G3W, 3, 1.0 };
__attribute__((noinline)) static double integrate(const qrule_t *q, double a) {
    double s = 0;
    for (int i = 0; i < q->n; i++) { double x = a * q->pts[i]; s += q->wts[i] * x * x * q->jac; }
    return s;
}
double f(const double *a, int ne) {
    double s = 0;
    for (int e = 0; e < ne; e++) {
        qrule_t q = (e & 1) ? GAUSS3 : GAUSS2;
        q.jac = a[e];
        s += integrate(&q, a[e]);
    }
    return s;      /* both rules integrate x^2 exactly: sum (2/3) a_e^3 */
}
int main(void) {
    double a[2] = { 1.5, 0.5 }, da[2] = { 0 }, t[2] = { 0, 1 };
    __enzyme_autodiff((void *)f, enzyme_dup, a, da, enzyme_const, 2);
    check("rev 0", da[0], 2 * a[0] * a[0]);
    check("rev 1", da[1], 2 * a[1] * a[1]);
    check("fwd 1", __enzyme_fwddiff_d((void *)f, enzyme_dup, a, t, enzyme_const, 2),
          2 * a[1] * a[1]);
    return fails;
}
"""


# (round AW: the same into a heap block, a call after it: refused at -O0)
HEAP_TEMPLATE = r"""
static const double W[2] = { 0.25, 0.75 };
typedef struct { const double *w; double hi; } tmpl_t;
static const tmpl_t TEMPL = { W, 1.0 };
__attribute__((noinline)) static double sq(double t) { return t * t; }
double model(double b) {
    tmpl_t *h = malloc(sizeof *h);
    *h = TEMPL;
    h->hi = b;
    double s = h->w[0] * sq(h->hi) + h->w[1] * sq(2 * h->hi);
    free(h);
    return s;      /* 0.25 b^2 + 3 b^2 */
}
int main(void) {
    check("rev", __enzyme_autodiff_d((void *)model, 2.0), 13);
    check("fwd", __enzyme_fwddiff_d((void *)model, 2.0, 1.0), 13);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_local_from_one_of_two_constant_templates(tmp_path, opt, valgrind):
    run(tmp_path, QUADRATURE_TEMPLATES, opt, valgrind)
    run(tmp_path, HEAP_TEMPLATE, opt, valgrind)


# Round BU (a JPL-style ephemeris reader): an optional output written only `if (vel)`,
# in a helper every differentiated caller passes NULL for, was "an active value is
# stored into memory that has no shadow" in both modes (Enzyme 15 builds it).  Its
# stores never run; a caller passing a buffer that it reads back still gets one.  At
# -O2 the stores to pos[i] and vel[i] become one store through a phi of the two
# pointers, which the derivative takes as for an enzyme_const output of the function
# differentiated (refused until the run-time check covered helpers too).
HELPER_OPTIONAL_OUTPUT = r"""
__attribute__((noinline)) static void state(double t, double *pos, double *vel) {
    for (int i = 0; i < 3; i++) {
        double f = sin(t * (i + 1)), df = (i + 1) * cos(t * (i + 1));
        pos[i] = f;
        if (vel) vel[i] = df;
    }
}
double track(const double *t) {
    double p[3];
    state(t[0], p, NULL);
    double s = p[0] * p[1] + p[2];
    state(t[1], p, 0);
    return s + p[0];
}
int main(void) {
    double t[2] = { 0.3, 0.7 }, dt[2] = { 0 }, v[2] = { 1, 0 }, pos[3], vel[3];
    state(0.25, pos, vel);              /* a caller outside the derivative asks for vel */
    check("primal vel", vel[1], 2 * cos(0.5));
    __enzyme_autodiff((void *)track, enzyme_dup, t, dt);
    double a = t[0];
    double want0 = cos(a) * sin(2 * a) + 2 * sin(a) * cos(2 * a) + 3 * cos(3 * a);
    check("rev t0", dt[0], want0);
    check("rev t1", dt[1], cos(t[1]));
    check("fwd t0", __enzyme_fwddiff_d((void *)track, enzyme_dup, t, v), want0);
    /* the helper itself, its optional output passed as a constant NULL */
    double dp[3] = { 1, 0, 0 }, tp[3] = { 0 };
    double g = __enzyme_autodiff_d((void *)state, enzyme_out, 0.4, enzyme_dup, pos, dp,
                                   enzyme_const, (double *)0);
    check("rev state", g, cos(0.4));
    __enzyme_fwddiff((void *)state, 0.4, 1.0, enzyme_dup, pos, tp, enzyme_const, (double *)0);
    check("fwd state", tp[2], 3 * cos(1.2));
    return fails;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_optional_output_every_caller_passes_as_null(tmp_path, opt, valgrind):
    run(tmp_path, HELPER_OPTIONAL_OUTPUT, opt, valgrind)


# Round BV (darknet's `image`, passed by value everywhere): an enzyme_const struct
# holding a pointer, passed by value to the function differentiated, which hands it on
# by value to a helper (`get_pixel(image m, ...)`): the copy into the helper's argument
# was "memcpy of pointers from memory without a shadow into memory that has one" at
# -O0, and at every level where the helper stays a call.  The copy's pointer fields
# hold pointers without a shadow only: its shadow is zero.
CONST_IMAGE_BY_VALUE = r"""
typedef struct { int w, h, c; float *data; } image;
static float get_pixel(image m, int x, int y) { return m.data[y * m.w + x]; }
__attribute__((noinline)) static float get_pixel_out(image m, int i) { return m.data[i]; }
float l2(float *a, image truth) {
    float s = 0;
    for (int i = 0; i < truth.w; i++) {
        float d = a[i] - get_pixel(truth, i, 0) + 0.5f * get_pixel_out(truth, i);
        s += d * d;
    }
    return s;
}
int main(void) {
    float a[3] = {1, 2, 3}, da[3] = {0}, b[3] = {0.5f, 0.25f, 2.0f};
    image t = {3, 1, 1, b};
    __enzyme_autodiff((void *)l2, enzyme_dup, a, da, enzyme_const, t);
    for (int i = 0; i < 3; i++) check("d/da", da[i], 2 * (a[i] - 0.5f * b[i]));
    float v[3] = {1, 0, 0};
    check("fwd", __enzyme_fwddiff_d((void *)l2, enzyme_dup, a, v, enzyme_const, t),
          2 * (a[0] - 0.5f * b[0]));
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_constant_struct_by_value_handed_on_by_value(tmp_path, opt):
    run(tmp_path, CONST_IMAGE_BY_VALUE, opt)


# Round BU: the same optional output in the function differentiated, passed as an
# enzyme_const NULL, in a loop -O2 unrolls: the stores to pos[i] and vel[i] become one
# store through a phi of the two pointers, refused as "a pointer without a shadow mixed
# with pointers that have shadows".  A floating-point value may be written through such
# a merge where the memory without a shadow is an output nothing here reads back (a
# zeroed scratch slot takes the adjoint where vel is chosen).
MERGED_OPTIONAL_OUTPUT = r"""
__attribute__((noinline)) void state(double x, double *pos, double *vel) {
    for (int i = 0; i < 2; i++) {
        pos[i] = x * x * (i + 1);
        if (vel) vel[i] = 2.0 * x * (i + 1);
    }
}
int main(void) {
    double p[2], dp[2] = { 1.0, 0.5 }, v[2];
    double dx = __enzyme_autodiff_d((void *)state, enzyme_out, 3.0, enzyme_dup, p, dp,
                                    enzyme_const, (double *)0);
    check("rev", dx, 2 * 3.0 * 1 + 0.5 * 2 * 3.0 * 2);
    double dp2[2] = { 1.0, 0.5 };
    dx = __enzyme_autodiff_d((void *)state, enzyme_out, 3.0, enzyme_dup, p, dp2,
                             enzyme_const, v);
    check("rev, vel asked for", dx, 2 * 3.0 * 1 + 0.5 * 2 * 3.0 * 2);
    check("vel", v[1], 12.0);
    double t[2] = { 0, 0 };
    __enzyme_fwddiff((void *)state, 3.0, 1.0, enzyme_dup, p, t, enzyme_const, (double *)0);
    check("fwd", t[1], 2 * 3.0 * 2);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_optional_output_store_merged_with_a_shadowed_one(tmp_path, opt):
    run(tmp_path, MERGED_OPTIONAL_OUTPUT, opt)


# Round BY (DSP and circuit codes): a shift loop inside a struct that also holds
# pointers -- an FIR delay line `for (i = N-1; i > 0; i--) f->z[i] = f->z[i-1]` in
# {const double *coef; int n; double z[8]}, and ngspice's rotation of its state vectors
# {double *st[4]; double delta} -- becomes one memmove at -O1 and up, refused as
# "memcpy/memset over memory that mixes floating-point values and pointers" (Enzyme 15
# builds both).  LLVM keeps the shifted values' TBAA tag on the memmove it makes: the
# bytes moved are doubles (or pointers) only.
SHIFTS_INSIDE_MIXED_STRUCTS = r"""
#define NT 8
typedef struct { const double *coef; int n; double z[NT]; } fir_t;
__attribute__((noinline)) static double fir_tick(fir_t *f, double x) {
    for (int i = NT - 1; i > 0; i--) f->z[i] = f->z[i - 1];
    f->z[0] = x;
    double y = 0;
    for (int i = 0; i < NT; i++) y += f->coef[i] * f->z[i];
    return y;
}
double filt(const double *coef, const double *x, int n) {
    fir_t f;
    f.coef = coef; f.n = NT;
    for (int i = 0; i < NT; i++) f.z[i] = 0;
    double J = 0;
    for (int k = 0; k < n; k++) { double y = fir_tick(&f, x[k]); J += y * y; }
    return J;
}
#define NS 4
typedef struct { double *st[NS]; double delta; } ckt_t;
__attribute__((noinline)) static double step(ckt_t *c, const double *p) {
    c->st[0][0] = p[0] * c->delta + c->st[1][0];
    return c->st[0][0];
}
double rotate(const double *p, int n) {
    ckt_t c;
    double *base = calloc(NS * 2, sizeof(double));
    for (int i = 0; i < NS; i++) c.st[i] = base + 2 * i;
    double acc = 0;
    c.delta = 1.0;
    for (int k = 0; k < n; k++) {
        double v = step(&c, p);
        acc += v * v;
        double *t = c.st[NS - 1];
        for (int i = NS - 1; i > 0; i--) c.st[i] = c.st[i - 1];
        c.st[0] = t;
    }
    free(base);
    return acc;
}
int main(void) {
    double c[NT], dc[NT] = { 0 }, x[20];
    for (int i = 0; i < NT; i++) c[i] = 1.0 / (i + 1);
    for (int k = 0; k < 20; k++) x[k] = sin(0.3 * k);
    __enzyme_autodiff((void *)filt, enzyme_dup, c, dc, enzyme_const, x, enzyme_const, 20);
    for (int j = 0; j < NT; j += 3) {
        double h = 1e-6, c0 = c[j];
        c[j] = c0 + h; double fp = filt(c, x, 20);
        c[j] = c0 - h; double fm = filt(c, x, 20);
        c[j] = c0;
        check("delay line", dc[j], (fp - fm) / (2 * h));
    }
    double p[1] = { 2.0 }, dp[1] = { 0 };
    __enzyme_autodiff((void *)rotate, enzyme_dup, p, dp, enzyme_const, 5);
    check("rotated states", dp[0], 220);
    return fails;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2", "-O3"])
def test_shifts_inside_structs_that_hold_pointers(tmp_path, opt, valgrind):
    run(tmp_path, SHIFTS_INSIDE_MIXED_STRUCTS, opt, valgrind)


# Round BY (a netlist deck kept in a static table of records, copied into a working
# array): `memcpy(el, g_deck, sizeof g_deck)` of {char kind; const char *node; int pidx}
# into malloc'd memory was "memcpy of pointers from memory without a shadow into memory
# that has one" at -O0 (at -O2 LLVM marks the table constant; Enzyme 15 builds both).  A
# global nothing in the program writes holds its initialiser all along: where its
# pointers are their own shadows (string literals), the copy's shadow gets the table.
# A table the program writes a pointer into stays refused.
STATIC_TABLE_COPIED = r"""
typedef struct { char kind; const char *node; int pidx; } elem_t;
static elem_t g_deck[3] = { {'R', "a", 0}, {'R', "b", 1}, {'C', "c", 2} };
double f(const double *par) {
    elem_t *el = malloc(sizeof g_deck);
    memcpy(el, g_deck, sizeof g_deck);
    double s = 0;
    for (int i = 0; i < 3; i++)
        if (el[i].node[0] != 'c') s += par[el[i].pidx] * par[el[i].pidx] * el[i].kind;
    free(el);
    return s;
}
int main(void) {
    double p[3] = { 1, 2, 3 }, dp[3] = { 0 }, t[3] = { 0, 1, 0 };
    __enzyme_autodiff((void *)f, enzyme_dup, p, dp);
    check("rev 0", dp[0], 2 * 'R'); check("rev 1", dp[1], 4 * 'R'); check("rev 2", dp[2], 0);
    check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, p, t), 4 * 'R');
    return fails;
}
"""

TABLE_WRITTEN_BY_THE_PROGRAM = r"""
typedef struct { int n; double *w; } row_t;
static double w0[2] = { 1, 2 };
static row_t g_rows[2] = { {2, 0}, {0, 0} };
double f(const double *x) {
    row_t *r = malloc(sizeof g_rows);
    memcpy(r, g_rows, sizeof g_rows);
    double s = 0;
    for (int i = 0; i < r[0].n; i++) s += r[0].w[i] * x[i];
    free(r);
    return s;
}
int main(void) {
    double x[2] = { 1, 2 }, dx[2] = { 0 };
    g_rows[0].w = w0;
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx);
    return 0;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_static_table_of_records_copied(tmp_path, opt, valgrind):
    run(tmp_path, STATIC_TABLE_COPIED, opt, valgrind)


def test_table_the_program_writes_pointers_into_stays_refused(tmp_path):
    from pathlib import Path
    from helpers import enzyme_cc
    from test_never_silent import PRELUDE
    src = Path(tmp_path) / "t.c"
    src.write_text(PRELUDE + TABLE_WRITTEN_BY_THE_PROGRAM)
    r = enzyme_cc(["-O0", str(src), "-o", str(Path(tmp_path) / "t"), "-lm"], tmp_path)
    assert r.returncode != 0 and "memcpy of pointers from memory without a shadow" in r.stderr
