"""A small ELF reader: the named sections of a relocatable object.

The driver needs only the section that carries an object's bitcode
(``.llvm.lto`` or ``.llvmbc``).  Reading ELF here, with every offset checked,
keeps a truncated or corrupt ``.o`` a clear error instead of a crash inside
LLVM's object reader.
"""

from __future__ import annotations

import struct

SHT_NOBITS = 8


class ELFError(ValueError):
    """The data is not a well-formed ELF file."""


def sections(data: bytes) -> dict[str, bytes]:
    """The sections of an ELF file by name (empty bytes for SHT_NOBITS)."""
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
    if shnum == 0:
        return {}
    if shentsize < sh.size or shoff + shnum * shentsize > len(data):
        raise ELFError("section header table out of bounds")
    heads = []
    for i in range(shnum):
        f = sh.unpack_from(data, shoff + i * shentsize)
        heads.append((f[0], f[1], f[4], f[5]))  # name, type, offset, size
    if shstrndx >= shnum:
        raise ELFError("bad section name table index")
    _, _, stroff, strsize = heads[shstrndx]
    if stroff + strsize > len(data):
        raise ELFError("section name table out of bounds")
    strtab = data[stroff:stroff + strsize]
    out: dict[str, bytes] = {}
    for index, (name, stype, offset, size) in enumerate(heads):
        end = strtab.find(b"\0", name)
        if name >= len(strtab) or end < 0:
            raise ELFError("bad section name")
        key = strtab[name:end].decode("latin-1")
        if stype == SHT_NOBITS:
            out[key] = b""
            continue
        if offset + size > len(data):
            raise ELFError(f"section {key or index} out of bounds")
        out[key] = data[offset:offset + size]
    return out
