"""The C library's searches and scanners inside differentiated code, as C programs call
them: ``lfind`` and ``bsearch`` returning pointers into an active array of records
(the derivative follows the element found), ``lsearch`` appending an active key,
GNU ``qsort_r`` with a context struct initialised from constants, and ``sscanf``
storing into a struct that carries derivatives (a parsed value has none; a conversion
that fails leaves its target -- and its derivative -- alone).  Reverse and forward mode
against central differences, at -O0 and -O2."""

from __future__ import annotations

import pytest

from test_never_silent import OPTS, run

SEARCHES = r"""
#include <search.h>
void qsort_r(void *, size_t, size_t, int (*)(const void *, const void *, void *), void *);
typedef struct { int id; double v; double w; } rec;
static int same_id(const void *a, const void *b) {
    return ((const rec *)a)->id != ((const rec *)b)->id;
}
static int by_id(const void *a, const void *b) {
    return ((const rec *)a)->id - ((const rec *)b)->id;
}
typedef struct { const int *rank; int dir; } order;
static int by_rank(const void *a, const void *b, void *ctx) {
    const order *o = ctx;
    return o->dir * (o->rank[((const rec *)a)->id] - o->rank[((const rec *)b)->id]);
}
/* the record with id 3 scaled through lfind's result; a record appended by lsearch;
   sorted by a ranking passed as qsort_r's context, then by id for bsearch */
double f(rec *r, const double *extra) {
    size_t n = 4;
    rec key = {3, 0, 0};
    rec *hit = lfind(&key, r, &n, sizeof *r, same_id);
    if (hit) hit->v *= hit->w;
    rec add = {7, extra[0] * extra[0], 1.5};
    lsearch(&add, r, &n, sizeof *r, same_id);
    static const int rank[8] = {4, 0, 3, 1, 7, 5, 6, 2};
    order o = {rank, -1};
    qsort_r(r, n, sizeof *r, by_rank, &o);
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (i + 1) * r[i].v * r[i].w;
    qsort(r, n, sizeof *r, by_id);
    rec k2 = {2, 0, 0};
    rec *b = bsearch(&k2, r, n, sizeof *r, by_id);
    return s + (b ? b->v * b->v : 0);
}
static const rec R0[5] = {{0, 0.5, 1.2}, {3, -0.7, 2.0}, {1, 1.1, 0.8}, {2, 0.3, -1.4}};
static double F(int k, int field, double h) {
    rec r[5];
    memcpy(r, R0, sizeof r);
    double e = 0.9;
    if (k == 4) e += h; else if (field) r[k].w += h; else r[k].v += h;
    return f(r, &e);
}
int main(void) {
    rec r[5], dr[5];
    double e = 0.9, de = 0;
    memcpy(r, R0, sizeof r);
    memset(dr, 0, sizeof dr);
    __enzyme_autodiff((void *)f, enzyme_dup, r, dr, enzyme_dup, &e, &de);
    for (int k = 0; k < 5; k++)
        for (int field = 0; field < 2 && (k < 4 || !field); field++) {
            double h = 1e-6, fd = (F(k, field, h) - F(k, field, -h)) / (2 * h);
            double rev = k == 4 ? de : field ? dr[k].w : dr[k].v;
            check("rev", rev, fd);
            rec a[5], t[5];
            double ea = 0.9, te = k == 4;
            memcpy(a, R0, sizeof a);
            memset(t, 0, sizeof t);
            if (k < 4) { if (field) t[k].w = 1; else t[k].v = 1; }
            check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, a, t, enzyme_dup, &ea, &te),
                  fd);
        }
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_searches_and_sorts_with_a_context(tmp_path, opt, valgrind):
    run(tmp_path, SEARCHES, opt, valgrind)


SCANF = r"""
typedef struct { char name[8]; double scale; double off; } params;
/* the scale parsed from the text (no derivative), a name next to doubles, and a
   conversion that fails: r keeps x1 and its derivative */
double g(const double *x, const char *text) {
    params p;
    p.scale = x[0];
    p.off = x[1];
    int got = sscanf(text, "%lf %7s", &p.scale, p.name);
    double r = x[1];
    if (sscanf("bad", "%lf", &r) != 1) r += 1;
    return p.scale * x[0] * x[0] + r * x[1] + (strcmp(p.name, "ab") == 0 ? p.off : 0) * got;
}
/* a choice of two formats that store the same (round AT) */
double h(double *x, int sci) {
    double y[2] = {x[0], x[0] * x[1]};
    int n = sscanf("2.5", sci ? "%le" : "%lf", &y[0]);
    return y[0] * y[1] + n;
}
int main(void) {
    double x[2] = {1.5, -0.4}, dx[2] = {0, 0};
    __enzyme_autodiff((void *)h, enzyme_dup, x, dx, enzyme_const, 1);
    check("rev h x0", dx[0], 2.5 * x[1]);
    check("rev h x1", dx[1], 2.5 * x[0]);
    dx[0] = dx[1] = 0;
    __enzyme_autodiff((void *)g, enzyme_dup, x, dx, enzyme_const, "3.5 ab");
    /* 3.5 x0^2 + (x1 + 1) x1 + 2 x1 */
    check("rev x0", dx[0], 7 * x[0]);
    check("rev x1", dx[1], 2 * x[1] + 3);
    double t[2] = {0, 1};
    check("fwd x1", __enzyme_fwddiff_d((void *)g, enzyme_dup, x, t, enzyme_const, "3.5 ab"),
          2 * x[1] + 3);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_sscanf_into_memory_with_derivatives(tmp_path, opt, valgrind):
    run(tmp_path, SCANF, opt, valgrind)


# Round BY (a SPICE-style netlist deck parsed inside the differentiated function):
# strtok_r was "cannot differentiate call to external function" (Enzyme 15 refuses it
# too), and strchr & co. over a buffer inside a struct that also holds a double were
# refused the same way.  They only touch characters: strtok_r and strsep store the
# position reached (a pointer into the text, its own shadow), strtok keeps it inside the
# C library, and the searches return a pointer into the text or a count.
TOKENS = r"""
typedef struct { char line[96]; double scale; } card_t;
double deck_value(const char *deck, const double *p) {
    card_t c;
    strcpy(c.line, deck);
    c.scale = p[1] * p[1];
    double s = 0;
    char *save = NULL;
    for (char *tok = strtok_r(c.line, " ,", &save); tok; tok = strtok_r(NULL, " ,", &save))
        s += p[0] * strtod(tok, NULL) * c.scale;
    char *copy = malloc(strlen(deck) + 1), *rest = copy, *f;
    strcpy(copy, deck);
    while ((f = strsep(&rest, " ,")) != NULL)
        if (*f) s += sin(p[0] * atof(f));
    free(copy);
    char buf[64];
    strcpy(buf, deck);
    for (char *t = strtok(buf, " ,"); t; t = strtok(NULL, " ,")) s += p[1] * (double)strlen(t);
    card_t q;
    strcpy(q.line, "gain=2.5;x");
    q.scale = p[0];
    char *eq = strchr(q.line, '='), *semi = strrchr(q.line, ';');
    *semi = 0;
    return s + q.scale * q.scale * (atof(eq + 1) * strlen(strstr(q.line, "ga"))
                                    + strspn(q.line, "gain") + strcspn(q.line, "="));
}
int main(void) {
    const char *deck = "1.5 2,0.25 3";
    double p[2] = { 0.7, 1.3 }, dp[2] = { 0, 0 };
    __enzyme_autodiff((void *)deck_value, enzyme_const, deck, enzyme_dup, p, dp);
    for (int k = 0; k < 2; k++) {
        double h = 1e-6, s = p[k], t[2] = { 0, 0 };
        p[k] = s + h; double fp = deck_value(deck, p);
        p[k] = s - h; double fm = deck_value(deck, p);
        p[k] = s;
        t[k] = 1;
        check("rev", dp[k], (fp - fm) / (2 * h));
        check("fwd", __enzyme_fwddiff_d((void *)deck_value, enzyme_const, deck, enzyme_dup,
                                        p, t), (fp - fm) / (2 * h));
    }
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_text_split_and_searched_in_place(tmp_path, opt, valgrind):
    run(tmp_path, "#define _GNU_SOURCE\n#include <string.h>\n" + TOKENS, opt, valgrind)
