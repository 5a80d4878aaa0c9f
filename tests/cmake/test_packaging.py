"""The Homebrew formula, the Spack package and the Nix flake, checked as far as
this machine allows: syntax (ruby -c, nix-instantiate --parse, Python's
parser), the version each states against pyproject.toml, and the C program of
each package's test compiled with enzyme-cc and run, with the command line and
the expected output taken from the package file itself."""

from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path

import pytest
from cmake_helpers import REPO, pyproject_version, run

FORMULA = REPO / "packaging/homebrew/enzyme-py.rb"
SPACK = REPO / "packaging/spack/package.py"
FLAKE = REPO / "flake.nix"

# Every package's smoke test differentiates x^3 at x = 2.
ANALYTIC = 3 * 2.0 ** 2


# -- syntax and structure -------------------------------------------------------------


def test_homebrew_formula_ruby_syntax(require_tool):
    ruby = require_tool("ruby", "ruby")
    out = run([ruby, "-c", FORMULA])
    assert out.stdout.strip() == "Syntax OK"


def test_homebrew_formula_structure():
    text = FORMULA.read_text()
    assert re.search(r"^class EnzymePy < Formula$", text, re.M)
    assert "include Language::Python::Virtualenv" in text
    for dep in ('depends_on "python@3', 'depends_on "llvm"', 'depends_on "cmake" => :build'):
        assert dep in text
    assert 'resource "llvmlite"' in text
    assert re.search(r"^  test do$", text, re.M)


def test_nix_flake_parses(require_tool):
    nix = require_tool("nix-instantiate", "nix-bin")
    run([nix, "--parse", FLAKE])


def test_nix_flake_structure(tmp_path, require_tool):
    """Evaluate what can be evaluated without nixpkgs: the inputs and the
    outputs function's arguments."""
    nix = require_tool("nix-instantiate", "nix-bin")
    expr = (f"let f = import {FLAKE}; in "
            "[ f.inputs.nixpkgs.url (builtins.attrNames (builtins.functionArgs f.outputs)) ]")
    out = run([nix, "--eval", "--strict", "--json", "-E", expr], env=_nix_env(tmp_path)).stdout
    assert out.strip() == '["github:NixOS/nixpkgs/nixos-unstable",["nixpkgs","self"]]'
    text = FLAKE.read_text()
    for output in ("packages", "apps", "checks", "devShells"):
        assert re.search(rf"^\s+{output} = nixpkgs\.lib\.mapAttrs", text, re.M), output
    assert "buildPythonPackage" in text and "pytestCheckHook" in text


def _nix_env(tmp_path: Path) -> dict[str, str]:
    import os
    # Debian's nix-bin without a daemon or store: evaluation only.
    return dict(os.environ, NIX_STATE_DIR=str(tmp_path / "state"),
                NIX_LOG_DIR=str(tmp_path / "log"), HOME=str(tmp_path))


def test_spack_package_structure():
    tree = ast.parse(SPACK.read_text(), str(SPACK))
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    assert [c.name for c in classes] == ["PyEnzymePy"]
    cls = classes[0]
    assert [b.id for b in cls.bases] == ["PythonPackage"]
    calls = {}
    for node in cls.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            calls.setdefault(node.value.func.id, []).append(node.value)
    deps = {c.args[0].value: c for c in calls["depends_on"]}
    for spec in ("py-scikit-build-core", "cmake", "py-llvmlite", "llvm", "python"):
        assert any(d.startswith(spec + "@") or d == spec for d in deps), spec
    for d, call in deps.items():
        kw = {k.arg for k in call.keywords}
        assert "type" in kw, f"depends_on({d!r}) has no type="
    methods = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
    assert {"test_gradient", "setup_run_environment"} <= methods


# -- versions -------------------------------------------------------------------------


def _formula_version() -> str:
    m = re.search(r'^  url "[^"]*/v?(\d+\.\d+\.\d+)\.tar\.gz"$', FORMULA.read_text(), re.M)
    assert m, "no versioned url in the formula"
    return m.group(1)


def _spack_versions() -> list[str]:
    tree = ast.parse(SPACK.read_text())
    return [n.args[0].value for n in ast.walk(tree) if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name) and n.func.id == "version"]


def _flake_version() -> str:
    m = re.search(r'^\s+version = "([^"]+)"; # as in pyproject\.toml', FLAKE.read_text(), re.M)
    assert m, "no version line in flake.nix"
    return m.group(1)


def test_package_versions_match_pyproject():
    v = pyproject_version()
    assert _formula_version() == v
    assert _spack_versions()[0] == v, "the newest Spack version comes first"
    assert _flake_version() == v


def test_pinned_llvmlite_matches_pyproject():
    """All three packages pin the llvmlite series pyproject.toml requires."""
    m = re.search(r'"llvmlite>=(\d+\.\d+)', (REPO / "pyproject.toml").read_text())
    assert m
    series = m.group(1)
    assert f"llvmlite/archive/refs/tags/v{series}." in FORMULA.read_text()
    assert f'depends_on("py-llvmlite@{series}"' in SPACK.read_text()
    assert re.search(rf'version = "{re.escape(series)}\.\d+";', FLAKE.read_text())


# -- the packages' own smoke tests ------------------------------------------------------


def _ruby_heredoc(text: str, tag: str) -> str:
    """The body of a squiggly heredoc ``<<~TAG``: common indentation removed,
    double-quote escapes applied (no interpolation allowed in our programs)."""
    m = re.search(rf"<<~{tag}\n(.*?)^\s*{tag}$", text, re.M | re.S)
    assert m, f"no <<~{tag} heredoc"
    body = m.group(1)
    assert "#{" not in body, "interpolation in the test program"
    lines = body.splitlines()
    indent = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
    body = "\n".join(line[indent:] for line in lines) + "\n"
    return re.sub(r"\\(.)", lambda e: {"n": "\\n"}.get(e.group(1), e.group(1)), body)


def _homebrew_smoke() -> tuple[str, list[str], str]:
    text = FORMULA.read_text()
    test_block = text[text.index("  test do"):]
    program = _ruby_heredoc(test_block, "C")
    m = re.search(r'^\s*system bin/"enzyme-cc", (.*)$', test_block, re.M)
    assert m, "no enzyme-cc command in the formula's test"
    args = re.findall(r'"([^"]*)"', m.group(1))
    m = re.search(r'assert_equal "([^"]*)", shell_output\("\./cube"\)', test_block)
    assert m, "no expected output in the formula's test"
    return program, args, m.group(1)


def _spack_smoke() -> tuple[str, list[str], str]:
    tree = ast.parse(SPACK.read_text())
    consts = {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign)
              for t in n.targets if isinstance(t, ast.Name)
              and isinstance(n.value, ast.Constant)}
    args = None
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef) and fn.name == "test_gradient":
            for c in ast.walk(fn):
                if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) \
                        and c.func.id == "enzyme_cc":
                    args = [a.value for a in c.args]
    assert args, "no enzyme_cc(...) call in test_gradient"
    return consts["SMOKE_TEST_C"], args, consts["SMOKE_TEST_EXPECTED"]


def _nix_indented_string(text: str, name: str) -> str:
    m = re.search(rf"^(\s*){name} = ''\n(.*?)^\s*'';$", text, re.M | re.S)
    assert m, f"no {name} = '' ... ''; in flake.nix"
    body = m.group(2)
    assert "${" not in body and "''" not in body, "antiquotation or escapes in the program"
    lines = body.splitlines()
    indent = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
    return "\n".join(line[indent:] for line in lines) + "\n"


def _nix_smoke() -> tuple[str, list[str], str]:
    text = FLAKE.read_text()
    program = _nix_indented_string(text, "smokeTestC")
    smoke = text[text.index("smoke = pkgs.runCommand"):]
    m = re.search(r"^\s*enzyme-cc (.*)$", smoke, re.M)
    assert m, "no enzyme-cc command in checks.smoke"
    m2 = re.search(r'smokeTestExpected = "([^"]*)";', text)
    assert m2
    return program, shlex.split(m.group(1)), m2.group(1)


@pytest.mark.parametrize("package", ["homebrew", "spack", "nix"])
def test_package_smoke_program(installed, tmp_path, package):
    program, args, expected = {"homebrew": _homebrew_smoke, "spack": _spack_smoke,
                               "nix": _nix_smoke}[package]()
    assert "__enzyme_autodiff" in program
    assert float(expected) == pytest.approx(ANALYTIC), "the package expects a wrong value"
    assert "cube.c" in args and args[args.index("-o") + 1] == "cube", args
    (tmp_path / "cube.c").write_text(program)
    run([installed.bin / "enzyme-cc", *args], cwd=tmp_path, env=installed.env)
    out = run([tmp_path / "cube"], cwd=tmp_path, env=installed.env).stdout
    assert out.strip() == expected
