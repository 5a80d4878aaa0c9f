"""Compile time follows the differentiated code: the AD pass parses the bodies of the
functions that hold ``__enzyme_*`` calls and of the code they differentiate, not the
rest of the program (issue 12, item 5).  The observable is ``-v``'s count of function
bodies parsed, next to the number of functions the linked module defines."""

from __future__ import annotations

import math
import re
import subprocess
from pathlib import Path

from helpers import enzyme_cc, parse_values

UNRELATED = 40


def _program(nested: bool, unrelated: int) -> str:
    parts = ["#include <stdio.h>", "#include <math.h>",
             "extern int enzyme_dup, enzyme_const, enzyme_out;",
             "extern double __enzyme_autodiff(void *, ...);",
             "extern double __enzyme_fwddiff(void *, ...);", ""]
    # a program with much code that has nothing to do with the derivative
    for i in range(unrelated):
        body = "\n".join(f"        s = s * {1 + i % 7}.5 + sin(s + {k}.0) / (1.0 + a[(j + {k}) % n]);"
                         for k in range(12))
        parts.append(f"__attribute__((noinline)) double work{i}(const double *a, int n) {{\n"
                     f"    double s = {i}.0;\n    for (int j = 0; j < n; ++j) {{\n{body}\n"
                     f"    }}\n    return s;\n}}\n")
    parts.append("""
__attribute__((noinline)) static double sq(double x) { return x * x; }
double f(const double *x, double y) { return sq(x[0]) * y + exp(x[1] * y); }
""")
    if nested:
        parts.append("""
double dfdy(const double *x, double y) {
    double dx[2] = {0, 0};
    return __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_out, y);
}
""")
    parts.append("int main(int argc, char **argv) {\n    double a[8], t = 0.0;\n"
                 "    for (int i = 0; i < 8; ++i) a[i] = i + argc;\n")
    parts += [f"    t += work{i}(a, 8);" for i in range(unrelated)]
    parts.append("""    printf("t %g\\n", t);
    double x[2] = {1.5, 0.25}, dx[2] = {0, 0};
    double dy = __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_out, 2.0);
    printf("grad %.12g %.12g %.12g\\n", dx[0], dx[1], dy);""")
    if nested:
        parts.append("""    double d2 = __enzyme_fwddiff((void *)dfdy, enzyme_const, x, 2.0, 1.0);
    printf("second %.12g\\n", d2);""")
    parts.append("    return 0;\n}\n")
    return "\n".join(parts)


def _build(tmp_path: Path, nested: bool, opt: str, unrelated: int = UNRELATED):
    src = tmp_path / "prog.c"
    src.write_text(_program(nested, unrelated))
    r = enzyme_cc([opt, "-v", str(src), "-o", str(tmp_path / "prog"), "-lm"], tmp_path)
    assert r.returncode == 0, r.stderr
    m = re.search(r"function bodies parsed: (\d+) \(the linked module defines (\d+) functions\)",
                  r.stderr)
    assert m, r.stderr
    out = subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return int(m.group(1)), int(m.group(2)), parse_values(out.stdout)


def _check_gradient(v):
    x0, x1, y = 1.5, 0.25, 2.0
    dx0, dx1, dy = v["grad"]
    assert math.isclose(dx0, 2 * x0 * y, rel_tol=1e-10)
    assert math.isclose(dx1, y * math.exp(x1 * y), rel_tol=1e-10)
    assert math.isclose(dy, x0 * x0 + x1 * math.exp(x1 * y), rel_tol=1e-10)


def test_unrelated_bodies_are_not_parsed(tmp_path):
    for opt in ("-O0", "-O2"):
        parsed, defined, v = _build(tmp_path, nested=False, opt=opt)
        _check_gradient(v)
        assert defined > UNRELATED
        # main (which holds the call), f and sq and their copies: as many bodies as
        # with 2 unrelated functions instead of 40
        parsed2, defined2, v = _build(tmp_path, nested=False, opt=opt, unrelated=2)
        _check_gradient(v)
        assert defined2 == defined - UNRELATED + 2
        assert parsed == parsed2 and parsed <= 10, (opt, parsed, parsed2)


def test_nested_rounds_parse_only_what_they_reach(tmp_path):
    parsed, defined, v = _build(tmp_path, nested=True, opt="-O2")
    _check_gradient(v)
    parsed2, _, _ = _build(tmp_path, nested=True, opt="-O2", unrelated=2)
    assert parsed == parsed2, (parsed, parsed2)
    # d/dy of d/dy f = x1^2 exp(x1 y) (forward mode over the reverse-mode gradient)
    assert math.isclose(v["second"][0], 0.25 ** 2 * math.exp(0.5), rel_tol=1e-10)
    assert defined > UNRELATED


CXX_PROGRAM = r"""
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>

extern double __enzyme_autodiff(void *, ...);
extern int enzyme_dup, enzyme_out;

static int calls = 0;                       // an internal global both parts use
extern "C" int tally_impl(int k) {
    // an assembler comment that looks like attribute and metadata numbers
    __asm__ volatile("nop # #1 #2 !1 !2 #977 !9999" ::: "memory");
    calls += k;
    return calls;
}
extern "C" int tally(int k) __attribute__((alias("tally_impl")));

struct Registry {                           // code unrelated to the derivative
    std::map<std::string, int> names;
    int add(const std::string &s) {
        if (s.empty()) throw std::invalid_argument("empty name");
        return names.emplace(s, (int)names.size()).first->second;
    }
};

__attribute__((noinline)) static double energy(const double *x, double k) {
    ++calls;
    return k * x[0] * x[0] + x[1] * x[0];
}

int main(int argc, char **argv) {
    Registry r;
    int a = r.add("alpha"), b = r.add("beta"), c = r.add("alpha");
    int caught = 0;
    try { r.add(""); } catch (const std::invalid_argument &) { caught = 1; }
    double x[2] = {1.25, -0.5}, dx[2] = {0, 0};
    double dk = __enzyme_autodiff((void *)energy, enzyme_dup, x, dx, enzyme_out, 3.0);
    int t = tally(argc);
    std::printf("reg %d %d %d %d\n", a, b, c, caught);
    std::printf("grad %.17g %.17g %.17g\n", dx[0], dx[1], dk);
    std::printf("calls %d %d\n", t, calls);
    return 0;
}
"""


def test_left_out_bodies_come_back(tmp_path):
    """The bodies left out of the LLVM round trips (C++ containers and exceptions, an
    alias, a function sharing an internal global with the differentiated one, debug
    info) come back as they were: no fall-back to the whole module, same results."""
    src = tmp_path / "prog.cpp"
    src.write_text(CXX_PROGRAM)
    for flags in (["-O0", "-g"], ["-O2", "-g"], ["-O2"]):
        exe = tmp_path / "prog"
        r = enzyme_cc([*flags, "-v", "-save-temps", str(src), "-o", str(exe)], tmp_path,
                      cxx=True)
        assert r.returncode == 0, r.stderr
        assert "on the whole module" not in r.stderr, r.stderr
        ll = (tmp_path / "prog.enzyme.ll").read_text()
        assert "nop # #1 #2 !1 !2 #977 !9999" in ll
        m = re.search(r"function bodies parsed: (\d+) \(the linked module defines (\d+)",
                      r.stderr)
        assert m and int(m.group(1)) < int(m.group(2)), r.stderr
        out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        v = parse_values(out.stdout)
        assert v["reg"] == [0, 1, 0, 1]
        x0, x1, k = 1.25, -0.5, 3.0
        assert v["grad"] == [2 * k * x0 + x1, x0, x0 * x0]
        # the primal ran once (the gradient runs energy's forward sweep: ++calls once)
        assert v["calls"] == [2, 2], (flags, v["calls"])


def test_generated_chemistry_gradient(tmp_path):
    """The benchmark's generated straight-line chemistry function (here 48 reactions,
    12 species): its gradient matches finite differences (the program checks one
    entry and exits 1 otherwise), and -v stays readable — the cache of 48 exp() values
    is named by its first 12 and a count."""
    from benchmarks.compile_time import chemistry_source
    src = tmp_path / "chem.c"
    src.write_text(chemistry_source(rates=48, species=12))
    exe = tmp_path / "chem"
    r = enzyme_cc(["-O2", "-v", str(src), "-o", str(exe), "-lm"], tmp_path)
    assert r.returncode == 0, r.stderr
    ours = [ln for ln in r.stderr.splitlines() if ln.startswith("enzyme-cc: ")
            and not ln.startswith("enzyme-cc: /")]
    assert max(len(ln) for ln in ours) < 400, max(ours, key=len)
    assert re.search(r"cache of production_rates: .*\(\d+ more, \d+ values in all\)", r.stderr)
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "relative difference" in out.stdout
