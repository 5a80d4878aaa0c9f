"""A small ELF reader and section renamer for relocatable objects.

The driver needs the section that carries an object's bitcode, and it moves
that bitcode out of the sections LLVM's tools look in (``.llvm.lto``,
``.llvmbc``): a binutils LTO plugin of another LLVM version would otherwise
claim the object, fail to read its bitcode, and hide every symbol from ``ar``,
``nm`` and ``ld``.  Reading ELF here, with every offset checked, keeps a
truncated or corrupt ``.o`` a clear error instead of a crash inside LLVM's
object reader.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

SHT_PROGBITS = 1
SHT_NOBITS = 8
SHF_EXCLUDE = 0x80000000
SHN_XINDEX = 0xFFFF


class ELFError(ValueError):
    """The data is not a well-formed ELF file."""


@dataclass
class _Layout:
    hdr: struct.Struct        # the header after e_ident
    sh: struct.Struct         # one section header
    shoff: int
    shentsize: int
    shnum: int
    shstrndx: int
    heads: list[list[int]]    # each section header's fields, as unpacked
    strtab: bytes             # the section name table


def _layout(data: bytes) -> _Layout:
    if len(data) < 16 or data[:4] != b"\x7fELF":
        raise ELFError("no ELF header")
    cls, enc = data[4], data[5]
    if cls not in (1, 2) or enc not in (1, 2):
        raise ELFError("bad ELF class or byte order")
    e = "<" if enc == 1 else ">"
    if cls == 2:
        hdr = struct.Struct(e + "HHIQQQIHHHHHH")
        sh = struct.Struct(e + "IIQQQQIIQQ")
    else:
        hdr = struct.Struct(e + "HHIIIIIHHHHHH")
        sh = struct.Struct(e + "IIIIIIIIII")
    if len(data) < 16 + hdr.size:
        raise ELFError("truncated ELF header")
    (_, _, _, _, _, shoff, _, _, _, _, shentsize, shnum, shstrndx) = hdr.unpack_from(data, 16)
    if shoff == 0:
        return _Layout(hdr, sh, 0, shentsize, 0, 0, [], b"")
    if shentsize < sh.size or shoff + sh.size > len(data):
        raise ELFError("section header table out of bounds")
    first = sh.unpack_from(data, shoff)
    if shnum == 0:                 # extended numbering: the count is in section 0
        shnum = first[5]
    if shstrndx == SHN_XINDEX:
        shstrndx = first[6]
    if shoff + shnum * shentsize > len(data):
        raise ELFError("section header table out of bounds")
    heads = [list(sh.unpack_from(data, shoff + i * shentsize)) for i in range(shnum)]
    if shstrndx >= shnum:
        raise ELFError("bad section name table index")
    stroff, strsize = heads[shstrndx][4], heads[shstrndx][5]
    if stroff + strsize > len(data):
        raise ELFError("section name table out of bounds")
    return _Layout(hdr, sh, shoff, shentsize, shnum, shstrndx, heads,
                   data[stroff:stroff + strsize])


def _name(lay: _Layout, offset: int) -> str:
    end = lay.strtab.find(b"\0", offset)
    if offset >= len(lay.strtab) or end < 0:
        raise ELFError("bad section name")
    return lay.strtab[offset:end].decode("latin-1")


def sections(data: bytes) -> dict[str, bytes]:
    """The sections of an ELF file by name (empty bytes for SHT_NOBITS)."""
    lay = _layout(data)
    out: dict[str, bytes] = {}
    for index, f in enumerate(lay.heads):
        key = _name(lay, f[0])
        stype, offset, size = f[1], f[4], f[5]
        if stype == SHT_NOBITS:
            out[key] = b""
            continue
        if offset + size > len(data):
            raise ELFError(f"section {key or index} out of bounds")
        out[key] = data[offset:offset + size]
    return out


def rename_section(data: bytes, old: str, new: str, exclude: bool = True) -> bytes | None:
    """``data`` with section ``old`` renamed to ``new``, of the plain type
    SHT_PROGBITS (``.llvm.lto`` has an LLVM-specific type that tools may match
    on), and marked SHF_EXCLUDE (so a link drops it); None when there is no
    section ``old``.

    The section's bytes stay where they are.  The extended name table and a
    new section header table are appended; the old ones become unreferenced
    bytes, which ELF allows."""
    lay = _layout(data)
    index = next((i for i, f in enumerate(lay.heads) if _name(lay, f[0]) == old), None)
    if index is None:
        return None
    out = bytearray(data)
    strtab_off = len(out)
    out += lay.strtab + new.encode("latin-1") + b"\0"
    heads = [list(f) for f in lay.heads]
    heads[index][0] = len(lay.strtab)
    heads[index][1] = SHT_PROGBITS
    if exclude:
        heads[index][2] |= SHF_EXCLUDE
    heads[lay.shstrndx][4] = strtab_off
    heads[lay.shstrndx][5] = len(out) - strtab_off
    align = 8 if lay.sh.size == 64 else 4
    out += b"\0" * (-len(out) % align)
    shoff = len(out)
    for f in heads:
        out += lay.sh.pack(*f) + b"\0" * (lay.shentsize - lay.sh.size)
    fields = list(lay.hdr.unpack_from(out, 16))
    fields[5] = shoff
    lay.hdr.pack_into(out, 16, *fields)
    return bytes(out)
