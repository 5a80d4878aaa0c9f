"""One exception hierarchy for everything EnzymePy reports to a user.

Every error carries a message in compiler-diagnostic style; the driver prints
``enzyme-cc: error: <message>`` (plus an optional hint line) and exits 1;
:class:`InternalError` (a broken invariant of EnzymePy) and any other exception
are bugs of ours: exit 70 and a request to report it.  Tracebacks are shown
only with ``ENZYME_DEBUG=1``.
"""

from __future__ import annotations


class EnzymeError(Exception):
    """Base of all user-facing errors.

    ``location`` is a source location (``file.c:12:3``) or a function /
    instruction description; ``hint`` tells the user what to do.
    """

    def __init__(self, message: str, *, location: str | None = None, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.location = location
        self.hint = hint

    def format(self, prog: str = "enzyme-cc") -> str:
        where = f"{self.location}: " if self.location else f"{prog}: "
        text = f"{where}error: {self.message}"
        if self.hint:
            text += f"\n{where}note: {self.hint}"
        return text


class UsageError(EnzymeError):
    """Bad command line or input file."""


class FileError(EnzymeError):
    """An input cannot be read or an output cannot be written (missing directory,
    permissions, full disk, file size limit): the message names the file and
    the system's reason."""

    @classmethod
    def of(cls, what: str, path: str, e: OSError) -> FileError:
        """``<what> <path>: <reason>``, e.g. ``cannot open output file a.out: No such
        file or directory``."""
        return cls(f"{what} {path}: {e.strerror or e}")


class InternalError(EnzymeError):
    """An invariant of EnzymePy itself failed: a bug of ours, not a defect of the
    user's program.  The driver reports it as an internal error (exit 70) and
    asks for a report."""


class ToolError(EnzymeError):
    """An external tool (clang, the linker) failed; its own diagnostics were shown."""

    def __init__(self, message: str, returncode: int):
        super().__init__(message)
        self.returncode = returncode
