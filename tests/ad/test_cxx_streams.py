"""``std::cout << x`` inside differentiated C++ (a diagnostic, an object's name and its
active members printed while it computes): formatted output reads its arguments and
writes only the stream, so it carries no derivative, as in Enzyme.  Before: "cannot
differentiate call to external function '_ZNSolsEd'" (-O0; '_ZNSo9_M_insertIdEERSoT_'
at -O2; the string inserter where the object holding the string had a shadow).  The
names are libstdc++'s and libc++'s (the ziglang clang's)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from helpers import enzyme_cc

PROGRAM = r"""
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
extern "C" { int enzyme_dup, enzyme_const; double __enzyme_autodiff(void *, ...);
             double __enzyme_fwddiff(void *, ...); }
struct Body { const char *name; double x, v; };
static int verbose = 1;
double run(const double *q, int steps) {
  Body b{"probe", q[0], q[1]};
  for (int s = 0; s < steps; s++) {
    b.v -= 0.1 * std::sin(b.x);
    b.x += 0.1 * b.v;
    if (verbose && s == steps - 1)
      std::cout << b.name << ": x=" << b.x << " v=" << b.v << " step " << s << std::endl;
  }
  return b.x * b.x + b.v;
}
int main() {
  double q[2] = {0.4, -0.3}, dq[2] = {0, 0};
  __enzyme_autodiff((void *)run, enzyme_dup, q, dq, enzyme_const, 5);
  verbose = 0;
  for (int k = 0; k < 2; k++) {
    double t[2] = {0, 0}; t[k] = 1;
    double fw = __enzyme_fwddiff((void *)run, enzyme_dup, q, t, enzyme_const, 5);
    double s = q[k], h = 1e-6;
    q[k] = s + h; double fp = run(q, 5);
    q[k] = s - h; double fm = run(q, 5);
    q[k] = s;
    std::printf("d %.17g %.17g %.17g\n", dq[k], fw, (fp - fm) / (2 * h));
  }
  return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_stream_output_inside_differentiated_code(tmp_path, opt):
    src = Path(tmp_path) / "s.cpp"
    src.write_text(PROGRAM)
    exe = Path(tmp_path) / "s"
    r = enzyme_cc([opt, str(src), "-o", str(exe)], tmp_path, cxx=True)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 3 and lines[0].startswith("probe: x=0.") and "step 4" in lines[0]
    for line in lines[1:]:
        _, rev, fwd, fd = line.split()
        assert float(rev) == pytest.approx(float(fd), rel=1e-6)
        assert float(fwd) == pytest.approx(float(rev), rel=1e-12)
