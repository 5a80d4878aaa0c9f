"""Issue 10's false errors and silently wrong derivatives on programs written the way
people write them (not shaped for the engine): allocation wrappers, ``a = grow(a, n)``
around realloc, a recursive BST insert that returns its argument or a fresh node, a
pointer to constant text advanced through a non-inlined parser, mixed int/double
structs copied by assignment, a dynamic array grown by realloc in a non-inlined
``push``, an overlapping left-shift ``memmove``, and a global scratch array holding
active intermediates.  Each program checks reverse and forward mode against analytic
derivatives (or central differences) and prints ``FAIL`` lines; at -O0 and -O2."""

from __future__ import annotations

import pytest

from test_never_silent import OPTS, run

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
