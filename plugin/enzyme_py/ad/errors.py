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


def struct_return_error(origin: str, location, stored: bool = False) -> ADError:
    """A pointer that may carry derivatives, returned by ``origin`` inside a struct that
    also holds floating-point values (a struct of pointers and integers has a shadow of
    its own; this mix has none)."""
    what = (f"an active value is stored through a pointer that '{origin}' returns inside "
            "a struct" if stored else
            f"'{origin}' returns a struct holding a pointer that may carry derivatives")
    return ADError(f"{what}; a pointer returned beside floating-point values in one struct "
                   "gets no shadow (a pointer alone, or a struct of only pointers and "
                   "integers, does)", location=location,
                   hint="return the pointer alone, or fill a struct passed by pointer, or "
                        "let the function be inlined")
