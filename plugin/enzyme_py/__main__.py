"""``python -m enzyme_py``: where EnzymePy's files are, for build systems.

    python -m enzyme_py --cmake-dir     # for -DEnzymePy_DIR=... / CMAKE_PREFIX_PATH
    python -m enzyme_py --include-dir   # the directory holding enzyme.h
    python -m enzyme_py --toolchain     # for -DCMAKE_TOOLCHAIN_FILE=...
    python -m enzyme_py --version
"""

from __future__ import annotations

import argparse
import sys

from . import __version__
from .paths import cmake_dir, include_dir, toolchain_file


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m enzyme_py",
                                 description="Print where EnzymePy's files are installed.")
    ap.add_argument("--version", action="store_true", help="print the version")
    ap.add_argument("--cmake-dir", action="store_true",
                    help="print the directory with EnzymePyConfig.cmake")
    ap.add_argument("--include-dir", action="store_true", help="print the directory with enzyme.h")
    ap.add_argument("--toolchain", action="store_true",
                    help="print the CMake toolchain file that builds a whole project with "
                         "enzyme-cc / enzyme-c++")
    args = ap.parse_args(argv)
    if not (args.version or args.cmake_dir or args.include_dir or args.toolchain):
        ap.print_help()
        return 0
    for wanted, value in ((args.version, __version__), (args.cmake_dir, cmake_dir()),
                          (args.include_dir, include_dir()),
                          (args.toolchain, toolchain_file())):
        if wanted:
            if value is None:
                print("enzyme_py: error: not found in this installation", file=sys.stderr)
                return 1
            print(value)
    return 0


if __name__ == "__main__":
    sys.exit(main())
