"""Issue 10's silently wrong derivatives, each a regression test in reverse and forward
mode at -O0 and -O2: atomics, copies in noinline helpers, libc functions that overwrite
memory with a shadow, realloc in a non-inlined push, overlapping memmove, and return
types reverse mode cannot seed.  Every program checks its derivatives against central
differences or the analytic values and prints ``FAIL`` lines; or the build must fail
with a message naming the construct."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from helpers import enzyme_cc

OPTS = ["-O0", "-O2"]

PRELUDE = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int enzyme_dup, enzyme_const, enzyme_out;
void __enzyme_autodiff(void *, ...);
double __enzyme_autodiff_d(void *, ...);
void __enzyme_fwddiff(void *, ...);
double __enzyme_fwddiff_d(void *, ...);
static int fails;
static void check(const char *what, double got, double want) {
    double scale = fabs(want) > 1e-2 ? fabs(want) : 1e-2;
    int ok = fabs(got - want) / scale <= 1e-6;
    printf("%s %s got %.12g want %.12g\n", ok ? "ok" : "FAIL", what, got, want);
    fails += !ok;
}
"""


def run(tmp_path, body, opt, valgrind=None):
    """Build ``body`` after the prelude at ``opt``, run it (and, given the ``valgrind``
    fixture's path, again under valgrind: no invalid access), expect no FAIL line."""
    src = Path(tmp_path) / "t.c"
    src.write_text(PRELUDE + body)
    exe = Path(tmp_path) / "t"
    r = enzyme_cc([*opt.split(), str(src), "-o", str(exe), "-lm"], tmp_path)
    assert r.returncode == 0, r.stderr
    cmds = [[str(exe)]] + ([[valgrind, "-q", "--error-exitcode=3", str(exe)]] if valgrind else [])
    for cmd in cmds:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0 and "FAIL" not in out.stdout, out.stdout + out.stderr
        assert out.stdout.count("ok ") >= 2, out.stdout
    return out.stdout


def build_error(tmp_path, body, opt):
    src = Path(tmp_path) / "t.c"
    src.write_text(PRELUDE + body)
    r = enzyme_cc([opt, str(src), "-o", str(Path(tmp_path) / "t"), "-lm"], tmp_path)
    assert r.returncode != 0, "expected a compile error"
    assert "Traceback" not in r.stderr, r.stderr
    return r.stderr


# ------------------------------------------------------------- copies beside a header

# Round BH: a helper allocates `struct vec { int n; double data[]; }`, writes the int
# header and `memcpy`s the active input behind it; the caller reads the doubles through
# a pointer kept in a struct (and a helper LLVM does not inline).  The objects' typed
# accesses showed only the header's int, so the copy was taken for integers: gradient
# 0, silently, at every level.  The bytes moved are what counts.
HEADER_AND_DOUBLES = r"""
struct vec { int n; double data[]; };
struct holder { struct vec *v; int k; };
__attribute__((noinline)) static struct vec *vec_from(const double *src, int n) {
    struct vec *v = malloc(sizeof(struct vec) + n * sizeof(double));
    v->n = n;
    memcpy(v->data, src, n * sizeof(double));
    return v;
}
__attribute__((noinline)) static double sumsq(const struct holder *h) {
    double s = 0;
    for (int i = 0; i < h->v->n; i++) s += h->v->data[i] * h->v->data[i] * (i + 1);
    return s;
}
double direct(const double *u, int n) {
    struct vec *v = vec_from(u, n);
    double s = 0;
    for (int i = 0; i < n; i++) s += v->data[i] * v->data[i];
    free(v);
    return s;
}
double held(const double *u, int n) {
    struct holder h = { vec_from(u, n), 1 };
    double s = sumsq(&h);
    free(h.v);
    return s;
}
int main(void) {
    double u[3] = { 1, 2, 3 }, du[3] = { 0 }, t[3] = { 1, 0.5, -1 };
    __enzyme_autodiff((void *)direct, enzyme_dup, u, du, enzyme_const, 3);
    for (int i = 0; i < 3; i++) check("direct", du[i], 2 * u[i]);
    for (int i = 0; i < 3; i++) du[i] = 0;
    __enzyme_autodiff((void *)held, enzyme_dup, u, du, enzyme_const, 3);
    for (int i = 0; i < 3; i++) check("held", du[i], 2 * u[i] * (i + 1));
    check("fwd", __enzyme_fwddiff_d((void *)held, enzyme_dup, u, t, enzyme_const, 3),
          2 * 1 * 1 + 2 * 2 * 0.5 * 2 - 2 * 3 * 3);
    return fails;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2", "-O3"])
def test_doubles_copied_beside_an_int_header(tmp_path, opt, valgrind):
    run(tmp_path, HEADER_AND_DOUBLES, opt, valgrind if opt == "-O2" else None)


# Round BO, doubles moved between blocks where the objects' own accesses do not show
# them: (1) the same copy, then the block grown by `realloc` (a message buffer with a
# trailer appended) and the doubles read from the new block -- the typed accesses were
# all on the new block, so the copy into the old one was taken for integers (0,
# silently, at -O0 and -O2; Enzyme 15 refuses): a block and what realloc makes of it
# hold the same values; (2) a hash map's grow copying each occupied `{const char *key;
# double val;}` entry by struct assignment, guarded by a test of the key, in a callee
# that swaps the slot array of a map passed by pointer -- at -O0 a 16-byte memcpy
# between two pointers loaded from the map, whose own accesses there show only the key:
# taken for a copy of pointers (0, silently; right at -O1 and up, Enzyme 15 right).
# Where the objects show no float, the bytes moved are what counts.
BLOCKS_MOVED = r"""
struct buf { int len; double data[]; };
double grown(const double *x, int n) {
    struct buf *b = malloc(sizeof *b + n * sizeof(double));
    b->len = n;
    memcpy(b->data, x, n * sizeof(double));
    b = realloc(b, sizeof *b + 2 * n * sizeof(double));
    for (int i = 0; i < n; i++) b->data[n + i] = 0.5 * i;     /* the trailer */
    double s = b->data[n - 1] * b->data[0] + b->data[n + 1];
    free(b);
    return s;
}
struct entry { const char *key; double val; };
struct map { struct entry *slots; int cap; };
static void grow(struct map *m) {
    struct entry *old = m->slots;
    m->slots = calloc(2 * m->cap, sizeof(struct entry));
    for (int i = 0; i < m->cap; i++)
        if (old[i].key) m->slots[i] = old[i];
    m->cap *= 2;
    free(old);
}
double last(const double *x, int n) {
    struct map m = { calloc(n, sizeof(struct entry)), n };
    for (int i = 0; i < n; i++) { m.slots[i].key = i == 1 ? 0 : "k"; m.slots[i].val = x[i]; }
    grow(&m);
    double s = m.slots[n - 1].val * m.slots[0].val + m.slots[1].val;
    free(m.slots);
    return s;
}
#define CHECK(f) do { \
        double x[3] = { 1, 2, 3 }, dx[3] = { 0 }, t[3] = { 1, 0.5, -1 }; \
        __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 3); \
        check(#f, dx[0], 3); check(#f, dx[1], 0); check(#f, dx[2], 1); \
        check(#f " fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, x, t, enzyme_const, 3), \
              3 * 1 - 1 * 1); \
    } while (0)
int main(void) {
    CHECK(grown);
    CHECK(last);
    return fails;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_doubles_moved_between_blocks_realloc_and_a_guarded_struct_copy(tmp_path, opt,
                                                                        valgrind):
    run(tmp_path, BLOCKS_MOVED, opt, valgrind)


# Round BO: a `memcpy` of a whole array of structs mixing pointers and doubles, `n *
# sizeof *p` bytes (a hash map's grow copying its slot array; a particle system's
# double buffer) was refused ("memcpy/memset over memory that mixes floating-point
# values and pointers"; Enzyme 15 builds it and is wrong): the field runs of one element
# repeat every `sizeof` bytes, the pointers' shadows move forward, the doubles'
# adjoints back, element by element. The pointer copied here points at active data,
# so its shadow matters; a struct mixing doubles and floats takes the same path; the
# tail padding after `int id` is no float.  Round BR: `(n - 1) * sizeof *s` with a
# size_t count (folded to `n * 16 - 16`) too.
ARRAYS_OF_MIXED_STRUCTS = r"""
struct part { const double *w; double q; float m; int id; };
struct pair { double a; float b; };
__attribute__((noinline)) static struct part *dup_parts(const struct part *p, size_t n) {
    struct part *c = malloc(n * sizeof *c);
    memcpy(c, p, n * sizeof *c);
    return c;
}
double energy(const double *x, const double *y, int n) {
    struct part *p = malloc(n * sizeof *p);
    for (int i = 0; i < n; i++) { p[i].w = &y[n - 1 - i]; p[i].q = x[i]; p[i].m = 1.5f;
                                  p[i].id = i; }
    struct part *c = dup_parts(p, n);
    for (int i = 0; i < n; i++) p[i].q = 0;     /* the copy alone carries the values */
    double s = 0;
    for (int i = 0; i < n; i++) s += c[i].q * c[i].q * *c[i].w * c[i].m;
    free(p); free(c);
    return s;
}
struct named { const char *name; double v; };
__attribute__((noinline)) static void drop_first(struct named *d, const struct named *s,
                                                 size_t n) {
    memcpy(d, s + 1, (n - 1) * sizeof *s);      /* n * 16 - 16 bytes */
}
double named_tail(const double *x, int n) {
    struct named a[8], b[8];
    for (int i = 0; i < n; i++) { a[i].name = "k"; a[i].v = x[i] * x[i]; }
    drop_first(b, a, (size_t)n);
    double s = 0;
    for (int i = 0; i + 1 < n; i++) s += (i + 1) * b[i].v;
    return s;
}
double pairs(const double *x, const double *y, int n) {
    struct pair *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    for (int i = 0; i < n; i++) { a[i].a = x[i]; a[i].b = (float)y[i]; }
    memcpy(b, a, n * sizeof *a);
    double s = 0;
    for (int i = 0; i < n; i++) s += b[i].a * b[i].a + 2 * b[i].b * b[i].a;
    free(a); free(b);
    return s;
}
int main(void) {
    double x[3] = { 1, 2, 3 }, y[3] = { 0.5, -1, 2 }, dx[3] = { 0 }, dy[3] = { 0 };
    __enzyme_autodiff((void *)energy, enzyme_dup, x, dx, enzyme_dup, y, dy,
                      enzyme_const, 3);
    for (int i = 0; i < 3; i++) {
        check("energy dx", dx[i], 2 * x[i] * y[2 - i] * 1.5);
        check("energy dy", dy[i], x[2 - i] * x[2 - i] * 1.5);
    }
    double t[3] = { 1, -0.5, 0.25 }, u[3] = { 0.5, 1, -1 }, want = 0;
    for (int i = 0; i < 3; i++)
        want += 2 * x[i] * y[2 - i] * 1.5 * t[i] + x[i] * x[i] * 1.5 * u[2 - i];
    check("energy fwd", __enzyme_fwddiff_d((void *)energy, enzyme_dup, x, t, enzyme_dup, y,
                                           u, enzyme_const, 3), want);
    double px[3] = { 0 }, py[3] = { 0 };
    __enzyme_autodiff((void *)pairs, enzyme_dup, x, px, enzyme_dup, y, py, enzyme_const, 3);
    for (int i = 0; i < 3; i++) {
        check("pairs dx", px[i], 2 * x[i] + 2 * (float)y[i]);
        check("pairs dy", py[i], 2 * x[i]);
    }
    double nx[3] = { 0 };
    __enzyme_autodiff((void *)named_tail, enzyme_dup, x, nx, enzyme_const, 3);
    check("named_tail dx0", nx[0], 0);
    check("named_tail dx1", nx[1], 2 * x[1]);
    check("named_tail dx2", nx[2], 2 * 2 * x[2]);
    return fails;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_arrays_of_structs_mixing_pointers_and_doubles_copied_whole(tmp_path, opt,
                                                                    valgrind):
    run(tmp_path, ARRAYS_OF_MIXED_STRUCTS, opt, valgrind)


# Round BR: deleting from and inserting into an array of `{double w; float f; int id;}`
# records with memmove of `(n - k - 1) * sizeof *a` bytes (overlapping ranges) was
# refused ("memmove over memory that mixes double and float values"): each record's
# double and float runs move like a strided copy's, the elements' adjoints taken in
# the order that reads each destination adjoint before an addition lands on it.  The
# byte count may also be the distance between two pointers into the array (`(char *)end
# - (char *)(p + 1)`): a whole number of the records the two point at.
MEMMOVE_RECORDS = r"""
struct rec { double w; float f; int id; };
__attribute__((noinline)) static void erase(struct rec *a, int n, int k) {
    memmove(&a[k], &a[k + 1], (size_t)(n - k - 1) * sizeof *a);
}
__attribute__((noinline)) static void insert(struct rec *a, int n, int k) {
    memmove(&a[k + 1], &a[k], (size_t)(n - k) * sizeof *a);
}
/* the byte count as the distance between two pointers into the array */
__attribute__((noinline)) static struct rec *erase_at(struct rec *p, struct rec *end) {
    memmove(p, p + 1, (char *)end - (char *)(p + 1));
    return end - 1;
}
double g(const double *x, int n) {
    struct rec a[8];
    for (int i = 0; i < n; i++) { a[i].w = x[i] * x[i]; a[i].f = (float)(i + 1); a[i].id = i; }
    struct rec *end = erase_at(&a[2], a + n);
    end = erase_at(&a[0], end);
    double s = 0;
    for (struct rec *r = a; r < end; r++) s += r->w * r->f;
    return s;
}
/* round BW: two inlined erases from a heap array, the second at n / 2 */
typedef struct { double w; float f; } rec2;
static rec2 *rec2_erase(rec2 *p, rec2 *end) {
    memmove(p, p + 1, (char *)end - (char *)(p + 1));
    return end - 1;
}
double h(const double *x, int n) {
    rec2 *a = malloc(n * sizeof(rec2)), *end = a + n;
    for (int i = 0; i < n; i++) { a[i].w = x[i] * x[i]; a[i].f = (float)i; }
    end = rec2_erase(a + 1, end);
    end = rec2_erase(a + n / 2, end);
    double s = 0;
    for (rec2 *p = a; p != end; ++p) s += p->w * p->f;
    free(a);
    return s;
}
double f(const double *x, int n) {
    struct rec a[8];
    for (int i = 0; i < n; i++) { a[i].w = x[i] * x[i]; a[i].f = (float)(i + 1); a[i].id = i; }
    erase(a, n, 1);
    insert(a, n - 1, 0);
    a[0].w = 0.5; a[0].f = 2.0f;
    double s = 0;
    for (int i = 0; i < n; i++) s += (i + 1) * a[i].w * a[i].f;
    return s;
}
int main(void) {
    double x[5] = { 0.5, 1.5, -1, 2, 0.25 }, dx[5] = { 0 };
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 5);
    /* a = {0.5 x 2, x0^2 x 1, x2^2 x 3, x3^2 x 4, x4^2 x 5} after the moves */
    double want[5] = { 2 * 2 * x[0] * 1, 0, 3 * 2 * x[2] * 3, 4 * 2 * x[3] * 4,
                       5 * 2 * x[4] * 5 };
    for (int i = 0; i < 5; i++) check("rev", dx[i], want[i]);
    double dg[5] = { 0 };
    __enzyme_autodiff((void *)g, enzyme_dup, x, dg, enzyme_const, 5);
    /* records 1, 3, 4 survive, each weighted by its own f = i + 1 */
    for (int i = 0; i < 5; i++)
        check("distance", dg[i], i == 0 || i == 2 ? 0 : 2 * x[i] * (i + 1));
    double dh[5] = { 0 };       /* records 0, 2, 4 survive (1 and 3 erased), f = i */
    __enzyme_autodiff((void *)h, enzyme_dup, x, dh, enzyme_const, 5);
    for (int i = 0; i < 5; i++)
        check("two erases", dh[i], i == 1 || i == 3 ? 0 : 2 * x[i] * i);
    return fails;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_records_of_doubles_and_floats_moved_by_memmove(tmp_path, opt, valgrind):
    run(tmp_path, MEMMOVE_RECORDS, opt, valgrind)


# Round BP: a generic byte-wise swap (`char t = *p; *p++ = *q; *q++ = t;`) of two
# doubles in a local array, which clang -O2 unrolls -- the bytes loaded in one block and
# stored after a merge (phis of `i8`), or as `<16 x i8>` halves swapped by a
# `shufflevector` -- was taken for integers: (1, 2, 3) for (3, 2, 1), in both modes,
# silently (refused at -O0 and -O1; Enzyme 15 refuses).  Derivatives cannot follow
# bytes: refused at every level now.  The same swap of the ints of a permutation that
# then indexes the doubles stays right.
BYTE_SWAP = r"""
static void byteswap(void *a, void *b, size_t n) {
    char *p = a, *q = b;
    while (n--) { char t = *p; *p++ = *q; *q++ = t; }
}
double f(const double *x, int n) {
    double y[8];
    for (int i = 0; i < n; i++) y[i] = x[i];
    SWAP;
    double s = 0;
    for (int k = 0; k < n; k++) s += y[k] * (k + 1);
    return s;
}
int main(void) {
    double x[3] = { 1, 2, 3 }, dx[3] = { 0 }, t[3] = { 1, 0, 0 };
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 3);
    check("rev", dx[0], 3); check("rev", dx[2], 1);
    check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, x, t, enzyme_const, 3), 3);
    return fails;
}
"""
PERMUTATION_SWAP = r"""
static void byteswap(void *a, void *b, size_t n) {
    char *p = a, *q = b;
    while (n--) { char t = *p; *p++ = *q; *q++ = t; }
}
double f(const double *x, int n) {
    int perm[8];
    for (int i = 0; i < n; i++) perm[i] = i;
    byteswap(&perm[0], &perm[n - 1], sizeof(int));
    double s = 0;
    for (int k = 0; k < n; k++) s += x[perm[k]] * x[perm[k]] * (k + 1);
    return s;
}
int main(void) {
    double x[3] = { 1, 2, 3 }, dx[3] = { 0 }, t[3] = { 1, 0, 0 };
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 3);
    check("rev", dx[0], 6); check("rev", dx[1], 8); check("rev", dx[2], 6);
    check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, x, t, enzyme_const, 3), 6);
    return fails;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2", "-O3"])
@pytest.mark.parametrize("swap", ["byteswap(&y[0], &y[n - 1], sizeof(double))",
                                  "byteswap(&y[0], &y[1], 2 * sizeof(double))"])
def test_doubles_swapped_byte_by_byte_are_refused(tmp_path, opt, swap):
    err = build_error(tmp_path, BYTE_SWAP.replace("SWAP", swap), opt)
    assert "an integer-typed copy of memory that may hold floating-point values" in err, err
    assert not (Path(tmp_path) / "t").exists()


@pytest.mark.parametrize("opt", ["-O0", "-O2", "-O3"])
def test_ints_swapped_byte_by_byte_beside_doubles(tmp_path, opt):
    run(tmp_path, PERMUTATION_SWAP, opt)


# Round BR: the same bytes copied by a plain loop into another local double, at -O0:
# no float is ever stored into the destination, so it got no shadow, and the source,
# read only as bytes, none either -- 0, silently (-O1 and up make it one double copy;
# Enzyme 15 refuses at -O0).  Refused at -O0 now, right above; a double's bytes hashed
# into an integer still build.
BYTES_OF_A_LOCAL = r"""
double f(double *x) {
    double a = x[0] * x[0], b;
    unsigned char *p = (unsigned char *)&a, *q = (unsigned char *)&b;
    for (int i = 0; i < 8; i++) q[i] = p[i];
    return b;
}
unsigned hash_bytes(const double *v) {
    unsigned h = 2166136261u;
    const unsigned char *c = (const unsigned char *)v;
    for (int i = 0; i < 8; i++) { h ^= c[i]; h *= 16777619u; }
    return h;
}
double g(double *x) {
    double a = x[0] * x[1];
    unsigned char key[8];
    memcpy(key, &a, 8);
    unsigned h = hash_bytes(&a) ^ key[3];
    return a * (h % 2 ? 2.0 : 2.0);
}
int main(void) {
    double x[2] = { 1.5, 2.0 }, dx[2] = { 0 }, t[2] = { 1, 0 };
    __enzyme_autodiff((void *)g, enzyme_dup, x, dx);
    check("hashed rev", dx[0], 4); check("hashed rev", dx[1], 3);
    check("hashed fwd", __enzyme_fwddiff_d((void *)g, enzyme_dup, x, t), 4);
#ifndef HASH_ONLY
    double y[1] = { 1.5 }, dy[1] = { 0 };
    __enzyme_autodiff((void *)f, enzyme_dup, y, dy);
    check("copied rev", dy[0], 3);
#endif
    return fails;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_double_copied_byte_by_byte_at_O0(tmp_path, opt):
    if opt == "-O0":
        err = build_error(tmp_path, BYTES_OF_A_LOCAL, opt)
        assert "an integer-typed copy of memory that may hold floating-point values" in err
        run(tmp_path, "#define HASH_ONLY\n" + BYTES_OF_A_LOCAL, opt)
    else:
        run(tmp_path, BYTES_OF_A_LOCAL, opt)


# Round BT: a generic word copy (`d[i] = s[i]` over `int32_t *`/`int16_t *` views, in
# a noinline `copy(void *, const void *, int bytes)`) moving doubles: halves (quarters)
# of a double, which the objects' kinds took for integers, the loop's own among them --
# 0, silently, at -O0 into a local, and at every level between heap blocks (and into
# a local at -O2 too where the copy stays a call).  Refused
# now: no per-word rule can move a double's adjoint.  A struct's `int idx[4]` beside
# doubles, copied the same way, still builds (its declared layout says integers), and
# forward mode, which copies the tangent's words as they are, is right.
WORD_COPY = r"""
#include <stdint.h>
__attribute__((noinline)) static void copy(void *dst, const void *src, int bytes) {
#ifdef INCREMENT            /* round BW: pointers advanced, -O2 unrolls nothing */
    WORD *d = dst; const WORD *s = src; int n = bytes / (int)sizeof(WORD);
    while (n--) *d++ = *s++;
#else
    WORD *d = (WORD *)dst; const WORD *s = (const WORD *)src;
    for (int i = 0; i < bytes / (int)sizeof(WORD); i++) d[i] = s[i];
#endif
}
double local(const double *x, int n) {
    double loc[2];
    (void)n;
    copy(loc, x, 2 * sizeof(double));
    return loc[0] * loc[1];
}
double heap(const double *x, int n) {
    double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    for (int i = 0; i < n; i++) a[i] = x[i] * x[i];
    copy(b, a, n * sizeof *a);
    double s = 0;
    for (int i = 0; i < n; i++) s += b[i] * (i + 1);
    free(a); free(b);
    return s;
}
int main(void) {
    double x[2] = { 1.5, 2.0 }, dx[2] = { 0 }, t[2] = { 1, 0 };
#ifdef REVERSE
    __enzyme_autodiff((void *)FN, enzyme_dup, x, dx, enzyme_const, 2);
    check("rev", dx[0], WANT0); check("rev", dx[1], WANT1);
#else
    check("fwd", __enzyme_fwddiff_d((void *)local, enzyme_dup, x, t, enzyme_const, 2), 2);
    check("fwd", __enzyme_fwddiff_d((void *)heap, enzyme_dup, x, t, enzyme_const, 2), 3);
#endif
    return fails;
}
"""

INT_FIELD_COPY = r"""
struct S { double d; int idx[4]; double e; };
__attribute__((noinline)) static void cp(struct S *a, const struct S *b) {
    a->d = b->d;
    for (int i = 0; i < 4; i++) a->idx[i] = b->idx[i];
    a->e = b->e;
}
double f(struct S *s) {
    struct S t;
    cp(&t, s);
    return t.d * t.e * t.idx[2];
}
int main(void) {
    struct S s = { 1.5, {1, 2, 3, 4}, 2.0 }, ds = { 0 };
    __enzyme_autodiff((void *)f, enzyme_dup, &s, &ds);
    check("rev", ds.d, 6); check("rev", ds.e, 4.5);
    return fails;
}
"""


@pytest.mark.parametrize("word", ["int32_t", "int16_t", "uint32_t -DINCREMENT"])
@pytest.mark.parametrize("fn", ["local", "heap"])
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_doubles_copied_as_integer_words(tmp_path, opt, fn, word):
    want = "#define WANT0 2\n#define WANT1 1.5\n" if fn == "local" else \
        "#define WANT0 3\n#define WANT1 8\n"
    word, _, flag = word.partition(" -D")
    head = f"#define {flag}\n" if flag else ""
    source = f"{head}#define WORD {word}\n#define FN {fn}\n#define REVERSE\n{want}" + WORD_COPY
    err = build_error(tmp_path, source, opt)
    assert "an integer-typed copy of memory that may hold floating-point values" in err
    run(tmp_path, f"{head}#define WORD {word}\n" + WORD_COPY, opt)


# Round BW: the same generic copy unrolled by -O2 into words at constant offsets (the
# byte count a constant), and through a union's words -- 0, silently, at -O2 (and -O0
# for the union).  Refused.  A CSR-style block of n ints followed by n doubles, whose int
# array is copied word by word, builds: the block's doubles are not the words copied.
UNROLLED_WORDS = r"""
#include <stdint.h>
__attribute__((noinline)) static void copy(void *dst, const void *src, int bytes) {
#ifdef UNION
    union w { double d; uint32_t w[2]; } *d = dst; const union w *s = src;
    for (int i = 0; i < bytes / 8; i++) { d[i].w[0] = s[i].w[0]; d[i].w[1] = s[i].w[1]; }
#else
    int32_t *d = (int32_t *)dst; const int32_t *s = (const int32_t *)src;
    for (int i = 0; i < bytes / 4; i++) d[i] = s[i];
#endif
}
double f(const double *x) {
    double a[2];
    copy(a, x, sizeof a);
    return a[0] * a[1];
}
int main(void) {
    double x[2] = { 2, 3 }, dx[2] = { 0, 0 };
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx);
    check("rev", dx[0], 3); check("rev", dx[1], 2);
    return fails;
}
"""

INT_BLOCK_COPY = r"""
#include <stdint.h>
typedef struct { int n; int *idx; double *val; void *blk; } vec_t;
__attribute__((noinline)) static void copy(void *dst, const void *src, int bytes) {
    int32_t *d = (int32_t *)dst; const int32_t *s = (const int32_t *)src;
    for (int i = 0; i < bytes / 4; i++) d[i] = s[i];
}
static vec_t *vec_alloc(int n) {      /* one block: n ints (padded to 8), then n doubles */
    vec_t *A = malloc(sizeof *A);
    size_t ib = (n * sizeof(int) + 7) & ~(size_t)7;
    A->blk = malloc(ib + n * sizeof(double));
    A->idx = A->blk; A->val = (double *)((char *)A->blk + ib); A->n = n;
    return A;
}
double f(const double *x, const int *idx, int n) {
    vec_t *W = vec_alloc(n);
    for (int i = 0; i < n; i++) { W->idx[i] = idx[i]; W->val[i] = x[i]; }
    vec_t *A = vec_alloc(n);
    copy(A->idx, W->idx, n * sizeof(int));
    for (int i = 0; i < n; i++) A->val[i] = W->val[i];
    free(W->blk); free(W);
    double s = A->val[A->idx[0]] * A->val[A->idx[1]] + A->val[A->idx[2]];
    free(A->blk); free(A);
    return s;
}
int main(void) {
    double x[3] = { 2, 3, 5 }, dx[3] = { 0 }; int idx[3] = { 0, 1, 2 };
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, idx, enzyme_const, 3);
    check("rev", dx[0], 3); check("rev", dx[1], 2); check("rev", dx[2], 1);
    return fails;
}
"""


@pytest.mark.parametrize("union", [False, True], ids=["unrolled", "union"])
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_words_of_doubles_at_constant_offsets(tmp_path, opt, union):
    err = build_error(tmp_path, ("#define UNION\n" if union else "") + UNROLLED_WORDS, opt)
    assert "an integer-typed copy of memory that may hold floating-point values" in err


# Round CA: an array of `union {double d; uint32_t w[2];}` copied word by word in one
# function -- at -O0 the words are addressed at byte offsets computed at run time
# (`i * 8 + k * 4` over i8), which the check took for a va_arg's and let through: the
# gradient was 0, silently (Enzyme 15 too).  A local array is no register save area:
# refused at -O0; at -O1 and up LLVM copies the doubles as doubles, right.
UNION_WORD_LOOP = r"""
#include <stdint.h>
typedef union { double d; uint32_t w[2]; } U;
double f(const double *x, int n) {
    U src[4], dst[4];
    for (int i = 0; i < n; i++) src[i].d = x[i];
    for (int i = 0; i < n; i++) for (int k = 0; k < 2; k++) dst[i].w[k] = src[i].w[k];
    double s = 0;
    for (int i = 0; i < n; i++) s += dst[i].d * dst[i].d;
    return s;
}
int main(void) {
    double x[4] = { 1, 2, 3, 4 }, dx[4] = { 0 };
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 4);
    for (int i = 0; i < 4; i++) check("rev", dx[i], 2 * x[i]);
    return fails;
}
"""


# Round CA: a double packed into `uint32_t` words by one helper and unpacked by another
# (through a union, or shifts into a malloc'd buffer): at -O0 and -O1 the words went
# through integer memory that holds no floats, and the gradient was 0, silently.  Bits
# of an active float stored into integer memory, where the program makes floats of
# integers it loads, are refused; -O2 copies the double's bits into the words as one
# `i64`, which the unpacker reads as a double: a copy of a double (this stop); -O3
# passes the double to the packer as an `i64` load, and the words to the unpacker as
# `i32` loads: the call passing the bits into integer memory is refused.
PACKED_WORDS = r"""
#include <stdint.h>
typedef union { double d; uint32_t w[2]; } U;
__attribute__((noinline)) static void pack(uint32_t *words, const double *x) {
    U u; u.d = x[0];
    words[0] = u.w[0]; words[1] = u.w[1];
}
__attribute__((noinline)) static double unpack(const uint32_t *words) {
    U u; u.w[0] = words[0]; u.w[1] = words[1];
    return u.d;
}
double f(const double *x) {
    uint32_t buf[2];
    pack(buf, x);
    double y = unpack(buf);
    return y * y;
}
int main(void) {
    double x = 3, dx = 0;
    __enzyme_autodiff((void *)f, enzyme_dup, &x, &dx);
    check("rev", dx, 6);
    return fails;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O3"])
def test_double_packed_into_words_and_unpacked(tmp_path, opt):
    # (refused with the system clang; zig's clang, another LLVM, hands over IR whose
    # copies are followed, and the result is right)
    err = right_or_refused(tmp_path, PACKED_WORDS, opt, "packed")
    assert err is None or "integer" in err, err


def test_double_packed_into_words_at_O2_is_one_double_copy(tmp_path):
    """At -O2 the packer is one ``i64`` copy of the double into the words, which the
    unpacker reads as a double: the integer copies followed to the double read
    (``typetree.copied_kinds``) make it a copy of a double, with its derivative."""
    assert right_or_refused(tmp_path, PACKED_WORDS, "-O2", "packed") is None


# A double `memcpy`'d into the `uint64_t` field of a record whose tag the same helper
# computes from the bits: at -O3 the helper receives the bits as an `i64` argument
# (argument promotion) that it both stores and shifts, so it keeps its integer type, and
# the derivative was lost (0 for 6), silently: the store of those bits into the field,
# read as a double after the call, is refused now.  -O2 copies them as a double.
TAG_FROM_BITS = r"""
#include <stdint.h>
typedef struct { uint64_t bits; int tag; } Boxed;
__attribute__((noinline)) static void box(Boxed *b, const double *x) {
    memcpy(&b->bits, x, 8); b->tag = (int)(b->bits >> 60);
}
__attribute__((noinline)) static double unbox(const Boxed *b) {
    double d; memcpy(&d, &b->bits, 8); return d;
}
double f(const double *x) {
    Boxed a, c;
    box(&a, x);
    c.bits = a.bits; c.tag = a.tag;
    double y = unbox(&c);
    return y * y + c.tag;
}
int main(void) {
    double x = 3, dx = 0, t = 1;
    __enzyme_autodiff((void *)f, enzyme_dup, &x, &dx);
    check("rev", dx, 6);
    check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, &x, &t), 6);
    return fails;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2", "-O3"])
def test_double_in_integer_field_with_tag_from_its_bits(tmp_path, opt):
    if opt == "-O3":
        # (refused with the system clang; right with zig's, whose -O3 keeps the pointer)
        err = right_or_refused(tmp_path, TAG_FROM_BITS, opt, "tag")
        assert err is None or "as an integer" in err, err
    else:
        run(tmp_path, TAG_FROM_BITS, opt)


# Round CF (values moved as bits): five silent zeros, none new.
# - A checkpoint: doubles `memcpy`'d into a local `uint8_t` buffer, copied out by a
#   helper as 8-byte integers into doubles: every level, reverse mode (the memcpy into
#   the buffer judged it integers, its adjoint dropped).  The integer copies are
#   followed to where the bytes are read as doubles (``types.copied_floats``): right.
# - Endian-neutral packing (`buf[i] = u >> 8 * i`, rebuilt by `v |= in[i] << 8 * i`,
#   `memcpy`'d into a double): 0 at every level; the bytes of a float's bits stored
#   where they are put together into a float again are refused now.
# - QuickJS's boxing (bits plus an addend) in a `uint64_t` stack at -O0: the integer
#   went through memory to the unboxing call; refused now (-O2 folds it: right).
# - A float `memcpy`'d into the `uint32_t` field of a record array at -O2: refused now
#   (the analysis folds the array's fields together and cannot tell).
CHECKPOINT_BYTES = r"""
#include <stdint.h>
__attribute__((noinline)) static void get(const uint8_t *buf, double *p, int n) {
    for (int i = 0; i < n; i++) memcpy(p + i, buf + 8 * i, sizeof(double));
}
double f(double *x) {
    uint8_t buf[16]; double y[2];
    memcpy(buf, x, 16);
    get(buf, y, 2);
    return y[0] * y[1];
}
int main(void) {
    double x[2] = {3, 5}, dx[2] = {0}, t[2] = {1, 2};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx);
    check("rev 0", dx[0], 5);
    check("rev 1", dx[1], 3);
    check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, x, t), 5 + 2 * 3);
    return fails;
}
"""

LE64_BYTES = r"""
#include <stdint.h>
__attribute__((noinline)) static void unpack(const uint8_t *in, double *x) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)in[i] << (8 * i);
    memcpy(x, &v, 8);
}
double f(double *x) {
    uint8_t buf[8]; uint64_t u; double y;
    memcpy(&u, x, 8);
    for (int i = 0; i < 8; i++) buf[i] = (uint8_t)(u >> (8 * i));
    unpack(buf, &y);
    return y * y;
}
int main(void) {
    double x = 3, dx = 0;
    __enzyme_autodiff((void *)f, enzyme_dup, &x, &dx);
    check("rev", dx, 6);
    return fails;
}
"""

QUICKJS_ADDEND = r"""
#include <stdint.h>
#define ADDEND (0x7ff8000cULL << 32)
static uint64_t box(double d) { union { double d; uint64_t u; } u; u.d = d; return u.u + ADDEND; }
static double unbox(uint64_t v) {
    if ((v >> 32) == 0) return (int32_t)v;
    union { double d; uint64_t u; } u; u.u = v - ADDEND; return u.d;
}
double f(double *x) {
    uint64_t s[2];
    s[0] = box(x[0]); s[1] = 2;
    double r = 0;
    for (int i = 0; i < 2; i++) { double d = unbox(s[i]); r += d * d; }
    return r;
}
int main(void) {
    double x[1] = {3}, dx[1] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx);
    check("rev", dx[0], 6);
    return fails;
}
"""

WIRE_U32 = r"""
#include <stdint.h>
typedef struct { uint32_t id; uint32_t bits; } Field;
typedef struct { uint32_t n; Field j[2]; } Msg;
__attribute__((noinline)) static void enc(Msg *m, const float *q, int n) {
    m->n = n;
    for (int i = 0; i < n; i++) { m->j[i].id = i; memcpy(&m->j[i].bits, &q[i], 4); }
}
float f(float *x) {
    Msg m; float y[2];
    enc(&m, x, 2);
    for (uint32_t i = 0; i < m.n; i++) memcpy(&y[m.j[i].id], &m.j[i].bits, 4);
    return y[0] * y[0] + y[1] * y[1];
}
int main(void) {
    float x[2] = {3, 5}, dx[2] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx);
    check("rev 0", dx[0], 6);
    check("rev 1", dx[1], 10);
    return fails;
}
"""

# Round CG (records mixing integers, doubles and raw bits): two more.
# - A big-endian serialiser: `put_f64` cuts a double argument's bits into bytes, `get_f64`
#   puts them together again: 0 at every level (the callee carried no derivative to the
#   bytes: no float reaches an output through it).  Refused at the call now.
# - A union-holding struct returned by value by a getter: -O3 passes the double's bits in
#   and out as an `i64` the getter returns unchanged: 0; refused now, as -O1/-O2 were.
BYTES_BIG_ENDIAN = r"""
#include <stdint.h>
__attribute__((noinline)) static void put_f64(unsigned char *p, double d) {
    uint64_t u; memcpy(&u, &d, 8);
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(u >> (56 - 8 * i));
}
__attribute__((noinline)) static double get_f64(const unsigned char *p) {
    uint64_t u = 0;
    for (int i = 0; i < 8; i++) u = (u << 8) | p[i];
    double d; memcpy(&d, &u, 8); return d;
}
double f(double x) {
    unsigned char b[8];
    put_f64(b, x);
    double y = get_f64(b);
    return y * y;
}
int main(void) {
    check("rev", __enzyme_autodiff_d((void *)f, 3.0), 6);
    return fails;
}
"""

UNION_GETTER = r"""
#include <stdint.h>
typedef union { double d; uint64_t u; } word_t;
typedef struct { int32_t tag; int32_t seq; word_t v; } slot_t;
__attribute__((noinline)) static slot_t get(const slot_t *s) { return *s; }
double f(double x) {
    slot_t s; s.tag = 1; s.seq = 2; s.v.d = x;
    slot_t t = get(&s);
    return t.v.d * t.v.d;
}
int main(void) {
    check("rev", __enzyme_autodiff_d((void *)f, 3.0), 6);
    return fails;
}
"""


def right_or_refused(tmp_path, body, opt, name):
    """Build ``body`` as ``name``: a compile error (never a traceback, no output file),
    or a run with no FAIL line.  Returns the compile error's text, or None."""
    src = Path(tmp_path) / f"{name}.c"
    src.write_text(PRELUDE + body)
    exe = Path(tmp_path) / name
    r = enzyme_cc([opt, str(src), "-o", str(exe), "-lm"], tmp_path)
    assert "Traceback" not in r.stderr, r.stderr
    if r.returncode != 0:
        assert "error:" in r.stderr and not exe.exists(), r.stderr
        return r.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "FAIL" not in out.stdout, out.stdout + out.stderr
    return None


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2", "-O3"])
def test_values_moved_as_bits(tmp_path, opt):
    run(tmp_path, CHECKPOINT_BYTES, opt)
    err = build_error(tmp_path, LE64_BYTES, opt)
    assert "moved through integer operations" in err, err
    # (-O0 is refused; -O1 with the system clang, right with zig's; -O2 and -O3 fold
    # the addend away and are right)
    err = right_or_refused(tmp_path, QUICKJS_ADDEND, opt, "quickjs")
    assert err is not None or opt != "-O0", "-O0 is refused"
    assert right_or_refused(tmp_path, WIRE_U32, opt, "wire") is not None
    err = build_error(tmp_path, BYTES_BIG_ENDIAN, opt)
    assert "moved through integer operations" in err, err
    err = right_or_refused(tmp_path, UNION_GETTER, opt, "getter")
    assert err is not None or opt == "-O0", "only -O0 builds"


# Round CB: HH-suite's fast log2 (Mitchell's approximation) converts the bits of the
# float, as an integer, to a float: `(float)(bits(x) - 0x3F800000) * 0x1p-23`.  The
# gradient was 0, silently (the refusal covered bits turned back into floats by a
# bitcast, not converted by sitofp).  The exponent alone (`(bits >> 52) & 0x7ff`, as
# ilogb takes it) is constant between powers of two, and builds.
BITS_AS_A_NUMBER = r"""
#include <stdint.h>
float fastlog2(float x) {
    union { float f; int32_t i; } z; z.f = x;
    return (float)(z.i - 0x3F800000) * (1.0f / (1 << 23));
}
double f(const double *x) { return x[0] * fastlog2((float)x[0]); }
int main(void) {
    double x = 3, dx = 0;
    __enzyme_autodiff((void *)f, enzyme_dup, &x, &dx);
    printf("dx %g\n", dx);
    return 0;
}
"""

EXPONENT_ONLY = r"""
#include <stdint.h>
static double scaled(double x) {
    uint64_t b; memcpy(&b, &x, 8);
    int e = (int)((b >> 52) & 0x7ff) - 1023;
    return x * x + (double)e;
}
int main(void) {
    check("rev", __enzyme_autodiff_d((void *)scaled, enzyme_out, 3.0), 6);
    check("fwd", __enzyme_fwddiff_d((void *)scaled, enzyme_dup, 3.0, 1.0), 6);
    return fails;
}
"""


# the same on a double's high word (sign, exponent, 20 mantissa bits)
HIGH_WORD_AS_A_NUMBER = r"""
#include <stdint.h>
static double fastlog2(double x) {
    uint64_t b; memcpy(&b, &x, 8);
    return (double)((int32_t)(b >> 32) - 0x3ff00000) * 0x1p-20;
}
int main(void) {
    printf("d %g\n", __enzyme_autodiff_d((void *)fastlog2, enzyme_out, 3.0));
    return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_float_bits_converted_as_a_number(tmp_path, opt):
    for program in (BITS_AS_A_NUMBER, HIGH_WORD_AS_A_NUMBER):
        err = build_error(tmp_path, program, opt)
        assert "moved through integer operations" in err, err
    run(tmp_path, EXPONENT_ONLY, opt)


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_array_of_unions_copied_word_by_word(tmp_path, opt):
    if opt == "-O0":
        err = build_error(tmp_path, UNION_WORD_LOOP, opt)
        assert "an integer-typed copy of memory that may hold floating-point values" in err
    else:
        run(tmp_path, UNION_WORD_LOOP, opt)


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_int_array_copied_word_by_word_in_a_block_with_doubles(tmp_path, opt):
    run(tmp_path, INT_BLOCK_COPY, opt)


@pytest.mark.parametrize("opt", OPTS)
def test_int_field_copied_word_by_word_beside_doubles(tmp_path, opt):
    run(tmp_path, INT_FIELD_COPY, opt)


# Round BS (MATLAB Coder's output emxArray, allocated inside the entry point): a block
# calloc'ed by the differentiated function and stored into a dup output struct stays
# the caller's, and so does its shadow -- which the reverse sweep freed, and whose
# header-prefixed block the caller's free() then aborted on ("double free or
# corruption"; Enzyme 15 right).  Its shadow is now a calloc block the reverse leaves
# alone.  A block a helper stores into a struct that a destroy function frees later in
# the same derivative call keeps the old rule (its shadow goes with the reverse).  The
# integers stored beside it (its length) reach the shadow struct too, as in Enzyme
# (round BW: an owner flag left 0 there made the caller's free skip the shadow).
ESCAPING_OUTPUT = r"""
typedef struct { double *data; int n; } arr_T;
double fill(const double *x, arr_T *y) {
    double s = 0.0;
    y->data = (double *)calloc(4, sizeof(double));
    y->n = 4;
    for (int i = 0; i < 4; i++) { y->data[i] = x[i] * x[i]; s += y->data[i] * y->data[i]; }
    return s;
}
/* round BT: the same through an allocation wrapper (its block is returned, then
   stored into the output by its caller) */
__attribute__((noinline)) static double *alloc_vec(int n) {
    return (double *)malloc(n * sizeof(double));
}
double fill_wrapped(const double *x, arr_T *y) {
    double s = 0.0;
    y->data = alloc_vec(4);
    y->n = 4;
    for (int i = 0; i < 4; i++) { y->data[i] = x[i] * x[i]; s += y->data[i] * y->data[i]; }
    return s;
}
typedef struct { double *buf; } work_T;
__attribute__((noinline)) static void init(work_T *w) { w->buf = malloc(4 * sizeof(double)); }
__attribute__((noinline)) static void destroy(work_T *w) { free(w->buf); }
double scratch(const double *x) {
    work_T w;
    init(&w);
    for (int i = 0; i < 4; i++) w.buf[i] = sin(x[i]);
    double s = 0;
    for (int i = 0; i < 4; i++) s += w.buf[i] * x[i];
    destroy(&w);
    return s;
}
int main(void) {
    double x[4] = { 1, 2, 3, 4 }, dx[4] = { 0 };
    for (int rep = 0; rep < 3; rep++) {
        arr_T y = { 0, 0 }, dy = { 0, 0 };
        for (int i = 0; i < 4; i++) dx[i] = 0;
        __enzyme_autodiff((void *)fill, enzyme_dup, x, dx, enzyme_dup, &y, &dy);
        for (int i = 0; i < 4; i++) check("fill", dx[i], 4 * x[i] * x[i] * x[i]);
        check("shadow's length", dy.n, 4);  /* integers stored go to the shadow too */
        free(y.data);
        free(dy.data);
        arr_T w = { 0, 0 }, dw = { 0, 0 };
        for (int i = 0; i < 4; i++) dx[i] = 0;
        __enzyme_autodiff((void *)fill_wrapped, enzyme_dup, x, dx, enzyme_dup, &w, &dw);
        for (int i = 0; i < 4; i++) check("wrapped", dx[i], 4 * x[i] * x[i] * x[i]);
        free(w.data);
        free(dw.data);
    }
    double dz[4] = { 0 };
    __enzyme_autodiff((void *)scratch, enzyme_dup, x, dz);
    for (int i = 0; i < 4; i++) check("scratch", dz[i], cos(x[i]) * x[i] + sin(x[i]));
    return fails;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_block_allocated_for_the_caller_keeps_its_shadow(tmp_path, opt, valgrind):
    run(tmp_path, ESCAPING_OUTPUT, opt, valgrind)


# An allocation wrapper that makes both the caller's output and temporaries the program
# frees (directly or through a free_vec): the wrapper's shadow was a pool block the
# reverse freed, the caller's free(dy.data) then aborted at -O1 and up.  Whether each
# block was freed is now known at run time (runtime_escape), as for blocks that code
# freeing loaded pointers hands on.
WRAPPER_FOR_OUTPUTS_AND_TEMPORARIES = r"""
typedef struct { int n; double *data; } vec;
__attribute__((noinline)) static double *alloc_vec(int n) { return malloc(n * sizeof(double)); }
__attribute__((noinline)) static void free_vec(double *p) { free(p); }
__attribute__((noinline)) void model(const double *x, int n, vec *y) {
    double *tmp = alloc_vec(n), *tmp2 = alloc_vec(n);
    for (int i = 0; i < n; i++) { tmp[i] = sin(x[i]); tmp2[i] = x[i] * tmp[i]; }
    y->n = n;
    y->data = alloc_vec(n);
    for (int i = 0; i < n; i++) y->data[i] = tmp2[i] + tmp[i];
    free(tmp);
    free_vec(tmp2);
}
double loss(const double *x, int n) {
    vec y;
    model(x, n, &y);
    double s = 0;
    for (int i = 0; i < y.n; i++) s += y.data[i] * y.data[i];
    free(y.data);
    return s;
}
void outer(const double *x, int n, vec *y) { model(x, n, y); }
int main(void) {
    double x[3] = { 0.3, 0.5, 0.7 };
    for (int rep = 0; rep < 2; rep++) {
        double dx[3] = { 0 }, g[3] = { 0 };
        __enzyme_autodiff((void *)loss, enzyme_dup, x, dx, enzyme_const, 3);
        for (int i = 0; i < 3; i++) {
            double a = (x[i] + 1) * sin(x[i]), da = sin(x[i]) + (x[i] + 1) * cos(x[i]);
            check("loss", dx[i], 2 * a * da);
        }
        vec y = { 0, 0 }, dy = { 0, 0 };
        __enzyme_autodiff((void *)outer, enzyme_dup, x, g, enzyme_const, 3,
                          enzyme_dup, &y, &dy);
        check("shadow's length", dy.n, 3);
        for (int i = 0; i < 3; i++) dy.data[i] = 1.0;   /* seed after the call: unused */
        free(y.data);
        free(dy.data);
    }
    return fails;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_allocation_wrapper_for_outputs_and_temporaries(tmp_path, opt, valgrind):
    run(tmp_path, WRAPPER_FOR_OUTPUTS_AND_TEMPORARIES, opt, valgrind)


# MATLAB Coder's emxEnsureCapacity (round BS p20) and a linked list built and partly
# popped inside the derivative call: blocks stored into the caller's structures while
# the code also frees pointers it reads from memory.  Which of them the program frees
# before it returns is known only at run time; their shadows are calloc blocks in a
# registry (runtime_escape) that the reverse sweep frees where the program freed the
# block, and leaves to the caller otherwise (it aborted in the caller's free before:
# the reverse had freed every one).  No leak, no double free.
GROWN_OUTPUTS = [r"""
#include <stdbool.h>
typedef struct { double *data; int *size; int allocatedSize; int numDimensions; bool canFreeData; } emxArray_real_T;
static void emxEnsureCapacity_real_T(emxArray_real_T *emxArray, int oldNumel) {
    int newNumel, i; void *newData;
    if (oldNumel < 0) oldNumel = 0;
    newNumel = 1;
    for (i = 0; i < emxArray->numDimensions; i++) newNumel *= emxArray->size[i];
    if (newNumel > emxArray->allocatedSize) {
        i = emxArray->allocatedSize;
        if (i < 16) i = 16;
        while (i < newNumel) { if (i > 1073741823) i = 2147483647; else i *= 2; }
        newData = calloc((unsigned int)i, sizeof(double));
        if (emxArray->data != NULL) {
            memcpy(newData, emxArray->data, sizeof(double) * (unsigned int)oldNumel);
            if (emxArray->canFreeData) free(emxArray->data);
        }
        emxArray->data = (double *)newData;
        emxArray->allocatedSize = i;
        emxArray->canFreeData = true;
    }
}
static emxArray_real_T *emxCreate(void) {
    emxArray_real_T *e = malloc(sizeof *e);
    e->data = NULL; e->numDimensions = 2; e->size = malloc(2 * sizeof(int));
    e->size[0] = e->size[1] = 0; e->allocatedSize = 0; e->canFreeData = true;
    return e;
}
static void emxFree(emxArray_real_T *e) { if (e->canFreeData) free(e->data); free(e->size); free(e); }
void squares(const double *x, int n, emxArray_real_T *y) {
    int i = y->size[0] * y->size[1];
    y->size[0] = 1; y->size[1] = n;
    emxEnsureCapacity_real_T(y, i);
    for (int k = 0; k < n; k++) y->data[k] = x[k] * x[k];
}
double loss(const double *x, int n, emxArray_real_T *y) {
    squares(x, 10, y);
    double t = y->data[3];
    squares(x, n, y);
    y->data[0] += t;
    double s = 0;
    for (int k = 0; k < n; k++) s += y->data[k] * (k + 1);
    return s;
}
int main(void) {
    double x[20], dx[20] = { 0 };
    int fails = 0;
    for (int k = 0; k < 20; k++) x[k] = 0.1 * k + 1;
    for (int rep = 0; rep < 2; rep++) {
        emxArray_real_T *y = emxCreate(), *dy = emxCreate();
        for (int k = 0; k < 20; k++) dx[k] = 0;
        __enzyme_autodiff((void *)loss, enzyme_dup, x, dx, enzyme_const, 20, enzyme_dup, y, dy);
        for (int k = 0; k < 20; k++) if (dx[k] != 2 * x[k] * (k + 1) + (k == 3 ? 2 * x[3] : 0)) { printf("FAIL %d %g\n", k, dx[k]); fails++; }
        emxFree(y); emxFree(dy);
    }
    printf("%s\n", fails ? "FAIL" : "ok");
    return fails;
}
""", r"""
typedef struct node { double v; struct node *next; } node;
typedef struct { node *head; int n; } list;
__attribute__((noinline)) static void push(list *l, double v) {
    node *nd = malloc(sizeof *nd); nd->v = v; nd->next = l->head; l->head = nd; l->n++;
}
__attribute__((noinline)) static double pop(list *l) {
    node *nd = l->head; double v = nd->v; l->head = nd->next; l->n--; free(nd); return v;
}
double f(const double *x, int m, list *l) {
    double s = 0;
    for (int i = 0; i < m; i++) push(l, x[i % 4] * (i + 1));
    for (int i = 0; i < m / 2; i++) s += pop(l) * 0.5;
    for (node *p = l->head; p; p = p->next) s += p->v * p->v;
    return s;
}
static void destroy(list *l) { while (l->head) { node *n = l->head; l->head = n->next; free(n); } }
int main(void) {
    double x[4] = { 1, 2, 3, 4 }, dx[4] = { 0 }, want[4] = { 0 };
    int m = 300;
    list l = { 0, 0 }, dl = { 0, 0 };
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, m, enzyme_dup, &l, &dl);
    for (int i = 0; i < m; i++) {   /* pushed i; popped if i >= m - m/2 (last pushed first) */
        double c = i + 1;
        if (i >= m - m / 2) want[i % 4] += 0.5 * c; else want[i % 4] += 2 * x[i % 4] * c * c;
    }
    int fails = 0;
    for (int k = 0; k < 4; k++) if (fabs(dx[k] - want[k]) > 1e-9 * fabs(want[k])) { printf("FAIL %d %g %g\n", k, dx[k], want[k]); fails++; }
    destroy(&l); destroy(&dl);
    printf("%s\n", fails ? "FAIL" : "ok");
    return fails;
}
"""]


@pytest.mark.parametrize("opt", OPTS)
@pytest.mark.parametrize("k", [0, 1], ids=["emxEnsureCapacity", "list"])
def test_blocks_the_program_may_free_before_returning(tmp_path, opt, k, valgrind):
    src = Path(tmp_path) / "t.c"
    src.write_text("#include <math.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
                   "#include <string.h>\nint enzyme_dup, enzyme_const;\n"
                   "void __enzyme_autodiff(void *, ...);\n" + GROWN_OUTPUTS[k])
    exe = Path(tmp_path) / "t"
    r = enzyme_cc([opt, str(src), "-o", str(exe), "-lm"], tmp_path)
    assert r.returncode == 0, r.stderr
    for cmd in ([str(exe)], [valgrind, "-q", "--leak-check=full", "--error-exitcode=3",
                             "--errors-for-leak-kinds=definite", str(exe)]):
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0 and out.stdout.strip().endswith("ok"), \
            out.stdout + out.stderr


# Round BX (a Poisson copy-number HMM, a Wright-Fisher likelihood): a log-pmf guarded
# against a zero rate (`if (lambda <= 0) return k == 0 ? 0 : -INFINITY;`) inside loops.
# clang -O1 and up knows `log` cannot set errno past the guard, makes it `llvm.log` and
# hoists it into the loop's preheader, where it is computed at lambda = 0 too; its
# adjoint there is 0 and the rule made it 0 * (1 / 0) = NaN -- the whole gradient NaN,
# silently (Enzyme 15, whose LLVM does not hoist it, right).  A value used only on
# paths its block may not take contributes exactly zero for a zero adjoint.
GUARDED_LOG = r"""
static double poisson_logpmf(int k, double lambda) {
    if (lambda <= 0.0) return k == 0 ? 0.0 : -INFINITY;
    return k * log(lambda) - lambda;
}
double f(double d, const int *counts, int nbin) {
    double r = 0;
    for (int b = 0; b < nbin; b++)
        for (int c = 0; c < 2; c++) r += exp(poisson_logpmf(counts[b], d * c));
    return r;
}
static double binom_logpmf(int k, int n, double p) {
    if (p <= 0.0) return k == 0 ? 0.0 : -INFINITY;
    return k * log(p) + (n - k) * log1p(-p);
}
double g(double s, int N) {
    double r = 0.0;
    for (int i = 0; i <= 1; i++) {
        double p = i * s;
        for (int j = 0; j <= N; j++) r += exp(binom_logpmf(j, N, p)) * j;
    }
    return r;
}
int main(void) {
    int counts[2] = { 1, 0 };
    double h = 1e-6;
    check("poisson", __enzyme_autodiff_d((void *)f, enzyme_out, 2.0, enzyme_const, counts,
                                          enzyme_const, 2),
          (f(2 + h, counts, 2) - f(2 - h, counts, 2)) / (2 * h));
    check("binomial", __enzyme_autodiff_d((void *)g, enzyme_out, 0.25, enzyme_const, 2),
          1.5);     /* (no binomial coefficient) p (1 - p) + 2 p^2: 1 + 2p */
    return fails;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2", "-O3"])
def test_log_hoisted_out_of_its_guard(tmp_path, opt):
    run(tmp_path, GUARDED_LOG, opt)


# ---------------------------------------------------------------------------- atomics

ATOMIC = r"""
void acc(const double *x, double *a, int n) {
    for (int i = 0; i < n; i++) {
        __atomic_fetch_add(&a[0], x[i] * x[i], __ATOMIC_RELAXED);
        __atomic_fetch_sub(&a[1], sin(x[i]), __ATOMIC_SEQ_CST);
    }
}
/* the value an atomic add returns is used */
double old_used(const double *x) {
    double s = 1.0;
    double o = __atomic_fetch_add(&s, x[0] * x[1], __ATOMIC_RELAXED);
    return o * x[0] + s * s;   /* o = 1, s = 1 + x0 x1 */
}
int main(void) {
    double x[3] = {0.3, -1.2, 0.7}, dx[3] = {0}, a[2] = {0.5, 2.0}, da[2] = {1.5, -0.25};
    __enzyme_autodiff((void *)acc, enzyme_dup, x, dx, enzyme_dup, a, da, enzyme_const, 3);
    for (int i = 0; i < 3; i++)
        check("rev dx", dx[i], 2 * x[i] * 1.5 + 0.25 * cos(x[i]));
    check("rev da0 kept", da[0], 1.5);
    double v[3] = {1.0, 0.5, -2.0}, t[2] = {0, 0}, want0 = 0, want1 = 0;
    a[0] = 0.5; a[1] = 2.0;
    __enzyme_fwddiff((void *)acc, enzyme_dup, x, v, enzyme_dup, a, t, enzyme_const, 3);
    for (int i = 0; i < 3; i++) { want0 += 2 * x[i] * v[i]; want1 -= cos(x[i]) * v[i]; }
    check("fwd da0", t[0], want0);
    check("fwd da1", t[1], want1);
    double g[3] = {0};
    __enzyme_autodiff((void *)old_used, enzyme_dup, x, g);
    double s = 1 + x[0] * x[1];
    check("old rev d0", g[0], 1 + 2 * s * x[1]);
    check("old rev d1", g[1], 2 * s * x[0]);
    double v2[3] = {0.5, 2.0, 0};
    double ft = __enzyme_fwddiff_d((void *)old_used, enzyme_dup, x, v2);
    check("old fwd", ft, (1 + 2 * s * x[1]) * 0.5 + 2 * s * x[0] * 2.0);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_atomic_add_sub(tmp_path, opt):
    run(tmp_path, ATOMIC, opt)


@pytest.mark.parametrize("opt", OPTS)
@pytest.mark.parametrize("call", [
    "__enzyme_autodiff((void *)f, enzyme_const, &acc, 2.0)",
    "d = __enzyme_fwddiff_d((void *)f, enzyme_const, &acc, 2.0, 1.0)"], ids=["rev", "fwd"])
def test_atomic_add_into_memory_without_shadow_is_an_error(tmp_path, opt, call):
    err = build_error(tmp_path, r"""
static __attribute__((noinline)) double f(double *acc, double x) {
    __atomic_fetch_add(acc, x * x, __ATOMIC_RELAXED);
    return *acc;
}
int main(void) {
    double acc = 0, d = 0;
    CALL;
    printf("%g %g\n", acc, d);
    return 0;
}""".replace("CALL", call), opt)
    assert "an active value is added into memory that has no shadow" in err, err


@pytest.mark.parametrize("opt", OPTS)
def test_atomic_exchange_of_double_bits_is_an_error(tmp_path, opt):
    # clang exchanges a double's bits as an i64: no rule, and no silent zero
    err = build_error(tmp_path, r"""
#include <stdatomic.h>
double f(_Atomic double *a, double x) {
    atomic_exchange_explicit(a, x * x, memory_order_relaxed);
    return *a;
}
int main(void) {
    _Atomic double a = 1.0, da = 0.0;
    printf("%g\n", __enzyme_autodiff_d((void *)f, enzyme_dup, &a, &da, 2.0));
    return 0;
}""", opt)
    assert "atomicrmw xchg" in err and "in function 'f'" in err


@pytest.mark.parametrize("opt", OPTS)
def test_compare_exchange_loop_is_an_error(tmp_path, opt):
    # C11 `*a *= x` on an _Atomic double is a cmpxchg loop on the bits
    err = build_error(tmp_path, r"""
void f(_Atomic double *a, double x) { *a *= x; }
int main(void) {
    _Atomic double a = 1.5, da = 1.0;
    printf("%g\n", __enzyme_autodiff_d((void *)f, enzyme_dup, &a, &da, 2.0));
    return 0;
}""", opt)
    assert "cmpxchg" in err or "atomicrmw" in err


# ------------------------------------------------------------- copies in noinline helpers

COPY = r"""
static __attribute__((noinline)) void cp(double *d, const double *s, int n) {
    memcpy(d, s, n * sizeof(double));
}
static __attribute__((noinline)) void zero(double *d, int n) { memset(d, 0, n * sizeof *d); }
static __attribute__((noinline)) void shift(double *d, int n) {
    memmove(d, d + 2, (n - 2) * sizeof(double));   /* overlapping, to the left */
}
static __attribute__((noinline)) void shift_right(double *d, int n) {
    memmove(d + 1, d, (n - 1) * sizeof(double));   /* overlapping, to the right */
}
double f(const double *x) {
    double z[5], w[5];
    for (int i = 0; i < 5; i++) z[i] = x[i] * x[i];
    cp(w, z, 5);
    zero(w + 4, 1);
    shift(z, 5);             /* z = z2 z3 z4 z3 z4 */
    shift_right(w, 5);       /* w = w0 w0 w1 w2 w3 */
    double s = 0;
    for (int i = 0; i < 5; i++) s += z[i] * (i + 1) + w[i] * w[i];
    return s;
}
int main(void) {
    double x[5] = {1.0, 2.0, 0.5, 3.0, -1.5}, dx[5] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx);
    for (int k = 0; k < 5; k++) {
        double h = 1e-6, xp[5], xm[5];
        memcpy(xp, x, sizeof xp); memcpy(xm, x, sizeof xm);
        xp[k] += h; xm[k] -= h;
        check("rev dx fd", dx[k], (f(xp) - f(xm)) / (2 * h));
        double v[5] = {0};
        v[k] = 1.0;
        check("fwd fd", __enzyme_fwddiff_d((void *)f, enzyme_dup, x, v), (f(xp) - f(xm)) / (2 * h));
    }
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_copies_in_noinline_helpers(tmp_path, opt):
    run(tmp_path, COPY, opt)


def test_memmove_left_shift_issue_example(tmp_path):
    out = run(tmp_path, r"""
double f(const double *x) {
    double z[5];
    for (int i = 0; i < 5; i++) z[i] = x[i] * x[i];
    memmove(z, z + 2, 24);
    double s = 0;
    for (int i = 0; i < 5; i++) s += z[i];
    return s;
}
int main(void) {
    double x[5] = {1, 2, 0.5, 3, 4}, dx[5] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx);
    double want[5] = {0, 0, 1, 12, 16};   /* z = x2^2 x3^2 x4^2 x3^2 x4^2 */
    for (int i = 0; i < 5; i++) check("dx", dx[i], want[i]);
    return fails;
}""", "-O0")
    assert out.count("ok dx") == 5


UNTYPED = r"""
void __enzyme_double(void *, unsigned long);
static __attribute__((noinline)) void cp(void *d, const void *s, long n) { memcpy(d, s, n); }
void f(void *d, const void *s, long n) {
    HINT
    cp(d, s, n);
}
int main(void) {
    double s[3] = {1, 2, 3}, ds[3] = {0}, d[3], dd[3] = {1, 10, 100};
    __enzyme_autodiff((void *)f, enzyme_dup, d, dd, enzyme_dup, s, ds, enzyme_const, 24L);
    for (int i = 0; i < 3; i++) check("rev ds", ds[i], (double[]){1, 10, 100}[i]);
    double t[3] = {0}, v[3] = {0.5, -1, 2};
    __enzyme_fwddiff((void *)f, enzyme_dup, d, t, enzyme_dup, s, v, enzyme_const, 24L);
    for (int i = 0; i < 3; i++) check("fwd dd", t[i], v[i]);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_untyped_copy_needs_a_hint(tmp_path, opt):
    err = build_error(tmp_path, UNTYPED.replace("HINT", ""), opt)
    assert "memcpy" in err and "__enzyme_double" in err


@pytest.mark.parametrize("opt", OPTS)
def test_untyped_copy_with_a_hint(tmp_path, opt):
    run(tmp_path, UNTYPED.replace("HINT", "__enzyme_double(d, n);"), opt)


# --------------------------------------------------------- libc writes into shadowed memory

LIBC = r"""
void f(double *x, double *out, FILE *fp) {
    double buf[3];
    char txt[32];
    buf[0] = x[0] * x[0];
    buf[1] = 3 * x[0];
    buf[2] = x[0];
    if (fread(buf, sizeof(double), 1, fp) != 1) abort();   /* overwrites buf[0] */
    double m = frexp(x[0], (int *)&buf[2]);               /* overwrites (part of) buf[2] */
    snprintf((char *)&buf[1], 4, "%d", 7);                 /* overwrites 2 bytes of buf[1] */
    snprintf(txt, sizeof txt, "%g", buf[0]);
    *out = buf[0] + m + (txt[0] == '5');
}
int main(void) {
    FILE *fp = tmpfile();
    double five = 5.0;
    fwrite(&five, 8, 1, fp);
    double x = 1.7, dx = 0, out = 0, dout = 1;
    rewind(fp);
    __enzyme_autodiff((void *)f, enzyme_dup, &x, &dx, enzyme_dup, &out, &dout, enzyme_const, fp);
    int e; frexp(x, &e);
    check("rev dx", dx, ldexp(1.0, -e));    /* buf[0], buf[1], buf[2] were overwritten */
    check("primal", out, 5.0 + frexp(x, &e) + 1);
    rewind(fp);
    double t = 0, v = 1.0;
    out = 0;
    __enzyme_fwddiff((void *)f, enzyme_dup, &x, &v, enzyme_dup, &out, &t, enzyme_const, fp);
    check("fwd dout", t, ldexp(1.0, -e));
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_libc_writes_zero_the_shadow(tmp_path, opt):
    run(tmp_path, LIBC, opt)


@pytest.mark.parametrize("opt", OPTS)
def test_scanf_into_active_memory_is_an_error(tmp_path, opt):
    # (with a format known at compile time, what each conversion stores is known:
    # test_libc_search_scan.py; here the format is the caller's)
    err = build_error(tmp_path, r"""
double f(double *x, const char *s, const char *fmt) {
    double y[2] = {x[0], x[0] * x[0]};
    sscanf(s, fmt, &y[0]);
    return y[0] + y[1];
}
int main(void) {
    double x = 2, dx = 0;
    __enzyme_autodiff((void *)f, enzyme_dup, &x, &dx, enzyme_const, "3.5",
                      enzyme_const, "%lf");
    printf("%g\n", dx);
    return 0;
}""", opt)
    assert "sscanf" in err and "an amount of data its format decides" in err, err


# ----------------------------------------------------------------- realloc in a callee

PUSH = r"""
typedef struct { double *data; int n, cap; } Vec;
__attribute__((noinline)) void push(Vec *a, double v) {
    if (a->n == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 1;
        a->data = realloc(a->data, a->cap * sizeof(double));
    }
    a->data[a->n++] = v;
}
double f(const double *x, int n) {
    Vec a = {0, 0, 0};
    for (int i = 0; i < n; i++) push(&a, x[i] * x[i]);
    double s = 0;
    for (int i = 0; i < a.n; i++) s += a.data[i] * (i + 1);
    free(a.data);
    return s;
}
int main(void) {
    double x[6] = {1, 2, 3, 4, 5, -0.5}, dx[6] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 6);
    for (int i = 0; i < 6; i++) check("rev dx", dx[i], 2 * x[i] * (i + 1));
    double v[6] = {1, 1, 1, 1, 1, 1}, want = 0;
    for (int i = 0; i < 6; i++) want += 2 * x[i] * (i + 1);
    check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, x, v, enzyme_const, 6), want);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_realloc_in_non_inlined_push(tmp_path, opt):
    run(tmp_path, PUSH, opt)


# ------------------------------------------------------------------ unsupported returns

COMPLEX = r"""
#include <complex.h>
double complex f(double x) { return x * x + I * 3 * x; }
double complex __enzyme_fwddiff_c(void *, ...);
int main(void) {
#ifdef REVERSE
    printf("%g\n", __enzyme_autodiff_d((void *)f, 3.0));
#endif
    double complex t = __enzyme_fwddiff_c((void *)f, 3.0, 1.0);
    check("fwd re", creal(t), 6.0);
    check("fwd im", cimag(t), 3.0);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_complex_return(tmp_path, opt):
    run(tmp_path, COMPLEX, opt)
    err = build_error(tmp_path, "#define REVERSE\n" + COMPLEX, opt)
    assert "'f' returns { double, double }" in err and "in function 'main'" in err


# ---------------------------------------------------------------------- computed goto
# The function's private copy still jumps to the original's blocks (the table of label
# addresses names the original): LLVM folded the copy to `unreachable` and the built
# program crashed, with no diagnostic.  Now: a compile error where a computed goto is
# differentiated; an inactive helper with one (integers only) is still fine.
COMPUTED_GOTO = r"""
double f(double x, int k) {
    void *t[2] = {&&A, &&B};
    goto *t[k];
A:  return x * x;
B:  return 3 * x;
}
int main(void) { return (int)__enzyme_autodiff_d((void *)f, 2.0, enzyme_const, 1); }
"""

INACTIVE_GOTO = r"""
__attribute__((noinline)) int steps(int k) {
    static void *t[3] = {&&A, &&B, &&C};
    int n = 0;
    goto *t[k % 3];
A:  n += 1;
B:  n += 2;
C:  return n + 4;
}
double f(double x, int k) { return x * x * steps(k); }
int main(void) {
    check("d/dx", __enzyme_autodiff_d((void *)f, 1.5, enzyme_const, 0), 2 * 1.5 * 7);
    check("tangent", __enzyme_fwddiff_d((void *)f, 1.5, 1.0, enzyme_const, 2), 2 * 1.5 * 4);
    return fails != 0;
}
"""


# A threaded interpreter's static dispatch table: optimised, the first jump's target is a
# `blockaddress` in a phi, and the private copy could not even be read back by LLVM
# ("cannot take address of numeric label", an internal error at -O2; round AC).
THREADED = r"""
static double run(const unsigned char *ip, double x) {
    static void *tbl[] = {&&halt, &&sq, &&dbl};
    goto *tbl[*ip++];
sq:  x = x * x; goto *tbl[*ip++];
dbl: x = 2 * x; goto *tbl[*ip++];
halt: return x;
}
static const unsigned char CODE[] = {1, 2, 0};
double f(double x) { return run(CODE, x); }
int main(void) { return (int)__enzyme_autodiff_d((void *)f, 3.0); }
"""


@pytest.mark.parametrize("opt", OPTS)
def test_computed_goto_is_an_error(tmp_path, opt):
    for src in (COMPUTED_GOTO, THREADED):
        err = build_error(tmp_path, src, opt)
        assert "'indirectbr' cannot be differentiated: computed goto" in err, err
        assert "internal" not in err.lower(), err
        assert not (Path(tmp_path) / "t").exists()
    run(tmp_path, INACTIVE_GOTO, opt)


# ------------------------------------------------------------------- setjmp / longjmp
# The reverse sweep replays the forward's control flow from its tape; a longjmp out of
# a helper leaves it unfinished, and what the helper computed got no adjoint: d/dx was
# 0 instead of 6 at every -O level (real Enzyme 15 refuses the program).  Forward mode
# follows the jump as it happens.
SETJMP = r"""
#include <setjmp.h>
static jmp_buf env;
static double g;
static void work(double x) { g = x * x; longjmp(env, 1); }
double f(double x) {
    if (setjmp(env) == 0) { work(x); return 0.0; }
    return g;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_setjmp_longjmp(tmp_path, opt):
    err = build_error(tmp_path, SETJMP + "int main(void) { return (int)__enzyme_autodiff_d("
                      "(void *)f, 3.0); }\n", opt)
    assert "call to '_setjmp': a non-local jump (setjmp/longjmp)" in err, err
    assert not (Path(tmp_path) / "t").exists()
    run(tmp_path, SETJMP + r"""int main(void) {
    check("tangent", __enzyme_fwddiff_d((void *)f, 3.0, 1.0), 6.0);
    check("primal", f(2.0), 4.0);
    return fails != 0;
}
""", opt)


# ------------------------------------------------------------------ variadic helpers
# The hint named a rule to register for the intrinsic llvm.va_start.p0, which is no C
# identifier; then the error said what was not supported.  Now the helper's arguments
# reach it in memory with shadows (ad/variadic.py, tests/ad/test_variadic.py).
VARIADIC = r"""
#include <stdarg.h>
static double vsum(int n, ...) {
    va_list ap; va_start(ap, n);
    double s = 0;
    for (int i = 0; i < n; i++) s += va_arg(ap, double) * (i + 1);
    va_end(ap);
    return s;
}
double use(double a, double b) { return vsum(3, a, a * b, b * b); }
typedef struct { double a, b; } R2;
R2 __enzyme_autodiff_r2(void *, ...);
"""


@pytest.mark.parametrize("opt", OPTS)
def test_variadic_helper_with_active_values(tmp_path, opt):
    run(tmp_path, VARIADIC + r"""int main(void) {
    check("fwd a", __enzyme_fwddiff_d((void *)use, 0.6, 1.0, 1.3, 0.0), 1 + 2 * 1.3);
    check("fwd b", __enzyme_fwddiff_d((void *)use, 0.6, 0.0, 1.3, 1.0), 2 * 0.6 + 6 * 1.3);
    R2 g = __enzyme_autodiff_r2((void *)use, 0.6, 1.3);
    check("rev a", g.a, 1 + 2 * 1.3);
    check("rev b", g.b, 2 * 0.6 + 6 * 1.3);
    return fails;
}
""", opt)


# Rounds AP and AR: variadic helpers whose `...` carries no derivative -- a reaction
# mechanism built by `add_rxn(m, A, Ea, nreac, ...)` with the species indices as ints,
# the active A and Ea among the fixed arguments; a debug logger handing its va_list to
# vfprintf -- were refused like the one above ("va_start touches values that carry
# derivatives"; Enzyme 15 refuses them too).  Their va_list needs no shadow: the
# derivative functions of a variadic function are variadic and get the call's `...`.
VARIADIC_NO_DERIVATIVE = r"""
#include <stdarg.h>
typedef struct { int n; double A[4]; int nr[4]; int sp[4][3]; } Mech;
static int level = 0;
static void dbg(int lvl, const char *fmt, ...) {
    if (lvl > level) return;
    va_list ap; va_start(ap, fmt); vfprintf(stderr, fmt, ap); va_end(ap);
}
static void add_rxn(Mech *m, double A, int nreac, ...) {
    va_list ap;
    va_start(ap, nreac);
    int i = m->n++;
    m->A[i] = A;
    m->nr[i] = nreac;
    for (int j = 0; j < nreac; j++) m->sp[i][j] = va_arg(ap, int);
    va_end(ap);
}
double rate(const double *k, const double *c) {
    Mech m; m.n = 0;
    add_rxn(&m, k[0] * k[0], 2, 0, 1);
    add_rxn(&m, k[1], 1, 2);
    double w = 0;
    for (int i = 0; i < m.n; i++) {
        double q = m.A[i];
        for (int j = 0; j < m.nr[i]; j++) q *= c[m.sp[i][j]];
        dbg(0, "q%d = %g\n", i, q);
        w += q;
    }
    return w;                   /* k0^2 c0 c1 + k1 c2 */
}
int main(void) {
    double k[2] = { 1.5, 0.7 }, c[3] = { 2, 3, 5 }, dk[2] = { 0, 0 }, t[2] = { 0, 1 };
    __enzyme_autodiff((void *)rate, enzyme_dup, k, dk, enzyme_const, c);
    check("rev dk0", dk[0], 2 * k[0] * c[0] * c[1]);
    check("rev dk1", dk[1], c[2]);
    check("fwd dk1", __enzyme_fwddiff_d((void *)rate, enzyme_dup, k, t, enzyme_const, c), c[2]);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS + ["-O0 -g", "-O2 -g"])
def test_variadic_helpers_whose_varargs_carry_no_derivative(tmp_path, opt, valgrind):
    # (round BC: with -g the va_list's debug record counted as a use, and the logger's
    # va_start was refused -- debug information changed the verdict)
    run(tmp_path, VARIADIC_NO_DERIVATIVE, opt, valgrind)


# Round BC: a maybe-value `struct { union { char c; double d; } u; bool set; }` built on
# two paths by an inlined helper and stored into a local array: LLVM merges the two
# paths' union bytes into `phi i64 [ load i64 x[i] ], [ 109 ]` and stores the i64, read
# back as a double later -- the derivative was dropped at -O1..-O3: 0 for 1, silently
# (Enzyme 15 right).  An integer merge that only chooses between a float's bits (a load
# TBAA says reads a double, constants) and is stored is retyped as a merge of floats.
UNION_MERGED = r"""
#include <stdbool.h>
struct maybe { union { char c; double d; } u; bool set; };
static struct maybe lookup(const double *x, const int *mask, int i) {
    struct maybe m;
    if (!mask[i]) { m.u.c = 'm'; m.set = false; } else { m.u.d = x[i]; m.set = true; }
    return m;
}
double f(const double *x, const int *mask, int n) {
    struct maybe cache[8];
    for (int i = 0; i < n; i++) cache[i] = lookup(x, mask, i);
    double e = 0;
    for (int i = 0; i < n; i++) { double v = cache[i].set ? cache[i].u.d : 0.5; e += v * v; }
    return e;
}
int main(void) {
    static const int mask[3] = { 1, 0, 1 };
    double x[3] = { 0.5, 2.0, -1.0 }, dx[3] = { 0 }, t[3] = { 1, 1, 1 };
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, mask, enzyme_const, 3);
    check("rev dx0", dx[0], 1);
    check("rev dx1", dx[1], 0);
    check("rev dx2", dx[2], -2);
    check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, x, t, enzyme_const, mask,
                                    enzyme_const, 3), -1);
    return fails;
}
"""


# The same maybe-value through two levels of helpers returning it by value (round BC):
# with -g the merge's debug record was taken for an instruction (round BI: an internal
# error at -O1..-O3, only with -g).
UNION_CHAINED = r"""
#include <stdbool.h>
struct maybe { union { char c; double d; } u; bool set; };
static struct maybe just(double d) { struct maybe m; m.u.d = d; m.set = true; return m; }
static struct maybe none(char why) { struct maybe m; m.u.c = why; m.set = false; return m; }
static struct maybe lookup(const double *v, const int *mask, int i) {
    if (!mask[i]) return none('m');
    return just(v[i]);
}
static struct maybe times(struct maybe a, double s) {
    if (!a.set) return a;
    return just(a.u.d * s);
}
static double or_else(struct maybe m, double d) { return m.set ? m.u.d : d; }
double f(const double *v, const int *mask, int n, double k) {
    struct maybe cache[8];
    for (int i = 0; i < n; i++) cache[i] = times(lookup(v, mask, i), k);
    double e = 0;
    for (int i = 0; i < n; i++) {
        double x = or_else(cache[i], 0.5);
        e += x * x * (i + 1) + or_else(times(lookup(v, mask, (i + 1) % n), x), 0.0);
    }
    return e;
}
int main(void) {
    static const int mask[3] = { 1, 0, 1 };
    double v[3] = { 0.3, -1.1, 0.7 }, dv[3] = { 0 }, k = 1.3;
    double dk = __enzyme_autodiff_d((void *)f, enzyme_dup, v, dv, enzyme_const, mask,
                                    enzyme_const, 3, k);
    for (int i = 0; i < 3; i++) {
        double s = v[i], h = 1e-6;
        v[i] = s + h; double p = f(v, mask, 3, k);
        v[i] = s - h; double m = f(v, mask, 3, k);
        v[i] = s;
        check("dv", dv[i], (p - m) / (2 * h));
    }
    check("dk", dk, (f(v, mask, 3, k + 1e-6) - f(v, mask, 3, k - 1e-6)) / 2e-6);
    return fails;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2", "-O3"])
def test_union_bytes_merged_as_an_integer_and_stored(tmp_path, opt):
    run(tmp_path, UNION_MERGED, opt)
    if opt != "-O0":    # (-O0: the {i64, i8} returned through two levels is refused)
        run(tmp_path, UNION_CHAINED, opt + " -g")


# Round BC: `{int idx; float w}` pairs built from a search result and kept in an array:
# the float's bits are packed with the index (`shl 32 | idx`) into an i64 stored there.
# -O0..-O2 refuse it; at -O3 loop unswitching adds a store of the constant pair {-1,
# 0.0f} as `<2 x i64>` integers, whose "int" hid the float at those bytes, and the
# derivative was 0, silently.  Integer constants stored there no longer count against
# a float.
PACKED_PAIRS = r"""
typedef struct { double t; int id; } hit;
typedef struct { int idx; float w; } samp;
static hit nearest(const float *c, int nc) {
    hit best = { 1e30, -1 };
    for (int k = 0; k < nc; k++) if (c[k] > 0 && c[k] < best.t) { best.t = c[k]; best.id = k; }
    return best;
}
static samp pick_weight(hit h) {
    samp s; s.idx = h.id; s.w = h.id < 0 ? 0.0f : expf(-(float)h.t);
    return s;
}
double f(const float *c, int nc, int nr) {
    samp acc[8];
    for (int i = 0; i < nr; i++) acc[i] = pick_weight(nearest(c + i, nc));
    double L = 0;
    for (int i = 0; i < nr; i++) if (acc[i].idx >= 0) L += acc[i].w;
    return L;
}
int main(void) {
    float c[4] = { 0.5f, 1.0f, 2.0f, 3.0f }, dc[4] = { 0 };
    __enzyme_autodiff((void *)f, enzyme_dup, c, dc, enzyme_const, 2, enzyme_const, 2);
    printf("%g %g\n", dc[0], dc[1]);
    return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2", "-O3"])
def test_float_packed_with_an_int_into_an_array(tmp_path, opt):
    err = build_error(tmp_path, PACKED_PAIRS, opt)
    assert "moved through integer operations" in err or "as an integer" in err, err


# ------------------------------------------------------ floats moved as integer bits
# Two floats read as one 64-bit integer and the second taken out with a shift -- and
# LLVM's own -O3 vector code, which extracts lanes of a <8 x float> load through i256
# shifts (a BLIS-style AVX GEMM): the derivative was silently 0 for those values (real
# Enzyme 15 refuses the first).  Taken out on a float's boundary (`>> 32`) the field is
# now read as the float it is (ad/typed_copies.py) and gets its derivative; bits that
# straddle two floats (`>> 16`) are a compile error.  A plain round trip keeps its
# derivative.
BITS = r"""
#include <stdint.h>
float f(const float *x) {
    uint64_t bits;
    memcpy(&bits, x, 8);
    uint32_t hi = (uint32_t)(bits >> SHIFT);
    float y;
    memcpy(&y, &hi, 4);
    return y * y;
}
double g(const double *x) {
    uint64_t b;
    memcpy(&b, x, 8);
    double y;
    memcpy(&y, &b, 8);
    return y * y * x[1];
}
int main(void) {
    float x[2] = {1.5f, 2.5f}, dx[2] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx);
    if (SHIFT == 32) {
        check("field d/dx0", dx[0], 0.0);
        check("field d/dx1", dx[1], 5.0);
    }
    double u[2] = {3.0, 0.5}, du[2] = {0};
    __enzyme_autodiff((void *)g, enzyme_dup, u, du);
    check("round trip d/du0", du[0], 2 * 3.0 * 0.5);
    check("round trip d/du1", du[1], 9.0);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_floats_moved_through_integer_shifts_are_an_error(tmp_path, opt):
    err = build_error(tmp_path, "#define SHIFT 16\n" + BITS, opt)
    assert "floating-point values moved through integer operations" in err, err
    assert "in function 'f'" in err
    run(tmp_path, "#define SHIFT 32\n" + BITS, opt)


# Integer arithmetic on a double's bits -- `u += 3ull << 52` multiplies by 8 through the
# exponent field -- gave a derivative of 0 at every level (round N; real Enzyme 15
# refuses it): it is floats moved through integer operations like a shift.
BIT_ADD = r"""
#include <stdint.h>
double f(double x) {
    union { double d; uint64_t u; } b = { .d = x };
    b.u += 3ULL << 52;
    return b.d;
}
int main(void) { printf("%g\n", __enzyme_autodiff_d((void *)f, 2.7)); return 0; }
"""


@pytest.mark.parametrize("opt", OPTS)
def test_integer_arithmetic_on_float_bits_is_an_error(tmp_path, opt):
    err = build_error(tmp_path, BIT_ADD, opt)
    assert "floating-point values moved through integer operations" in err, err


# The x86-64 ABI passes `union { double num; long i; }` by value as an i64 and
# `struct { float v; int idx; }` as one i64: across a call the derivative was lost (0 at
# every level; round N).  The union's double gets its type back at the call boundary
# (ad/abi.py: real Enzyme 15 is right there too at -O0..-O2); a float packed with an int
# into one integer is a compile error (Enzyme 15 refuses it too).
ABI_UNION = r"""
typedef union { double num; long i; } num;
__attribute__((noinline)) static num mk(double d) { num v; v.num = d; return v; }
__attribute__((noinline)) static double sq(num v) { return v.num * v.num; }
double f(double x) { return mk(x).num * 2.0 + sq(mk(x)) * x; }   /* 2x + x^3 */
int main(void) {
    double x = 1.5;
    check("reverse", __enzyme_autodiff_d((void *)f, x), 2.0 + 3 * x * x);
    check("forward", __enzyme_fwddiff_d((void *)f, x, 1.0), 2.0 + 3 * x * x);
    return fails;
}
"""

ABI_PACKED = r"""
typedef struct { float v; int idx; } fpair;
__attribute__((noinline)) static fpair mk(double x) { fpair p = { (float)x, 1 }; return p; }
double f(double x) { fpair p = mk(x); return (double)p.v * 3.0 * p.idx; }
int main(void) { printf("%g\n", __enzyme_autodiff_d((void *)f, 1.5)); return 0; }
"""


# (round AG) the callee reads the union's bits as an integer too (the exponent): it was
# refused ("the call passes floating-point values ... as an integer"; Enzyme 15 right).
# The parameter is a double now, its bits read by a bitcast of it; bits changed and
# turned back into a double stay an error
ABI_UNION_BITS = r"""
typedef union { double d; unsigned long long u; } dbits;
__attribute__((noinline)) static double scale_by_exp(dbits x, double y) {
    int e = (int)((x.u >> 52) & 0x7ff) - 1023;
    return y * (double)(e + 2) + x.d * x.d;
}
double f(const double *p) {
    dbits b; b.d = p[0] * 3.0;
    return scale_by_exp(b, p[1]);
}
int main(void) {
    double p[2] = {0.7, -0.4}, g[2] = {0}, t[2] = {1, 0};
    __enzyme_autodiff((void *)f, enzyme_dup, p, g);
    check("rev dp0", g[0], 18 * 0.7);     /* 2.1 = 1.05 * 2^1: e + 2 = 3 */
    check("rev dp1", g[1], 3.0);
    check("fwd dp0", __enzyme_fwddiff_d((void *)f, enzyme_dup, p, t), 18 * 0.7);
    return fails;
}
"""

ABI_UNION_BITS_CHANGED = r"""
typedef union { double d; unsigned long long u; } dbits;
__attribute__((noinline)) static double mant(dbits x, double y) {
    double d = x.d;
    dbits m; m.u = (x.u & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL;
    return y * d + m.d;
}
double f(const double *p) { dbits b; b.d = p[0] * 3.0; return mant(b, p[1]); }
int main(void) {
    double p[2] = {0.7, -0.4}, g[2] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, p, g);
    return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2", "-O3"])
def test_union_of_a_double_passed_as_an_integer(tmp_path, opt):
    run(tmp_path, ABI_UNION, opt)


@pytest.mark.parametrize("opt", OPTS)
def test_union_read_as_double_and_as_integer_bits(tmp_path, opt):
    run(tmp_path, ABI_UNION_BITS, opt)
    err = build_error(tmp_path, ABI_UNION_BITS_CHANGED, opt)
    assert "floating-point values moved through integer operations" in err, err


@pytest.mark.parametrize("opt", OPTS)
def test_float_packed_with_an_int_into_an_integer_is_an_error(tmp_path, opt):
    err = build_error(tmp_path, ABI_PACKED, opt)
    assert "the call returns floating-point values that carry derivatives as an integer " \
           "('i64'" in err, err


# ... and passed the same way, as an argument (round R: 0 instead of 12, both modes, at
# every level; real Enzyme 15 refuses it too).  An integer result stored into an integer
# field of a struct that also holds a double is no float (it was refused for a while).
ABI_PACKED_ARG = r"""
typedef struct { float v; int idx; } Item;
__attribute__((noinline)) float weight(Item a) { return a.v * 2.0f; }
float f(float x) { Item a = {x * x, 0}; return weight(a); }
float __enzyme_autodiff_f(void *, float);
int main(void) { printf("%g\n", __enzyme_autodiff_f((void *)f, 3.0f)); return 0; }
"""

INT_FIELD_BESIDE_A_DOUBLE = r"""
struct View { double *m; double factor; long stride; };
__attribute__((noinline)) long nrows(double *m) { return m[0] > 0 ? 2 : 1; }
__attribute__((noinline)) void init(struct View *v) { v->stride = nrows(v->m); }
__attribute__((noinline)) double use(struct View *v) { return v->m[v->stride] * v->factor; }
double f(double *A, double s) {
    struct View v;
    v.m = A; v.factor = s;
    init(&v);
    return use(&v);
}
int main(void) {
    double A[4] = {1, 2, 3, 4}, dA[4] = {0};
    double ds = __enzyme_autodiff_d((void *)f, enzyme_dup, A, dA, 3.0);
    check("dA[2]", dA[2], 3.0);
    check("ds", ds, 3.0);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_float_packed_with_an_int_passed_as_an_integer_is_an_error(tmp_path, opt):
    err = build_error(tmp_path, ABI_PACKED_ARG, opt)
    assert "the call passes floating-point values that carry derivatives as an integer " \
           "('i64'" in err, err


@pytest.mark.parametrize("opt", OPTS)
def test_integer_result_into_a_struct_holding_doubles(tmp_path, opt):
    run(tmp_path, INT_FIELD_BESIDE_A_DOUBLE, opt)


# ------------------------------------------------------ doubles moved as bytes (round AJ)
# Portable C moves elements of unknown type byte by byte: a generic heap's or sort's swap
# (``unsigned char t = *p; *p++ = *q; *q++ = t;``), a byte-copy loop.  Only 32- and
# 64-bit integer copies were checked against what the memory holds: a byte copy of
# doubles moved no adjoint (dx = 0 for 3, the swap never undone; Enzyme 15 refuses).
# Bytes of a double cannot carry its adjoint, so such a copy is an error in reverse mode
# (forward mode copies the tangent's bytes along, and is right).  At -O2 LLVM reads the
# doubles whole and stores their bytes shifted out of the bits: an error in both modes.
BYTE_COPY = r"""
static void byte_copy(void *dst, const void *src, unsigned long size) {
    unsigned char *p = dst; const unsigned char *q = src;
    while (size--) *p++ = *q++;
}
double f(double *x, double *y, unsigned long size) { byte_copy(y, x, size); return 3.0 * y[0]; }
int main(void) {
    double x = 1, y = 2, dx = 0, dy = 0;
    __enzyme_autodiff((void *)f, enzyme_dup, &x, &dx, enzyme_dup, &y, &dy,
                      enzyme_const, sizeof(double));
    return 0;
}
"""

BYTE_SWAP_SORT = r"""
static void swap_bytes(char *a, char *b, size_t size) {
    do { char t = *a; *a++ = *b; *b++ = t; } while (--size > 0);
}
static void gen_isort(void *base, size_t nmemb, size_t size,
                      int (*cmp)(const void *, const void *)) {
    char *b = base;
    for (size_t i = 1; i < nmemb; i++)
        for (size_t j = i; j > 0 && cmp(b + (j - 1) * size, b + j * size) > 0; j--)
            swap_bytes(b + (j - 1) * size, b + j * size, size);
}
static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
double f(const double *x, int m) {
    double *y = malloc(m * sizeof(double));
    for (int k = 0; k < m; k++) y[k] = x[k] * x[k];
    gen_isort(y, m, sizeof(double), cmp_double);
    double r = 1.0 * y[0] + 10.0 * y[1] + 100.0 * y[2];
    free(y);
    return r;
}
int main(void) {
    double x[3] = { 3, 1, 2 };
    for (int k = 0; k < 3; k++) {
        double t[3] = { 0, 0, 0 };
        t[k] = 1;
        check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, x, t, enzyme_const, 3),
              2 * x[k] * (k == 0 ? 100 : k == 1 ? 1 : 10));
    }
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_doubles_moved_as_bytes_are_an_error(tmp_path, opt):
    err = build_error(tmp_path, BYTE_COPY, opt)
    assert "an integer-typed copy of memory that may hold floating-point values" in err, err
    if opt == "-O0":
        run(tmp_path, BYTE_SWAP_SORT, opt)
    else:
        err = build_error(tmp_path, BYTE_SWAP_SORT, opt)
        assert "floating-point values moved through integer operations" in err, err


# Round AK: a model kept in a global, its weights loaded from the differentiated
# parameters with ``memcpy`` (``std::copy`` into a ``std::vector`` member): the block has
# no shadow, and the gradient came out 0 without a word, where the same copy as a loop
# of stores is refused.  A copy of floating-point values with derivatives into memory
# without a shadow is the same error now, in both modes.
COPY_INTO_GLOBAL_MODEL = r"""
typedef struct { int n; double *w; } Layer;
static Layer *g_layer;
double loss(const double *params, const double *x) {
    memcpy(g_layer->w, params, g_layer->n * sizeof(double));
    double s = 0;
    for (int i = 0; i < g_layer->n; i++) s += g_layer->w[i] * x[i];
    return s * s;
}
int main(void) {
    Layer L = { 3, malloc(3 * sizeof(double)) };
    g_layer = &L;
    double p[3] = { 1, 2, 3 }, dp[3] = { 0 }, x[3] = { 0.5, -1, 2 }, dx[3] = { 0 };
    __enzyme_autodiff((void *)loss, enzyme_dup, p, dp, enzyme_dup, x, dx);
    __enzyme_fwddiff((void *)loss, enzyme_dup, p, dp, enzyme_dup, x, dx);
    return 0;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_copy_into_memory_without_a_shadow_is_an_error(tmp_path, opt):
    err = build_error(tmp_path, COPY_INTO_GLOBAL_MODEL, opt)
    assert "memcpy copies floating-point values that carry derivatives into memory that " \
           "has no shadow" in err, err


# Round AL: a 2D array of cells, each with a pointer into a ``static const double``
# table beside the active weight and an integer, passed to an out-of-line energy: at -O0
# the array of arrays was not followed field by field, the table's pointer went into the
# cells' shadow as its own "shadow", and the reverse sweep accumulated adjoints into the
# read-only table (a segfault; writable data would have been overwritten).  Read-only
# data holding floats is not its own shadow any more, and an array of arrays of structs
# is followed like an array of structs: right at both levels.  Cells from an allocation
# wrapper (not followed at -O0) are the "mixed" error there.
CELLS_2D = r"""
typedef struct { double w; const double *geom; int n; } Cell;
static const double GEOM[4] = { 1, 2, 3, 4 };
__attribute__((noinline)) static double e(const Cell *a) { return a->w * a->w * a->geom[0]; }
__attribute__((noinline)) static void *xmalloc(size_t n) {
    void *p = malloc(n);
    if (!p) abort();
    return p;
}
void grid(const double *x, double *out) {
    Cell g[2][2];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            int c = 2 * i + j;
            g[i][j].w = x[c]; g[i][j].geom = GEOM + c; g[i][j].n = 3;
        }
    double s = 0;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) s += e(&g[i][j]);
    *out = s;
}
void heap(const double *x, double *out) {
    Cell *g = xmalloc(4 * sizeof *g);
    for (int c = 0; c < 4; c++) { g[c].w = x[c]; g[c].geom = GEOM + c; g[c].n = 3; }
    double s = 0;
    for (int c = 0; c < 4; c++) s += e(&g[c]);
    free(g);
    *out = s;
}
int main(void) {
    double x[4] = { 1, 2, 3, 4 }, dx[4] = { 0 }, o, d_o = 1;
    __enzyme_autodiff((void *)ENTRY, enzyme_dup, x, dx, enzyme_dup, &o, &d_o);
    for (int k = 0; k < 4; k++) check("dx", dx[k], 2 * x[k] * GEOM[k]);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_read_only_table_in_cells_is_not_its_own_shadow(tmp_path, opt):
    run(tmp_path, CELLS_2D.replace("ENTRY", "grid"), opt)
    if opt == "-O0":
        err = build_error(tmp_path, CELLS_2D.replace("ENTRY", "heap"), opt)
        assert "is mixed with pointers that have shadows" in err, err
    else:
        run(tmp_path, CELLS_2D.replace("ENTRY", "heap"), opt)


# Round AM: a tagged value {int tag; uint64_t bits} made by a function from a double
# (memcpy into the bits) and returned by value -- an {i32, i64} in the ABI -- stored into
# a local and read back as a double by another function: the derivative was lost at -O0
# (0 for 6; -O2 inlines it and is right).  The check for floats returned as integers now
# counts memory where a double is seen among other kinds -- and since round BB the
# field holding the double's bits is returned as a double (ad/abi.py), so -O0 builds
# and is right too.
TAGGED_RETURN = r"""
#include <stdint.h>
typedef struct { int tag; uint64_t bits; } tval;
static tval mk_num(double d) { tval v = { 1, 0 }; memcpy(&v.bits, &d, 8); return v; }
static double as_num(const tval *v) { double d; memcpy(&d, &v->bits, 8); return d; }
double f(double *x) {
    tval t = mk_num(x[0]);
    double d = as_num(&t);
    return d * d;
}
int main(void) {
    double x[1] = { 3 }, g[1] = { 0 }, t[1] = { 1 };
    __enzyme_autodiff((void *)f, enzyme_dup, x, g);
    check("rev", g[0], 6);
    check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, x, t), 6);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_tagged_value_returned_as_an_integer(tmp_path, opt):
    run(tmp_path, TAGGED_RETURN, opt)


# ... the same where the doubles are seen only through a comparator called by pointer
# (a generic heap of {double key; int id}): the copies' own byte accesses made the
# memory look like integers; the byte-offset analysis's floats at those bytes count
# now.  And a swap through a ``unsigned char t[64]`` temporary with ``memcpy``: the
# buffer's declared type said "integers", the copies moved no adjoint at -O0 (dx = {3,
# 1} for {1, 3}); a char buffer's type says nothing about what it holds any more.
GENERIC_HEAP = r"""
typedef int (*cmp_fn)(const void *, const void *);
typedef struct { char *base; size_t n, size; cmp_fn cmp; } gheap;
static void byte_swap(void *a, void *b, size_t size) {
    unsigned char *p = a, *q = b;
    while (size--) { unsigned char t = *p; *p++ = *q; *q++ = t; }
}
#define AT(h, i) ((h)->base + (i) * (h)->size)
static void push(gheap *h, const void *elem) {
    memcpy(AT(h, h->n), elem, h->size);
    size_t i = h->n++;
    while (i && h->cmp(AT(h, (i - 1) / 2), AT(h, i)) > 0) {
        byte_swap(AT(h, (i - 1) / 2), AT(h, i), h->size);
        i = (i - 1) / 2;
    }
}
typedef struct { double key; int id; } kv;
static int kv_cmp(const void *a, const void *b) {
    double x = ((const kv *)a)->key, y = ((const kv *)b)->key;
    return (x > y) - (x < y);
}
double smallest(const double *x, int n) {
    gheap h = { malloc(n * sizeof(kv)), 0, sizeof(kv), kv_cmp };
    for (int i = 0; i < n; i++) { kv e = { x[i] * x[i], i }; push(&h, &e); }
    double r = ((kv *)h.base)->key;
    free(h.base);
    return r;
}
int main(void) {
    double x[4] = { 3, -1, 2, 5 }, dx[4] = { 0 };
    __enzyme_autodiff((void *)smallest, enzyme_dup, x, dx, enzyme_const, 4);
    return 0;
}
"""

CHAR_TEMP_SWAP = r"""
typedef struct { char *base; size_t n, size; } gvec;
static void push(gvec *h, const void *e) {
    memcpy(h->base + h->n * h->size, e, h->size);
    h->n++;
}
static void mem_swap(void *a, void *b, size_t size) {
    unsigned char t[64];
    memcpy(t, a, size); memcpy(a, b, size); memcpy(b, t, size);
}
double f(const double *x, size_t size) {
    gvec h = { malloc(2 * size), 0, size };
    for (int i = 0; i < 2; i++) push(&h, &x[i]);
    mem_swap(h.base, h.base + size, size);
    double r = 3.0 * ((double *)h.base)[0] + ((double *)h.base)[1];
    free(h.base);
    return r;
}
int main(void) {
    double x[2] = { 1, 2 }, dx[2] = { 0, 0 }, t[2] = { 0, 1 };
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, sizeof(double));
    check("rev dx0", dx[0], 1);
    check("rev dx1", dx[1], 3);
    check("fwd dx1", __enzyme_fwddiff_d((void *)f, enzyme_dup, x, t, enzyme_const,
                                        sizeof(double)), 3);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_generic_containers_moving_doubles_as_bytes(tmp_path, opt):
    err = build_error(tmp_path, GENERIC_HEAP, opt)
    assert "an integer-typed copy of memory that may hold floating-point values" in err \
        or "floating-point values moved through integer operations" in err, err
    run(tmp_path, CHAR_TEMP_SWAP, opt)


# Round AQ: a log density storing the parameter pointer into its enzyme_const context
# struct and reading it back through a helper: at -O0 (and wherever the load is not
# forwarded from the store) the pointer read back had no shadow -- gradient 0 for 6,
# silently.  A pointer with a shadow stored into a caller's memory without one, where
# the code reads pointers back from that place, is a compile error now; storing one
# into another field of such a struct, never read back, is fine.
CONTEXT_POINTER = r"""
typedef struct { const double *theta; } ctx_t;
__attribute__((noinline)) static double get(const ctx_t *c) { return c->theta[0]; }
double logp(const double *theta, ctx_t *c) {
    c->theta = theta;
    double x = get(c);
    return x * x;
}
int main(void) {
    ctx_t c = { 0 };
    double th[1] = { 3.0 }, g[1] = { 0 };
    __enzyme_autodiff((void *)logp, enzyme_dup, th, g, enzyme_const, &c);
    printf("%g\n", g[0]);
    return 0;
}
"""
CONTEXT_FIELD_NOT_READ = r"""
typedef struct { const double *data; const double *last; int n; } ctx_t;
__attribute__((noinline)) static double dot(const ctx_t *c, const double *x) {
    double s = 0;
    for (int i = 0; i < c->n; i++) s += c->data[i] * x[i] * x[i];
    return s;
}
double f(const double *x, ctx_t *c) {
    c->last = x;           /* remembered for the caller, not read here */
    return dot(c, x);
}
int main(void) {
    double data[3] = { 1, 2, 3 }, x[3] = { 0.5, -1, 2 }, dx[3] = { 0 }, t[3] = { 0, 0, 1 };
    ctx_t c = { data, 0, 3 };
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, &c);
    for (int i = 0; i < 3; i++) check("rev", dx[i], 2 * data[i] * x[i]);
    check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, x, t, enzyme_const, &c), 12);
    return fails;
}
"""


# Round AT: the same one level down -- a GSL-style driver's `params->ws->coef = coef`,
# read back by the right-hand side the driver calls through a pointer, and a context's
# workspace read through a helper (`p->w->x`): gradient 0, silently, at both levels
# (Enzyme 15 too).  Places are followed through pointers loaded from the caller's
# memory, and through callbacks of the same type.
CONTEXT_SECOND_LEVEL = r"""
typedef struct { const double *coef; int n; } work_t;
typedef struct { work_t *ws; int steps; } params_t;
typedef void (*rhs_fn)(const double *y, double *f, void *params);
static void decay(const double *y, double *f, void *params) {
    const params_t *p = params;
    f[0] = -p->ws->coef[0] * y[0];
}
__attribute__((noinline)) static void euler(rhs_fn fn, double *y, int steps, void *params) {
    double f[1];
    for (int s = 0; s < steps; s++) { fn(y, f, params); y[0] += 0.1 * f[0]; }
}
double objective(const double *coef, params_t *P) {
    P->ws->coef = coef;
    double y[1] = { 1.0 };
    euler(decay, y, P->steps, P);
    return y[0];
}
int main(void) {
    work_t w = { 0, 1 };
    params_t P = { &w, 3 };
    double c[1] = { 0.5 }, dc[1] = { 0 };
    __enzyme_autodiff((void *)objective, enzyme_dup, c, dc, enzyme_const, &P);
    printf("%g\n", dc[0]);
    return 0;
}
"""

# Round AT: the same context passed twice, both enzyme_const: the pointer stored
# through one argument and read back through the other (gradient 0, silently; Enzyme 15
# too).  Arguments a call site binds to the same object count as one place; two
# distinct contexts, one written and one read at the same offset, are no error.
CONTEXT_PASSED_TWICE = r"""
typedef struct { const double *p; } ctx_t;
double f(const double *x, ctx_t *c, const ctx_t *alias) {
    c->p = x;
    return alias->p[0] * alias->p[0];
}
int main(void) {
    double x = 3.0, dx = 0.0;
    ctx_t c = { 0 };
    __enzyme_autodiff((void *)f, enzyme_dup, &x, &dx, enzyme_const, &c, enzyme_const, &c);
    printf("%g\n", dx);
    return 0;
}
"""
CONTEXTS_DISTINCT = r"""
typedef struct { const double *p; } ctx_t;
double f(const double *x, ctx_t *c, const ctx_t *d) {
    c->p = x;              /* remembered for the caller */
    return d->p[0] * x[0] * x[0];
}
int main(void) {
    double x = 3.0, dx = 0.0, t = 1.0, k[1] = { 2.0 };
    ctx_t c = { 0 }, d = { k };
    __enzyme_autodiff((void *)f, enzyme_dup, &x, &dx, enzyme_const, &c, enzyme_const, &d);
    check("rev", dx, 12);
    check("fwd", __enzyme_fwddiff_d((void *)f, enzyme_dup, &x, &t, enzyme_const, &c,
                                    enzyme_const, &d), 12);
    return fails;
}
"""

# Round BC: the context read back through a global that points at it (0 for 5 at
# -O1..-O3, silently: the read through the argument was forwarded from the store, the
# one through the global looked like constant data), and the other way round, a
# pointer stored through the global and read back through the argument.
CONTEXT_THROUGH_GLOBAL = r"""
typedef struct { const double *theta; } params;
params *g_params;
__attribute__((noinline)) static double term(const params *p) { return TERM; }
double f(const double *theta, params *mp) {
    STORE = theta;
    return term(mp);
}
int main(void) {
    static params MP;
    g_params = &MP;
    double th[2] = { 3.0, 5.0 }, dth[2] = { 0 };
    __enzyme_autodiff((void *)f, enzyme_dup, th, dth, enzyme_const, &MP);
    printf("%g %g\n", dth[0], dth[1]);
    return 0;
}
"""
CONTEXT_READ_THROUGH_GLOBAL = CONTEXT_THROUGH_GLOBAL.replace(
    "TERM", "p->theta[1] * g_params->theta[0]").replace("STORE", "mp->theta")
CONTEXT_STORED_THROUGH_GLOBAL = CONTEXT_THROUGH_GLOBAL.replace(
    "TERM", "p->theta[1] * p->theta[0]").replace("STORE", "g_params->theta")
# Round BJ: the context is a global the call site passes (`&C`) and the code reads it by
# name (0 for 6, silently; Enzyme 15 too) -- or through a `static` pointer to it, which
# LLVM folds into a read by name at -O1 and above.
CONTEXT_GLOBAL_BY_NAME = r"""
typedef struct { double *x; int n; } ctx_t;
ctx_t C;
static ctx_t *g_ctx;
__attribute__((noinline)) static double by_name(void) { return C.x[0] * C.x[0]; }
static double through_static(void) { return g_ctx->x[0] * g_ctx->x[0]; }
double f(double *x, ctx_t *c) { c->x = x; return by_name(); }
double g(double *x, ctx_t *c) { c->x = x; return through_static(); }
int main(void) {
    double x = 3, dx = 0;
    g_ctx = &C;
    __enzyme_autodiff((void *)f, enzyme_dup, &x, &dx, enzyme_const, &C);
    __enzyme_autodiff((void *)g, enzyme_dup, &x, &dx, enzyme_const, &C);
    printf("%g\n", dx);
    return 0;
}
"""
# ... where the global points at a struct of another type, whose pointer field sits at
# the same offset: TBAA's struct paths tell the two apart (-O0 has none: refused there),
# and a context that is a local of the caller no global can point at (round BJ: two
# typedef'd anonymous structs of one layout, which TBAA cannot tell apart).
CONTEXT_AND_OTHER_GLOBAL_STRUCT = r"""
typedef struct params { int n; const double *theta; } params;
typedef struct mesh { int nv; const double *coords; } mesh;
mesh *g_mesh;
double f(const double *theta, params *mp) {
    mp->theta = theta;                  /* remembered for the caller */
    double s = 0;
    for (int i = 0; i < g_mesh->nv; i++) s += g_mesh->coords[i] * theta[i % 2];
    return s;
}
int main(void) {
    static params MP; static mesh M; static double c[3] = { 1, 2, 4 };
    M.coords = c; M.nv = 3; g_mesh = &M;
    double th[2] = { 3.0, 5.0 }, dth[2] = { 0 };
    __enzyme_autodiff((void *)f, enzyme_dup, th, dth, enzyme_const, &MP);
    check("d0", dth[0], 5);
    check("d1", dth[1], 2);
    return fails;
}
"""



@pytest.mark.parametrize("opt", OPTS)
def test_pointer_stored_into_a_const_context_and_read_back(tmp_path, opt):
    err = build_error(tmp_path, CONTEXT_POINTER, opt)
    assert "stored into memory without a shadow that the caller set up" in err, err
    err = build_error(tmp_path, CONTEXT_SECOND_LEVEL, opt)
    assert "stored into memory without a shadow that the caller set up" in err, err
    err = build_error(tmp_path, CONTEXT_PASSED_TWICE, opt)
    assert "stored into memory without a shadow that the caller set up" in err, err
    run(tmp_path, CONTEXT_FIELD_NOT_READ, opt)
    run(tmp_path, CONTEXTS_DISTINCT, opt)

CONTEXT_LOCAL_OF_THE_CALLER = r"""
typedef struct { double *last_x; int calls; } log_t;      /* const: bookkeeping only */
typedef struct { double *coef; int n; } model_t;
static double COEF[1] = { 0.5 };
static model_t M = { COEF, 1 };
model_t *g_model = &M;
double f(double *x, log_t *lg) {
    lg->last_x = x;                          /* stored, never read */
    return g_model->coef[0] * x[0] * x[0] + x[0];
}
int main(void) {
    log_t L = { 0, 0 };
    double x = 3, dx = 0;
    __enzyme_autodiff((void *)f, enzyme_dup, &x, &dx, enzyme_const, &L);
    check("dx", dx, 4);
    check("stored", L.last_x == &x, 1);
    return fails;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2", "-O3"])
def test_const_context_and_a_global_pointing_at_it(tmp_path, opt):
    err = build_error(tmp_path, CONTEXT_READ_THROUGH_GLOBAL, opt)
    assert "stored into memory without a shadow that the caller set up" in err, err
    err = build_error(tmp_path, CONTEXT_STORED_THROUGH_GLOBAL, opt)
    assert "stored into memory without a shadow that the caller set up" in err, err
    err = build_error(tmp_path, CONTEXT_GLOBAL_BY_NAME, opt)
    assert "stored into memory without a shadow that the caller set up" in err, err
    if opt != "-O0":
        run(tmp_path, CONTEXT_AND_OTHER_GLOBAL_STRUCT, opt)
    run(tmp_path, CONTEXT_LOCAL_OF_THE_CALLER, opt)


# Round AU, physics-engine code at -O0: a Bullet-style `union { __m128 v; float f[4]; }`
# passed by value twice (`g(x[0], x[0])`) travels as two doubles each holding two
# floats, stored into the callee's union and read back as floats -- the adjoints of the
# two uses were added as doubles: 1.7e38 for 2.  A `{float depth; int feature;}` contact
# passed by value is one i64 packed from the caller's float, read as an i32 from memory
# nothing else types -- its derivative was dropped: 0 for 6.  Both are compile errors at
# -O0 now (Enzyme 15 refuses the second); at -O2 LLVM keeps the floats apart, and both
# are right.
PACKED_M128 = r"""
#include <xmmintrin.h>
typedef union { __m128 v; float f[4]; } V;
static float g(V a, V b) { return a.f[0] * b.f[0]; }
float f(const V *x) { return g(x[0], x[0]); }
int main(void) {
    V x = {.f = {1, 2, 3, 5}}, dx = {.f = {0, 0, 0, 0}};
    __enzyme_autodiff((void *)f, enzyme_dup, &x, &dx);
    check("d/dx0", dx.f[0], 2);
    check("d/dx1", dx.f[1], 0);
    return fails;
}
"""
PACKED_CONTACT = r"""
typedef struct { float depth; int feature; } Contact;
static float sq(Contact c) { return c.depth * c.depth * c.feature; }
float f(const float *p) { Contact c = {p[0], 3}; return sq(c); }
int main(void) {
    float p[1] = {3}, dp[1] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, p, dp);
    check("d/dp", dp[0], 18);
    check("primal", f(p), 27);
    return fails;
}
"""


@pytest.mark.parametrize("opt", OPTS)
def test_floats_packed_by_the_abi(tmp_path, opt):
    if opt == "-O0":
        err = build_error(tmp_path, PACKED_M128, opt)
        assert "reads the same bytes back as floating-point values of another type" in err, err
        err = build_error(tmp_path, PACKED_CONTACT, opt)
        assert "the call passes floating-point values that carry derivatives as an " \
               "integer" in err, err
    else:
        run(tmp_path, PACKED_M128, opt)
        run(tmp_path, PACKED_CONTACT, opt)


# Round AW: the same small structs returned by one helper and handed unopened to another
# (`use(make(x))`): the i64 (or the i64 of a `{i64, float}` pair) never turned into a
# float where it crossed, so neither side's check saw it -- 0, or half the derivative,
# silently at both levels.  An integer another call built from a float's bits counts.
CHAINED_SMALL_STRUCTS = r"""
typedef struct { int id; float w; } P;
typedef struct { float a; int k; float b; } Q;
__attribute__((noinline)) P make(double v) { P p = { 3, (float)v }; return p; }
__attribute__((noinline)) double use(P p) { return (double)p.w * p.w * p.id; }
__attribute__((noinline)) Q make3(double v) { Q q = { (float)v, 2, (float)v }; return q; }
__attribute__((noinline)) double use3(Q q) { return (double)q.a * q.b * q.k; }
double f(double x) { return use(make(x)) + use3(make3(x)); }
int main(void) { return (int)__enzyme_autodiff_d((void *)f, 0.75); }
"""


@pytest.mark.parametrize("opt", OPTS)
def test_small_structs_handed_on_unopened(tmp_path, opt):
    err = build_error(tmp_path, CHAINED_SMALL_STRUCTS, opt)
    # (the result of make() is refused where it is returned, since the callee it is
    # handed to turns it into floats; or where it is passed)
    assert "floating-point values that carry derivatives as an integer" in err, err


# Round CG: an int64_t field copied out of {int64_t id; double w} by a noinline helper
# (``*to = e->id``) was refused at -O0..-O2 ("type analysis could not tell"): the two
# objects hold an 8-byte integer and a double, and only the bytes moved tell them
# apart.  The same helper moving a double's bits out of a union stays right or refused.
INT64_FIELD = r"""
#include <stdint.h>
typedef struct { int64_t id; double w; } edge_t;
typedef union { int64_t i; double d; } word_t;
__attribute__((noinline)) static void get_id(int64_t *to, const edge_t *e) { *to = e->id; }
__attribute__((noinline)) static void get_word(int64_t *to, const word_t *u) { *to = u->i; }
double f(const double *x) {
    edge_t e; int64_t to;
    e.id = 7; e.w = x[0];
    get_id(&to, &e);
    return e.w * e.w * (double)to;
}
double g(const double *x) {
    word_t u; int64_t bits; double y;
    u.d = x[0] * 3.0;
    get_word(&bits, &u);
    memcpy(&y, &bits, sizeof y);
    return y * x[0];
}
int main(void) {
    double x[1] = {2}, dx[1] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx);
    check("int64 field", dx[0], 28);
#ifdef BITS
    dx[0] = 0;
    __enzyme_autodiff((void *)g, enzyme_dup, x, dx);
    check("bits", dx[0], 12);
#endif
    return fails;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2", "-O3"])
def test_int64_field_copied_out_of_a_record_with_a_double(tmp_path, opt):
    src = Path(tmp_path) / "t.c"
    src.write_text(PRELUDE + INT64_FIELD)
    exe = Path(tmp_path) / "t"
    r = enzyme_cc([opt, str(src), "-o", str(exe), "-lm"], tmp_path)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "ok int64 field" in out.stdout, out.stdout
    right_or_refused(tmp_path, "#define BITS\n" + INT64_FIELD, opt, "bits")


# Round CH: records {double d2; const double *row} kept sorted in a malloc'd array that
# a struct points to (``List {Cand *c; int count}``), shifted by a noinline helper
# (``r->c[i] = r->c[i - 1]``), read back through the pointers.  At -O0 the record copy
# (a memcpy) was judged to move doubles only -- the pointer field is stored through
# another load of ``r->c`` -- and the shadow's pointers stayed behind: the gradient
# landed on the wrong rows (capacity-limited list) or a null shadow was read (segfault).
SORTED_RECORDS = r"""
typedef struct { double d2; const double *row; } Cand;
typedef struct { Cand *c; int count; int k; } List;
__attribute__((noinline)) static void add(List *r, double d2, const double *row) {
    int i;
    for (i = r->count; i > 0 && r->c[i - 1].d2 > d2; --i)
        if (i < r->k) r->c[i] = r->c[i - 1];
    if (i < r->k) { r->c[i].d2 = d2; r->c[i].row = row; }
    if (r->count < r->k) r->count++;
}
double f(const double *X, int n, int k) {
    List res; res.c = malloc(sizeof(Cand) * k); res.count = 0; res.k = k;
    for (int i = 0; i < n; i++) add(&res, X[2 * i], X + 2 * i);
    double s = 0;
    for (int i = 0; i < res.count; i++) s += (i + 1) * res.c[i].row[1];
    free(res.c);
    return s;
}
int main(void) {
    double X[8] = {3, 10, 1, 20, 2, 30, 4, 40}, dX[8] = {0};
    /* all four sorted: rows 1, 2, 0, 3 */
    __enzyme_autodiff((void *)f, enzyme_dup, X, dX, enzyme_const, 4, enzyme_const, 4);
    check("row 1", dX[3], 1); check("row 2", dX[5], 2);
    check("row 0", dX[1], 3); check("row 3", dX[7], 4);
    /* the two nearest: rows 1, 2 */
    for (int i = 0; i < 8; i++) dX[i] = 0;
    __enzyme_autodiff((void *)f, enzyme_dup, X, dX, enzyme_const, 4, enzyme_const, 2);
    check("k=2 row 1", dX[3], 1); check("k=2 row 2", dX[5], 2);
    check("k=2 row 0", dX[1], 0); check("k=2 row 3", dX[7], 0);
    return fails;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2", "-O3"])
def test_records_with_pointers_shifted_in_a_list_a_struct_points_to(tmp_path, opt, valgrind):
    run(tmp_path, SORTED_RECORDS, opt, valgrind)
