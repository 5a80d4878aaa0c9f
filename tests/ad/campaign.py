"""Generated-program campaign (issue 10, item 6).

Generates random valid C functions ``double fK(const double *x)`` (x has 4 entries)
mixing loops, nested and while loops, branches, calls to non-inlined helpers,
recursion, malloc/free, in-place overwrites, memcpy through a helper, overlapping
memmove, byte copies between buffers kept in generic containers (``void *data``), a dynamic array grown by realloc in a non-inlined push, double atomics,
mixed int/double/float structs copied by assignment, unions, integer index arithmetic,
float/double mixes and libm; compiles each with enzyme-cc (this checkout's plugin) at
-O0 and -O2, and checks

* reverse mode against central differences, per input coordinate, and
* forward mode against reverse mode: the inner-product identity <J v, 1> = <v, J^T 1>.

Every (program, -O level) is classified: ``right``; ``error:<cause>`` (a clear compile
error: enzyme-cc exits non-zero with a diagnostic, the cause is its first ``error:``
line with names and numbers stripped); ``nonsmooth`` (central differences with two step
sizes disagree: a branch or a data-dependent trip count switches near the input, so
they say nothing -- the inner-product identity is still checked); ``WRONG`` (a
derivative that disagrees; reported with the source); ``crash`` (the derivative code
aborts or faults at run time); ``internal`` (a traceback / exit 70).

Usage::

    python tests/ad/campaign.py N [--seed S] [--jobs J] [--batch B] [--keep DIR]
                                  [--record FILE] [--plugin DIR]

runs programs with seeds S .. S+N-1 (each at -O0 and -O2) and prints the counts.
``tests/ad/test_random_programs.py`` runs a small fixed sample in CI.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from helpers import enzyme_cc  # noqa: E402

N = 4
FEATURES = ("loop", "nested", "while", "branch", "call", "recursion", "malloc", "overwrite",
            "memcpy", "memmove", "realloc", "atomic", "struct", "union", "float", "libm",
            "wrapper", "fptr", "global", "records", "bufret", "dead", "kept")

HEADER = r"""#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int enzyme_dup, enzyme_const;
void __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);
typedef struct { double *data; int n, cap; } Vec;
"""


class Gen:
    """One random function and the helpers it calls, from ``random.Random(seed)``."""

    def __init__(self, seed: int):
        self.r = random.Random(seed)
        self.k = seed
        self.helpers: list[str] = []
        self.features: set[str] = set()
        self.tmp = 0
        self.has_float = False
        r = self.r
        self.enabled = set(r.sample(FEATURES, r.randint(2, 6)))

    # ------------------------------------------------------------ expressions
    def idx(self, ivars):
        r = self.r
        if ivars and r.random() < 0.7:
            i = r.choice(ivars)
            return r.choice([f"({i} + {r.randint(0, 3)}) % {N}", f"({i} * 3 + {r.randint(0, 3)}) % {N}",
                             f"{i} % {N}", f"({i} ^ {r.randint(1, 3)}) & 3"])
        return str(r.randint(0, N - 1))

    def leaf(self, ivars):
        r = self.r
        c = r.randint(0, 5)
        if c == 0:
            return f"x[{self.idx(ivars)}]"
        if c == 1:
            return "s"
        if c == 2:
            return f"{r.choice([0.5, 1.5, -0.75, 2.0, 0.25])}"
        return f"a[{self.idx(ivars)}]"

    def expr(self, ivars, depth=2):
        r = self.r
        if depth == 0 or r.random() < 0.3:
            return self.leaf(ivars)
        a = self.expr(ivars, depth - 1)
        c = r.randint(0, 7)
        if c == 0:
            return f"({a} + {self.expr(ivars, depth - 1)})"
        if c == 1:
            return f"({a} - {self.expr(ivars, depth - 1)})"
        if c == 2:
            return f"({a} * {self.expr(ivars, depth - 1)})"
        if c == 3:
            b = self.expr(ivars, depth - 1)
            return f"({a} / (1.0 + {b} * {b}))"
        if c in (4, 5) and "libm" in self.enabled:
            self.features.add("libm")
            fn = r.choice(["sin({})", "cos({})", "tanh({})", "atan({})", "exp(tanh({}))",
                           "log1p({0} * {0})", "sqrt(1.0 + {0} * {0})", "erf({})",
                           "pow(1.5 + tanh({}), 1.7)", "hypot({}, 0.5)", "cbrt(2.0 + tanh({}))",
                           "expm1(0.5 * tanh({}))", "log(2.0 + sin({}))"])
            return fn.format(a)
        if c == 6 and "call" in self.enabled:
            return f"{self.helper_scalar()}({a}, {self.expr(ivars, depth - 1)})"
        if c == 7 and "recursion" in self.enabled:
            return f"{self.helper_rec()}({a}, {r.randint(0, 3)})"
        return f"tanh({a})"

    def bounded(self, ivars):
        return f"tanh({self.expr(ivars)})"

    # ------------------------------------------------------------ helpers
    def name(self, base):
        self.tmp += 1
        return f"{base}{self.k}_{self.tmp}"

    def helper_scalar(self):
        self.features.add("call")
        n = self.name("h")
        body = self.r.choice(["return u * tanh(v) + 0.5 * sin(u - v);",
                              "double w = u * u; return w / (1.0 + w + v * v);",
                              "if (u > v) return u * 0.5 + v; return v * v * 0.25 - u;",
                              "double t = 0; for (int j = 0; j < 3; j++) t += tanh(u * j + v);"
                              " return t;"])
        self.helpers.append(f"static __attribute__((noinline)) double {n}(double u, double v) "
                            f"{{ {body} }}")
        return n

    def helper_rec(self):
        self.features.add("recursion")
        n = self.name("rec")
        self.helpers.append(f"static double {n}(double v, int d) {{ return d <= 0 ? v : "
                            f"0.5 * {n}(sin(v) + 0.1 * v, d - 1) + 0.25 * v; }}")
        return n

    # ------------------------------------------------------------ statements
    def stmt(self, ivars, depth):
        r = self.r
        kinds = ["assign", "acc"] * 3
        for f in ("loop", "nested", "while", "branch", "malloc", "overwrite", "memcpy",
                  "memmove", "realloc", "atomic", "struct", "union", "float", "wrapper",
                  "fptr", "global", "records", "bufret", "dead", "kept"):
            if f in self.enabled:
                kinds.append(f)
        k = r.choice(kinds)
        if depth >= 2 and k in ("loop", "nested", "while", "branch"):
            k = "assign"
        pad = "  " * (depth + 1)
        if k == "assign":
            return (f"{pad}a[{self.idx(ivars)}] = 0.6 * a[{self.idx(ivars)}] + "
                    f"0.4 * {self.bounded(ivars)};")
        if k == "acc":
            return f"{pad}s = 0.8 * s + 0.3 * {self.bounded(ivars)};"
        if k == "overwrite":
            self.features.add("overwrite")
            i = self.idx(ivars)
            return f"{pad}a[{i}] = a[{i}] * a[{self.idx(ivars)}] * 0.5 + 0.1;"
        if k in ("loop", "nested"):
            self.features.add(k)
            v = f"i{depth}"
            n = r.randint(1, 5)
            inner = [self.stmt(ivars + [v], depth + 1) for _ in range(r.randint(1, 2))]
            if k == "nested":
                w = f"j{depth}"
                inner.append(f"{pad}  for (int {w} = 0; {w} <= {v}; {w}++)\n"
                             + self.stmt(ivars + [v, w], depth + 2))
            return (f"{pad}for (int {v} = 0; {v} < {n}; {v}++) {{\n" + "\n".join(inner)
                    + f"\n{pad}}}")
        if k == "while":
            self.features.add("while")
            v = f"w{depth}"
            if r.random() < 0.5:
                body = self.stmt(ivars + [v], depth + 1)
                return (f"{pad}{{ int {v} = 0; while ({v} < {r.randint(2, 6)}) {{\n{body}\n"
                        f"{pad}  {v} += 1 + ({v} % 2); }} }}")
            # data-dependent trip count (smooth in between switches)
            return (f"{pad}{{ int {v} = 0; double g{depth} = 0; while (g{depth} < 1.5 && "
                    f"{v} < 8) {{ g{depth} += 0.4 + 0.1 * tanh(a[{v} % {N}]); "
                    f"s += 0.2 * sin(g{depth} * a[{v} % {N}]); {v}++; }} }}")
        if k == "branch":
            self.features.add("branch")
            c = (f"{self.expr(ivars, 1)} > {r.choice([0.1, -0.2, 0.5])}" if r.random() < 0.6
                 else f"({(ivars or ['s_i'])[0]} & 1)" if ivars else "n_calls_even")
            if c == "n_calls_even":
                c = f"x[{r.randint(0, N - 1)}] > 100.0"
            t = self.stmt(ivars, depth + 1)
            e = self.stmt(ivars, depth + 1)
            return f"{pad}if ({c}) {{\n{t}\n{pad}}} else {{\n{e}\n{pad}}}"
        if k == "malloc":
            self.features.add("malloc")
            t = self.name("t")
            return (f"{pad}{{ double *{t} = malloc({N} * sizeof(double));\n"
                    f"{pad}  for (int q = 0; q < {N}; q++) {t}[q] = {self.bounded(['q'])};\n"
                    f"{pad}  for (int q = 0; q < {N}; q++) a[q] = 0.7 * a[q] + 0.3 * "
                    f"{t}[(q + {r.randint(1, 3)}) % {N}];\n{pad}  free({t}); }}")
        if k == "memcpy":
            self.features.add("memcpy")
            self.helpers.append("static __attribute__((noinline)) void copy_d(double *d, "
                                "const double *s, int n) { memcpy(d, s, n * sizeof(double)); }")
            m = r.randint(1, N)
            return (f"{pad}{{ double b[{N}]; copy_d(b, a, {N});\n"
                    f"{pad}  for (int q = 0; q < {N}; q++) b[q] = 0.5 * b[q] + "
                    f"{self.bounded(['q'])};\n"
                    f"{pad}  copy_d(a + {N - m}, b, {m}); }}")
        if k == "memmove":
            self.features.add("memmove")
            d = r.randint(1, 2)
            if r.random() < 0.5:
                call = f"memmove(a, a + {d}, {N - d} * sizeof(double));"
            else:
                call = f"memmove(a + {d}, a, {N - d} * sizeof(double));"
            if r.random() < 0.4:
                self.helpers.append("static __attribute__((noinline)) void move_d(double *d, "
                                    "const double *s, int n) { memmove(d, s, n * sizeof(double));"
                                    " }")
                call = re.sub(r"memmove\((.*), (.*), (\d+) \* sizeof\(double\)\);",
                              r"move_d(\1, \2, \3);", call)
            return f"{pad}{call}"
        if k == "realloc":
            self.features.add("realloc")
            self.helpers.append(
                "static __attribute__((noinline)) void vpush(Vec *v, double e) {\n"
                "  if (v->n == v->cap) { v->cap = v->cap ? 2 * v->cap : 1;\n"
                "    v->data = realloc(v->data, v->cap * sizeof(double)); }\n"
                "  v->data[v->n++] = e; }")
            m = r.randint(2, 7)
            return (f"{pad}{{ Vec v = {{0, 0, 0}};\n"
                    f"{pad}  for (int q = 0; q < {m}; q++) vpush(&v, {self.bounded(['q'])});\n"
                    f"{pad}  for (int q = 0; q < v.n; q++) a[q % {N}] += 0.1 * v.data[q] * "
                    f"(q + 1);\n{pad}  free(v.data); }}")
        if k == "atomic":
            self.features.add("atomic")
            op = r.choice(["__atomic_fetch_add", "__atomic_fetch_sub"])
            tgt = r.choice([f"&a[{self.idx(ivars)}]", "&s"])
            return f"{pad}{op}({tgt}, 0.3 * {self.bounded(ivars)}, __ATOMIC_RELAXED);"
        if k == "struct":
            self.features.add("struct")
            if r.random() < 0.5:
                # pointer and double fields, initialised from a constant (a memcpy of
                # mixed memory) and copied by assignment
                return (f"{pad}{{ struct {{ const char *tag; double w; double *src; int n; }}"
                        f" p = {{\"t\", {r.choice([0.5, 2.0])}, 0, {N}}}, p2;\n"
                        f"{pad}  p.src = a; p.w *= {self.bounded(ivars)};\n"
                        f"{pad}  p2 = p; s += 0.2 * p2.w * p2.src[{self.idx(ivars)}] "
                        f"+ 0.01 * p2.n * (p2.tag[0] == 't'); }}")
            return (f"{pad}{{ struct {{ int id; double w; float f; double z; }} p, p2;\n"
                    f"{pad}  p.id = {r.randint(0, 3)}; p.w = {self.bounded(ivars)}; "
                    f"p.f = 1.5f; p.z = a[{self.idx(ivars)}];\n"
                    f"{pad}  p2 = p; s += 0.2 * p2.w * p2.z + 0.01 * p2.id + 0.1 * p2.f; }}")
        if k == "union":
            self.features.add("union")
            return (f"{pad}{{ union {{ double d; long long bits; }} u; u.d = "
                    f"{self.bounded(ivars)};\n{pad}  s += 0.3 * u.d; }}")
        if k == "float":
            self.features.add("float")
            self.has_float = True
            return (f"{pad}{{ float fl = (float)({self.bounded(ivars)});\n"
                    f"{pad}  s += 0.5 * (double)(fl * fl) + 0.1 * (double)sinf(fl); }}")
        if k == "wrapper":
            self.features.add("wrapper")
            self.helpers.append(
                "static __attribute__((noinline)) void *xmalloc(size_t n) {\n"
                "  void *p = malloc(n); if (!p) abort(); return p; }\n"
                "static __attribute__((noinline)) double *grow(double *p, size_t n) {\n"
                "  double *q = realloc(p, n * sizeof *q); if (!q) abort(); return q; }")
            t = self.name("t")
            return (f"{pad}{{ double *{t} = xmalloc(2 * sizeof(double));\n"
                    f"{pad}  {t}[0] = {self.bounded(ivars)}; {t}[1] = 0.5 * {t}[0];\n"
                    f"{pad}  {t} = grow({t}, {N});\n"
                    f"{pad}  for (int q = 2; q < {N}; q++) {t}[q] = {t}[q - 1] * a[q];\n"
                    f"{pad}  for (int q = 0; q < {N}; q++) a[q] += 0.2 * {t}[q];\n"
                    f"{pad}  free({t}); }}")
        if k == "fptr":
            self.features.add("fptr")
            self.helpers.append("static double (*const unary_tab[3])(double) = "
                                "{sin, cos, tanh};")
            return (f"{pad}s += 0.3 * unary_tab[{self.idx(ivars)} % 3]"
                    f"({self.expr(ivars, 1)});")
        if k == "global":
            self.features.add("global")
            g = f"scratch{self.k}"
            self.helpers.append(f"static double {g}[{N}];")
            return (f"{pad}for (int q = 0; q < {N}; q++) {g}[q] = {self.bounded(['q'])};\n"
                    f"{pad}for (int q = 0; q < {N}; q++) a[q] = 0.5 * a[q] + {g}[(q + 1) % {N}]"
                    f" * {g}[q];")
        if k == "records":
            self.features.add("records")
            self.helpers.append(
                "typedef struct { int id; float f; double v; int flag; } Rec;\n"
                "typedef struct { double val; int n; } Acc;\n"
                "static __attribute__((noinline)) Acc acc_add(Acc a, double v) "
                "{ Acc b = {a.val + v, a.n + 1}; return b; }\n"
                "static __attribute__((noinline)) void rec_copy(Rec *d, const Rec *s, int n) "
                "{ for (int i = 0; i < n; i++) d[i] = s[i]; }\n"
                "static __attribute__((noinline)) void rec_sort(Rec *r, int n) {\n"
                "  for (int i = 0; i < n; i++) for (int j = i + 1; j < n; j++)\n"
                "    if (r[j].id < r[i].id) { Rec t = r[i]; r[i] = r[j]; r[j] = t; } }")
            if r.random() < 0.5:
                self.has_float = True
                fl = f"(float)({self.bounded(['q'])})"
            else:
                fl = "0.5f"
            return (f"{pad}{{ Rec r[{N}], r2[{N}]; Acc ac = {{0, 0}};\n"
                    f"{pad}  for (int q = 0; q < {N}; q++) {{ r[q].id = (q * {r.randint(1, 3)}"
                    f" + {r.randint(0, 3)}) % {N}; r[q].f = {fl}; r[q].v = "
                    f"{self.bounded(['q'])}; r[q].flag = q; }}\n"
                    f"{pad}  rec_sort(r, {N}); rec_copy(r2, r, {N});\n"
                    f"{pad}  for (int q = 0; q < {N}; q++) ac = acc_add(ac, r2[q].v * (q + 1) "
                    f"+ (double)r2[q].f);\n"
                    f"{pad}  s += 0.2 * ac.val + 0.01 * ac.n; }}")
        if k == "bufret":
            self.features.add("bufret")
            self.helpers.append(
                "typedef struct { int n; double *data; } Buf;\n"
                "static __attribute__((noinline)) Buf buf_map(const double *a, int n) {\n"
                "  Buf b = {n, malloc(n * sizeof(double))};\n"
                "  for (int i = 0; i < n; i++) b.data[i] = sin(a[i]) * a[(i + 1) % n];\n"
                "  return b; }")
            return (f"{pad}{{ Buf bb = buf_map(a, {N});\n"
                    f"{pad}  for (int q = 0; q < {N}; q++) a[q] = 0.5 * a[q] + 0.5 * "
                    f"bb.data[(q + {r.randint(0, 3)}) % {N}];\n{pad}  free(bb.data); }}")
        if k == "dead":
            # computed from active values, but only compared, printed or converted to an
            # integer: backward activity drops them (and a local array written with
            # active values that nothing differentiable reads loses its shadow)
            self.features.add("dead")
            self.helpers.append(
                "static int quiet_sink;\n"
                "static __attribute__((noinline)) double relax(double *a, int n) {\n"
                "  double e = 0;\n"
                "  for (int i = 0; i < n; i++) { double nv = 0.5 * (a[i] + a[(i + 1) % n]);\n"
                "    e += fabs(nv - a[i]) / (1.0 + fabs(nv)); a[i] = nv; }\n"
                "  return e; }")
            c = self.name("chk")
            if r.random() < 0.5:
                return (f"{pad}{{ double {c}[{N}]; int big = 0;\n"
                        f"{pad}  for (int q = 0; q < {N}; q++) {c}[q] = "
                        f"fabs(a[q] - {self.bounded(['q'])});\n"
                        f"{pad}  for (int q = 0; q < {N}; q++) big += {c}[q] > 1e3;\n"
                        f"{pad}  quiet_sink += (int)({c}[0] * 0.0) + big; }}")
            return (f"{pad}{{ double err = relax(a, {N});\n"
                    f"{pad}  if (err > 1e6) printf(\"diverged %g\\n\", err); }}")
        if k == "kept":
            # a generic array (GLib's GArray shape): its noinline copy moves bytes between
            # buffers reached only through `void *data`, of doubles or of int/double
            # records -- type analysis must follow the pointer kept in the struct
            self.features.add("kept")
            self.helpers.append(
                "typedef struct { size_t elem, len; void *data; } GArr;\n"
                "typedef struct { int id; double v; } Item;\n"
                "static __attribute__((noinline)) void garr_copy(GArr *d, size_t i, "
                "const GArr *s, size_t j, size_t cnt) {\n"
                "  memmove((char *)d->data + i * d->elem, (const char *)s->data + j * s->elem,"
                " cnt * s->elem); }")
            m = r.randint(1, N - 1)
            if r.random() < 0.5:
                return (f"{pad}{{ GArr g = {{sizeof(double), {N}, malloc({N} * sizeof(double))}}"
                        f", h = {{sizeof(double), {N}, malloc({N} * sizeof(double))}};\n"
                        f"{pad}  for (int q = 0; q < {N}; q++) ((double *)g.data)[q] = "
                        f"{self.bounded(['q'])};\n"
                        f"{pad}  garr_copy(&h, 0, &g, {m}, {N - m}); "
                        f"garr_copy(&h, {N - m}, &g, 0, {m});\n"
                        f"{pad}  for (int q = 0; q < {N}; q++) a[q] = 0.5 * a[q] + 0.5 * "
                        f"((double *)h.data)[q];\n{pad}  free(g.data); free(h.data); }}")
            return (f"{pad}{{ GArr g = {{sizeof(Item), {N}, malloc({N} * sizeof(Item))}}, "
                    f"h = {{sizeof(Item), {N}, malloc({N} * sizeof(Item))}};\n"
                    f"{pad}  for (int q = 0; q < {N}; q++) {{ ((Item *)g.data)[q].id = q; "
                    f"((Item *)g.data)[q].v = {self.bounded(['q'])}; }}\n"
                    f"{pad}  garr_copy(&h, {m}, &g, 0, {N - m}); garr_copy(&h, 0, &g, "
                    f"{N - m}, {m});\n"
                    f"{pad}  for (int q = 0; q < {N}; q++) a[q] += 0.3 * ((Item *)h.data)[q].v"
                    f" * (((Item *)h.data)[q].id + 1);\n"
                    f"{pad}  free(g.data); free(h.data); }}")
        raise AssertionError(k)

    def function(self):
        r = self.r
        lines = [f"double f{self.k}(const double *x) {{",
                 f"  double a[{N}] = {{x[0], x[1], x[2], x[3]}};", "  double s = 0.25 * x[0];"]
        for _ in range(r.randint(2, 5)):
            lines.append(self.stmt([], 0))
        w = [r.choice([1.0, 0.5, -0.25, 2.0]) for _ in range(N)]
        lines.append("  return s + " + " + ".join(f"{w[i]} * a[{i}]" for i in range(N)) + ";")
        lines.append("}")
        self.helpers = list(dict.fromkeys(self.helpers))
        return "\n".join(lines)


def program(seed: int):
    g = Gen(seed)
    fn = g.function()
    src = "\n".join(g.helpers + [fn])
    r = random.Random(seed * 7919 + 1)
    x = [round(r.uniform(-1.2, 1.2), 3) for _ in range(N)]
    v = [round(r.uniform(-1, 1), 3) for _ in range(N)]
    return src, x, v, g.has_float, sorted(g.features), g.helpers, fn


def check_block(k, x, v, has_float):
    xs = ", ".join(repr(t) for t in x)
    vs = ", ".join(repr(t) for t in v)
    h1, h2 = ("3e-3", "3e-2") if has_float else ("1e-6", "1e-4")
    return f"""  {{ double x[{N}] = {{{xs}}}, v[{N}] = {{{vs}}}, dx[{N}] = {{0}};
    __enzyme_autodiff((void *)f{k}, enzyme_dup, x, dx);
    double t = __enzyme_fwddiff((void *)f{k}, enzyme_dup, x, v);
    printf("R{k}"); for (int i = 0; i < {N}; i++) printf(" %.17g", dx[i]); printf("\\n");
    printf("T{k} %.17g\\n", t);
    for (int hh = 0; hh < 2; hh++) {{
      printf("F{k}_%d", hh);
      for (int i = 0; i < {N}; i++) {{
        double h = hh ? {h2} : {h1}, xp[{N}], xm[{N}];
        memcpy(xp, x, sizeof xp); memcpy(xm, x, sizeof xm);
        xp[i] += h; xm[i] -= h;
        printf(" %.17g", (f{k}(xp) - f{k}(xm)) / (2 * h));
      }}
      printf("\\n");
    }}
    fflush(stdout);
  }}
"""


def source(seeds, progs):
    parts = [HEADER]
    # helpers shared by several programs of a batch (copy_d, vpush, ...) appear once
    parts.extend(dict.fromkeys(h for k in seeds for h in progs[k][5]))
    for k in seeds:
        parts.append(progs[k][6])
    parts.append("int main(void) {")
    for k in seeds:
        _, x, v, has_float, *_ = progs[k]
        parts.append(check_block(k, x, v, has_float))
    parts.append("  return 0;\n}\n")
    return "\n".join(parts)


def cause(stderr: str) -> str:
    if "Traceback" in stderr or "please report" in stderr:
        return "internal"
    for line in stderr.splitlines():
        m = re.search(r"error: (.*)", line)
        if m:
            msg = m.group(1)
            msg = re.sub(r"'[^']*'", "'_'", msg)
            msg = re.sub(r"\d+", "N", msg)
            return "error: " + msg[:110]
    return "error: (no diagnostic) " + stderr.strip()[-80:]


def classify(k, vals, x, v, has_float):
    dx = vals.get(f"R{k}")
    t = vals.get(f"T{k}")
    f1, f2 = vals.get(f"F{k}_0"), vals.get(f"F{k}_1")
    if dx is None or t is None or f1 is None or f2 is None:
        return "crash", "no output"
    if not all(map(_finite, dx + t + f1 + f2)):
        return "WRONG" if all(map(_finite, f1 + f2)) else "nonsmooth", "non-finite"
    ip = sum(a * b for a, b in zip(dx, v))
    scale = max(1.0, abs(t[0]), sum(abs(a * b) for a, b in zip(dx, v)))
    if abs(ip - t[0]) > 1e-8 * scale * (1e4 if has_float else 1):
        return "WRONG", f"inner product: <dx, v> = {ip!r}, forward = {t[0]!r}"
    tol = 2e-3 if has_float else 1e-5
    bad = [i for i in range(N) if abs(dx[i] - f1[i]) > tol * max(1.0, abs(f1[i]))]
    if not bad:
        return "right", ""
    if any(abs(f1[i] - f2[i]) > 10 * tol * max(1.0, abs(f1[i])) for i in bad):
        return "nonsmooth", ""
    return "WRONG", f"reverse {dx} vs central differences {f1}"


def _finite(z):
    return z == z and abs(z) != float("inf")


def _values(stdout):
    out = {}
    for line in stdout.splitlines():
        p = line.split()
        if p:
            try:
                out[p[0]] = [float(z) for z in p[1:]]
            except ValueError:
                pass
    return out


def run_batch(seeds, progs, opt, workdir):
    """Build and run a batch; on a build failure split it to find each program's result.
    Returns {seed: (outcome, detail)}."""
    d = Path(tempfile.mkdtemp(dir=workdir))
    src = d / "p.c"
    src.write_text(source(seeds, progs))
    exe = d / "p"
    r = enzyme_cc([opt, str(src), "-o", str(exe), "-lm"], d)
    if r.returncode != 0:
        if len(seeds) == 1:
            return {seeds[0]: (cause(r.stderr), r.stderr.strip()[-400:])}
        h = len(seeds) // 2
        res = run_batch(seeds[:h], progs, opt, workdir)
        res.update(run_batch(seeds[h:], progs, opt, workdir))
        return res
    try:
        out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
        stdout, rc = out.stdout, out.returncode
    except subprocess.TimeoutExpired as e:
        stdout, rc = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else "", -9
    vals = _values(stdout)
    res = {}
    for k in seeds:
        _, x, v, has_float, *_ = progs[k]
        res[k] = classify(k, vals, x, v, has_float)
    if rc != 0 and len(seeds) > 1:
        # a crash: rerun the programs without a complete result one by one
        for k in [k for k in seeds if res[k][0] == "crash"]:
            res.update(run_batch([k], progs, opt, workdir))
    return res


def campaign(start, count, jobs=2, batch=8, opts=("-O0", "-O2"), keep=None, log=print,
             record=None):
    progs = {k: program(k) for k in range(start, start + count)}
    seeds = list(progs)
    tasks = [(seeds[i:i + batch], opt) for i in range(0, len(seeds), batch) for opt in opts]
    if keep is None:
        with tempfile.TemporaryDirectory(prefix="enzyme-campaign-") as tmp:
            return campaign(start, count, jobs, batch, opts, tmp, log, record)
    workdir = keep
    Path(workdir).mkdir(parents=True, exist_ok=True)
    results = {}
    counts = collections.Counter()
    feat_wrong = collections.Counter()
    with ThreadPoolExecutor(jobs) as ex:
        futs = [(ex.submit(run_batch, s, progs, o, workdir), o) for s, o in tasks]
        for fut, opt in futs:
            for k, (outcome, detail) in fut.result().items():
                results[(k, opt)] = (outcome, detail)
                if record is not None:
                    record.write(json.dumps({"seed": k, "opt": opt, "outcome": outcome,
                                             "features": progs[k][4]}) + "\n")
                    record.flush()
                counts[outcome] += 1
                if outcome in ("WRONG", "crash", "internal"):
                    for f in progs[k][4]:
                        feat_wrong[f] += 1
                    log(f"--- {outcome} seed {k} {opt}: {detail}\n{progs[k][0]}")
    return results, counts, feat_wrong


def summary(results, counts):
    total = sum(counts.values())
    lines = [f"builds: {total} ({total // 2} programs x -O0/-O2)"]
    for key in ("right", "nonsmooth", "WRONG", "crash", "internal"):
        lines.append(f"  {key:10s} {counts.get(key, 0)}")
    errs = collections.Counter(o for o, _ in results.values() if o.startswith("error"))
    lines.append(f"  compile errors: {sum(errs.values())}")
    for c, n in errs.most_common():
        lines.append(f"    {n:5d}  {c}")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("count", type=int, help="number of programs (each built at -O0 and -O2)")
    ap.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    ap.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    ap.add_argument("--batch", type=int, default=8, help="programs per build (default 8)")
    ap.add_argument("--keep", help="directory for the builds (default: a temporary one)")
    ap.add_argument("--record", help="append one JSON line per (program, -O level) outcome")
    ap.add_argument("--plugin", help="the plugin/ directory to test (default: this checkout's)")
    a = ap.parse_args(argv)
    if a.plugin:
        import helpers
        helpers.PLUGIN = str(Path(a.plugin).resolve())
    record = open(a.record, "a") if a.record else None
    results, counts, feat = campaign(a.seed, a.count, a.jobs, a.batch, keep=a.keep,
                                     record=record)
    print(summary(results, counts))
    if feat:
        print("features of the WRONG/crash/internal programs:", dict(feat.most_common()))
    return 1 if counts.get("WRONG") or counts.get("crash") or counts.get("internal") else 0


if __name__ == "__main__":
    sys.exit(main())
