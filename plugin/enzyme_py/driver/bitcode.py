"""Finding the LLVM bitcode that an input file carries.

An input may be raw bitcode (``clang -emit-llvm``, ``llvm-ar`` of bitcode),
a native object that carries its module as fat-LTO bitcode (section
``.llvm.lto``, what ``enzyme-cc -c`` writes with clang >= 17) or as embedded
bitcode (``.llvmbc``, ``-fembed-bitcode``), or a plain native object.
"""

from __future__ import annotations

from ..errors import UsageError
from . import elf

BITCODE_MAGIC = b"BC\xc0\xde"
WRAPPER_MAGIC = b"\xde\xc0\x17\x0b"
ELF_MAGIC = b"\x7fELF"
BITCODE_SECTIONS = (".llvm.lto", ".llvmbc")


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
