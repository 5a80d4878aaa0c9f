"""Compile time of ``enzyme-cc`` against plain clang on two inputs where the code
differentiated is a small part of what is compiled (issue 12, item 5):

``regex``  a C++ file including ``<regex>``, ``<map>`` and ``<iostream>`` that uses
           them in ``main`` and differentiates one three-instruction function;
``chem``   a generated straight-line chemistry function (``N`` reaction rates with
           Arrhenius constants, default 1,024) differentiated in reverse mode, as
           chemistry codes generate them.

For each: wall-clock and CPU seconds (user + system, of the command and its
children; the best of ``--repeat`` builds) of ``enzyme-c++``/``enzyme-cc -O2 -v``,
the ``-v`` stage breakdown, and ``clang++``/``clang -O2`` on the same file (the
program without EnzymePy: the ``__enzyme_*`` declarations are left undefined, so
clang is only asked for the object, ``-c``), and the ratios.

    python -m benchmarks.compile_time [--repeat 3] [--rates 1024] [--keep DIR]

``enzyme-cc`` must be on PATH; clang is the one EnzymePy uses (``ENZYME_CLANG`` or the
newest system clang not newer than llvmlite's LLVM).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .harness import parse_stage_times

REGEX_CXX = r"""#include <iostream>
#include <map>
#include <regex>
#include <string>

extern double __enzyme_autodiff(void *, double);

static double cube(double x) { return x * x * x; }

int main(int argc, char **argv) {
    std::map<std::string, std::regex> patterns;
    patterns["number"] = std::regex("[+-]?[0-9]+(\\.[0-9]*)?");
    patterns["word"] = std::regex("[A-Za-z_]+");
    std::map<std::string, int> counts;
    for (int i = 1; i < argc; ++i)
        for (auto &p : patterns)
            if (std::regex_match(std::string(argv[i]), p.second))
                ++counts[p.first];
    for (auto &c : counts)
        std::cout << c.first << ": " << c.second << "\n";
    double x = argc > 1 ? 1.5 : 2.0;
    std::cout << "d/dx x^3 at " << x << " = " << __enzyme_autodiff((void *)cube, x) << "\n";
    return 0;
}
"""


def chemistry_source(rates: int = 1024, species: int = 64, seed: int = 12) -> str:
    """A C file: ``production_rates(c, T, wdot)`` with ``rates`` reversible-free
    Arrhenius reactions ``k = A T^b exp(-E/RT)``, ``q = k c[a] c[b]`` (or ``k c[a]``),
    each consuming its reactants and producing one or two products — one straight-line
    function, as chemistry code generators write them — and a ``main`` that takes
    its gradient with ``__enzyme_autodiff`` and checks one entry by finite differences."""
    rnd = random.Random(seed)
    lines = [
        "#include <math.h>",
        "#include <stdio.h>",
        "",
        "extern int enzyme_dup, enzyme_const, enzyme_dupnoneed;",
        "extern void __enzyme_autodiff(void *, ...);",
        "",
        f"#define NS {species}",
        "",
        "void production_rates(const double *restrict c, double T, double *restrict wdot) {",
        "    const double RT = 8.314462618 * T;",
        "    const double logT = log(T);",
        "    for (int i = 0; i < NS; ++i) wdot[i] = 0.0;",
    ]
    for r in range(rates):
        a, b = rnd.randrange(species), rnd.randrange(species)
        p1, p2 = rnd.randrange(species), rnd.randrange(species)
        A = rnd.uniform(1e3, 1e13)
        beta = rnd.uniform(-1.5, 2.5)
        E = rnd.uniform(0.0, 2.0e5)
        k = f"{A:.6e} * exp({beta:.4f} * logT - {E:.6e} / RT)"
        q = f"k{r} * c[{a}] * c[{b}]" if r % 3 else f"k{r} * c[{a}]"
        lines.append(f"    double k{r} = {k};")
        lines.append(f"    double q{r} = {q};")
        lines.append(f"    wdot[{a}] -= q{r};")
        if r % 3:
            lines.append(f"    wdot[{b}] -= q{r};")
        lines.append(f"    wdot[{p1}] += q{r};")
        if r % 2:
            lines.append(f"    wdot[{p2}] += q{r};")
    lines += [
        "}",
        "",
        "static double total(const double *c, double T) {",
        "    double w[NS];",
        "    production_rates(c, T, w);",
        "    double s = 0.0;",
        "    for (int i = 0; i < NS; ++i) s += (i + 1) * w[i];",
        "    return s;",
        "}",
        "",
        "int main(void) {",
        "    double c[NS], dc[NS] = {0}, wdot[NS], dwdot[NS];",
        "    for (int i = 0; i < NS; ++i) { c[i] = 0.01 + 0.001 * i; dwdot[i] = i + 1; }",
        "    double T = 1500.0;",
        "    __enzyme_autodiff((void *)production_rates, enzyme_dup, c, dc, enzyme_const, T,",
        "                      enzyme_dupnoneed, wdot, dwdot);",
        "    double h = 1e-7 * c[3], cp[NS];",
        "    for (int i = 0; i < NS; ++i) cp[i] = c[i];",
        "    cp[3] += h;",
        "    double fd = (total(cp, T) - total(c, T)) / h;",
        "    double rel = fabs(fd - dc[3]) / (fabs(fd) > 1e-300 ? fabs(fd) : 1.0);",
        '    printf("dc[3] = %.10e, finite difference %.10e, relative difference %.1e\\n",',
        "           dc[3], fd, rel);",
        "    return rel < 1e-4 ? 0 : 1;",
        "}",
        "",
    ]
    return "\n".join(lines)


def _clang(cxx: bool) -> list[str]:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "plugin"))
    from enzyme_py.driver.clang import find_clang
    c = find_clang()
    return list(c.cxx if cxx else c.cc)


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _best(cmd: list[str], cwd: Path, repeat: int) -> tuple[float, float, str]:
    """Best wall-clock seconds, best CPU seconds (user + system of the command and
    its children: what a loaded machine changes least) and the stderr of the fastest."""
    best, best_cpu, err = float("inf"), float("inf"), ""
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), _cpu()
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
        dt, dc = time.perf_counter() - t0, _cpu() - c0
        if p.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-3000:]}")
        best_cpu = min(best_cpu, dc)
        if dt < best:
            best, err = dt, p.stderr
    return best, best_cpu, err


def measure(name: str, src: Path, cxx: bool, repeat: int, run_it: bool = True) -> dict:
    work = src.parent
    ecc = "enzyme-c++" if cxx else "enzyme-cc"
    exe = work / f"{name}.exe"
    t_enz, c_enz, err = _best([ecc, "-O2", "-v", str(src), "-o", str(exe)]
                              + ([] if cxx else ["-lm"]), work, repeat)
    t_clang, c_clang, _ = _best(_clang(cxx) + ["-O2", "-c", str(src), "-o",
                                               str(work / f"{name}.o")], work, repeat)
    ours = [x for x in err.splitlines() if x.startswith(("enzyme-cc: ", "enzyme-c++: "))
            and not x.startswith(("enzyme-cc: /", "enzyme-c++: /"))]   # not clang's lines
    out = {"name": name, "enzyme": t_enz, "clang": t_clang, "enzyme_cpu": c_enz,
           "clang_cpu": c_clang, "stages": parse_stage_times(err),
           "verbose_max_line": max((len(x) for x in ours), default=0)}
    if run_it:
        p = subprocess.run([str(exe)], capture_output=True, text=True, cwd=work)
        out["run"] = (p.returncode, p.stdout.strip().splitlines()[-1:] or [""])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.compile_time",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="builds per measurement (best taken)")
    ap.add_argument("--rates", type=int, default=1024, help="reactions in the chemistry case")
    ap.add_argument("--only", choices=["regex", "chem"], help="one case only")
    ap.add_argument("--keep", type=Path, help="write the sources and builds here")
    args = ap.parse_args(argv)
    missing = [t for t in ("enzyme-cc", "enzyme-c++") if shutil.which(t) is None]
    if missing:
        print(f"python -m benchmarks.compile_time: {' and '.join(missing)} not on PATH "
              "(install EnzymePy, or activate its virtual environment)", file=sys.stderr)
        return 2
    ctx = tempfile.TemporaryDirectory() if args.keep is None else None
    work = Path(ctx.name) if ctx else args.keep
    work.mkdir(parents=True, exist_ok=True)
    cases = []
    if args.only in (None, "regex"):
        (work / "regex.cpp").write_text(REGEX_CXX)
        cases.append(("regex", work / "regex.cpp", True))
    if args.only in (None, "chem"):
        (work / "chem.c").write_text(chemistry_source(args.rates))
        cases.append((f"chem{args.rates}", work / "chem.c", False))
    for name, src, cxx in cases:
        r = measure(name, src, cxx, args.repeat)
        st = ", ".join(f"{k} {v:.3f}s" for k, v in r["stages"].items())
        print(f"{name}: enzyme-{'c++' if cxx else 'cc'} -O2 {r['enzyme']:.2f}s "
              f"(cpu {r['enzyme_cpu']:.2f}s), clang{'++' if cxx else ''} -O2 -c "
              f"{r['clang']:.2f}s (cpu {r['clang_cpu']:.2f}s), ratio "
              f"{r['enzyme'] / r['clang']:.2f} (cpu {r['enzyme_cpu'] / r['clang_cpu']:.2f})")
        print(f"  stages: {st}")
        print(f"  longest line of EnzymePy's -v: {r['verbose_max_line']} characters; "
              f"program: exit {r['run'][0]} {r['run'][1][0]}")
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} "
          f"on {os.cpu_count()} cores")
    if ctx:
        ctx.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
