"""find_package(EnzymePy): where an install puts the package, how CMake finds
it, what it provides, which version requests it accepts; the toolchain file's
driver discovery.  Configure-only: nothing here needs the AD pass."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from cmake_helpers import PROJECTS, REPO, clean_env, configure, probe_values, pyproject_version, run

PROBE = PROJECTS / "probe"
CMAKE_FILES = ("EnzymePyConfig.cmake", "EnzymePyConfigVersion.cmake",
               "EnzymePyToolchain.cmake", "enzymepy-launch.sh")


def _same_file(a: Path, b: Path) -> bool:
    return Path(a).resolve() == Path(b).resolve()


def _version_parts() -> tuple[int, int, int]:
    major, minor, patch = (int(x) for x in pyproject_version().split(".")[:3])
    return major, minor, patch


def test_versions_agree():
    """pyproject.toml is the source; the package, CMakeLists.txt and the CMake
    version file must say the same."""
    v = pyproject_version()
    init = (REPO / "plugin/enzyme_py/__init__.py").read_text()
    assert re.search(rf'^__version__ = "{re.escape(v)}"$', init, re.M)
    cml = (REPO / "CMakeLists.txt").read_text()
    assert re.search(rf"project\(EnzymePy VERSION {re.escape(v)}\b", cml)
    cfgv = (REPO / "cmake/EnzymePyConfigVersion.cmake").read_text()
    assert re.search(rf'set\(PACKAGE_VERSION "{re.escape(v)}"\)', cfgv)


def test_pip_prefix_layout(installed):
    """``pip install --prefix P`` lays out P the way Homebrew, Spack and Nix
    prefixes look: bin/ drivers, include/enzyme.h, lib/cmake/EnzymePy/."""
    p = installed.prefix
    for exe in ("enzyme-cc", "enzyme-c++"):
        assert os.access(p / "bin" / exe, os.X_OK), f"{exe} missing or not executable"
    header = (REPO / "include/enzyme.h").read_bytes()
    assert (p / "include/enzyme.h").read_bytes() == header
    for name in CMAKE_FILES:
        assert (p / "lib/cmake/EnzymePy" / name).read_bytes() == _source_of(name).read_bytes()
    assert os.access(p / "lib/cmake/EnzymePy/enzymepy-launch.sh", os.X_OK)
    # ... and the copies inside the package that python -m enzyme_py reports.
    assert (installed.package / "include/enzyme.h").read_bytes() == header
    for name in CMAKE_FILES:
        assert (installed.package / "share/cmake/EnzymePy" / name).is_file()


def _source_of(name: str) -> Path:
    return {"EnzymePyToolchain.cmake": REPO / "toolchain/EnzymePy.cmake",
            "enzymepy-launch.sh": REPO / "toolchain/enzymepy-launch.sh"}.get(
                name, REPO / "cmake" / name)


def test_python_m_enzyme_py_paths(installed):
    assert _same_file(installed.python_m("--cmake-dir"),
                      installed.package / "share/cmake/EnzymePy")
    assert _same_file(installed.python_m("--include-dir"), installed.package / "include")
    assert _same_file(installed.python_m("--toolchain"),
                      installed.package / "share/cmake/EnzymePy/EnzymePyToolchain.cmake")
    assert installed.python_m("--version") == pyproject_version()


@pytest.mark.parametrize("route", ["cmake-dir", "prefix-path", "venv-path"])
def test_find_package_routes(cmake, installed, tmp_path, route):
    """The three ways a pip install is found: -DEnzymePy_DIR from
    ``python -m enzyme_py --cmake-dir``; CMAKE_PREFIX_PATH=<prefix>; and, as in
    an activated venv, nothing but <prefix>/bin on PATH."""
    p = installed.prefix
    if route == "cmake-dir":
        args = [f"-DEnzymePy_DIR={installed.python_m('--cmake-dir')}"]
        env = installed.env
        want_dir = installed.package / "share/cmake/EnzymePy"
        want_inc = installed.package / "include"
    elif route == "prefix-path":
        # Not on PATH: the drivers must be found beside the package config.
        args = [f"-DCMAKE_PREFIX_PATH={p}"]
        env = clean_env()
        want_dir, want_inc = p / "lib/cmake/EnzymePy", p / "include"
    else:
        args = []
        env = installed.env
        want_dir, want_inc = p / "lib/cmake/EnzymePy", p / "include"
    out = configure(cmake, PROBE, tmp_path / "b", *args, env=env).stdout
    v = probe_values(out)
    assert v["EnzymePy_FOUND"] in ("1", "TRUE")
    assert _same_file(v["EnzymePy_DIR"], want_dir)
    assert v["EnzymePy_VERSION"] == pyproject_version()
    major, minor, patch = _version_parts()
    assert (v["EnzymePy_VERSION_MAJOR"], v["EnzymePy_VERSION_MINOR"],
            v["EnzymePy_VERSION_PATCH"]) == (str(major), str(minor), str(patch))
    assert _same_file(v["EnzymePy_C_COMPILER"], p / "bin/enzyme-cc")
    assert _same_file(v["EnzymePy_CXX_COMPILER"], p / "bin/enzyme-c++")
    assert _same_file(v["enzyme-cc.IMPORTED_LOCATION"], p / "bin/enzyme-cc")
    assert _same_file(v["enzyme-c++.IMPORTED_LOCATION"], p / "bin/enzyme-c++")
    assert _same_file(v["EnzymePy_INCLUDE_DIR"], want_inc)
    assert _same_file(v["Enzyme.INTERFACE_INCLUDE_DIRECTORIES"], want_inc)
    assert (want_inc / "enzyme.h").is_file()
    assert Path(v["EnzymePy_TOOLCHAIN_FILE"]).is_file()
    assert v.get("enzymepy_target") == "defined"


def _requests():
    major, minor, patch = _version_parts()
    v = f"{major}.{minor}.{patch}"
    same_series = f"{major}.{minor}" if major == 0 else f"{major}"
    next_series = f"{major}.{minor + 1}" if major == 0 else f"{major + 1}.0"
    # 0.x minor releases may break the interface: 0.1.0 does not satisfy 0.0.
    older_series = (f"0.{minor - 1}" if minor > 0 else None) if major == 0 else f"{major - 1}.0"
    return [
        pytest.param("", True, id="none"),
        pytest.param(same_series, True, id="same-series"),
        pytest.param(f"{v};EXACT", True, id="exact"),
        pytest.param(f"{major}.{minor}...<{major + 1}.0", True, id="range"),
        pytest.param(f"{major + 99}.0", False, id="too-new"),
        pytest.param(next_series, False, id="next-series"),
        pytest.param(f"{major}.{minor}.{patch + 1}", False, id="newer-patch"),
        pytest.param(f"{major + 1}.0...{major + 2}.0", False, id="range-above"),
    ] + ([pytest.param(older_series, False, id="older-series")] if older_series else [])


@pytest.mark.parametrize("request_, accepted", _requests())
def test_version_requests(cmake, installed, tmp_path, request_, accepted):
    """find_package(EnzymePy <request> REQUIRED) against the installed version;
    a refused request fails with CMake's own message naming what was found."""
    proc = configure(cmake, PROBE, tmp_path / "b", f"-DREQUEST={request_}",
                     f"-DCMAKE_PREFIX_PATH={installed.prefix}", env=installed.env,
                     ok=accepted)
    if accepted:
        assert probe_values(proc.stdout)["EnzymePy_VERSION"] == pyproject_version()
        return
    assert proc.returncode != 0
    msg = " ".join(proc.stderr.split())
    shown = request_.split(";")[0]
    assert (f'Could not find a configuration file for package "EnzymePy" that is '
            f'compatible with requested version "{shown}"') in msg or (
        # a range is reported as "version range"
        f'compatible with requested version range "{shown}"' in msg), proc.stderr
    assert f"EnzymePyConfig.cmake, version: {pyproject_version()}" in msg, proc.stderr


@pytest.fixture(scope="module")
def cmake_prefix(cmake, installed, tmp_path_factory) -> Path:
    """``cmake --install`` of the checkout's CMakeLists.txt into a prefix (the
    way the Homebrew formula installs the header and the CMake package)."""
    base = tmp_path_factory.mktemp("cmake-install")
    prefix = base / "prefix"
    configure(cmake, REPO, base / "build", f"-DCMAKE_INSTALL_PREFIX={prefix}", env=clean_env())
    run([cmake, "--install", base / "build"], env=clean_env())
    return prefix


def test_cmake_install_layout(cmake_prefix):
    assert (cmake_prefix / "include/enzyme.h").read_bytes() == \
        (REPO / "include/enzyme.h").read_bytes()
    for name in CMAKE_FILES:
        assert (cmake_prefix / "lib/cmake/EnzymePy" / name).read_bytes() == \
            _source_of(name).read_bytes()
    assert os.access(cmake_prefix / "lib/cmake/EnzymePy/enzymepy-launch.sh", os.X_OK)


def test_find_package_in_cmake_install_prefix(cmake, installed, cmake_prefix, tmp_path):
    """The prefix has no drivers of its own: they are taken from PATH."""
    out = configure(cmake, PROBE, tmp_path / "b", f"-DCMAKE_PREFIX_PATH={cmake_prefix}",
                    env=installed.env).stdout
    v = probe_values(out)
    assert _same_file(v["EnzymePy_DIR"], cmake_prefix / "lib/cmake/EnzymePy")
    assert _same_file(v["EnzymePy_INCLUDE_DIR"], cmake_prefix / "include")
    assert _same_file(v["EnzymePy_C_COMPILER"], installed.bin / "enzyme-cc")


def test_find_package_without_drivers_says_what_is_missing(cmake, cmake_prefix, tmp_path):
    bindir = tmp_path / "bin"  # the build tools and no driver
    bindir.mkdir()
    for tool in ("make", "gmake", "ninja"):
        if shutil.which(tool):
            (bindir / tool).symlink_to(shutil.which(tool))
    env = clean_env()
    env["PATH"] = str(bindir)  # and no system directories below
    proc = configure(cmake, PROBE, tmp_path / "b", f"-DCMAKE_PREFIX_PATH={cmake_prefix}",
                     "-DCMAKE_FIND_USE_CMAKE_SYSTEM_PATH=OFF", env=env, ok=False)
    assert proc.returncode != 0
    msg = " ".join(proc.stderr.split())
    assert "is incomplete; not found:" in msg, proc.stderr
    assert ("enzyme-cc (looked next to this package and on PATH: "
            "set EnzymePy_CC_EXECUTABLE to name it)") in msg


@pytest.mark.parametrize("where", ["prefix", "package", "checkout", "env-override"])
def test_toolchain_file_finds_drivers(cmake, installed, tmp_path, where):
    """The toolchain file sets the project's compilers to the drivers that go
    with it (checked in script mode: configuring a project with it runs
    enzyme-cc links, see test_cmake_builds.py)."""
    env = installed.env
    want_cc = installed.bin / "enzyme-cc"
    if where == "prefix":
        tc = installed.prefix / "lib/cmake/EnzymePy/EnzymePyToolchain.cmake"
        env = clean_env()  # found beside the file, not on PATH
    elif where == "package":
        tc = Path(installed.python_m("--toolchain"))
        env = clean_env()
    elif where == "checkout":
        tc = REPO / "toolchain/EnzymePy.cmake"  # found on PATH
    else:
        tc = installed.prefix / "lib/cmake/EnzymePy/EnzymePyToolchain.cmake"
        env = dict(installed.env, ENZYMEPY_CC=str(tmp_path / "my-enzyme-cc"))
        want_cc = tmp_path / "my-enzyme-cc"
    script = tmp_path / "probe.cmake"
    script.write_text('include("${TC}")\n'
                      'message("-- probe: CC=${CMAKE_C_COMPILER}")\n'
                      'message("-- probe: CXX=${CMAKE_CXX_COMPILER}")\n')
    proc = run([cmake, f"-DTC={tc}", "-P", script], env=env)
    v = probe_values(proc.stderr)
    assert v["CC"] == str(want_cc)
    assert _same_file(v["CXX"], installed.bin / "enzyme-c++")
