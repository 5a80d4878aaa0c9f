"""Make ``enzyme_py`` importable from the source tree when it is not installed."""

import pathlib
import sys

try:
    import enzyme_py  # noqa: F401
except ImportError:
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "plugin"))

# Hypothesis: the generated-program tests compile C, so a shrink can take many
# minutes.  Under CI (CI=true) run a fixed set of examples without shrinking,
# so a red run is reproducible and bounded in time; locally, explore freely.
import os  # noqa: E402

from hypothesis import Phase, settings  # noqa: E402

settings.register_profile("ci", derandomize=True, print_blob=True,
                          phases=[Phase.explicit, Phase.reuse, Phase.generate])
if os.environ.get("CI"):
    settings.load_profile("ci")


# The suite must never change the environment that runs it (issue 9: a pip
# install into a prefix once uninstalled the user's enzyme-py).  Snapshot what
# the environment has installed before the session and compare after it.
import shutil  # noqa: E402
import sysconfig  # noqa: E402

import pytest  # noqa: E402


def _environment_state() -> dict:
    state = {}
    for key in ("purelib", "platlib", "scripts"):
        d = sysconfig.get_path(key)
        try:
            state[key] = sorted((e.name, e.stat().st_mtime_ns) for e in os.scandir(d)
                                if "enzyme" in e.name.lower())
        except OSError:
            state[key] = None
    for exe in ("enzyme-cc", "enzyme-c++"):
        path = shutil.which(exe)
        state[exe] = (path, os.stat(path).st_mtime_ns) if path else None
    return state


def pytest_sessionstart(session):
    session.config._environment_before = _environment_state()


def pytest_sessionfinish(session, exitstatus):
    before = getattr(session.config, "_environment_before", None)
    after = _environment_state()
    if before is not None and after != before:
        changed = sorted(k for k in after if after[k] != before.get(k))
        session.config.get_terminal_writer().line(
            f"ERROR: the test session changed the environment that runs it ({', '.join(changed)}):"
            f"\n  before: { {k: before[k] for k in changed} }\n  after:  "
            f"{ {k: after[k] for k in changed} }", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _require_tool(name: str, apt: str) -> str:
    """The path of ``name``; without it the test is skipped with the package to
    install, except under CI (CI=true), which installs every optional package
    the README lists: there a missing tool fails the test."""
    path = shutil.which(name)
    if path is None:
        msg = f"{name} is not installed (Debian: apt-get install {apt})"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return path


@pytest.fixture
def require_tool():
    """``require_tool(name, debian_package)``: see _require_tool."""
    return _require_tool


@pytest.fixture
def valgrind() -> str:
    return _require_tool("valgrind", "valgrind")
