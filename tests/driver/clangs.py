"""The clangs a driver test can run with: ziglang's, and every clang-N on PATH."""

from __future__ import annotations

import shutil
import sys

import pytest


def other_clangs():
    found = [pytest.param(f"{sys.executable} -m ziglang cc", id="ziglang")]
    for major in range(14, 23):
        path = shutil.which(f"clang-{major}")
        if path:
            found.append(pytest.param(path, id=f"clang-{major}"))
    return found
