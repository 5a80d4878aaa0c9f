"""Where the files installed with EnzymePy live: the C header, the CMake
package configuration and the toolchain file.

In a wheel they sit inside the package (``enzyme_py/include``,
``enzyme_py/share/cmake/EnzymePy``, the toolchain file there as
``EnzymePyToolchain.cmake``); pip also puts a copy of the header and the CMake
files into the environment (``<env>/include``, ``<env>/lib/cmake/EnzymePy``).
In a source checkout they are the repository's ``include/``, ``cmake/`` and
``toolchain/EnzymePy.cmake``.
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


def toolchain_file() -> str | None:
    """The CMake toolchain file that builds a whole project with enzyme-cc."""
    for c in (os.path.join(_PKG, "share", "cmake", "EnzymePy", "EnzymePyToolchain.cmake"),
              os.path.join(_REPO, "toolchain", "EnzymePy.cmake")):
        if os.path.isfile(c):
            return c
    return None
