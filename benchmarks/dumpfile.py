"""Read the dumps the kernels write (``KERNEL --dump DIR``): ``inputs.bin`` is one JSON
header line followed by the arrays' raw little-endian f64/i64 data; ``grad*.bin`` are
raw f64.  No NumPy needed."""

from __future__ import annotations

import json
from array import array
from pathlib import Path


def read_inputs(path: str | Path) -> tuple[dict, dict[str, array]]:
    """(header, {name: array('d' or 'q')}) of an ``inputs.bin``."""
    with open(path, "rb") as f:
        header = json.loads(f.readline())
        arrays = {}
        for a in header["arrays"]:
            arr = array("d" if a["type"] == "f64" else "q")
            arr.fromfile(f, a["count"])
            arrays[a["name"]] = arr
    return header, arrays


def read_vector(path: str | Path) -> array:
    arr = array("d")
    with open(path, "rb") as f:
        arr.frombytes(f.read())
    return arr


def write_vector(path: str | Path, values) -> None:
    with open(path, "wb") as f:
        array("d", values).tofile(f)


def max_rel_diff(a, b) -> float:
    """max_i |a_i - b_i| / max_i |b_i|: the gradient-wide relative error."""
    if len(a) != len(b):
        return float("inf")
    scale = max((abs(v) for v in b), default=0.0) or 1.0
    return max((abs(x - y) for x, y in zip(a, b, strict=True)), default=0.0) / scale
