"""The C++ interface (<enzyme/utils>): enzyme::autodiff<Reverse/ReverseWithPrimal/
Forward/ForwardWithPrimal> with Active/Duplicated/DuplicatedNoNeed/Const, built with
enzyme-c++ at -O0 (where the helpers reach __enzyme_autodiff through local memory and
the call sites are promoted first) and -O2, checked against analytic derivatives.
Reverse mode returns one slot per argument, as Enzyme's header does (``enzyme::nodiff``
for an argument that is not Active), so a program written for Enzyme reads each
derivative at its argument's position."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import pytest
from helpers import enzyme_cc, parse_values

PROGRAM = r"""
#include <enzyme/utils>
#include <cstdio>
#include <cmath>

double f(double x, double *p, int n) {          // sum_i p[i] * x^2 * sin(x)
  double s = 0;
  for (int i = 0; i < n; i++) s += p[i] * x * x * std::sin(x);
  return s;
}
double g(double a, double b) { return a * b + a; }
float h(float a, float b) { return a * b * b; }
double three(double a, double b, double c) { return a * b * c; }
double mixed(double *p, double a, int n, double b) {   // (p0 + p1) a^2 b
  double s = 0;
  for (int i = 0; i < n; i++) s += p[i];
  return s * a * a * b;
}
void scale(const double *x, double *y, double k, int n) {
  for (int i = 0; i < n; i++) y[i] = k * x[i] * x[i];
}
template <typename T> T tsq(T x) { return x * x * x; }

int main() {
  double p[3] = {1, 2, 3}, dp[3] = {0, 0, 0};
  double x = 0.7;
  auto r = enzyme::autodiff<enzyme::Reverse>(f, enzyme::Active{x}, enzyme::Duplicated{p, dp},
                                             enzyme::Const{3});
  printf("rev %.17g %.17g %.17g %.17g\n", enzyme::get<0>(enzyme::get<0>(r)), dp[0], dp[1], dp[2]);

  auto rp = enzyme::autodiff<enzyme::ReverseWithPrimal>(g, enzyme::Active{3.0}, enzyme::Active{4.0});
  auto [da, db] = enzyme::get<0>(rp);
  printf("revprimal %.17g %.17g %.17g\n", da, db, enzyme::get<1>(rp));

  auto r3 = enzyme::autodiff<enzyme::Reverse>(three, enzyme::Active{2.0}, enzyme::Active{3.0},
                                              enzyme::Active{5.0});
  auto [a3, b3, c3] = enzyme::get<0>(r3);
  printf("sret %.17g %.17g %.17g\n", a3, b3, c3);

  auto rf = enzyme::autodiff<enzyme::Reverse>(h, enzyme::Active{3.0f}, enzyme::Active{4.0f});
  printf("float %.9g %.9g\n", enzyme::get<0>(enzyme::get<0>(rf)), enzyme::get<1>(enzyme::get<0>(rf)));

  // one slot per argument (as Enzyme's header): the Const argument's is an enzyme::nodiff
  auto rc = enzyme::autodiff<enzyme::Reverse>(g, enzyme::Const{3.0}, enzyme::Active{4.0});
  static_assert(std::is_same_v<std::remove_cv_t<std::remove_reference_t<
                    decltype(enzyme::get<0>(enzyme::get<0>(rc)))>>, enzyme::nodiff>);
  printf("constarg %.17g\n", enzyme::get<1>(enzyme::get<0>(rc)));
  double pm[2] = {1, 2}, dpm[2] = {0, 0};
  auto rm = enzyme::autodiff<enzyme::Reverse>(mixed, enzyme::Duplicated{pm, dpm},
                                              enzyme::Active{2.0}, enzyme::Const{2},
                                              enzyme::Active{3.0});
  auto [s0, s1, s2, s3] = enzyme::get<0>(rm);
  (void)s0; (void)s2;
  printf("slots %.17g %.17g %.17g %.17g\n", s1, s3, dpm[0], dpm[1]);

  double q[3] = {1, 2, 3}, dq[3] = {0, 0, 0};
  auto rn = enzyme::autodiff<enzyme::Reverse, enzyme::Const<double>>(f, enzyme::Active{x},
                                                                     enzyme::Duplicated{q, dq}, 3);
  printf("constret %.17g %.17g\n", enzyme::get<0>(enzyme::get<0>(rn)), dq[0]);

  double xs[2] = {1.5, -2.0}, dxs[2] = {0, 0}, ys[2] = {0, 0}, dys[2] = {1.0, 10.0};
  enzyme::autodiff<enzyme::Reverse>(scale, enzyme::Duplicated<const double *>(xs, dxs),
                                    enzyme::DuplicatedNoNeed{ys, dys}, enzyme::Const{2.0},
                                    enzyme::Const{2});
  printf("void %.17g %.17g\n", dxs[0], dxs[1]);

  auto fw = enzyme::autodiff<enzyme::Forward>(g, enzyme::Duplicated{3.0, 1.0},
                                              enzyme::Duplicated{4.0, 2.0});
  printf("fwd %.17g\n", enzyme::get<0>(fw));
  auto fwp = enzyme::autodiff<enzyme::ForwardWithPrimal>(g, enzyme::Duplicated{3.0, 1.0},
                                                         enzyme::Const{4.0});
  printf("fwdprimal %.17g %.17g\n", enzyme::get<0>(fwp), enzyme::get<1>(fwp));
  auto fwd2 = enzyme::autodiff<enzyme::Forward, enzyme::Duplicated<double>>(
      f, enzyme::Duplicated{x, 1.0}, enzyme::Const<double *>(p), enzyme::Const{3});
  printf("fwddup %.17g %.17g\n", enzyme::get<0>(fwd2), enzyme::get<1>(fwd2));
  auto fwc = enzyme::autodiff<enzyme::Forward, enzyme::Const<double>>(
      g, enzyme::Duplicated{3.0, 1.0}, enzyme::Const{4.0});
  printf("fwdconst %.17g\n", enzyme::get<0>(fwc));

  auto tv = enzyme::autodiff<enzyme::Reverse, enzyme::Active<double>>((void *)tsq<double>,
                                                                      enzyme::Active{2.0});
  printf("voidptr %.17g\n", enzyme::get<0>(enzyme::get<0>(tv)));
  auto tt = enzyme::autodiff<enzyme::Reverse>(tsq<float>, enzyme::Active{2.0f});
  printf("template %.9g\n", enzyme::get<0>(enzyme::get<0>(tt)));
  return 0;
}
"""


def _build(tmp_path, source, opt, name="prog"):
    src = Path(tmp_path) / f"{name}.cpp"
    src.write_text(source)
    exe = Path(tmp_path) / name
    r = enzyme_cc(["-std=c++17", opt, "-g", str(src), "-o", str(exe)], tmp_path, cxx=True)
    return r, exe


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_cxx_interface_derivatives(tmp_path, opt):
    r, exe = _build(tmp_path, PROGRAM, opt)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    v = parse_values(out.stdout)
    x = 0.7
    s = 6.0  # sum of p
    dfdx = s * (2 * x * math.sin(x) + x * x * math.cos(x))
    dfdp = x * x * math.sin(x)

    def close(got, want, tol=1e-12):
        assert len(got) == len(want), (got, want)
        for a, b in zip(got, want, strict=True):
            assert abs(a - b) <= tol * max(1.0, abs(b)), (got, want)

    close(v["rev"], [dfdx, dfdp, dfdp, dfdp])
    close(v["revprimal"], [5, 3, 15])                 # g = a*b + a at (3, 4), then g
    close(v["sret"], [15, 10, 6])                     # three actives: returned via sret
    close(v["float"], [16, 24], 1e-6)                 # {float, float}: <2 x float> ABI
    close(v["constarg"], [3])
    # mixed(p, a, n, b) = (p0 + p1) a^2 b at p = (1, 2), a = 2, b = 3: slots 1 and 3 hold
    # d/da = 2 * 3 * 2 * 3 and d/db = 3 * 4; dp = a^2 b = 12 each
    close(v["slots"], [36, 12, 12, 12])
    close(v["constret"], [0, 0])                      # Const<double> result: no seed
    close(v["void"], [6, -80])                        # y = k x^2 (k = 2), dy = {1, 10}
    close(v["fwd"], [11])                             # (b + 1) * 1 + a * 2
    close(v["fwdprimal"], [15, 5])
    close(v["fwddup"], [s * dfdp, dfdx])              # Duplicated<double> result: primal, tangent
    close(v["fwdconst"], [15])
    close(v["voidptr"], [12])
    close(v["template"], [12], 1e-6)


def test_cxx_enzyme_spelling_and_bindings(tmp_path):
    src = r"""
#include <enzyme/enzyme>
#include <cstdio>
double sq(double x, double y) { return x * x * y; }
int main() {
  auto [d] = enzyme::autodiff<enzyme::Reverse>(sq, enzyme::Active<double>(3.0), 2.0);
  auto [dx, dy] = d;      // the unwrapped 2.0 is Const: its slot an enzyme::nodiff
  (void)dy;
  enzyme::tuple<enzyme::tuple<double, enzyme::nodiff>, double> r =
      enzyme::autodiff<enzyme::ReverseWithPrimal>(sq, enzyme::Active<double>(3.0), 2.0);
  printf("v %.17g %.17g %.17g\n", dx, enzyme::get<0>(enzyme::get<0>(r)), enzyme::get<1>(r));
  return 0;
}
"""
    for opt in ("-O0", "-O2"):
        r, exe = _build(tmp_path, src, opt)
        assert r.returncode == 0, r.stderr
        out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
        assert parse_values(out.stdout)["v"] == [12.0, 12.0, 18.0], out.stdout


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_cxx_misuse_names_the_user_line(tmp_path, opt):
    src = r"""#include <enzyme/utils>
double g(double a, double b) { return a * b + a; }
int main() {
  auto fw = enzyme::autodiff<enzyme::Forward>(g, enzyme::Active{3.0}, enzyme::Const{4.0});
  return (int)enzyme::get<0>(fw);
}
"""
    r, _ = _build(tmp_path, src, opt, "bad")
    assert r.returncode != 0
    assert "bad.cpp:4:" in r.stderr, r.stderr          # the user's line, not the header's
    assert "enzyme_out" in r.stderr and "__enzyme_fwddiff is forward mode" in r.stderr


LAMBDA_TO_POINTER = r"""
#include <cmath>
#include <cstdio>
extern "C" { double __enzyme_autodiff(void *, ...); double __enzyme_fwddiff(void *, ...); }
template <class F> double grad(F f, double x) { return __enzyme_autodiff((void *)+f, x); }
template <class F> double tangent(F f, double x) { return __enzyme_fwddiff((void *)+f, x, 1.0); }
int main() {
  auto lam = [](double x) { return std::sin(x) * x; };
  double x = 0.7;
  std::printf("%.17g %.17g %.17g\n", grad(lam, x), tangent(lam, x), std::cos(x) * x + std::sin(x));
  return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_captureless_lambda_converted_to_a_pointer(tmp_path, opt):
    """``(void *)+f`` of a captureless lambda in a template helper: at -O0 the function is
    the result of a call to the lambda's conversion operator, which returns a constant;
    it was "the first argument must be a function known at compile time"."""
    src = Path(tmp_path) / "l.cpp"
    src.write_text(LAMBDA_TO_POINTER)
    exe = Path(tmp_path) / "l"
    r = enzyme_cc([opt, str(src), "-o", str(exe)], tmp_path, cxx=True)
    assert r.returncode == 0, r.stderr
    rev, fwd, want = (float(v) for v in subprocess.run([str(exe)], capture_output=True,
                                                       text=True).stdout.split())
    assert rev == pytest.approx(want, rel=1e-14) and fwd == pytest.approx(want, rel=1e-14)


# Reference activities (Duplicated<const V &>{v, dv}): the call passed the object and
# its shadow by value, as copies, and the gradient went into the copy of the shadow:
# zeros, silently, at every level (rounds S and T).  A reference is a pointer in the
# ABI, and that is what the header passes now.
REFERENCES = r"""
#include <enzyme/enzyme>
#include <cstdio>
#include <vector>
struct vec3 { double x, y, z; };
double f(const vec3 &a) { return a.x * a.y + 3.0 * a.z; }
double g(const std::vector<double> &v, const std::vector<double> &w) {
  double s = 0;
  for (std::size_t i = 0; i < v.size(); ++i) s += w[i] * v[i] * v[i];
  return s;
}
int main() {
  vec3 a{2, 5, 7}, da{0, 0, 0}, ta{1, 0, 2};
  enzyme::autodiff<enzyme::Reverse>(f, enzyme::Duplicated<const vec3 &>(a, da));
  double t = enzyme::get<0>(
      enzyme::autodiff<enzyme::Forward>(f, enzyme::Duplicated<const vec3 &>(a, ta)));
  std::printf("vec3 %g %g %g %g\n", da.x, da.y, da.z, t);
  std::vector<double> v = {3, 4}, dv = {0, 0}, w = {0.5, 2};
  enzyme::autodiff<enzyme::Reverse>(g, enzyme::Duplicated<const std::vector<double> &>(v, dv),
                                    enzyme::Const<const std::vector<double> &>(w));
  std::printf("vector %g %g\n", dv[0], dv[1]);
  return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_reference_activities(tmp_path, opt):
    r, exe = _build(tmp_path, REFERENCES, opt)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    v = parse_values(out.stdout)
    assert v["vec3"] == [5, 2, 3, 11]          # (y, x, 3); along (1, 0, 2): 5 + 6
    assert v["vector"] == [3, 16]              # 2 w v


# Round AY, a QuantLib-style swap pricer: a term structure with a virtual discountImpl
# behind a non-virtual discount(), a curve object holding a std::vector, legs returned
# by value, priced through a template: at -O1 and above the activity analysis followed
# the curve kept in one local, passed to the virtual call whose targets keep it in
# theirs, round and round -- "internal error: RecursionError".  Each local met that
# way is now followed one level down.
TERM_STRUCTURE = r"""
#include <enzyme/enzyme>
#include <cstdio>
#include <vector>
class YieldTermStructure {
 public:
  double discount(double t) const { return discountImpl(t); }
 protected:
  virtual double discountImpl(double t) const = 0;
};
class ZeroCurve : public YieldTermStructure {
  std::vector<double> times_;
  const double *zeros_;
 public:
  ZeroCurve(std::vector<double> times, const double *zeros)
      : times_(std::move(times)), zeros_(zeros) {}
 protected:
  double discountImpl(double t) const override { return zeros_[0] * t * t; }
};
struct Leg { std::vector<double> payTimes, accruals, startTimes; };
static Leg makeLeg() {
  Leg l;
  for (int i = 1; i <= 7; ++i) l.payTimes.push_back(i);
  return l;
}
template <class Curve>
double legNPV(const Leg &leg, const Curve &disc, const Curve &) {
  double npv = 0.0;
  for (std::size_t i = 0; i < leg.payTimes.size(); ++i) npv += disc.discount(leg.payTimes[i]);
  return npv;
}
double swapNPV(const double *zeros, double) {
  ZeroCurve ois({0.25, 0.5, 1, 2, 3, 5, 7, 10}, zeros);
  Leg fixed = makeLeg();
  const YieldTermStructure &d = ois;
  return -legNPV(fixed, d, d);
}
int main() {
  double z[2] = {0.03, 0.031}, dz[2] = {0, 0};
  enzyme::autodiff<enzyme::Reverse>(swapNPV, enzyme::Duplicated<const double *>(z, dz),
                                    enzyme::Const<double>(0.0015));
  std::printf("%g %g\n", dz[0], dz[1]);
  return 0;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_virtual_term_structure_kept_in_locals(tmp_path, opt):
    r, exe = _build(tmp_path, TERM_STRUCTURE, opt)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert [float(v) for v in out.stdout.split()] == [-140.0, 0.0], out.stdout
