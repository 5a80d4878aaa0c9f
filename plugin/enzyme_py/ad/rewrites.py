"""The rewrites made before differentiation, in the order they run.

Each private copy about to be differentiated (``ad.transform_module`` makes them) goes
through the list below.  Every rewrite is exact -- the same values, the same bytes
read and written at the same points -- and changes nothing where its pattern is
absent; together they give the generators code in the forms they differentiate:
calls that do not unwind, the C library's complex functions as real arithmetic, SIMD
memory operations lane by lane, sign masks as ``fneg``/``fabs``, floats and pointers
moved as integers back in their own types.  (Two more run on a whole set of copies,
beside this list: ``abi.retype_float_abi`` before it -- unions of a double passed as
an ``i64`` across calls -- and ``typed_copies.split_integer_copies`` after it, which
needs the type analysis of all the copies.)  ``-v`` prints how many changes each made.
"""

from __future__ import annotations

from importlib import import_module

__all__ = ["REWRITES", "run_rewrites"]

# (what it rewrites, module, function): each function takes one function and returns
# how many changes it made (or whether it changed anything)
REWRITES = (
    ("invokes (derivative code does not unwind)", "unwind", "strip_invokes"),
    ("complex library calls", "complex", "redirect_complex_calls"),
    ("masked vector memory, horizontal adds", "simd", "lower_simd"),
    ("sign masks on float bits", "sign_bits", "rewrite_sign_masks"),
    ("floats moved as integer lanes", "typed_copies", "retype_float_lanes"),
    ("pointers moved as integers", "typed_copies", "retype_pointer_moves"),
)


def run_rewrites(fn, counts: dict) -> None:
    """Apply every rewrite of ``REWRITES`` to ``fn``, in order; add to ``counts``
    (what -> number of changes)."""
    for what, module, name in REWRITES:
        got = getattr(import_module(f".{module}", __package__), name)(fn)
        counts[what] = counts.get(what, 0) + int(got or 0)


def describe(counts: dict) -> str:
    """``-v``'s line: the rewrites that changed something, with their counts."""
    done = [f"{what} {n}" for what, n in counts.items() if n]
    return "rewrites before AD: " + (", ".join(done) if done else "none applied")
