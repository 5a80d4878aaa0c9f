# Copyright Spack Project Developers. See COPYRIGHT file for details.
#
# SPDX-License-Identifier: (Apache-2.0 OR MIT)
#
# Spack package for EnzymePy (builtin style: var/spack/repos/builtin/packages/
# py-enzyme-py/package.py).  Installed with pip into the Spack prefix, the
# wheel lays out <prefix>/bin/enzyme-cc, <prefix>/include/enzyme.h and
# <prefix>/lib/cmake/EnzymePy/, so dependents' find_package(EnzymePy) works
# through CMAKE_PREFIX_PATH as Spack sets it.

import os

from spack.package import *

# The program the smoke test compiles with enzyme-cc: d/dx x^3 at x = 2.
SMOKE_TEST_C = r"""
#include <enzyme.h>
#include <stdio.h>

static double cube(double x) { return x * x * x; }

int main(void) {
    printf("%.6f\n", __enzyme_autodiff((void *)cube, 2.0));
    return 0;
}
"""
SMOKE_TEST_EXPECTED = "12.000000"


class PyEnzymePy(PythonPackage):
    """Enzyme-compatible automatic differentiation for C and C++ at link time:
    enzyme-cc / enzyme-c++ compile with clang and differentiate every
    __enzyme_autodiff / __enzyme_fwddiff call, with the AD pass written in
    Python on llvmlite."""

    homepage = "https://github.com/enzyme-py/enzyme-py"
    pypi = "enzyme-py/enzyme_py-0.1.0.tar.gz"

    license("Apache-2.0")

    # PLACEHOLDER: 0.1.0 is not released yet; replace with the sdist's sha256
    # (`spack checksum py-enzyme-py 0.1.0`) when it is.
    version("0.1.0", sha256="0000000000000000000000000000000000000000000000000000000000000000")

    depends_on("python@3.10:", type=("build", "run"))
    depends_on("py-scikit-build-core@0.10:", type="build")
    depends_on("cmake@3.15:", type="build")
    depends_on("py-llvmlite@0.50", type=("build", "run"))
    # The compile steps run clang; its bitcode must be readable by llvmlite's
    # LLVM (22 for llvmlite 0.50), so clang 14 to 22.  (`ziglang`, the PyPI
    # fallback clang, is not needed with this dependency.)
    depends_on("llvm@14:22+clang", type="run")

    import_modules = ["enzyme_py", "enzyme_py.driver"]

    def setup_run_environment(self, env):
        clang = self.spec["llvm"].prefix.bin
        env.set("ENZYME_CLANG", join_path(clang, "clang"))
        env.set("ENZYME_CLANGXX", join_path(clang, "clang++"))

    def test_version(self):
        """enzyme-cc reports the installed version"""
        enzyme_cc = which(self.prefix.bin.join("enzyme-cc"))
        out = enzyme_cc("--version", output=str.split, error=str.split)
        assert f"(EnzymePy) {self.spec.version}" in out

    def test_gradient(self):
        """compile a program calling __enzyme_autodiff and check its derivative"""
        with open("cube.c", "w") as f:
            f.write(SMOKE_TEST_C)
        enzyme_cc = which(self.prefix.bin.join("enzyme-cc"))
        enzyme_cc("-O2", "cube.c", "-o", "cube")
        cube = Executable(join_path(".", "cube"))
        out = cube(output=str.split, error=str.split)
        assert out.strip() == SMOKE_TEST_EXPECTED, f"expected {SMOKE_TEST_EXPECTED}, got {out!r}"

    def test_cmake_package(self):
        """the CMake package config is installed where find_package looks"""
        config = join_path(self.prefix.lib, "cmake", "EnzymePy", "EnzymePyConfig.cmake")
        assert os.path.isfile(config), f"missing {config}"
        assert os.path.isfile(join_path(self.prefix.include, "enzyme.h"))
