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
    """This checkout, installed by pip into a fresh prefix."""
    prefix = tmp_path_factory.mktemp("pip-prefix")
    cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-warn-script-location",
           "--disable-pip-version-check", "-q", "--prefix", str(prefix)]
    if importlib.util.find_spec("scikit_build_core") is not None:
        cmd.append("--no-build-isolation")  # offline and faster; else pip fetches it
    cmd.append(str(REPO))
    env = dict(os.environ, PIP_ROOT_USER_ACTION="ignore")
    run(cmd, cwd=prefix, env=env)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(prefix),
                                                    "platbase": str(prefix)}))
    assert (site / "enzyme_py" / "__init__.py").is_file(), f"no enzyme_py under {site}"
    ienv = clean_env([prefix / "bin"])
    ienv["PYTHONPATH"] = os.pathsep.join(
        [str(site)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))
    return Install(prefix, site, ienv)
