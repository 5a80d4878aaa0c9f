"""``-S``, ``-S -emit-llvm`` and ``-c -emit-llvm`` of a unit that calls Enzyme's entry
points write the differentiated, optimised unit (as Enzyme's clang plugin does), each
output builds into a program that prints the right derivative; a unit without them is
clang's own output; a unit whose differentiated function is defined elsewhere is an
error that says why, and leaves no output file."""

from __future__ import annotations

import pytest

from test_driver import output_of, run

PROG = r"""
#include <stdio.h>
double __enzyme_autodiff(void *, ...);
static double f(double x) { return x * x * x + 2.0 * x; }
int main(int argc, char **argv) {
    (void)argv;
    double x = 1.5 + argc;                      /* 2.5: not folded at compile time */
    printf("%.6f\n", __enzyme_autodiff((void *)f, x));  /* 3x^2 + 2 = 20.75 */
    return 0;
}
"""


@pytest.mark.parametrize("flags,out", [(["-S"], "p.s"), (["-S", "-emit-llvm"], "p.ll"),
                                       (["-c", "-emit-llvm"], "p.bc")])
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_output_of_a_differentiated_unit_builds(tmp_path, ecc, flags, out, opt):
    (tmp_path / "p.c").write_text(PROG)
    run([ecc, opt, *flags, "p.c"], tmp_path)
    data = (tmp_path / out).read_bytes()
    assert b"__enzyme_autodiff" not in data
    run([ecc, out, "-o", "p", "-lm"], tmp_path)
    assert output_of(tmp_path / "p", tmp_path) == (0, "20.750000\n")


def test_ir_to_stdout(tmp_path, ecc):
    (tmp_path / "p.c").write_text(PROG)
    text = run([ecc, "-O1", "-S", "-emit-llvm", "p.c", "-o", "-"], tmp_path).stdout
    assert "define" in text and "__enzyme_autodiff" not in text
    assert not list(tmp_path.glob("*.ll"))


def test_unit_without_entry_points_is_clangs_output(tmp_path, ecc, clang):
    (tmp_path / "q.c").write_text("int h(int x) { return 3 * x + 1; }\n")
    run([ecc, "-O2", "-S", "q.c", "-o", "ours.s"], tmp_path)
    run(clang.command(False) + ["-O2", "-S", "q.c", "-o", "theirs.s"], tmp_path)
    assert (tmp_path / "ours.s").read_text() == (tmp_path / "theirs.s").read_text()


def test_function_defined_in_another_file(tmp_path, ecc):
    (tmp_path / "g.c").write_text("double f(double);\ndouble __enzyme_autodiff(void *, ...);\n"
                                  "double g(double x) { return __enzyme_autodiff((void *)f, x); }\n")
    r = run([ecc, "-O2", "-S", "g.c"], tmp_path, ok=False)
    assert r.returncode == 1, r.stderr
    assert "body of 'f' is not available" in r.stderr
    assert "each file is differentiated on its own" in r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "g.s").exists()


def test_one_output_for_several_files(tmp_path, ecc):
    (tmp_path / "p.c").write_text(PROG)
    (tmp_path / "q.c").write_text("int h(int x) { return x; }\n")
    r = run([ecc, "-S", "p.c", "q.c", "-o", "x.s"], tmp_path, ok=False)
    assert r.returncode == 1 and "cannot specify -o" in r.stderr, r.stderr
    run([ecc, "-O2", "-S", "p.c", "q.c"], tmp_path)
    assert (tmp_path / "p.s").exists() and (tmp_path / "q.s").exists()
