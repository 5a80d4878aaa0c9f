"""Finding the clang that turns C and C++ into bitcode.

Order: ``ENZYME_CLANG`` / ``ENZYME_CLANGXX`` if set (a command, split like a
shell would); else the newest system clang whose major version is at most the
LLVM major that llvmlite carries (``clang-22``, ``clang-21``, ..., ``clang``),
since LLVM reads older bitcode but not newer; else the clang bundled in the
``ziglang`` wheel (``python -m ziglang cc``).
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass

from ..errors import UsageError
from ..llvm import llvm_major

OLDEST_MAJOR = 14


@dataclass(frozen=True)
class Clang:
    """A clang to run: ``cc`` / ``cxx`` are command prefixes."""

    cc: tuple[str, ...]
    cxx: tuple[str, ...]
    major: int
    version: str
    origin: str  # "ENZYME_CLANG", "system" or "ziglang"

    @property
    def fat_lto(self) -> bool:
        """clang 17 added ``-ffat-lto-objects``; older ones embed bitcode instead."""
        return self.major >= 17

    @property
    def is_zig(self) -> bool:
        """The clang inside zig (``zig cc``, ``python -m ziglang cc``)."""
        return self.origin == "ziglang" or "ziglang" in self.cc or \
            os.path.basename(self.cc[0]) == "zig"

    def command(self, cxx: bool) -> list[str]:
        return list(self.cxx if cxx else self.cc)

    def compat_flags(self, user_flags: list[str]) -> list[str]:
        """Flags that make this clang compile as plain clang does.

        ``zig cc`` differs in its defaults: it targets the host CPU, adds debug
        info, a stack protector and, at -O0, UBSan checks.  Each default the user
        did not choose is turned back to clang's."""
        if not self.is_zig:
            return []
        out = []
        if not any(f.startswith(("-fsanitize", "-fno-sanitize")) for f in user_flags):
            out.append("-fno-sanitize=all")
        if not any(f.startswith("-g") for f in user_flags):
            out.append("-g0")
        if not any(f.startswith(("-fstack-protector", "-fno-stack-protector"))
                   for f in user_flags):
            out.append("-fno-stack-protector")
        if not any(f.startswith(("-march", "-mcpu", "-mtune")) for f in user_flags):
            out.append("-mcpu=baseline")
        return out

    def describe(self) -> str:
        return f"{shlex.join(self.cc)} (clang {self.version}, {self.origin})"


_VERSION_RE = re.compile(r"clang version (\d+)\.(\d+)(?:\.(\d+))?")


def _probe(cmd: list[str]) -> tuple[int, str] | None:
    try:
        out = subprocess.run(cmd + ["--version"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = _VERSION_RE.search(out)
    if not m:
        return None
    return int(m.group(1)), ".".join(g for g in m.groups() if g is not None)


def _cxx_of(cc: list[str]) -> list[str]:
    """The C++ driver that goes with a C driver command."""
    head = os.path.basename(cc[0])
    if "clang" in head and "clang++" not in head:
        cand = os.path.join(os.path.dirname(cc[0]), head.replace("clang", "clang++", 1))
        found = shutil.which(cand)
        if found:
            return [found] + cc[1:]
    if cc[-1] == "cc" and "ziglang" in cc:
        return cc[:-1] + ["c++"]
    return cc + ["--driver-mode=g++"]


@functools.cache
def find_clang() -> Clang:
    """The clang EnzymePy uses (see the module docstring for the order)."""
    limit = llvm_major()
    env_cc = os.environ.get("ENZYME_CLANG")
    if env_cc:
        cc = shlex.split(env_cc)
        probed = _probe(cc)
        if probed is None:
            raise UsageError(f"ENZYME_CLANG='{env_cc}' does not run as a clang "
                             "('--version' printed no clang version)")
        major, version = probed
        if major > limit:
            raise UsageError(f"ENZYME_CLANG is clang {version}, newer than the LLVM {limit} "
                             "that llvmlite carries; its bitcode cannot be read",
                             hint=f"use a clang whose major version is at most {limit}")
        env_cxx = os.environ.get("ENZYME_CLANGXX")
        cxx = shlex.split(env_cxx) if env_cxx else _cxx_of(cc)
        return Clang(tuple(cc), tuple(cxx), major, version, "ENZYME_CLANG")

    names = [f"clang-{v}" for v in range(limit, OLDEST_MAJOR - 1, -1)] + ["clang"]
    for name in names:
        path = shutil.which(name)
        if not path:
            continue
        probed = _probe([path])
        if probed is None or not (OLDEST_MAJOR <= probed[0] <= limit):
            continue
        return Clang((path,), tuple(_cxx_of([path])), probed[0], probed[1], "system")

    zig = [sys.executable, "-m", "ziglang"]
    probed = _probe(zig + ["cc"])
    if probed is not None and probed[0] <= limit:
        return Clang(tuple(zig + ["cc"]), tuple(zig + ["c++"]), probed[0], probed[1], "ziglang")
    raise UsageError("no usable clang found",
                     hint=f"install clang (version {OLDEST_MAJOR} to {limit}), "
                          "or the 'ziglang' Python package, or set ENZYME_CLANG")
