"""Finding the LLVM bitcode that an input file carries.

An input may be raw bitcode (``clang -emit-llvm``, ``llvm-ar`` of bitcode),
a native object that carries its module in EnzymePy's own section
``.enzymepy.bc`` (what ``enzyme-cc -c`` writes), as fat-LTO bitcode
(``.llvm.lto``, clang >= 17 ``-ffat-lto-objects``) or as embedded bitcode
(``.llvmbc``, ``-fembed-bitcode``), or a plain native object.

``enzyme-cc -c`` lets clang write a fat-LTO or embedded-bitcode object and then
moves the bitcode to ``.enzymepy.bc`` (:func:`privatize`): GNU ``ar``, ``nm``
and ``ld`` hand objects with ``.llvm.lto``/``.llvmbc`` to any LLVM LTO plugin
installed for binutils, and a plugin of an older LLVM than the clang that wrote
the bitcode fails to read it and hides every symbol of the object.  In a
section no plugin knows, the object is an ordinary native object to every tool.
"""

from __future__ import annotations

from ..errors import UsageError
from . import elf

BITCODE_MAGIC = b"BC\xc0\xde"
WRAPPER_MAGIC = b"\xde\xc0\x17\x0b"
ELF_MAGIC = b"\x7fELF"
PRIVATE_SECTION = ".enzymepy.bc"
LLVM_SECTIONS = (".llvm.lto", ".llvmbc")
BITCODE_SECTIONS = (PRIVATE_SECTION, *LLVM_SECTIONS)


def is_bitcode(data: bytes) -> bool:
    return data.startswith(BITCODE_MAGIC) or data.startswith(WRAPPER_MAGIC)


def is_object(data: bytes) -> bool:
    return data.startswith(ELF_MAGIC) or is_bitcode(data)


def extract(data: bytes, what: str) -> bytes | None:
    """The bitcode in ``data`` (an object file's contents), or None for a
    native object without bitcode.  Raises UsageError for anything else."""
    if is_bitcode(data):
        return data
    if not data.startswith(ELF_MAGIC):
        raise UsageError(f"{what}: not an object file (unrecognized file format)",
                         hint="enzyme-cc links ELF objects and LLVM bitcode")
    try:
        sections = elf.sections(data)
    except elf.ELFError as e:
        raise UsageError(f"{what}: corrupt object file ({e})") from None
    for name in BITCODE_SECTIONS:
        if sections.get(name):
            return sections[name]
    return None


def privatize(path: str) -> None:
    """Move the bitcode of the object at ``path`` from LLVM's sections to
    ``.enzymepy.bc`` (see the module docstring); a no-op for other files."""
    with open(path, "rb") as f:
        data = f.read()
    if not data.startswith(ELF_MAGIC):
        return
    try:
        for name in LLVM_SECTIONS:
            data = elf.rename_section(data, name, PRIVATE_SECTION) or data
    except elf.ELFError as e:
        raise UsageError(f"{path}: clang wrote a corrupt object file ({e})") from None
    with open(path, "wb") as f:
        f.write(data)
