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

from helpers import build_and_run, enzyme_cc

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
    out = build_and_run(tmp_path, PROGRAM, opt, cxx=True)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 3 and lines[0].startswith("probe: x=0.") and "step 4" in lines[0]
    for line in lines[1:]:
        _, rev, fwd, fd = line.split()
        assert float(rev) == pytest.approx(float(fd), rel=1e-6)
        assert float(fwd) == pytest.approx(float(rev), rel=1e-12)


# The other output streams, as C++ code logs and records while it computes: a wide
# stream, a file stream written and closed, a string stream written to, and a
# std::string longer than its inline buffer passed to a function.
# Before: "cannot differentiate call to external function" naming the wide inserter,
# std::ofstream's constructor, std::ostringstream's constructor; at -O1 and up "a
# pointer without a shadow ... is mixed" for the long string's heap buffer (from
# std::string::_M_create) and for the vtable pointers the string stream's constructor
# reads from libstdc++'s VTT.  Real Enzyme 15 builds these (Enzyme's wcout and fbuff
# integration tests).  Input stays an error (`ss >> y` writes y).  And a std::string grown
# past its inline buffer (`tag += ...`, a member libstdc++ defines out of line) crashed
# forward mode at -O1 and up ("free(): invalid pointer"): the shadow string kept its
# own inline buffer's address, which the destructor freed.  Round BB: the string a
# string stream's str() returns (an external function for libstdc++ at -O0 and for
# libc++, refused) is text like the string members' results; and libc++, which
# instantiates its streams' internals in the program (the inserter's __pad_and_output
# calling through the stream buffer's vtable, a string stream's destructor), had them
# differentiated in reverse mode -- and refused -- where forward mode called them as
# the known library calls they are.
LOGGING = r"""
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
extern "C" { int enzyme_dup, enzyme_const; double __enzyme_autodiff(void *, ...);
             double __enzyme_fwddiff(void *, ...); }
static std::string last;
__attribute__((noinline)) static void note(const std::string &s) { last = s; }
double model(const double *q, const char *path) {
  double e = std::sin(q[0]) * q[1] + q[1] * q[1];
  std::wcerr << L"e=" << e << std::endl;   /* (stdout stays narrow for printf) */
  std::ofstream log(path);
  log << "q0=" << q[0] << " q1=" << q[1] << " e=" << e << "\n";
  log.close();
  std::ostringstream ss;
  ss << "model energy of a two-parameter probe: " << e;
  note(ss.str());
  std::string label("a label longer than fifteen characters");
  note(label);
  std::string tag("p");
  if (q[0] > 0) tag += " grown past the inline buffer";
  note(tag);
  return e * e;
}
int main(int argc, char **argv) {
  const char *path = argv[1];
  double q[2] = {0.4, -0.3}, dq[2] = {0, 0};
  __enzyme_autodiff((void *)model, enzyme_dup, q, dq, enzyme_const, path);
  for (int k = 0; k < 2; k++) {
    double t[2] = {0, 0}; t[k] = 1;
    double fw = __enzyme_fwddiff((void *)model, enzyme_dup, q, t, enzyme_const, path);
    double s = q[k], h = 1e-6;
    q[k] = s + h; double fp = model(q, path);
    q[k] = s - h; double fm = model(q, path);
    q[k] = s;
    std::printf("d %.17g %.17g %.17g\n", dq[k], fw, (fp - fm) / (2 * h));
  }
  std::printf("last %s\n", last.c_str());
  return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_file_string_and_wide_streams_inside_differentiated_code(tmp_path, opt):
    src = Path(tmp_path) / "l.cpp"
    src.write_text(LOGGING)
    exe = Path(tmp_path) / "l"
    r = enzyme_cc([opt, "-std=c++17", str(src), "-o", str(exe)], tmp_path, cxx=True)
    assert r.returncode == 0, r.stderr
    log = Path(tmp_path) / "log.txt"
    out = subprocess.run([str(exe), str(log)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    d = [line.split()[1:] for line in out.stdout.splitlines() if line.startswith("d ")]
    assert len(d) == 2
    for rev, fwd, fd in d:
        assert float(rev) == pytest.approx(float(fd), rel=1e-6)
        assert float(fwd) == pytest.approx(float(rev), rel=1e-12)
    assert "last p grown past the inline buffer" in out.stdout
    assert log.read_text().startswith("q0=0.4 q1=-0.3")    # (the last run's, at q1 - h)
    assert out.stderr.count("e=") == 7       # the wide stream: every run of model
