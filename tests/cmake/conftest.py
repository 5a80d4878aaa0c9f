"""Fixtures for the build-system and packaging tests: the cmake to use and a
``pip install --prefix`` of this checkout (once per session, so the tests see
the files as a user's install lays them out, not the source tree)."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys
import sysconfig
from pathlib import Path

import pytest
from cmake_helpers import MIN_CMAKE, REPO, Install, clean_env, run


@pytest.fixture(scope="session")
def cmake() -> str:
    exe = shutil.which("cmake")
    if exe is None:
        pytest.fail("cmake is not on PATH: install it (apt-get install cmake, or "
                    "python -m pip install cmake)")
    out = run([exe, "--version"]).stdout
    m = re.search(r"cmake version (\d+)\.(\d+)", out)
    assert m, out
    if tuple(map(int, m.groups())) < MIN_CMAKE:
        pytest.fail(f"cmake {m.group(1)}.{m.group(2)} is too old for these tests; "
                    f"need {MIN_CMAKE[0]}.{MIN_CMAKE[1]} (python -m pip install cmake)")
    return exe


@pytest.fixture(scope="session")
def installed(tmp_path_factory) -> Install:
    """This checkout, installed by pip into a fresh prefix.

    The wheel is built once into a temporary folder and installed from there
    with ``--ignore-installed``: pip must not touch the environment that runs
    the tests (``pip install --prefix <checkout>`` alone uninstalls a copy of
    enzyme-py that is already installed in that environment)."""
    wheels = tmp_path_factory.mktemp("wheel")
    prefix = tmp_path_factory.mktemp("pip-prefix")
    env = dict(os.environ, PIP_ROOT_USER_ACTION="ignore", PIP_DISABLE_PIP_VERSION_CHECK="1")
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels)]
    if importlib.util.find_spec("scikit_build_core") is not None:
        build.append("--no-build-isolation")  # offline and faster; else pip fetches it
    run(build + [str(REPO)], cwd=wheels, env=env)
    wheel = sorted(wheels.glob("enzyme_py-*.whl"))
    assert len(wheel) == 1, f"pip wheel made {wheel}"
    run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-warn-script-location",
         "--ignore-installed", "-q", "--prefix", str(prefix), str(wheel[0])],
        cwd=prefix, env=env)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(prefix),
                                                    "platbase": str(prefix)}))
    assert (site / "enzyme_py" / "__init__.py").is_file(), f"no enzyme_py under {site}"
    ienv = clean_env([prefix / "bin"])
    ienv["PYTHONPATH"] = os.pathsep.join(
        [str(site)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))
    return Install(prefix, site, ienv)
