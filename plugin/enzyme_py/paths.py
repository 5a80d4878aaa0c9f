"""Where the files installed with EnzymePy live: the C header and the CMake
package configuration.

In a wheel they sit inside the package (``enzyme_py/include``,
``enzyme_py/share/cmake/EnzymePy``); in a source checkout they are the
repository's ``include/`` and ``cmake/``.
"""

from __future__ import annotations

import os

_PKG = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(os.path.dirname(_PKG))


def _first_existing(*candidates: str) -> str | None:
    for c in candidates:
        if os.path.isdir(c):
            return c
    return None


def include_dir() -> str | None:
    """The directory holding ``enzyme.h``."""
    return _first_existing(os.path.join(_PKG, "include"), os.path.join(_REPO, "include"))


def cmake_dir() -> str | None:
    """The directory holding ``EnzymePyConfig.cmake`` (for ``-DEnzymePy_DIR=``)."""
    return _first_existing(os.path.join(_PKG, "share", "cmake", "EnzymePy"),
                           os.path.join(_REPO, "cmake"))
