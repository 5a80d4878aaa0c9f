"""A function with a registered rule but no ``noinline`` (small, in the same file as its
callers): clang's pre-link optimisation at -O1..-O3 would inline it into its callers, and
the AD pass would differentiate the inlined body instead of calling the rule.  The driver
keeps such functions out of line (``noinline`` added before the optimisation), so the
rule is used at every optimisation level, through the link step and through ``-c``."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers import enzyme_cc, parse_values

PROGRAM = r"""
#include <math.h>
#include <stdio.h>
int enzyme_dup, enzyme_const;
double __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);
static int n_aug, n_rev, n_fwd;

/* a clipped gradient: the rule's derivative is not the body's (3 x^2) */
double cube(double x) { return x * x * x; }
typedef struct { void *tape; double r; } cube_aug_t;
typedef struct { double dx; } cube_rev_t;
cube_aug_t cube_aug(double x) { cube_aug_t a = {0, x * x * x}; n_aug++; return a; }
cube_rev_t cube_rev(double x, double d, void *tape) {
  cube_rev_t r = {fmin(3 * x * x, 1.0) * d}; (void)tape; n_rev++; return r;
}
void *__enzyme_register_gradient_cube[3] = {(void *)cube, (void *)cube_aug, (void *)cube_rev};
double cube_fwd(double x, double dx) { n_fwd++; return fmin(3 * x * x, 1.0) * dx; }
void *__enzyme_register_derivative_cube[2] = {(void *)cube, (void *)cube_fwd};

double f(double x) { return 2.0 * cube(x) + x; }

int main(void) {
  double x = 1.5;
  double d = __enzyme_autodiff((void *)f, x);
  double t = __enzyme_fwddiff((void *)f, x, 1.0);
  printf("rev %.17g\nfwd %.17g\ncalls %d %d %d\n", d, t, n_aug, n_rev, n_fwd);
  return 0;
}
"""


def _check(out):
    assert out.returncode == 0, out.stderr
    v = parse_values(out.stdout)
    assert v["rev"] == [3.0]      # 2 * min(3 x^2, 1) + 1, not 2 * 3 x^2 + 1 = 14.5
    assert v["fwd"] == [3.0]
    assert v["calls"] == [1, 1, 1]


@pytest.mark.parametrize("opt", ["-O1", "-O2", "-O3"])
def test_rule_of_an_inlinable_function_is_used(tmp_path, opt):
    src = Path(tmp_path) / "prog.c"
    src.write_text(PROGRAM)
    r = enzyme_cc([opt, str(src), "-o", str(tmp_path / "prog"), "-lm"], tmp_path)
    assert r.returncode == 0, r.stderr
    _check(subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True,
                          timeout=60))


def test_rule_of_an_inlinable_function_is_used_through_c(tmp_path):
    src = Path(tmp_path) / "prog.c"
    src.write_text(PROGRAM)
    r = enzyme_cc(["-O2", "-c", str(src), "-o", str(tmp_path / "prog.o")], tmp_path)
    assert r.returncode == 0, r.stderr
    r = enzyme_cc(["-O2", str(tmp_path / "prog.o"), "-o", str(tmp_path / "prog"), "-lm"],
                  tmp_path)
    assert r.returncode == 0, r.stderr
    _check(subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True,
                          timeout=60))
