"""enzyme-cc -fopenmp finds an OpenMP runtime that fits the clang in use:
clang-N's own libomp, else the intel-openmp wheel (the only one for the ziglang
clang); without either, a usage error naming both ways to get one."""

from __future__ import annotations

import os
import subprocess

import pytest
from clangs import other_clangs

from enzyme_py.driver import openmp
from enzyme_py.driver.clang import Clang
from enzyme_py.errors import UsageError

PROGRAM = r"""
#include <omp.h>
#include <stdio.h>
int main(void) {
    double s = 0;
    int threads = 0;
    #pragma omp parallel for reduction(+:s)
    for (int i = 0; i < 1000; i++) s += 0.5 * i;
    #pragma omp parallel
    {
        #pragma omp critical
        threads += 1;
    }
    printf("%.1f %d %d\n", s, threads, omp_get_max_threads());
    return 0;
}
"""


def _runtime_available(clang_cmd: str) -> bool:
    import shlex
    cc = tuple(shlex.split(clang_cmd))
    zig = "ziglang" in clang_cmd
    return (not zig and openmp._clang_has_runtime(cc)) or openmp._intel_openmp() is not None


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
@pytest.mark.parametrize("clang_cmd", other_clangs())
def test_openmp_program_runs_on_two_threads(tmp_path, clang_cmd, opt):
    if not _runtime_available(clang_cmd):
        msg = (f"no OpenMP runtime for {clang_cmd}: python -m pip install intel-openmp "
               "(the test extra has it)")
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    src = tmp_path / "p.c"
    src.write_text(PROGRAM)
    env = dict(os.environ, ENZYME_CLANG=clang_cmd, OMP_NUM_THREADS="2")
    env.pop("ENZYME_CLANGXX", None)
    build = subprocess.run(["enzyme-cc", opt, "-fopenmp", "-v", str(src), "-o", "p"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr
    assert "OpenMP runtime:" in build.stderr
    env.pop("LD_LIBRARY_PATH", None)  # the rpath must be enough
    out = subprocess.run([tmp_path / "p"], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["249750.0", "2", "2"]


def test_no_runtime_is_a_usage_error_with_both_remedies(monkeypatch):
    monkeypatch.setattr(openmp, "intel_openmp_roots", lambda: [])
    monkeypatch.setattr(openmp, "_clang_has_runtime", lambda cc: False)
    system = Clang(("/usr/bin/clang-19",), ("/usr/bin/clang++-19",), 19, "19.1.7", "system")
    with pytest.raises(UsageError) as e:
        openmp.find_openmp(system)
    assert "no OpenMP runtime found for /usr/bin/clang-19" in e.value.message
    assert "apt-get install libomp-19-dev" in e.value.hint
    assert "pip install intel-openmp" in e.value.hint
    zig = Clang(("python3", "-m", "ziglang", "cc"), ("python3", "-m", "ziglang", "c++"), 22,
                "22.1.8", "ziglang")
    with pytest.raises(UsageError) as e:
        openmp.find_openmp(zig)
    assert "libomp" not in e.value.hint and "pip install intel-openmp" in e.value.hint


def test_openmp_flag_parsing():
    assert openmp.requested(["-O2", "-fopenmp"])
    assert openmp.requested(["-fopenmp=libomp"])
    assert not openmp.requested(["-fopenmp", "-fno-openmp"])
    assert not openmp.requested(["-fopenmp-simd"])
