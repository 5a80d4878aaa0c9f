"""AD-specific errors (all are EnzymeError, so the driver prints them as diagnostics)."""

from __future__ import annotations

from ..errors import EnzymeError


class ADError(EnzymeError):
    """The program cannot be differentiated as written."""


class CallSiteError(ADError):
    """An ``__enzyme_*`` call whose arguments do not match the function's parameters."""


class NoDerivativeError(ADError):
    """An active instruction or call with no derivative rule and no definition."""


def inst_location(inst, names=None) -> str:
    loc = inst.debug_loc if inst.parent is not None else None
    fn = inst.function
    fname = (names or {}).get(fn, fn.name if fn is not None else "?")
    if loc is not None:
        f, line, col = loc
        return f"{f}:{line}:{col}" if col else f"{f}:{line}"
    return f"in function '{fname}'"
