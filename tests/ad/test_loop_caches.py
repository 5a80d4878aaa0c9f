"""Per-iteration caches: nested loops with trip-count-sized buffers (and a while loop
inside a counted loop), gradients vs central differences, no leaks under valgrind;
vector reductions (llvm.vector.reduce.fadd/fmax) after -ffast-math vectorisation."""

from __future__ import annotations

import subprocess

import pytest

from helpers import build_and_run, enzyme_cc, parse_values

NESTED = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int enzyme_dup, enzyme_const;
double __enzyme_autodiff(void *, ...);
/* overwritten state in nested counted loops (the inner buffer sized from its trip
   count), a data-dependent inner while loop, and an in-place update */
double f(double *x, int n, int steps) {
    double *a = malloc(n * sizeof(double));
    memcpy(a, x, n * sizeof(double));
    double s = 0.0;
    for (int t = 0; t < steps; t++) {
        for (int i = 1; i < n; i++)
            a[i] = sin(a[i - 1]) * a[i] + 0.1 * t;
        double y = a[t % n];
        int k = 0;
        while (fabs(y) < 4.0 && k < 7) { y = y * 1.3 + cos(y); k++; }
        s += y * a[n - 1];
    }
    free(a);
    return s;
}
int main(void) {
    double x[5] = {0.3, -0.2, 0.5, 0.9, -0.7}, dx[5] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 5, enzyme_const, 6);
    for (int k = 0; k < 5; k++) {
        double s = x[k], h = 1e-6, p = s + h, m = s - h;
        x[k] = p; double fp = f(x, 5, 6); x[k] = m; double fm = f(x, 5, 6); x[k] = s;
        printf("d%d %.17g %.17g\n", k, dx[k], (fp - fm) / (p - m));
    }
    return 0;
}
"""

REDUCE = r"""
#include <math.h>
#include <stdio.h>
int enzyme_dup, enzyme_const;
double __enzyme_autodiff(void *, ...);
double sumsq(const double *x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += x[i] * x[i];
    return s;
}
double maxv(const double *x, int n) {
    double m = -1e300;
    for (int i = 0; i < n; i++) m = fmax(m, x[i] * x[i]);
    return m;
}
int main(void) {
    double x[37], d1[37] = {0}, d2[37] = {0};
    for (int i = 0; i < 37; i++) x[i] = sin(1.7 * i + 0.3);
    __enzyme_autodiff((void *)sumsq, enzyme_dup, x, d1, enzyme_const, 37);
    __enzyme_autodiff((void *)maxv, enzyme_dup, x, d2, enzyme_const, 37);
    int best = 0;
    for (int i = 0; i < 37; i++) if (x[i] * x[i] > x[best] * x[best]) best = i;
    for (int i = 0; i < 37; i++) {
        printf("s%d %.17g %.17g\n", i, d1[i], 2 * x[i]);
        printf("m%d %.17g %.17g\n", i, d2[i], i == best ? 2 * x[i] : 0.0);
    }
    return 0;
}
"""


def _check(out, tol):
    assert out.returncode == 0, out.stderr
    vals = parse_values(out.stdout)
    assert vals
    for name, (got, want) in vals.items():
        assert abs(got - want) <= tol * max(abs(want), 1), (name, got, want)


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_nested_loop_cache_gradient(tmp_path, opt):
    _check(build_and_run(tmp_path, NESTED, opt), 1e-5)


def test_no_leaks_nested_loop_cache(tmp_path, valgrind):
    out = build_and_run(tmp_path, NESTED, "-O2",
                        runner=(valgrind, "--leak-check=full", "--error-exitcode=9",
                                "--errors-for-leak-kinds=definite,indirect,possible"))
    assert out.returncode == 0, out.stderr[-3000:]
    assert "All heap blocks were freed" in out.stderr


def _cache_log(stderr: str, fn: str) -> tuple[int, dict]:
    """The -v cache log of ``fn``: (frame bytes, {loop: (parent, kind)})."""
    import re
    lines = stderr.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(f"enzyme-cc: cache of {fn}: "))
    block = [lines[start].split(f"cache of {fn}: ", 1)[1]]
    for ln in lines[start + 1:]:
        if not ln.startswith("    "):
            break
        block.append(ln.strip())
    frame = re.fullmatch(r"frame on the tape \((\d+) bytes\): .*", block[0])
    assert frame, block[0]
    loops = {}
    for ln in block[1:]:
        if ln.startswith("cached load"):    # why loads are cached: see the test below
            continue
        m = re.fullmatch(r"loop (L\d+) \((outermost|in L\d+)\): ([^(]*) \(\d+ bytes per "
                         r"iteration\): .*", ln)
        assert m, ln
        loops[m.group(1)] = (m.group(2).removeprefix("in "), m.group(3))
    return int(frame.group(1)), loops


def test_loop_buffers_sized_from_trip_count(tmp_path):
    """The counted loops get malloc'd buffers in their preheaders; only the while loop
    grows its buffer; nothing of the loops goes on the LIFO tape."""
    import re
    src = tmp_path / "n.c"
    src.write_text(NESTED)
    r = enzyme_cc(["-O2", "-v", "-save-temps", str(src), "-o", str(tmp_path / "n"), "-lm"],
                  tmp_path)
    assert r.returncode == 0, r.stderr
    frame, loops = _cache_log(r.stderr, "f")
    # three loops: for t (outermost), and in it for i and the while loop
    assert len(loops) == 3, loops
    (outer,) = [k for k, (parent, _) in loops.items() if parent == "outermost"]
    assert all(parent == outer for k, (parent, _) in loops.items() if k != outer)
    kinds = sorted(kind for _, kind in loops.values())
    assert kinds == ["counted loop, buffer malloc'd in its preheader",
                     f"counted loop, part of one buffer malloc'd before {outer}",
                     "while loop, buffer grown by realloc"], kinds
    # the tape gets f's frame (fixed size, once per call) and nothing else
    text = (tmp_path / "n.enzyme.ll").read_text()
    aug = re.search(r"^define internal .*@augmented_f\(.*?^}", text, re.M | re.S).group(0)
    pushes = re.findall(r"call ptr @__enzyme_py_tape_reserve\S*\(ptr %\w+, i64 (\S+)\)", aug)
    assert pushes == [str(frame)], pushes
    assert len(re.findall(r"call ptr @__enzyme_py_cache_alloc\S*\(", aug)) == 2
    assert len(re.findall(r"call ptr @__enzyme_py_cache_reserve\S*\(", aug)) == 1


@pytest.mark.parametrize("opt", ["-O2"])
def test_vector_reductions(tmp_path, opt):
    _check(build_and_run(tmp_path, REDUCE, opt, extra=("-ffast-math",)), 1e-12)


def test_cache_accesses_have_their_own_alias_scope(tmp_path):
    """Cache loads/stores carry the cache's alias scope; every other load and store of
    the generated functions is !noalias to it (so LLVM keeps shadow pointers and cached
    values in registers across shadow updates)."""
    import re
    src = tmp_path / "n.c"
    src.write_text(NESTED)
    r = enzyme_cc(["-O2", "-save-temps", str(src), "-o", str(tmp_path / "n"), "-lm"], tmp_path)
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "n.enzyme.ll").read_text()
    scope = re.search(r'^(!\d+) = distinct !\{!\d+, !\d+, !"enzyme_py.cache"\}', text, re.M)
    assert scope, "no cache scope"
    lst = re.search(rf"^(!\d+) = !\{{{scope.group(1)}\}}", text, re.M).group(1)
    for fn in ("augmented_f", "diffe_f"):
        body = re.search(rf"^define internal .*@{fn}\(.*?^}}", text, re.M | re.S).group(0)
        mem = [ln for ln in body.splitlines()
               if re.match(r"\s*(%\S+ = )?load |\s*store ", ln)]
        cache = [ln for ln in mem if f"!alias.scope {lst}" in ln]
        assert cache, fn
        assert all("!noalias" in ln for ln in mem if ln not in cache), fn


def test_ad_sees_scalar_loops(tmp_path):
    """clang's pre-link pipeline for the bitcode is ThinLTO's: the loops the AD pass
    differentiates are not yet vectorised or unrolled (the final -O2 does that)."""
    import re
    src = tmp_path / "s.c"
    src.write_text(STENCIL)
    r = enzyme_cc(["-O2", "-save-temps", str(src), "-o", str(tmp_path / "s"), "-lm"], tmp_path)
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "s.merged.ll").read_text()
    body = re.search(r"^define .*@f\(.*?^}", text, re.M | re.S).group(0)
    assert "x double>" not in body
    out = subprocess.run([str(tmp_path / "s")], capture_output=True, text=True, timeout=60)
    _check(out, 1e-6)


STENCIL = r"""
#include <stdio.h>
#include <stdlib.h>
int enzyme_dup, enzyme_const;
double __enzyme_autodiff(void *, ...);
double f(const double *x, int n, int steps) {
    double *u = malloc(n * sizeof(double)), *v = malloc(n * sizeof(double));
    for (int i = 0; i < n; i++) u[i] = x[i];
    for (int s = 0; s < steps; s++) {
        v[0] = u[0]; v[n - 1] = u[n - 1];
        for (int i = 1; i < n - 1; i++)
            v[i] = u[i] + 0.25 * (u[i - 1] - 2.0 * u[i] + u[i + 1]) + 0.01 * u[i] * (1.0 - u[i]);
        double *t = u; u = v; v = t;
    }
    double l = 0.0;
    for (int i = 0; i < n; i++) l += u[i] * u[i];
    free(u); free(v);
    return l;
}
int main(void) {
    double x[37], dx[37] = {0};
    for (int k = 0; k < 37; k++) x[k] = 0.1 + 0.02 * k;
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 37, enzyme_const, 9);
    for (int k = 0; k < 37; k += 6) {
        double s = x[k], h = 1e-6, p = s + h, m = s - h;
        x[k] = p; double fp = f(x, 37, 9); x[k] = m; double fm = f(x, 37, 9); x[k] = s;
        printf("d%d %.17g %.17g\n", k, dx[k], (fp - fm) / (p - m));
    }
    return 0;
}
"""


NEST3 = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int enzyme_dup, enzyme_const;
double __enzyme_autodiff(void *, ...);
/* a 3-deep nest whose inner buffers hoist to the outermost preheader (one malloc,
   indexed by the linearised iteration), and a triangular loop (bound = outer index)
   whose buffer cannot */
double f(double *x, int n, int m, int steps) {
    double *a = malloc(n * sizeof(double));
    memcpy(a, x, n * sizeof(double));
    double s = 0.0;
    for (int t = 0; t < steps; t++) {
        for (int k = 0; k < m; k++)
            for (int i = 1; i < n; i++)
                a[i] = sin(a[i - 1] + 0.1 * k) * a[i] + 0.01 * t;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < i; j++)
                a[i] = a[i] * cos(a[j]);
        s += a[n - 1] * a[t % n];
    }
    free(a);
    return s;
}
int main(void) {
    double x[6] = {0.3, -0.2, 0.5, 0.9, -0.7, 0.4}, dx[6] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 6, enzyme_const, 3,
                      enzyme_const, 4);
    for (int k = 0; k < 6; k++) {
        double s = x[k], h = 1e-6, p = s + h, m = s - h;
        x[k] = p; double fp = f(x, 6, 3, 4); x[k] = m; double fm = f(x, 6, 3, 4); x[k] = s;
        printf("d%d %.17g %.17g\n", k, dx[k], (fp - fm) / (p - m));
    }
    return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_hoisted_nested_buffers_gradient(tmp_path, opt):
    _check(build_and_run(tmp_path, NEST3, opt), 1e-5)


def test_no_leaks_hoisted_nested_buffers(tmp_path, valgrind):
    out = build_and_run(tmp_path, NEST3, "-O2",
                        runner=(valgrind, "--leak-check=full", "--error-exitcode=9",
                                "--errors-for-leak-kinds=definite,indirect,possible"))
    assert out.returncode == 0, out.stderr[-3000:]
    assert "All heap blocks were freed" in out.stderr


RAGGED = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
int enzyme_dup, enzyme_const;
double __enzyme_autodiff(void *, ...);
/* Forward substitution L y = b for several right-hand sides (inner trip count = the
   outer index) and a CSR product whose row lengths come from row pointers (inner trip
   count loaded in the outer loop): the records of every execution of an inner loop go
   into one buffer per call. */
double f(const double *L, const double *b, double *y, int n, int nrhs,
         const long *rowptr, const int *cols, const double *vals) {
    double loss = 0.0;
    for (int r = 0; r < nrhs; r++) {
        for (int i = 0; i < n; i++) {
            double s = b[r * n + i];
            for (int j = 0; j < i; j++) s -= L[i * n + j] * y[r * n + j];
            y[r * n + i] = s / L[i * n + i];
        }
        for (int i = 0; i < n; i++) {
            double t = 0.0;
            for (long p = rowptr[i]; p < rowptr[i + 1]; p++)
                t += vals[p] * sin(y[r * n + cols[p]]);
            loss += t * t;
        }
    }
    return loss;
}
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 7, nrhs = 3;
    double *L = malloc(sizeof(double) * n * n), *dL = calloc(n * n, sizeof(double));
    double *b = malloc(sizeof(double) * n * nrhs), *db = calloc(n * nrhs, sizeof(double));
    double *y = malloc(sizeof(double) * n * nrhs), *dy = calloc(n * nrhs, sizeof(double));
    long *rowptr = malloc(sizeof(long) * (n + 1));
    int *cols = malloc(sizeof(int) * n * 4);
    double *vals = malloc(sizeof(double) * n * 4), *dvals = calloc(n * 4, sizeof(double));
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            L[i * n + j] = i == j ? 2.0 + 0.1 * i : 0.3 * sin(1.3 * i + 0.7 * j) / n;
    for (int k = 0; k < n * nrhs; k++) b[k] = cos(0.37 * k);
    rowptr[0] = 0;
    for (int i = 0; i < n; i++) {          /* rows of 0..3 entries */
        rowptr[i + 1] = rowptr[i] + (i * 7 + 2) % 4;
        for (long p = rowptr[i]; p < rowptr[i + 1]; p++) {
            cols[p] = (int)((i * 5 + p * 3) % n);
            vals[p] = 0.5 + 0.25 * sin((double)p);
        }
    }
    __enzyme_autodiff((void *)f, enzyme_dup, L, dL, enzyme_dup, b, db, enzyme_dup, y, dy,
                      enzyme_const, n, enzyme_const, nrhs, enzyme_const, rowptr,
                      enzyme_const, cols, enzyme_dup, vals, dvals);
    double *xs[3] = {L, b, vals}, *ds[3] = {dL, db, dvals};
    int lens[3] = {n * n, n * nrhs, (int)rowptr[n]};
    for (int a = 0; a < 3; a++)
        for (int k = 0; k < lens[a]; k += 1 + lens[a] / 9) {
            double s = xs[a][k], h = 1e-6, p = s + h, m = s - h;
            xs[a][k] = p; double fp = f(L, b, y, n, nrhs, rowptr, cols, vals);
            xs[a][k] = m; double fm = f(L, b, y, n, nrhs, rowptr, cols, vals);
            xs[a][k] = s;
            printf("d%d_%d %.17g %.17g\n", a, k, ds[a][k], (fp - fm) / (p - m));
        }
    free(L); free(dL); free(b); free(db); free(y); free(dy); free(rowptr); free(cols);
    free(vals); free(dvals);
    return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_ragged_inner_loops_gradient(tmp_path, opt):
    _check(build_and_run(tmp_path, RAGGED, opt), 1e-6)


def test_ragged_inner_loops_append_to_one_buffer(tmp_path, valgrind):
    """Inner loops whose trip count depends on the outer loop (a triangular bound, CSR
    row pointers) are logged as appended to one buffer, and the number of heap
    allocations of a gradient does not grow with the number of their executions."""
    import re
    src = tmp_path / "r.c"
    src.write_text(RAGGED)
    r = enzyme_cc(["-O2", "-v", str(src), "-o", str(tmp_path / "r"), "-lm"], tmp_path)
    assert r.returncode == 0, r.stderr
    _, loops = _cache_log(r.stderr, "f")
    (outer,) = [k for k, (parent, _) in loops.items() if parent == "outermost"]
    appended = [k for k, (_, kind) in loops.items()
                if kind == f"counted loop, appended to one buffer grown across {outer}"]
    # for j < i, and for p in [rowptr[i], rowptr[i + 1])
    assert len(appended) == 2, loops
    assert all(loops[loops[k][0]][0] == outer for k in appended), loops
    allocs = {}
    for n in (6, 60):
        out = subprocess.run([valgrind, "--leak-check=full", "--error-exitcode=9",
                              str(tmp_path / "r"), str(n)],
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-3000:]
        _check(out, 1e-6)
        assert "All heap blocks were freed" in out.stderr
        allocs[n] = int(re.search(r"total heap usage: ([\d,]+) allocs",
                                  out.stderr).group(1).replace(",", ""))
    # the FD check runs the primal 2 x (about 30) times, which allocates nothing; a
    # buffer per execution of the inner loops would be 2 x 54 x 3 allocations more
    assert allocs[60] - allocs[6] < 20, allocs


SWEEPS = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
int enzyme_dup, enzyme_const;
double __enzyme_autodiff(void *, ...);
/* fixed-point sweeps of a sparse update until the change is small (a while loop whose
   trip count is unknown), each sweep a CSR loop nest */
double g(const double *x, int n, const long *rowptr, const int *cols) {
    double *v = malloc(n * sizeof(double)), *w = malloc(n * sizeof(double));
    for (int i = 0; i < n; i++) v[i] = x[i];
    double change = 1.0;
    int it = 0;
    while (change > 1e-3 && it < 40) {
        change = 0.0;
        for (int i = 0; i < n; i++) {
            double s = 0.0;
            for (long p = rowptr[i]; p < rowptr[i + 1]; p++) s += 0.3 * sin(v[cols[p]]);
            w[i] = x[i] + s;
            change += (w[i] - v[i]) * (w[i] - v[i]);
        }
        double *t = v; v = w; w = t;
        it++;
    }
    double loss = 0.0;
    for (int i = 0; i < n; i++) loss += v[i] * v[i];
    free(v); free(w);
    return loss;
}
int main(void) {
    enum { N = 9 };
    double x[N], dx[N] = {0};
    long rowptr[N + 1];
    int cols[4 * N];
    rowptr[0] = 0;
    for (int i = 0; i < N; i++) {
        x[i] = 0.2 + 0.1 * cos(1.7 * i);
        rowptr[i + 1] = rowptr[i] + (i * 5 + 1) % 4;
        for (long p = rowptr[i]; p < rowptr[i + 1]; p++) cols[p] = (int)((i + 3 * p) % N);
    }
    __enzyme_autodiff((void *)g, enzyme_dup, x, dx, enzyme_const, N, enzyme_const, rowptr,
                      enzyme_const, cols);
    for (int k = 0; k < N; k++) {
        double s = x[k], h = 1e-7, p = s + h, m = s - h;
        x[k] = p; double fp = g(x, N, rowptr, cols);
        x[k] = m; double fm = g(x, N, rowptr, cols);
        x[k] = s;
        printf("d%d %.17g %.17g\n", k, dx[k], (fp - fm) / (p - m));
    }
    return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_appended_buffers_under_a_while_loop(tmp_path, opt):
    """Inner loops of a while loop (a trip count unknown on entry) append to one
    buffer too; gradient vs central FD, valgrind clean (no invalid access, no leak)."""
    _check(build_and_run(tmp_path, SWEEPS, opt), 1e-6)


def test_appended_buffers_under_a_while_loop_log_and_memory(tmp_path, valgrind):
    src = tmp_path / "w.c"
    src.write_text(SWEEPS)
    r = enzyme_cc(["-O2", "-v", str(src), "-o", str(tmp_path / "w"), "-lm"], tmp_path)
    assert r.returncode == 0, r.stderr
    _, loops = _cache_log(r.stderr, "g")
    (root,) = [k for k, (parent, kind) in loops.items()
               if parent == "outermost" and kind.startswith("while loop")]
    appended = [k for k, (_, kind) in loops.items()
                if kind == f"counted loop, appended to one buffer grown across {root}"]
    assert len(appended) == 2, loops
    out = subprocess.run([valgrind, "--leak-check=full", "--error-exitcode=9",
                          str(tmp_path / "w")], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "All heap blocks were freed" in out.stderr
    _check(out, 1e-6)


def test_log_says_why_loads_are_cached(tmp_path):
    """``-v`` names the cached loads with the overwrite analysis' reason and, with
    ``-g``, the source lines: the value a later store overwrites, and a local."""
    src = tmp_path / "w.c"
    src.write_text(
        "double __enzyme_autodiff(void *, ...);\n"
        "int enzyme_dup;\n"
        "__attribute__((noinline)) void f(double *x, double *y) {\n"
        "    double t = x[0] * x[1];\n"          # line 4: loads x[0], x[1]
        "    x[0] = t * y[0];\n"                 # line 5: overwrites x[0]
        "    y[1] = x[0] * x[1];\n"
        "}\n"
        "int main(void) {\n"
        "    double x[2] = {1, 2}, dx[2] = {0}, y[2] = {3, 4}, dy[2] = {1, 1};\n"
        "    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_dup, y, dy);\n"
        "    return 0;\n"
        "}\n")
    r = enzyme_cc(["-O2", "-g", "-v", str(src), "-o", str(tmp_path / "w")], tmp_path)
    assert r.returncode == 0, r.stderr
    lines = [ln.strip() for ln in r.stderr.splitlines()]
    why = [ln for ln in lines if ln.startswith("cached load")]
    assert any("may be overwritten later by a store at line 5" in ln and "(line 4)" in ln
               for ln in why), r.stderr


def test_generated_ir_is_the_same_on_every_build(tmp_path):
    """The cache layout (and so the IR) does not depend on where Python puts objects:
    sibling loops appended to buffers were laid out in a set's order, and of six builds
    of this program two orders came out.  (Six builds catch such an order with
    probability about 0.9.)"""
    src = tmp_path / "s.c"
    src.write_text(SWEEPS)
    texts = set()
    for k in range(6):
        out = tmp_path / f"s{k}"
        r = enzyme_cc(["-O2", "-save-temps", str(src), "-o", str(out), "-lm"], tmp_path)
        assert r.returncode == 0, r.stderr
        texts.add((tmp_path / f"s{k}.enzyme.ll").read_text().replace(f"s{k}", "s"))
    assert len(texts) == 1


# Round BQ (a netlist parsed inside the differentiated function): a while loop whose
# body copies a record of run-time length (its counter needed by the reverse sweep) and
# skips comment characters with `continue` -- the `||` chain becomes a switch with
# several edges to the loop header, and the iteration counter's phi had one entry per
# predecessor block, not per edge: "the transformed module does not verify" at -O0.
SWITCH_EDGES = r"""
#include <stdio.h>
#include <string.h>
int enzyme_dup, enzyme_const;
void __enzyme_autodiff(void *, ...);
double f(const char *p, const double *x) {
    double v[3] = { 0 }; int n = 0;
    char line[8];
    while (*p) {
        size_t len = (size_t)(p[1] - '0');
        memcpy(line, p, len);
        p += 2;
        if (line[0] == '*' || line[0] == '.' || line[0] == ' ') continue;
        v[n] = x[n] * x[n] * (line[0] == 'b' ? 3 : 1);
        n++;
    }
    return v[0] + v[1] + v[2];
}
int main(void) {
    double x[3] = { 1.5, 2.0, -1.0 }, dx[3] = { 0 };
    __enzyme_autodiff((void *)f, enzyme_const, "a2*2.2b2 2c2", enzyme_dup, x, dx);
    printf("dx %.17g %.17g %.17g\n", dx[0], dx[1], dx[2]);
    return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_loop_header_reached_by_several_switch_edges(tmp_path, opt):
    out = build_and_run(tmp_path, SWITCH_EDGES, opt)
    assert out.returncode == 0, out.stderr
    assert parse_values(out.stdout)["dx"] == [3.0, 12.0, -2.0], out.stdout
