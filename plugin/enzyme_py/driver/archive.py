"""Reading static archives (``ar``) as a linker does.

Both the System V / GNU variant (``/`` symbol table, ``//`` long-name table,
``name/`` entries) and the BSD variant (``#1/N`` names, ``__.SYMDEF``) are
read; ``llvm-ar`` writes one of them.  Only member names and contents are
needed: which members to pull is decided from their bitcode, not from the
archive's symbol table.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import FileError, UsageError

MAGIC = b"!<arch>\n"
THIN_MAGIC = b"!<thin>\n"


@dataclass
class Member:
    name: str
    data: bytes


def is_archive(head: bytes) -> bool:
    return head.startswith(MAGIC) or head.startswith(THIN_MAGIC)


def read_archive(path: str) -> list[Member]:
    """The regular members of the archive at ``path`` (symbol tables skipped)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as e:
        raise FileError.of("cannot read archive", path, e) from None
    if data.startswith(THIN_MAGIC):
        raise UsageError(f"{path}: thin archives are not supported",
                         hint="create the archive without 'T' (ar rcs)")
    if not data.startswith(MAGIC):
        raise UsageError(f"{path}: not an archive")
    members: list[Member] = []
    longnames = b""
    pos = len(MAGIC)
    while pos + 60 <= len(data):
        header = data[pos:pos + 60]
        if header[58:60] != b"`\n":
            raise UsageError(f"{path}: corrupt archive (bad member header at offset {pos})")
        raw_name = header[0:16].rstrip(b" ")
        try:
            size = int(header[48:58].strip() or b"0")
        except ValueError:
            raise UsageError(f"{path}: corrupt archive (bad member size at offset {pos})") from None
        body_start = pos + 60
        body = data[body_start:body_start + size]
        if len(body) != size:
            raise UsageError(f"{path}: corrupt archive (member at offset {pos} is truncated)")
        pos = body_start + size + (size & 1)
        if raw_name in (b"/", b"/SYM64/", b"__.SYMDEF", b"__.SYMDEF SORTED"):
            continue
        if raw_name == b"//":
            longnames = body
            continue
        if raw_name.startswith(b"#1/"):  # BSD: name stored at the start of the body
            n = int(raw_name[3:])
            name = body[:n].rstrip(b"\0")
            body = body[n:]
            if name.startswith(b"__.SYMDEF"):
                continue
        elif raw_name.startswith(b"/") and raw_name[1:].isdigit():  # GNU long name
            off = int(raw_name[1:])
            end = longnames.find(b"\n", off)
            name = longnames[off:end if end >= 0 else None].rstrip(b"/")
        else:
            name = raw_name.rstrip(b"/")
        members.append(Member(name.decode("utf-8", "replace"), body))
    return members
