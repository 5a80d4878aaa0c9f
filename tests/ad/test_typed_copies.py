"""Small structs holding floats that clang copies as one integer (ad/typed_copies.py).

An 8-byte ``struct { float v; int idx; }`` or ``struct { float x, y; }`` is copied as an
``i64`` (struct assignment, a swap, the insertion sort of (value, index) records), and
at -O1+ a field is read out of it with ``trunc``/``lshr`` + ``bitcast``.  The derivative
went to the wrong element or nowhere, silently, at every level (round R: `dx = {0, 1}`
instead of `{1, 0}` for a copy by runtime index; real Enzyme 15 right on most of them).
Reference: analytic values.
"""

from __future__ import annotations

import pytest

from helpers import build_and_run, parse_values

PROGRAM = r"""
#include <stdio.h>
int enzyme_dup, enzyme_const;
void __enzyme_autodiff(void *, ...);
float __enzyme_fwddiff(void *, ...);
typedef struct { float v; int idx; } Item;
typedef struct { float x, y; } V2;

float pick(const float *x, int k) {              /* a copy by runtime index */
    Item arr[2];
    arr[0].v = x[0]; arr[0].idx = 0;
    arr[1].v = x[1]; arr[1].idx = 1;
    arr[1] = arr[k];
    return arr[1].v;
}

float top2(const float *x, int n) {              /* argmax and an insertion sort */
    Item best = {-1e30f, -1};
    for (int i = 0; i < n; i++) if (x[i] > best.v) { Item t = {x[i] * 2.0f, i}; best = t; }
    Item arr[16];
    for (int i = 0; i < n; i++) { Item t = {x[i] * x[i], i}; arr[i] = t; }
    for (int i = 1; i < n; i++) {
        Item key = arr[i]; int j = i - 1;
        while (j >= 0 && arr[j].v > key.v) { arr[j + 1] = arr[j]; j--; }
        arr[j + 1] = key;
    }
    return best.v + arr[n - 1].v + arr[n - 2].v * (float)arr[n - 2].idx;
}

float swap(V2 *a, int i, int j) {                /* points swapped in the caller's array */
    V2 t = a[i]; a[i] = a[j]; a[j] = t;
    return a[0].x * 3.0f + a[1].y;
}

int main(void) {
    float x[2] = {3, 5}, dx[2] = {0}, t[2] = {1, 0};
    __enzyme_autodiff((void *)pick, enzyme_dup, x, dx, enzyme_const, 0);
    printf("pick %g %g %g\n", dx[0], dx[1],
           __enzyme_fwddiff((void *)pick, enzyme_dup, x, t, enzyme_const, 0));

    float y[5] = {0.5f, 2.0f, -1.0f, 1.5f, 0.25f}, dy[5] = {0}, ty[5] = {0, 1, 0, 1, 0};
    __enzyme_autodiff((void *)top2, enzyme_dup, y, dy, enzyme_const, 5);
    printf("top2 %g %g %g %g %g %g\n", dy[0], dy[1], dy[2], dy[3], dy[4],
           __enzyme_fwddiff((void *)top2, enzyme_dup, y, ty, enzyme_const, 5));

    V2 a[2] = {{1, 2}, {3, 4}}, da[2] = {{0, 0}, {0, 0}};
    __enzyme_autodiff((void *)swap, enzyme_dup, a, da, enzyme_const, 0, enzyme_const, 1);
    printf("swap %g %g %g %g\n", da[0].x, da[0].y, da[1].x, da[1].y);
    return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2", "-O3"])
def test_small_structs_of_floats_copied_as_integers(tmp_path, opt):
    out = build_and_run(tmp_path, PROGRAM, opt)
    assert out.returncode == 0, out.stdout + out.stderr
    v = parse_values(out.stdout)
    assert v["pick"] == [1, 0, 1]
    # best = 2 x1; largest square x1^2 (2 x1 = 4); second x3^2 * its index 3 (9)
    assert v["top2"] == pytest.approx([0, 6, 0, 9, 0, 15])
    # after the swap a[0] is the old a[1]: f = 3 a1.x + a0.y
    assert v["swap"] == [0, 1, 3, 0]


# Round AL: a double kept as its bits -- boxed into a ``uint64_t`` by a memcpy helper and
# replaced on one path by another box or an integer constant (a phi or select of
# ``i64`` between ``bitcast``s), a NaN-boxed interpreter's ``uint64_t`` stack slots
# (``store i64 (bitcast double)``, read back by an ``i64`` load bitcast to double beside
# the tag test) -- came out with a derivative of 0 at -O0 and -O2, silently (Enzyme 15
# right); round AM: the same merges whose bits are also tested (``v >> 63``) or written
# back into the registers.  The merges and the stores move the floats themselves now
# (``typed_copies.retype_float_merges``, ``retype_float_stores``).
BOXED = r"""
#include <stdio.h>
#include <stdint.h>
#include <string.h>
int enzyme_const;
double __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);
__attribute__((noinline)) static uint64_t box(double d) { uint64_t v; memcpy(&v, &d, 8); return v; }
static double unbox(uint64_t v) { double d; memcpy(&d, &v, 8); return d; }
double rebox(double x, int k) {                   /* a phi of two boxes */
    uint64_t v = box(x);
    if (!k) v = box(2.0);
    return unbox(v) * unbox(v);
}
double maybe_two(double x, int k) {               /* a select with the bits of 2.0 */
    uint64_t v = box(x * 3.0);
    if (!k) v = 0x4000000000000000ULL;
    return unbox(v) * x;
}
#define TAG_INT 0x7ff9000000000000ULL
#define is_int(v) (((v) & 0xffff000000000000ULL) == TAG_INT)
#define num(v) (is_int(v) ? (double)(int32_t)(v) : unbox(v))
double vm(double a, double b) {                   /* NaN-boxed stack slots */
    uint64_t stack[8];
    int sp = 0;
    stack[sp++] = box(a);
    stack[sp++] = TAG_INT | 3u;
    stack[sp++] = box(b);
    for (int op = 0; op < 2; op++) {              /* mul, then add */
        uint64_t vy = stack[--sp], vx = stack[--sp];
        double y = num(vy), x = num(vx);
        double r = op == 0 ? x * y : x + y;
        uint64_t out;
        memcpy(&out, &r, 8);
        stack[sp++] = out;
    }
    return num(stack[0]) * a;
}
double tested(double x, int op) {                 /* a merge whose bits are also tested */
    uint64_t v;
    if (op == 0) v = box(x * x); else v = box(x + 1);
    if (v == 0x7ff8000000000000ULL || v >> 63) return 0;
    return unbox(v);
}
double tested_select(double x, int op) {          /* the same as a select */
    uint64_t v = op ? box(x + 1) : box(x * x);
    if (v >> 63) return 0;
    return unbox(v) * 3;
}
double registers(double x, const int *src, int n) {  /* bits written back, re-read by index */
    uint64_t reg[2] = { box(x), box(1.0) };
    uint64_t acc = box(1.0);
    for (int i = 0; i < n; i++) {
        uint64_t v = reg[src[i]];
        acc = (unbox(acc) > unbox(v)) ? acc : box(unbox(v) * unbox(acc));
        reg[1] = acc;
    }
    return unbox(acc);
}
int main(void) {
    static const int S[3] = { 0, 1, 0 };
    printf("tested %.12g %.12g\n", __enzyme_autodiff((void *)tested, 0.7, enzyme_const, 0),
           __enzyme_fwddiff((void *)tested, 0.7, 1.0, enzyme_const, 0));
    printf("tested_select %.12g %.12g\n",
           __enzyme_autodiff((void *)tested_select, 0.7, enzyme_const, 0),
           __enzyme_fwddiff((void *)tested_select, 0.7, 1.0, enzyme_const, 0));
    printf("registers %.12g %.12g\n",
           __enzyme_autodiff((void *)registers, 3.0, enzyme_const, S, enzyme_const, 3),
           __enzyme_fwddiff((void *)registers, 3.0, 1.0, enzyme_const, S, enzyme_const, 3));
    printf("rebox %.12g %.12g\n", __enzyme_autodiff((void *)rebox, 0.7, enzyme_const, 1),
           __enzyme_fwddiff((void *)rebox, 0.7, 1.0, enzyme_const, 1));
    printf("maybe_two %.12g %.12g\n",
           __enzyme_autodiff((void *)maybe_two, 0.7, enzyme_const, 1),
           __enzyme_fwddiff((void *)maybe_two, 0.7, 1.0, enzyme_const, 1));
    printf("vm %.12g %.12g\n", __enzyme_autodiff((void *)vm, 0.7, enzyme_const, 1.3),
           __enzyme_fwddiff((void *)vm, 0.7, 1.0, enzyme_const, 1.3));
    return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_doubles_kept_as_their_bits(tmp_path, opt):
    out = build_and_run(tmp_path, BOXED, opt)
    assert out.returncode == 0, out.stdout + out.stderr
    got = parse_values(out.stdout)
    # rebox: x^2 -> 2x; maybe_two: 3x * x -> 6x; vm: (a + 3 b) a -> 2a + 3b
    assert got["rebox"] == pytest.approx([1.4, 1.4], rel=1e-12)
    assert got["maybe_two"] == pytest.approx([4.2, 4.2], rel=1e-12)
    assert got["vm"] == pytest.approx([2 * 0.7 + 3 * 1.3] * 2, rel=1e-12)
    # tested: x^2 -> 2x; registers: x, then x * x, then kept -> 2x at 3
    assert got["tested"] == pytest.approx([1.4, 1.4], rel=1e-12)
    assert got["tested_select"] == pytest.approx([4.2, 4.2], rel=1e-12)
    assert got["registers"] == pytest.approx([6.0, 6.0], rel=1e-12)


SELECT_OF_BOXES = """
define double @f(double %x, double %y, i1 %c) {
  %a = bitcast double %x to i64
  %b = bitcast double %y to i64
  %s = select i1 %c, i64 %a, i64 %b
  %t = lshr i64 %s, 63
  %n = icmp eq i64 %t, 0
  %d = bitcast i64 %s to double
  %r = select i1 %n, double %d, double 0.0
  ret double %r
}
"""


def test_select_of_boxes_also_tested_as_bits_is_retyped():
    """The select becomes a select of doubles; the bit test reads a bitcast of it,
    placed after the select (the module still verifies)."""
    import llvmlite.binding as llvm
    from enzyme_py.ad.typed_copies import retype_float_merges
    from enzyme_py.ir import parse_module, print_module
    m = parse_module(SELECT_OF_BOXES)
    f = m.get_function("f")
    f.materialize()
    assert retype_float_merges(f) == 1
    text = print_module(m)
    llvm.parse_assembly(text).verify()
    assert "select i1 %c, double %x, double %y" in text, text


# Round AR, a TinyEKF-style filter: its workspace is a static struct of pointers into a
# static buffer, and a helper zeroes the upper triangle of a matrix (`L[i*n+j] = 0.0`).
# At -O1 and above LLVM unrolls the zeroing and stores `i64 0`: an integer store, which
# left the overwritten double's adjoint (tangent) in the shadow -- dx[1] = 1 for 0 in
# both modes, silently.  Integer constants stored over floats of their width are
# stored as the float constant of the same bits.
ZERO_STORE = r"""
#include <math.h>
#include <stdio.h>
int enzyme_dup, enzyme_const;
void __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);
typedef struct { int n; double *x, *L; } ws_t;
static double buf[8];
static ws_t w;
static void step(ws_t *e) {
    int n = e->n;
    for (int i = 0; i < n * n; i++) e->L[i] = e->x[i] * e->x[i];
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) e->L[i * n + j] = 0.0;
    for (int i = 0; i < n * n; i++) e->x[i] = sin(e->L[i]);
}
double f(const double *x0, int T) {
    w.n = 2; w.x = buf; w.L = buf + 4;
    for (int i = 0; i < 4; i++) w.x[i] = x0[i];
    for (int t = 0; t < T; t++) step(&w);
    return w.x[0] + w.x[1] + w.x[2] + w.x[3];
}
int main(void) {
    double x[4] = {0.3, 0.5, 0.7, 0.2}, dx[4] = {0}, t[4] = {0, 1, 0, 0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 1);
    printf("rev %.17g %.17g %.17g %.17g\n", dx[0], dx[1], dx[2], dx[3]);
    printf("fwd %.17g\n", __enzyme_fwddiff((void *)f, enzyme_dup, x, t, enzyme_const, 1));
    return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_integer_zero_stored_over_doubles(tmp_path, opt):
    import math
    out = build_and_run(tmp_path, ZERO_STORE, opt)
    assert out.returncode == 0, out.stderr
    vals = parse_values(out.stdout)
    x = [0.3, 0.5, 0.7, 0.2]
    want = [0.0 if i == 1 else 2 * v * math.cos(v * v) for i, v in enumerate(x)]
    assert vals["rev"] == pytest.approx(want, rel=1e-13, abs=1e-15)
    assert vals["fwd"] == [0.0]


# Round AW: `*v = DIR0` of a `static const struct { float x, y; }` in a helper is one
# `store i64` of the two floats' bits (at -O2, and at -O0 after the pre-AD
# optimisation): the tangents and adjoints of the two floats it overwrote stayed --
# 15 (or 14) for 6, silently, in both modes.  It stores the two floats now.
FLOAT_PAIR_RESET = r"""
#include <stdio.h>
int enzyme_dup, enzyme_dupnoneed;
void __enzyme_autodiff(void *, ...);
void __enzyme_fwddiff(void *, ...);
typedef struct { float x, y; } vec2;
static const vec2 DIR0 = { 1, 0.5f };
__attribute__((noinline)) void reset(vec2 *v) { *v = DIR0; }
void f(const float *x, vec2 *v, float *out) {
    v->x = x[0] * x[0];
    v->y = x[0];
    float s = v->x + v->y;
    reset(v);
    *out = s + v->x * x[0] + v->y;      /* x^2 + x + x + 0.5: 2x + 2 */
}
int main(void) {
    float x[1] = { 2 }, dx[1] = { 0 }, t[1] = { 1 }, out = 0, dout = 1;
    vec2 v, dv = { 0, 0 };
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_dup, &v, &dv, enzyme_dup, &out, &dout);
    float o2 = 0, to = 0;
    vec2 tv = { 0, 0 };
    __enzyme_fwddiff((void *)f, enzyme_dup, x, t, enzyme_dup, &v, &tv, enzyme_dup, &o2, &to);
    printf("vals %.9g %.9g\n", dx[0], to);
    return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_two_floats_reset_from_a_constant(tmp_path, opt):
    out = build_and_run(tmp_path, FLOAT_PAIR_RESET, opt)
    assert out.returncode == 0, out.stderr
    assert parse_values(out.stdout)["vals"] == [6.0, 6.0], out.stdout


# Found writing stop 38's tests: a double ``memcpy``'d into a ``uint64_t`` field of a
# record by one helper, the field assigned on as an integer (``c.bits = a.bits``), and
# ``memcpy``'d back into a double by another: every derivative 0 in reverse mode at every
# level, 3x the tangent in forward mode at -O0 (the shadow got the primal's bits: a
# field declared integer is mirrored).  Likewise a float's bits in a ``uint32_t`` field
# of an 8-byte record copied whole (reverse -O0: half the gradient).  The declared type
# says integer; the program's accesses, followed through the integer copies
# (``typetree.copied_kinds``), say double (float).  At -O3 argument promotion hands the
# boxing helper the double's bits as an ``i64`` argument, which it only stores there:
# the parameter is given the double type back (``abi._param_float``).
BITS_IN_INT_FIELDS = r"""
#include <stdio.h>
#include <string.h>
#include <stdint.h>
int enzyme_dup, enzyme_const;
void __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);
typedef struct { uint64_t bits; int tag; } Boxed;
typedef struct { uint32_t bits; int tag; } Boxed32;
__attribute__((noinline)) static void box(Boxed *b, const double *x) { memcpy(&b->bits, x, 8); b->tag = 1; }
__attribute__((noinline)) static double unbox(const Boxed *b) { double d; memcpy(&d, &b->bits, 8); return d; }
__attribute__((noinline)) static void box32(Boxed32 *b, float x) { memcpy(&b->bits, &x, 4); b->tag = 2; }
__attribute__((noinline)) static float unbox32(const Boxed32 *b) { float d; memcpy(&d, &b->bits, 4); return d; }
double field(const double *x) {                 /* one field assigned on as an integer */
    Boxed a, c;
    box(&a, x);
    c.bits = a.bits; c.tag = a.tag;
    double y = unbox(&c);
    return y * y;
}
double whole(const double *x) {                 /* float bits in a record copied whole */
    Boxed32 a, c;
    box32(&a, (float)x[0]);
    c = a;
    return (double)unbox32(&c) * x[0];
}
double array(const double *x, int n) {          /* arrays of records, copied by index */
    Boxed in[8], out[8];
    for (int i = 0; i < n; i++) box(&in[i], &x[i]);
    for (int i = 0; i < n; i++) { out[n - 1 - i].bits = in[i].bits; out[n - 1 - i].tag = i; }
    double s = 0;
    for (int i = 0; i < n; i++) s += (i + 1) * unbox(&out[i]) * unbox(&out[i]);
    return s;
}
int main(void) {
    double x[4] = {3, 0.5, -2, 1.5}, dx[4] = {0};
    __enzyme_autodiff((void *)field, enzyme_dup, x, dx);
    double t[4] = {1, 0, 0, 0};
    printf("field %.12g %.12g\n", dx[0], __enzyme_fwddiff((void *)field, enzyme_dup, x, t));
    memset(dx, 0, sizeof dx);
    __enzyme_autodiff((void *)whole, enzyme_dup, x, dx);
    printf("whole %.12g %.12g\n", dx[0], __enzyme_fwddiff((void *)whole, enzyme_dup, x, t));
    memset(dx, 0, sizeof dx);
    __enzyme_autodiff((void *)array, enzyme_dup, x, dx, enzyme_const, 4);
    double fw[4];
    for (int k = 0; k < 4; k++) {
        double e[4] = {0}; e[k] = 1;
        fw[k] = __enzyme_fwddiff((void *)array, enzyme_dup, x, e, enzyme_const, 4);
    }
    printf("array %.12g %.12g %.12g %.12g %.12g %.12g %.12g %.12g\n", dx[0], dx[1], dx[2], dx[3],
           fw[0], fw[1], fw[2], fw[3]);
    return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2", "-O3"])
def test_float_bits_in_integer_fields(tmp_path, opt):
    out = build_and_run(tmp_path, BITS_IN_INT_FIELDS, opt)
    assert out.returncode == 0, out.stdout + out.stderr
    got = parse_values(out.stdout)
    # field: x^2 -> 2x at 3; whole: (float)x * x -> 2x; array: sum (n - k) x[k]^2, reversed
    assert got["field"] == pytest.approx([6, 6], rel=1e-12)
    assert got["whole"] == pytest.approx([6, 6], rel=1e-6)
    assert got["array"] == pytest.approx([24, 3, -8, 3] * 2, rel=1e-12)


# A wire-format record ``{uint32_t id; uint64_t payload;}`` carrying a double's bits
# (``std::bit_cast``), pushed into a ``std::vector``, the vector copied, the payloads
# cast back: refused at every level ("an integer-typed copy of memory that may hold
# floating-point values": -O1+ stores the loaded bits on either side of the vector's
# growth branch, in other blocks than the load; -O0's ``bit_cast`` returns them as an
# ``i64``).  The copy is made one of doubles, and ``bit_cast``'s result a double.
WIRE_RECORDS = r"""
#include <bit>
#include <cstdint>
#include <cstdio>
#include <vector>
#include <cstring>
#include <variant>
extern int enzyme_dup, enzyme_const;
extern void __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
struct Wire { uint32_t id; uint64_t payload; };          // a message: a double's bits in payload
static std::vector<Wire> encode(const double *x, int n) {
  std::vector<Wire> out;
  for (int i = 0; i < n; i++) out.push_back(Wire{(uint32_t)i, std::bit_cast<uint64_t>(x[i])});
  return out;
}
static double decode_sum(const std::vector<Wire> &w) {
  double s = 0;
  for (const Wire &m : w) s += (m.id + 1) * std::bit_cast<double>(m.payload) * std::bit_cast<double>(m.payload);
  return s;
}
double f(const double *x, int n) {
  std::vector<Wire> w = encode(x, n);
  std::vector<Wire> copy = w;                                // copied on as records
  return decode_sum(copy);
}
double g(const double *x, int n) {                           // a variant copied around
  std::vector<std::variant<int64_t, double>> v;
  for (int i = 0; i < n; i++) { if (i % 2) v.emplace_back(x[i]); else v.emplace_back((int64_t)i); }
  auto v2 = v;
  double s = 0;
  for (auto &e : v2) if (auto p = std::get_if<double>(&e)) s += *p * *p;
  return s;
}
int main() {
  double x[3] = {1.5, -2, 0.5}, dx[3] = {0}, e[3] = {0, 1, 0};
  __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 3);
  printf("f %.12g %.12g %.12g %.12g\n", dx[0], dx[1], dx[2],
         __enzyme_fwddiff((void *)f, enzyme_dup, x, e, enzyme_const, 3));
  double dg[3] = {0};
  __enzyme_autodiff((void *)g, enzyme_dup, x, dg, enzyme_const, 3);
  printf("g %.12g %.12g %.12g\n", dg[0], dg[1], dg[2]);
  return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2", "-O3"])
def test_double_bits_in_wire_records(tmp_path, opt):
    out = build_and_run(tmp_path, WIRE_RECORDS, opt + " -std=c++20", cxx=True)
    assert out.returncode == 0, out.stdout + out.stderr
    got = parse_values(out.stdout)
    # f: sum (i + 1) x_i^2 -> 2 (i + 1) x_i, forward along e_1; g: x_1^2 (odd entries)
    assert got["f"] == pytest.approx([3, -8, 3, -8], rel=1e-12)
    assert got["g"] == pytest.approx([0, -4, 0], rel=1e-12)
