"""Real CMake builds through EnzymePy, each executable run and its derivative
compared with the analytic value:

(a) find_package from the pip-installed package in an ordinary project; one
    executable differentiated through enzymepy_target, one not;
(b) a static library target and an executable that differentiates a function
    living in that library;
(c) the toolchain file on a whole C and C++ project.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cmake_helpers import PROJECTS, build, configure, printed_number, probe_values, run

from enzyme_py.driver import archive, bitcode


def cube(x):
    return x ** 3


def d_cube(x):
    return 3 * x ** 2


def poly(x):
    return x ** 3 - 2 * x


def d_poly(x):
    return 3 * x ** 2 - 2


def _carries_bitcode(obj: bytes, what: str) -> bool:
    return bitcode.extract(obj, what) is not None


def _object(build_dir: Path, name: str) -> Path:
    found = sorted(build_dir.rglob(name))
    assert found, f"no {name} under {build_dir}"
    return found[0]


@pytest.fixture(scope="module")
def consumer(cmake, installed, tmp_path_factory) -> Path:
    """The consumer project, configured once with the project's own C compiler
    and EnzymePy found through ``python -m enzyme_py --cmake-dir``."""
    b = tmp_path_factory.mktemp("consumer") / "build"
    out = configure(cmake, PROJECTS / "consumer", b,
                    f"-DEnzymePy_DIR={installed.python_m('--cmake-dir')}",
                    env=installed.env).stdout
    v = probe_values(out)
    assert Path(v["EnzymePy_C_COMPILER"]) == installed.bin / "enzyme-cc"
    assert "enzyme" not in Path(v["CMAKE_C_COMPILER"]).name  # the project keeps its compiler
    assert "enzyme" not in Path(v["CMAKE_CXX_COMPILER"]).name
    return b


def test_targets_without_enzymepy_keep_the_project_compiler(cmake, installed, consumer):
    build(cmake, consumer, "plain", "plain_poly", env=installed.env)
    assert printed_number(consumer / "plain", installed.env) == pytest.approx(cube(2.0))
    # plain_poly links libpoly.a, which enzymepy_target(libgrad) compiled with
    # enzyme-cc: its objects are native objects too, so a plain link works.
    assert printed_number(consumer / "plain_poly", installed.env) == pytest.approx(poly(3.0))
    plain_o = _object(consumer, "plain.c.o")
    assert not _carries_bitcode(plain_o.read_bytes(), str(plain_o)), \
        "plain.c.o was compiled through EnzymePy"


def test_libraries_of_enzymepy_targets_carry_bitcode(cmake, installed, consumer):
    """enzymepy_target(libgrad) is called before libgrad links poly; the
    deferred pass still routes poly's sources through enzyme-cc."""
    build(cmake, consumer, "poly", env=installed.env)
    lib = _object(consumer, "libpoly.a")
    members = list(archive.read_archive(str(lib)))
    assert members, f"{lib} is empty"
    for m in members:
        assert _carries_bitcode(m.data, f"{lib}({m.name})"), f"{m.name} has no bitcode"


def test_a_gradient_in_executable(cmake, installed, consumer):
    build(cmake, consumer, "grad", env=installed.env)
    assert printed_number(consumer / "grad", installed.env) == pytest.approx(d_cube(2.0))
    grad_o = _object(consumer, "grad.c.o")
    assert _carries_bitcode(grad_o.read_bytes(), str(grad_o))


def test_a_gradient_in_cxx_executable(cmake, installed, consumer):
    """enzymepy_target on a C++ target: enzyme-c++ replaces the project's C++
    compiler for it (d/dx sum_{i<3} (x + i)^2 at x = 0.5)."""
    build(cmake, consumer, "gradxx", env=installed.env)
    want = sum(2 * (0.5 + i) for i in range(3))
    assert printed_number(consumer / "gradxx", installed.env) == pytest.approx(want)


def test_b_gradient_of_static_library_function(cmake, installed, consumer):
    build(cmake, consumer, "libgrad", env=installed.env)
    assert printed_number(consumer / "libgrad", installed.env) == pytest.approx(d_poly(3.0))


def test_c_toolchain_file_whole_project(cmake, installed, tmp_path):
    """-DCMAKE_TOOLCHAIN_FILE from ``python -m enzyme_py --toolchain``: CMake's
    compiler checks, a static library, a C and a C++ executable, all through
    the EnzymePy drivers."""
    b = tmp_path / "build"
    out = configure(cmake, PROJECTS / "toolchain", b,
                    f"-DCMAKE_TOOLCHAIN_FILE={installed.python_m('--toolchain')}",
                    env=installed.env).stdout
    v = probe_values(out)
    assert Path(v["CMAKE_C_COMPILER"]) == installed.bin / "enzyme-cc"
    assert Path(v["CMAKE_CXX_COMPILER"]) == installed.bin / "enzyme-c++"
    assert v["CMAKE_C_COMPILER_ID"] == "Clang"
    build(cmake, b, env=installed.env)
    lib = _object(b, "libpoly.a")
    assert all(_carries_bitcode(m.data, m.name) for m in archive.read_archive(str(lib)))
    assert printed_number(b / "app", installed.env) == pytest.approx(d_poly(3.0))
    # d/dx (x^2 * 4) at x = 1.5
    assert printed_number(b / "appxx", installed.env) == pytest.approx(2 * 1.5 * 4.0)


def test_enzymepy_target_rejects_non_targets(cmake, installed, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.21)\nproject(bad LANGUAGES C)\n"
        "find_package(EnzymePy REQUIRED)\nenzymepy_target(no_such_target)\n")
    proc = configure(cmake, src, tmp_path / "b", f"-DCMAKE_PREFIX_PATH={installed.prefix}",
                     env=installed.env, ok=False)
    assert proc.returncode != 0
    assert "enzymepy_target: 'no_such_target' is not a target" in proc.stderr


def test_launcher_drops_the_project_compiler(tmp_path):
    """enzymepy-launch.sh SKIP DRIVER <compiler words> ARGS runs DRIVER ARGS."""
    from cmake_helpers import REPO
    echo = tmp_path / "echo-args"
    echo.write_text('#!/bin/sh\nfor a in "$@"; do printf "[%s]" "$a"; done\n')
    echo.chmod(0o755)
    script = REPO / "toolchain/enzymepy-launch.sh"
    out = run(["/bin/sh", script, "2", echo, "ccache", "gcc", "-c", "a b.c", "-o", "x.o"]).stdout
    assert out == "[-c][a b.c][-o][x.o]"
    out = run(["/bin/sh", script, "1", echo, "/usr/bin/cc", "-DX=\"1 2\""]).stdout
    assert out == '[-DX="1 2"]'
