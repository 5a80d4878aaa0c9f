"""LLVM types: structural equality and hashing, ``str()`` in LLVM syntax.

Identified (named) struct types are the exception: they compare by identity,
as in LLVM, and print as their ``%name``.  ``DataLayout`` answers the size,
alignment and field-offset questions the AD pass asks for tape sizing,
memcpy lowering and type analysis.
"""

from __future__ import annotations

import re

__all__ = [
    "Type", "VoidType", "IntType", "FloatType", "PointerType", "VectorType",
    "ArrayType", "StructType", "IdentifiedStructType", "FunctionType",
    "LabelType", "MetadataType", "TokenType", "DataLayout",
    "void", "i1", "i8", "i16", "i32", "i64", "i128", "half", "bfloat", "float",
    "double", "x86_fp80", "fp128", "ppc_fp128", "ptr", "label", "metadata", "token",
    "quote_name",
]

_PLAIN_NAME = re.compile(r"[-a-zA-Z$._][-a-zA-Z$._0-9]*\Z")


def quote_name(name: str) -> str:
    """Spell an identifier as LLVM does: bare when it can be, else in quotes."""
    if _PLAIN_NAME.match(name):
        return name
    return '"' + name + '"'


class Type:
    """Base class. Subclasses define ``_key`` (structural identity) and ``_str``."""

    __slots__ = ("_s",)

    def _key(self) -> tuple:
        raise NotImplementedError

    def _str(self) -> str:
        raise NotImplementedError

    def __str__(self) -> str:
        try:
            return self._s
        except AttributeError:
            self._s = s = self._str()
            return s

    def __repr__(self) -> str:
        return f"<type {self}>"

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._key()))

    # classification helpers the AD pass uses constantly
    is_void = is_int = is_float = is_pointer = is_vector = False
    is_array = is_struct = is_function = is_label = is_metadata = is_token = False

    @property
    def is_fp_or_fp_vector(self) -> bool:
        return self.is_float or (self.is_vector and self.element.is_float)

    @property
    def scalar_type(self) -> Type:
        return self.element if self.is_vector else self


class VoidType(Type):
    __slots__ = ()
    is_void = True

    def _key(self):
        return ()

    def _str(self):
        return "void"


class LabelType(Type):
    __slots__ = ()
    is_label = True

    def _key(self):
        return ()

    def _str(self):
        return "label"


class MetadataType(Type):
    __slots__ = ()
    is_metadata = True

    def _key(self):
        return ()

    def _str(self):
        return "metadata"


class TokenType(Type):
    __slots__ = ()
    is_token = True

    def _key(self):
        return ()

    def _str(self):
        return "token"


class IntType(Type):
    __slots__ = ("width",)
    is_int = True

    def __init__(self, width: int):
        self.width = width

    def _key(self):
        return (self.width,)

    def _str(self):
        return f"i{self.width}"


class FloatType(Type):
    """half, bfloat, float, double, x86_fp80, fp128, ppc_fp128."""

    __slots__ = ("kind",)
    is_float = True
    BITS = {"half": 16, "bfloat": 16, "float": 32, "double": 64, "x86_fp80": 80,
            "fp128": 128, "ppc_fp128": 128}

    def __init__(self, kind: str):
        if kind not in self.BITS:
            raise ValueError(f"unknown floating-point type {kind}")
        self.kind = kind

    @property
    def width(self) -> int:
        return self.BITS[self.kind]

    def _key(self):
        return (self.kind,)

    def _str(self):
        return self.kind


class PointerType(Type):
    __slots__ = ("addrspace",)
    is_pointer = True

    def __init__(self, addrspace: int = 0):
        self.addrspace = addrspace

    def _key(self):
        return (self.addrspace,)

    def _str(self):
        return "ptr" if self.addrspace == 0 else f"ptr addrspace({self.addrspace})"


class VectorType(Type):
    __slots__ = ("count", "element", "scalable")
    is_vector = True

    def __init__(self, element: Type, count: int, scalable: bool = False):
        self.element, self.count, self.scalable = element, count, scalable

    def _key(self):
        return (self.element, self.count, self.scalable)

    def _str(self):
        v = "vscale x " if self.scalable else ""
        return f"<{v}{self.count} x {self.element}>"


class ArrayType(Type):
    __slots__ = ("count", "element")
    is_array = True

    def __init__(self, element: Type, count: int):
        self.element, self.count = element, count

    def _key(self):
        return (self.element, self.count)

    def _str(self):
        return f"[{self.count} x {self.element}]"


class StructType(Type):
    """A literal struct ``{ i32, ptr }`` or packed ``<{ i8, i32 }>``."""

    __slots__ = ("elements", "packed")
    is_struct = True
    is_opaque = False
    name = None

    def __init__(self, elements, packed: bool = False):
        self.elements = tuple(elements)
        self.packed = packed

    def _key(self):
        return (self.elements, self.packed)

    def body_str(self) -> str:
        if not self.elements:
            return "<{}>" if self.packed else "{}"
        inner = ", ".join(str(e) for e in self.elements)
        return f"<{{ {inner} }}>" if self.packed else f"{{ {inner} }}"

    def _str(self):
        return self.body_str()


class IdentifiedStructType(StructType):
    """``%name = type {...}`` or ``type opaque``; equality is identity."""

    __slots__ = ("name", "is_opaque")

    def __init__(self, name: str):
        super().__init__((), False)
        self.name = name
        self.is_opaque = True

    def set_body(self, elements, packed: bool = False) -> None:
        self.elements, self.packed, self.is_opaque = tuple(elements), packed, False

    def __eq__(self, other):
        return self is other

    def __hash__(self):
        return id(self)

    def _str(self):
        return "%" + quote_name(self.name)

    def __str__(self):  # no caching: the body may change but the name does not
        return "%" + quote_name(self.name)

    def definition(self) -> str:
        return "opaque" if self.is_opaque else self.body_str()


class FunctionType(Type):
    __slots__ = ("ret", "params", "varargs")
    is_function = True

    def __init__(self, ret: Type, params, varargs: bool = False):
        self.ret, self.params, self.varargs = ret, tuple(params), varargs

    def _key(self):
        return (self.ret, self.params, self.varargs)

    def _str(self):
        ps = [str(p) for p in self.params]
        if self.varargs:
            ps.append("...")
        return f"{self.ret} ({', '.join(ps)})"


void = VoidType()
label = LabelType()
metadata = MetadataType()
token = TokenType()
i1, i8, i16, i32, i64, i128 = (IntType(w) for w in (1, 8, 16, 32, 64, 128))
half, bfloat, float, double = (FloatType(k) for k in ("half", "bfloat", "float", "double"))
x86_fp80, fp128, ppc_fp128 = (FloatType(k) for k in ("x86_fp80", "fp128", "ppc_fp128"))
ptr = PointerType(0)


class DataLayout:
    """Sizes, ABI alignments and struct layouts from a datalayout string."""

    def __init__(self, text: str = ""):
        self.text = text
        self.little_endian = True
        self.int_align = {1: 1, 8: 1, 16: 2, 32: 4, 64: 8, 128: 16}
        self.float_align = {16: 2, 32: 4, 64: 8, 80: 16, 128: 16}
        self.ptr_size = {0: 8}
        self.ptr_align = {0: 8}
        self.vector_align: dict[int, int] = {}
        self.aggregate_align = 1
        self.stack_align = 16
        # struct -> (its elements, layout): each layout computed once (a struct nests
        # others, whose size and alignment each need their layout: C++ expression
        # templates nest dozens deep, and recomputing them was exponential)
        self._layouts: dict = {}
        for spec in filter(None, text.split("-")):
            self._spec(spec)

    def _spec(self, spec: str) -> None:
        k = spec[0]
        parts = spec[1:].split(":")
        if k == "e":
            self.little_endian = True
        elif k == "E":
            self.little_endian = False
        elif k == "p":
            asp = int(parts[0]) if parts[0] else 0
            self.ptr_size[asp] = int(parts[1]) // 8
            self.ptr_align[asp] = int(parts[2]) // 8 if len(parts) > 2 else int(parts[1]) // 8
        elif k == "i" and parts[0].isdigit():
            self.int_align[int(parts[0])] = int(parts[1]) // 8
        elif k == "f" and parts[0].isdigit():
            self.float_align[int(parts[0])] = int(parts[1]) // 8
        elif k == "v" and parts[0].isdigit():
            self.vector_align[int(parts[0])] = int(parts[1]) // 8
        elif k == "a" and len(parts) > 1:
            self.aggregate_align = max(1, int(parts[1]) // 8)
        elif k == "S" and parts[0].isdigit():
            self.stack_align = int(parts[0]) // 8

    def __str__(self) -> str:
        return self.text

    # -- queries --------------------------------------------------------------
    def type_bits(self, ty: Type) -> int:
        """Size in bits of a scalar or vector value (``getTypeSizeInBits``)."""
        if ty.is_int:
            return ty.width
        if ty.is_float:
            return ty.width
        if ty.is_pointer:
            return self.ptr_size.get(ty.addrspace, self.ptr_size[0]) * 8
        if ty.is_vector:
            return ty.count * self.type_bits(ty.element)
        return self.store_size(ty) * 8

    def store_size(self, ty: Type) -> int:
        if ty.is_int or ty.is_float or ty.is_vector:
            return (self.type_bits(ty) + 7) // 8
        if ty.is_pointer:
            return self.ptr_size.get(ty.addrspace, self.ptr_size[0])
        return self.size_in_bytes(ty)

    def size_in_bytes(self, ty: Type) -> int:
        """Allocation size (``getTypeAllocSize``): store size rounded to ABI alignment."""
        if ty.is_array:
            return ty.count * self.size_in_bytes(ty.element)
        if ty.is_struct:
            return self.struct_layout(ty)[0]
        if ty.is_void or ty.is_label or ty.is_metadata or ty.is_token or ty.is_function:
            return 0
        s = self.store_size(ty)
        a = self.abi_alignment(ty)
        return (s + a - 1) // a * a

    def abi_alignment(self, ty: Type) -> int:
        if ty.is_int:
            w = ty.width
            if w in self.int_align:
                return self.int_align[w]
            bigger = [b for b in self.int_align if b >= w]
            return self.int_align[min(bigger)] if bigger else self.int_align[max(self.int_align)]
        if ty.is_float:
            return self.float_align.get(ty.width, 16 if ty.width > 64 else ty.width // 8)
        if ty.is_pointer:
            return self.ptr_align.get(ty.addrspace, self.ptr_align[0])
        if ty.is_vector:
            bits = self.type_bits(ty)
            if bits in self.vector_align:
                return self.vector_align[bits]
            n = max(1, (bits + 7) // 8)
            return 1 << (n - 1).bit_length()
        if ty.is_array:
            return self.abi_alignment(ty.element)
        if ty.is_struct:
            return self.struct_layout(ty)[1]
        return 1

    def struct_layout(self, ty: StructType):
        """(size, alignment, [field offsets]) of a struct type."""
        elements = tuple(ty.elements)
        got = self._layouts.get(ty)
        if got is not None and got[0] == elements and got[1] == ty.packed:
            return got[2]
        got = self._layouts[ty] = (elements, ty.packed, self._struct_layout(ty))
        return got[2]

    def _struct_layout(self, ty: StructType):
        off, align, offsets = 0, 1, []
        for e in ty.elements:
            a = 1 if ty.packed else self.abi_alignment(e)
            off = (off + a - 1) // a * a
            offsets.append(off)
            off += self.size_in_bytes(e)
            align = max(align, a)
        if not ty.packed:
            align = max(align, self.aggregate_align)
        size = (off + align - 1) // align * align
        return size, align, offsets

    def field_offsets(self, ty: StructType) -> list[int]:
        return self.struct_layout(ty)[2]

    def offset_of(self, ty: Type, indices) -> int:
        """Byte offset of a GEP-style constant index path into ``ty`` (first index excluded)."""
        off = 0
        for i in indices:
            if ty.is_struct:
                off += self.field_offsets(ty)[i]
                ty = ty.elements[i]
            else:
                ty = ty.element
                off += i * self.size_in_bytes(ty)
        return off
