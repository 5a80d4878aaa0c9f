"""Helpers for the build-system and packaging tests (fixtures: conftest.py).

Everything here runs real tools: ``pip install --prefix`` of this checkout
(once per session, so the tests see the files as a user's install lays them
out, not the source tree), the ``cmake`` on PATH, the project's C compiler.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROJECTS = Path(__file__).resolve().parent / "projects"
MIN_CMAKE = (3, 21)  # enzymepy_target uses <LANG>_LINKER_LAUNCHER

# Variables from the caller's environment that would steer CMake or the
# toolchain file to some other EnzymePy than the one under test.
_SCRUB = ("EnzymePy_DIR", "EnzymePy_ROOT", "ENZYMEPY_ROOT", "CMAKE_PREFIX_PATH",
          "CMAKE_TOOLCHAIN_FILE", "ENZYMEPY_CC", "ENZYMEPY_CXX", "CC", "CXX",
          "CMAKE_C_COMPILER_LAUNCHER", "CMAKE_CXX_COMPILER_LAUNCHER")


def run(cmd, cwd=None, env=None, ok=True, timeout=600) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    if ok and proc.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n"
                             f"{proc.stdout}\n{proc.stderr}")
    return proc


def probe_values(output: str) -> dict[str, str]:
    """The ``-- probe: NAME=VALUE`` lines the test projects print."""
    return dict(m.groups() for m in re.finditer(r"^-- probe: ([^=\n]+)=(.*)$", output, re.M))


def pyproject_version() -> str:
    text = (REPO / "pyproject.toml").read_text()
    m = re.search(r'^\[project\][^\[]*?^version\s*=\s*"([^"]+)"', text, re.M | re.S)
    assert m, "no [project] version in pyproject.toml"
    return m.group(1)


def clean_env(path_prefix: list[Path] | None = None, base: dict | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    for name in _SCRUB:
        env.pop(name, None)
    if path_prefix:
        env["PATH"] = os.pathsep.join([str(p) for p in path_prefix] + [env.get("PATH", "")])
    return env


@dataclass(frozen=True)
class Install:
    """A ``pip install --prefix`` of this checkout."""

    prefix: Path
    site: Path            # its site-packages
    env: dict[str, str]   # PATH has prefix/bin first, PYTHONPATH the site-packages

    @property
    def bin(self) -> Path:
        return self.prefix / "bin"

    @property
    def package(self) -> Path:
        return self.site / "enzyme_py"

    def python_m(self, *args: str) -> str:
        """``python -m enzyme_py ARGS`` of the installed package (run from a
        neutral directory, so the checkout is not imported instead)."""
        out = run([sys.executable, "-m", "enzyme_py", *args], cwd=self.prefix, env=self.env)
        return out.stdout.strip()


def configure(cmake: str, src: Path, build: Path, *args: str, env: dict, ok=True):
    """``cmake -S src -B build args`` without the user package registry."""
    return run([cmake, "-S", src, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                "-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF", *args], env=env, ok=ok)


def build(cmake: str, build_dir: Path, *targets: str, env: dict, ok=True):
    cmd = [cmake, "--build", build_dir, "-j2"]
    for t in targets:
        cmd += ["--target", t]
    return run(cmd, env=env, ok=ok)


def printed_number(exe: Path, env: dict) -> float:
    """Run a test program and return the one number it prints."""
    out = run([exe], cwd=exe.parent, env=env).stdout.strip()
    try:
        return float(out)
    except ValueError:
        raise AssertionError(f"{exe} printed {out!r}, not a number") from None
