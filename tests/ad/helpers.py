"""Compile C through enzyme-cc (this checkout) and run it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PLUGIN = str(Path(__file__).resolve().parents[2] / "plugin")


def enzyme_cc(args, cwd, cxx=False):
    env = dict(os.environ, PYTHONPATH=PLUGIN + os.pathsep + os.environ.get("PYTHONPATH", ""))
    # the console script's entry (what `enzyme-cc` runs), with this checkout's package
    entry = "console_cxx" if cxx else "console_cc"
    code = f"from enzyme_py.driver.main import {entry}; {entry}()"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def build_and_run(tmp_path, source, opt="-O2", extra=(), runner=(), cxx=False):
    """Build ``source`` (C, or C++ with ``cxx``) at ``opt`` and run it: the finished
    process.  ``opt`` may hold several flags (``"-O2 -g"``)."""
    src = Path(tmp_path) / ("prog.cpp" if cxx else "prog.c")
    src.write_text(source)
    r = enzyme_cc([*opt.split(), str(src), "-o", str(Path(tmp_path) / "prog"), "-lm", *extra],
                  tmp_path, cxx=cxx)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([*runner, str(Path(tmp_path) / "prog")], capture_output=True,
                         text=True, timeout=120)
    return out


def parse_values(stdout):
    """Lines ``name v1 v2 ...`` -> {name: [floats]}."""
    vals = {}
    for line in stdout.splitlines():
        parts = line.split()
        if parts:
            vals[parts[0]] = [float(x) for x in parts[1:]]
    return vals
