"""Shadows of locals aligned where the locals are (ad/rewrites.align_locals).

Eigen's packet loops check the primal's address at run time and peel to an aligned
start before aligned vector loads.  A local declared ``align 8`` (a ``Matrix3d`` inside
an ``LLT``) could sit at 8 mod 16 while its shadow -- a heap block or an alloca of the
reverse function, aligned to 16 -- sat at 0: the derivative made aligned loads of the
shadow at unaligned addresses and crashed (forward mode at -O1, the reverse sweep
compiled at -O0; round U; real Enzyme 15 refuses the program at -O1).  The locals of
the copies to differentiate now get the alignment of their widest-aligned vector
access.  Reference: central differences.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from helpers import enzyme_cc

EIGEN = Path("/usr/include/eigen3")

LLT_TWICE = r"""
#include <Eigen/Dense>
#include <cstdio>
extern "C" { int enzyme_dup; void __enzyme_autodiff(void *, ...); double __enzyme_fwddiff(void *, ...); }
using namespace Eigen;
double f(const double *p){
  Matrix3d A; for (int i=0;i<3;i++) for (int j=0;j<3;j++) A(i,j) = p[(i+2*j)%4];
  Matrix3d S = A * A.transpose() + 0.5 * Matrix3d::Identity();
  Vector3d b(1.0, -2.0, 0.5);
  Vector3d x1 = S.llt().solve(b);
  return x1.dot(b) + std::log(S.llt().matrixL().determinant());
}
int main(){
  double p[4] = {0.8, 0.2, -0.4, 0.3}, t[4] = {1, 0, 0, 0}, h = 1e-6, pp[4], pm[4];
  for (int i = 0; i < 4; i++){ pp[i] = p[i]+h*t[i]; pm[i] = p[i]-h*t[i]; }
  double fwd = __enzyme_fwddiff((void*)f, enzyme_dup, p, t);
  double dp[4] = {0};
  __enzyme_autodiff((void*)f, enzyme_dup, p, dp);
  printf("%.12g %.12g %.12g\n", dp[0], fwd, (f(pp)-f(pm))/(2*h));
  return 0;
}
"""


@pytest.mark.skipif(not EIGEN.is_dir(), reason="needs Eigen (libeigen3-dev)")
@pytest.mark.parametrize("opt", ["-O1", "-O2"])
def test_eigen_llt_solve_and_determinant(tmp_path, opt):
    src = Path(tmp_path) / "llt.cpp"
    src.write_text(LLT_TWICE)
    exe = Path(tmp_path) / "llt"
    r = enzyme_cc([opt, "-std=c++17", f"-I{EIGEN}", str(src), "-o", str(exe)], tmp_path, cxx=True)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, f"rc={out.returncode} {out.stderr}"
    rev, fwd, fd = (float(v) for v in out.stdout.split())
    assert rev == pytest.approx(fd, rel=1e-6)
    assert fwd == pytest.approx(rev, rel=1e-10)
