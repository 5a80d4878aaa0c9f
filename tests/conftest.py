"""Make ``enzyme_py`` importable from the source tree when it is not installed."""

import pathlib
import sys

try:
    import enzyme_py  # noqa: F401
except ImportError:
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "plugin"))
