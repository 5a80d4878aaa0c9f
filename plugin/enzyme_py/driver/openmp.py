"""The OpenMP runtime that goes with the clang in use (``-fopenmp``).

clang lowers ``#pragma omp`` to calls into the ``__kmpc_*`` ABI, which LLVM's
``libomp`` and Intel's ``libiomp5`` both implement.  Which one a build uses:

- a system clang whose own runtime is installed (Debian: ``libomp-N-dev`` for
  ``clang-N``): clang finds ``omp.h`` and ``libomp`` itself; nothing to add;
- otherwise (the ``ziglang`` clang has no OpenMP runtime, or a system clang
  without ``libomp-N-dev``) the ``intel-openmp`` wheel, ``pip install
  intel-openmp`` (or ``enzyme-py[openmp]``): ``omp.h`` under
  ``<env>/opt/compiler/include``, ``libiomp5.so`` under ``<env>/lib``, linked
  with an rpath so the program runs without ``LD_LIBRARY_PATH``;
- neither: a usage error that names both ways to get one.
"""

from __future__ import annotations

import functools
import os
import site
import subprocess
import sys
import sysconfig
from dataclasses import dataclass

from ..errors import UsageError
from .clang import Clang


@dataclass(frozen=True)
class OpenMP:
    compile: tuple[str, ...]   # added to every compile command
    link: tuple[str, ...]      # added to the link command
    drop_link_flag: bool       # link without the user's -fopenmp (it names another runtime)
    origin: str

    def describe(self) -> str:
        return self.origin


def is_openmp_flag(flag: str) -> bool:
    return flag == "-fopenmp" or flag.startswith("-fopenmp=")


def requested(flags: list[str]) -> bool:
    """-fopenmp given (and not turned off again by a later -fno-openmp)."""
    on = False
    for f in flags:
        if is_openmp_flag(f):
            on = True
        elif f == "-fno-openmp":
            on = False
    return on


@functools.cache
def _clang_has_runtime(cc: tuple[str, ...]) -> bool:
    """Does this clang find omp.h (its libomp-N-dev is installed)?"""
    try:
        proc = subprocess.run([*cc, "-fopenmp", "-fsyntax-only", "-x", "c", "-"],
                              input="#include <omp.h>\n", capture_output=True, text=True,
                              timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


def intel_openmp_roots() -> list[str]:
    """Where a pip install of intel-openmp puts its data files: this
    environment's data root, then the user base."""
    roots = [sysconfig.get_path("data"), sys.prefix]
    try:
        roots.append(site.getuserbase())
    except AttributeError:
        pass
    seen: list[str] = []
    for r in roots:
        if r and r not in seen:
            seen.append(r)
    return seen


def _intel_openmp() -> tuple[str, str] | None:
    for root in intel_openmp_roots():
        inc = os.path.join(root, "opt", "compiler", "include")
        lib = os.path.join(root, "lib")
        if os.path.isfile(os.path.join(inc, "omp.h")) and \
                os.path.isfile(os.path.join(lib, "libiomp5.so")):
            return inc, lib
    return None


def find_openmp(clang: Clang) -> OpenMP:
    """The runtime for a build with -fopenmp (see the module docstring)."""
    if not clang.is_zig and _clang_has_runtime(clang.cc):
        return OpenMP((), (), False, f"libomp of clang {clang.major}")
    intel = _intel_openmp()
    if intel is not None:
        inc, lib = intel
        return OpenMP(("-isystem", inc), (f"-L{lib}", "-liomp5", f"-Wl,-rpath,{lib}"), True,
                      f"intel-openmp ({lib}/libiomp5.so)")
    ways = ["python -m pip install intel-openmp"]
    if not clang.is_zig:
        ways.insert(0, f"install clang {clang.major}'s OpenMP runtime "
                       f"(Debian: apt-get install libomp-{clang.major}-dev)")
    raise UsageError(f"-fopenmp: no OpenMP runtime found for {clang.describe()}",
                     hint=", or ".join(ways))
