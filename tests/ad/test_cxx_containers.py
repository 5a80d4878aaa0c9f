"""C++ standard containers on active data: std::map (libstdc++'s out-of-line red-black
tree functions are called again on the shadow tree, so it stays linked like the
primal; insertion with operator[], lookup with find/at, iteration) and
std::unordered_map (at -O2), keys read from an enzyme_const array.  Reverse and forward
mode against central differences."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers import enzyme_cc

PROGRAM = r"""
#include <cmath>
#include <cstdio>
#include <map>
#include <unordered_map>
extern "C" { int enzyme_dup, enzyme_const; double __enzyme_autodiff(void *, ...);
             double __enzyme_fwddiff(void *, ...); }

// per-bin sums in a std::map, then iteration and lookups
double binned(const double *x, const int *bin, int n) {
  std::map<int, double> m;
  for (int i = 0; i < n; i++) m[bin[i]] += x[i] * x[i];
  double s = 0;
  for (const auto &kv : m) s += std::sqrt(kv.second + 1.0) * kv.first;
  auto it = m.find(bin[0]);
  if (it != m.end()) s += it->second * x[1];
  s += m.at(bin[n - 1]) * 0.5;
  return s;
}

#ifdef HASHED
double hashed(const double *x, const int *bin, int n) {
  std::unordered_map<int, double> u;
  for (int i = 0; i < n; i++) u[bin[i]] += std::sin(x[i]);
  double s = 0;
  for (int i = 0; i < n; i++) s += u.at(bin[i]) * x[i];
  return s;
}
#endif

#define CHECK(F)                                                                       \
  for (int k = 0; k < n; k++) {                                                        \
    double dx[n] = {0}, t[n] = {0};                                                    \
    __enzyme_autodiff((void *)F, enzyme_dup, x, dx, enzyme_const, bin, enzyme_const, n); \
    t[k] = 1;                                                                          \
    double fw = __enzyme_fwddiff((void *)F, enzyme_dup, x, t, enzyme_const, bin,       \
                                 enzyme_const, n);                                     \
    double s = x[k], h = 1e-6;                                                         \
    x[k] = s + h; double fp = F(x, bin, n);                                            \
    x[k] = s - h; double fm = F(x, bin, n);                                            \
    x[k] = s;                                                                          \
    printf("%s %d %.17g %.17g %.17g\n", #F, k, dx[k], fw, (fp - fm) / (2 * h));        \
  }

int main() {
  const int n = 9;
  int bin[n] = {3, 1, 3, 7, 1, 2, 7, 5, 3};
  double x[n] = {0.3, -1.2, 0.7, 2.0, 1.1, -0.4, 0.9, 1.6, -0.8};
  CHECK(binned)
#ifdef HASHED
  CHECK(hashed)
#endif
  return 0;
}
"""


@pytest.mark.parametrize("opt,hashed", [("-O0", False), ("-O2", True)])
def test_map_and_unordered_map(tmp_path, opt, hashed):
    src = Path(tmp_path) / "prog.cpp"
    src.write_text(PROGRAM)
    extra = ["-DHASHED"] if hashed else []
    r = enzyme_cc([opt, *extra, str(src), "-o", str(tmp_path / "prog")], tmp_path, cxx=True)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    seen = set()
    for line in out.stdout.splitlines():
        name, k, rev, fwd, fd = line.split()
        seen.add(name)
        assert float(rev) == pytest.approx(float(fd), rel=1e-6, abs=1e-8), line
        assert float(fwd) == pytest.approx(float(rev), rel=1e-12, abs=1e-14), line
    assert seen == ({"binned", "hashed"} if hashed else {"binned"})
