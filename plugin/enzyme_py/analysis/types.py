"""Type analysis over opaque pointers (the part the AD pass needs today).

``memory_kinds(ptrs)`` answers "what does the memory behind these pointers hold?" as a
set over {'double', 'float', 'int', 'ptr'} (an empty set: nothing is known).  It
collects every typed access reachable from the same underlying objects:

- loads, stores, atomics, GEP element types and allocated types, through GEPs, casts,
  phis and selects;
- TBAA: an integer-typed load or store whose ``!tbaa`` access type is ``double`` counts
  as a double (InstCombine turns small memcpys of doubles into ``i64`` copies), and a
  memcpy's ``!tbaa.struct`` lists the types it moves;
- memcpy/memmove: the destination holds what the source holds, and the other way round;
- across calls, both ways: a pointer passed to a defined function is followed into the
  callee's parameter, and a parameter is followed to the arguments at every call site of
  its function (so a ``noinline`` helper that only memcpys learns the type from its
  callers); a pointer a defined function returns is followed to what it returns (C++
  accessors and allocator wrappers at -O0);
- the program's hints ``__enzyme_double(p, bytes)``, ``__enzyme_float``,
  ``__enzyme_integer``, ``__enzyme_pointer`` (see include/enzyme.h).

Where these find nothing, ``memory_kinds`` asks the byte-offset analysis of
``typetree`` (``pointee_kinds``), which also follows pointers kept in memory.

The AD pass asks only where it must know (the adjoint of a memcpy/memmove moves values
of one type); where the set stays empty for memory that carries derivatives it reports a
compile error naming the hint, never a guess.
"""

from __future__ import annotations

import re

from ..ir import metadata as md
from ..ir.attributes import Attributes
from ..ir.instructions import (Alloca, AtomicRMW, Call, Cast, CmpXchg, GEP, Load, Phi,
                               Ret, Select, Store)
from ..ir.values import Argument, ConstantExpr, ConstantNull, Poison, Undef
from .effects import TYPE_HINTS

__all__ = ["string_characters", "string_value_bytes", "string_object_bytes",
           "string_object_size",
           "string_inline_buffer", "string_buffer", "merge_leaves", "constant_text",
           "memory_kinds", "byte_kinds", "pointee_kinds",
           "FLOAT_KINDS", "layout_kinds", "float_fields", "tbaa_struct_fields", "scalar_kinds",
           "tbaa_kind", "HINTS", "carries_no_derivative", "function_of"]

HINTS = TYPE_HINTS     # __enzyme_double(p, bytes) and friends: the kind they name
_MEM = ("llvm.memcpy", "llvm.memmove", "memcpy", "memmove")


def scalar_kinds(ty, out: set) -> set:
    if ty.is_float:
        out.add(ty.kind if ty.kind in ("double", "float") else "float-other")
    elif ty.is_int:
        out.add("int")
    elif ty.is_pointer:
        out.add("ptr")
    elif ty.is_vector or ty.is_array:
        scalar_kinds(ty.element, out)
    elif ty.is_struct:
        for t in ty.elements:
            scalar_kinds(t, out)
    return out


def _md(module, ref):
    """The generic metadata node ``ref`` names (an ``MDNode``), or None."""
    n = md.node(module, ref)
    return n if isinstance(n, md.MDNode) else None


def _tbaa_name(module, type_ref):
    n = _md(module, type_ref)
    first = n.operands[0] if n is not None and n.operands else None
    return first.value if isinstance(first, md.MDString) else None


def _kind_of_tbaa_type(name):
    if name is None or name == "omnipotent char" or name.startswith(("_ZTS", "struct ")):
        return None
    if name in ("double", "float"):
        return name
    if name == "long double":
        return "float-other"
    if name == "any pointer" or re.match(r"p\d+ ", name) or name.endswith("*"):
        return "ptr"
    if name in ("int", "long", "long long", "short", "bool", "_Bool", "char",
                "unsigned int", "unsigned long", "__int128") or name.startswith("unsigned"):
        return "int"
    return None


def tbaa_kind(inst, module=None):
    """The scalar kind an access's ``!tbaa`` tag names ('double', 'int', 'ptr', ...), or
    None when absent or not a scalar (``omnipotent char``)."""
    return tbaa_kind_of_tag(module or inst.module, inst.get_metadata("tbaa"))


def _tbaa_struct_kinds(inst, module, out):
    n = _md(module, inst.get_metadata("tbaa.struct"))
    if n is None:
        return
    for ref in n.refs():
        k = tbaa_kind_of_tag(module, md.MDRef(ref))
        if k is not None:
            out.add(k)


def tbaa_kind_of_tag(module, ref):
    """The scalar kind of a TBAA access tag ``!{base type, access type, offset}``: the
    access type's name ('double', 'int', 'ptr'...), or None."""
    tag = _md(module, ref)
    if tag is None or len(tag.operands) < 2 or not isinstance(tag.operands[1], md.MDRef):
        return None
    return _kind_of_tbaa_type(_tbaa_name(module, tag.operands[1]))


def tbaa_integer_field(inst, module=None) -> bool:
    """Whether the access ``inst``'s TBAA tag names an integer field of a struct (a
    struct-path tag: base type a struct, access type an integer other than ``char``) --
    what the source declares the field, as ``augmented.tag_declared_integers`` records
    at -O0 (a union member's tag is ``omnipotent char``)."""
    module = module or inst.module
    tag = _md(module, inst.get_metadata("tbaa"))
    if tag is None or len(tag.operands) < 2 or not all(
            isinstance(o, md.MDRef) for o in tag.operands[:2]):
        return False
    base = _tbaa_name(module, tag.operands[0])
    access = _tbaa_name(module, tag.operands[1])
    return base is not None and base.startswith(("_ZTS", "struct ")) \
        and access not in ("char", None) and _kind_of_tbaa_type(access) == "int"


# the struct-path names of std::string (basic_string<char>, libstdc++ and libc++) in
# TBAA access tags: a pointer loaded through one of them is the string's characters
_STRING_TBAA = ("_ZTSNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE",
                "_ZTSNSt3__112basic_stringIcNS_11char_traitsIcEENS_9allocatorIcEEE")


def string_characters(p) -> bool:
    """Whether the pointer ``p`` points into a ``std::string``'s characters: it is (an
    offset from) a pointer loaded from a string object (its TBAA access tag's base type
    is ``basic_string<char>`` or its ``_Alloc_hider``)."""
    for r in _roots(p):
        if not (isinstance(r, Load) and r.type.is_pointer):
            return False
        tag = _md(r.module, r.get_metadata("tbaa"))
        first = tag.operands[0] if tag is not None and tag.operands else None
        name = _tbaa_name(r.module, first) if isinstance(first, md.MDRef) else None
        if name is None or not name.startswith(_STRING_TBAA):
            return False
    return True


# libstdc++'s std::string: {char *data, size_t length, union {char buf[16]; size_t
# capacity}} -- bytes 16..32 hold characters or the capacity, never a float; libc++'s:
# 24 bytes, {size, capacity, data} or 23 inline characters and a size byte
# (TBAA names: the class itself, and libstdc++'s _Alloc_hider, at its offset 0)
_LIBSTDCXX_STRING = _STRING_TBAA[0] + "E"
_STRING_SIZE = {_LIBSTDCXX_STRING: 32, _STRING_TBAA[0] + "12_Alloc_hiderE": 32,
                _STRING_TBAA[1] + "E": 24}
_STRING_INLINE = 16     # where the inline characters start


def string_object_size(member_name: str):
    """The size of the ``std::string`` a library member named ``member_name`` works on:
    32 bytes for libstdc++'s (``std::__cxx11``), 24 for libc++'s (``std::__1``); None
    for other names."""
    if "St7__cxx11" in member_name:
        return _STRING_SIZE[_LIBSTDCXX_STRING]
    if member_name.startswith(("_ZNSt3__1", "_ZNKSt3__1")):
        return _STRING_SIZE[_STRING_TBAA[1] + "E"]
    return None


def string_value_bytes(p, dl, n=1) -> bool:
    """Whether the ``n`` bytes at ``p`` hold a ``std::string``'s length, capacity or
    inline characters -- never a float, nor its pointer to the characters: libstdc++'s
    bytes 8..32 (a string moved into a ``std::map`` node copies its inline bytes as one
    ``i64``; ``std::sort`` moves the length as one), libc++'s 24 (see ``_string_at``)."""
    at = _string_at(p, dl, n)
    if at is None:
        return False
    lo = 8 if at[0].startswith(_STRING_TBAA[0]) else 0
    return lo <= at[1]


def string_object_bytes(p, dl, n) -> bool:
    """Whether the ``n`` bytes at ``p`` lie inside one ``std::string`` object
    (libstdc++'s or libc++'s): sizes, capacity, the pointer to its characters or the
    characters themselves -- never a float (libc++ moves a key into a ``std::map`` node
    with one 24-byte memcpy of its representation)."""
    return _string_at(p, dl, n) is not None


def string_inline_buffer(p, dl) -> bool:
    """Whether ``p`` points at the start of a ``std::string``'s inline characters
    (libstdc++: byte 16 of the object; libc++: byte 1, or 0 in its alternate layout):
    a copy of a run-time number of bytes there copies a short string's characters
    (``char_traits::copy`` when a string is moved into a vector's new storage)."""
    at = _string_at(p, dl, 1)
    return at is not None and (at[1] == _STRING_INLINE if at[0].startswith(_STRING_TBAA[0])
                               else at[1] in (0, 1))


def string_buffer(p, dl) -> bool:
    """Whether ``p`` is the character buffer of a ``std::string`` being built: chosen
    by phis/selects between its inline buffer (``string_inline_buffer``) and the block
    the library's ``_M_create`` returns (``effects.returns_text``)."""
    from .effects import returns_text
    leaves = merge_leaves(p, limit=16)
    return leaves is not None and all(
        isinstance(v, Call) and returns_text(v.callee_name or "") or string_inline_buffer(v, dl)
        for v in leaves)


def merge_leaves(v, limit=64, vectors=False):
    """The values the phis and selects under ``v`` choose between (with ``vectors``,
    also through vector shuffles and freezes), or ``[v]``; None past ``limit``
    values."""
    from ..ir.instructions import Freeze, ShuffleVector
    out, seen, work = [], set(), [v]
    while work:
        x = work.pop()
        if x in seen:
            continue
        seen.add(x)
        if len(seen) > limit:
            return None
        if isinstance(x, Phi):
            work.extend(val for val, _ in x.incoming)
        elif isinstance(x, Select):
            work.extend(x.operands[1:])
        elif vectors and isinstance(x, ShuffleVector):
            work.extend(x.operands[:2])
        elif vectors and isinstance(x, Freeze):
            work.append(x.operand(0))
        else:
            out.append(x)
    return out


def _string_at(p, dl, n):
    """(TBAA name of the string type, offset in it) where the ``n`` bytes at ``p`` lie
    inside a ``std::string`` object, else None.  The object is found by a load or
    store at a constant offset from the same base whose TBAA tag's base type is the
    string, or a struct that holds one there by its member list (``std::pair<const
    std::string, double>``: a map node's key)."""
    from .activity import base_offset
    root, off = base_offset(p, dl, to_variable=True)
    for q in [root] + [u.user for u in root.uses if isinstance(u.user, GEP)]:
        r, qoff = base_offset(q, dl, to_variable=True)
        if r is not root:
            continue
        for u in q.uses:
            acc = u.user
            if not (isinstance(acc, Load) and u.index == 0
                    or isinstance(acc, Store) and u.index == 1):
                continue
            tag = _md(acc.module, acc.get_metadata("tbaa"))
            if tag is None or len(tag.operands) < 3 \
                    or not isinstance(tag.operands[0], md.MDRef):
                continue
            try:
                start = qoff - int(str(tag.operands[2]).split()[-1])
            except ValueError:
                continue
            got = _string_member(acc.module, tag.operands[0], off - start, n)
            if got is not None:
                return got
    return None


def _string_member(module, type_ref, rel, n, depth=6):
    """(string type name, offset in it) where bytes ``rel .. rel + n`` of an object of
    the TBAA type ``type_ref`` lie inside a ``std::string`` member (or the object is
    one), else None."""
    node = _md(module, type_ref)
    if node is None or not node.operands or not isinstance(node.operands[0], md.MDString):
        return None
    name = node.operands[0].value
    size = _STRING_SIZE.get(name)
    if size is not None:
        return (name, rel) if 0 <= rel and rel + n <= size else None
    if not depth or not name.startswith("_ZTS"):
        return None
    members = []
    for ref, o in zip(node.operands[1::2], node.operands[2::2]):
        try:
            members.append((int(str(o).split()[-1]), ref))
        except ValueError:
            return None
    for k, (o, ref) in enumerate(members):
        end = members[k + 1][0] if k + 1 < len(members) else None
        if o <= rel and (end is None or rel + n <= end) and isinstance(ref, md.MDRef):
            got = _string_member(module, ref, rel - o, n, depth - 1)
            if got is not None:
                return got
    return None


def constant_text(p) -> bool:
    """Whether the pointer ``p`` points into constant character data only (string
    literals: constant globals of ``char`` arrays, chosen between by a select)."""
    from ..ir import types as T
    roots = _roots(p)
    return bool(roots) and all(
        getattr(r, "is_global", False) and getattr(r, "is_constant", False)
        and r.value_type.is_array and r.value_type.element == T.i8 for r in roots)


def _roots(p, limit=32):
    out, work, seen = [], [p], set()
    while work and limit:
        limit -= 1
        v = work.pop()
        if v in seen:
            continue
        seen.add(v)
        if isinstance(v, (GEP, Cast)) or isinstance(v, ConstantExpr) and v.opcode in (
                "getelementptr", "bitcast", "addrspacecast"):
            work.append(v.operand(0))   # (a row of a global array: `@U + 96`, constant)
        elif isinstance(v, Phi):
            work.extend(x for x, _ in v.incoming)
        elif isinstance(v, Select):
            work.extend(v.operands[1:])
        else:
            out.append(v)
    return out


def _passed(arg):
    """What the callers pass for the argument ``arg``: the direct calls' arguments, and
    for an OpenMP outlined region the shared variables its ``__kmpc_fork_call`` calls pass
    (the region's parameter k >= 2 is the fork's argument k + 1; 0 and 1 are the
    runtime's thread ids)."""
    fn, k = arg.parent, arg.index
    for u in fn.uses:
        c = u.user
        if not isinstance(c, Call):
            continue
        if c.called_function is fn:
            if k < len(c.args):
                yield c.args[k]
        elif (c.callee_name or "") == "__kmpc_fork_call" and u.index == 2 and k >= 2 \
                and k + 1 < len(c.args):
            yield c.args[k + 1]


def memory_kinds(ptrs, limit=4096, exclude=None, size=None) -> set:
    """``exclude``: an access not to count (the one being asked about).  Where the
    objects show no typed access, the byte-offset analysis answers for the ``size``
    bytes at each pointer (None: to the end of the object; not with ``exclude``)."""
    bytes_seen: list = []
    kinds = _object_kinds(ptrs, limit, exclude, bytes_seen)
    if not kinds and exclude is None:
        module = next((m for m in map(_module_of, ptrs) if m is not None), None)
        if module is not None:
            kinds = pointee_kinds(module, ptrs, size)
    if not kinds and bytes_seen:
        kinds = {"int"}     # only char buffers, and nothing says what they hold
    return kinds


def byte_kinds(ptrs, size=None, kinds=None) -> set:
    """What the ``size`` bytes at each pointer hold (None: to the end of the object), for
    a decision about exactly those bytes (the adjoint of a copy, an integer copy, a
    pointer's own shadow): ``memory_kinds`` of the objects; where those mix several
    kinds besides integers (a C++ object at -O0, whose ``this`` is everyone's), the
    byte-offset analysis's answer for just these bytes, when it is not mixed.
    ``kinds``: the objects' kinds, when the caller has them already."""
    if kinds is None:
        kinds = memory_kinds(ptrs, size=size)
    if _unmixed(kinds):
        return kinds
    module = next((m for m in map(_module_of, ptrs) if m is not None), None)
    refined = pointee_kinds(module, ptrs, size) if module is not None else set()
    return refined if _unmixed(refined) else kinds


def _unmixed(kinds) -> bool:
    return bool(kinds) and len(kinds - {"int"}) <= 1


def _byte_buffer(ty) -> bool:
    """``char``/``unsigned char`` or an array of them: C's type for bytes of anything."""
    while ty.is_array:
        ty = ty.element
    return ty.is_int and ty.width == 8


def _object_kinds(ptrs, limit, exclude, bytes_seen=None) -> set:
    """The kinds of the objects ``ptrs`` point into, from their declared types and typed
    accesses; a local ``char`` buffer's declared type says nothing (a generic swap's
    ``unsigned char t[64]``): it goes to ``bytes_seen`` instead."""
    kinds: set = set()
    roots = []
    for p in ptrs:
        roots.extend(_roots(p))
    work, seen = list(roots), set()
    while work and limit:
        limit -= 1
        v = work.pop()
        if v in seen:
            continue
        seen.add(v)
        if isinstance(v, (ConstantNull, Undef, Poison)):
            continue    # not memory: its uses are every null of the module
        if isinstance(v, Alloca):
            if _byte_buffer(v.allocated_type) and bytes_seen is not None:
                bytes_seen.append(v)
            else:
                scalar_kinds(v.allocated_type, kinds)
        elif isinstance(v, Argument) and v.parent is not None:
            # up: what the callers pass
            for a in _passed(v):
                work.extend(_roots(a))
        elif isinstance(v, Call) and v.type.is_pointer and _moved_block(v) is not None:
            # realloc: the block it returns holds what the old one held
            work.extend(_roots(_moved_block(v)))
        elif isinstance(v, Call) and v.type.is_pointer:
            # a pointer returned by a defined function (an accessor, an allocator
            # wrapper, C++'s std::__niter_base): what the callee returns
            callee = v.called_function
            if callee is not None and not callee.is_declaration:
                for b in callee.blocks:
                    t = b.terminator
                    if isinstance(t, Ret) and t.value is not None:
                        work.extend(_roots(t.value))
        for u in v.uses:
            user = u.user
            if user is exclude:
                continue
            if isinstance(user, GEP) and u.index == 0:
                if user.source_type.is_float or user.source_type.is_pointer:
                    scalar_kinds(user.source_type, kinds)
                work.append(user)
            elif isinstance(user, (Cast, Phi, Select)) and user.type.is_pointer:
                work.append(user)
            elif isinstance(user, Load):
                _access(user, user.type, kinds)
            elif isinstance(user, Store) and u.index == 1:
                _access(user, user.operand(0).type, kinds)
            elif isinstance(user, (AtomicRMW, CmpXchg)) and u.index == 0:
                _access(user, user.operand(1).type, kinds)
            elif isinstance(user, Call) and u.index < len(user.args):
                name = user.callee_name or ""
                if name in HINTS and u.index == 0:
                    kinds.add(HINTS[name])
                elif name.startswith(_MEM) and u.index in (0, 1):
                    # the other side of a copy holds the same values
                    _tbaa_struct_kinds(user, user.module, kinds)
                    work.extend(_roots(user.args[1 - u.index]))
                elif u.index == 0 and _moved_block(user) is v:
                    work.append(user)   # realloc'd: the new block holds the same values
                else:
                    callee = user.called_function
                    if callee is not None and not callee.is_declaration \
                            and u.index < len(callee.args):
                        work.append(callee.args[u.index])    # down: into the callee
    return kinds


def _moved_block(call):
    """The block whose contents ``call`` moves into the one it returns (``realloc``'s
    first argument), else None."""
    return call.args[0] if (call.callee_name or "") == "realloc" and call.args else None


def pointee_kinds(module, ptrs, size=None, exclude=None) -> set:
    """What the byte-offset analysis (``typetree``) finds in the ``size`` bytes at each
    pointer (None: to the end of the object; ``exclude``: an access not to count).  It
    follows pointers kept in memory (the buffer behind a ``std::vector``'s
    ``_M_start``), which ``memory_kinds`` does not."""
    from .typetree import MemoryTypes
    types = MemoryTypes.of(module, ptrs)
    kinds: set = set()
    for p in ptrs:
        kinds |= types.kinds(p, 0, size, exclude)
    return kinds


def copied_floats(module, ptrs, size, most=1024) -> set:
    """The floating-point kinds integer copies carry out of (or into) the ``size`` bytes
    at each pointer (``typetree.copied_kinds``, window by window of a float's width):
    a window whose own accesses and whose copies' far ends show exactly one float kind
    of its width gives that kind -- doubles ``memcpy``'d into a ``uint8_t`` buffer that
    a helper copies out again as 8-byte integers into doubles.  Empty past ``most``
    bytes."""
    from .typetree import MemoryTypes
    if size is None or size > most:
        return set()
    types = MemoryTypes.of(module, ptrs)
    out = set()
    for kind, n in (("double", 8), ("float", 4)):
        for off in range(0, size - n + 1, n):
            got = set()
            for p in ptrs:
                got |= types.copied_kinds(p, n, offset=off)
            if got == {kind}:
                out.add(kind)
    return out


def function_of(v):
    """The function an argument or instruction belongs to, else None."""
    return v.parent if isinstance(v, Argument) else getattr(v, "function", None)


def _module_of(v):
    f = function_of(v)
    return f.parent if f is not None else None


def _access(inst, ty, kinds):
    if ty.is_int:
        k = tbaa_kind(inst)
        if k is not None and k != "int":
            kinds.add(k)
            return
    scalar_kinds(ty, kinds)


FLOAT_KINDS = frozenset({"double", "float", "float-other"})


def carries_no_derivative(p) -> bool:
    """Whether no derivative can be read or accumulated through the pointer ``p``, so
    that the primal pointer may serve as its shadow: the memory behind it holds only
    integers (type analysis sees only integer accesses, or sees no floating-point access
    and ``p`` is a parameter whose pointee is smaller than a pointer --
    ``dereferenceable(4)``: a C++ ``const int &``; or a std::string member returned it:
    characters), or it is code (a function pointer passed through a constructor,
    ``std::valarray::apply``'s)."""
    from .effects import returns_text
    if isinstance(p, Call) and returns_text(p.callee_name or ""):
        return True     # a std::string's character buffer
    kinds = byte_kinds([p])
    if kinds == {"int"}:
        # the accesses seen through p and its copies say integers; where p is kept in
        # memory, others read it back there (a C++ closure capturing a local that
        # holds p, copied into a view): the byte-offset analysis, which follows
        # pointers kept in memory, must not find floating-point values either
        module = _module_of(p)
        return module is None or not pointee_kinds(module, [p]) & FLOAT_KINDS
    if not kinds:
        module = _module_of(p)
        if module is not None:
            from .typetree import MemoryTypes
            if MemoryTypes.of(module, [p]).is_code(p):
                return True
    if not kinds or kinds & FLOAT_KINDS:
        return False
    if isinstance(p, Argument):
        n = Attributes.parse(p.attrs).arg("dereferenceable")
        return n is not None and n.isdigit() and int(n) < 8
    return False


def float_fields(p, nbytes, datalayout, most=64, pointers=False):
    """The floating-point fields among the ``nbytes`` at ``p`` by the declared layout of
    the struct/array they are part of (see ``layout_kinds``): runs ``(offset from p,
    'double' or 'float', bytes)`` of consecutive fields of one type; None where no layout
    is visible, a field is only partly covered or (unless ``pointers``) a pointer is
    among the bytes, or there are more than ``most`` runs."""
    found = _layout_span(p, nbytes, datalayout)
    if found is None:
        return None
    ty, off = found
    leaves: list = []
    _leaf_list(ty, 0, datalayout, leaves)
    runs: list = []
    for o, t in leaves:
        if t is None:
            return None
        sz = datalayout.size_in_bytes(t)
        if o + sz <= off or o >= off + nbytes:
            continue
        if o < off or o + sz > off + nbytes or t.is_pointer and not pointers:
            return None
        if not t.is_float:
            continue
        k = t.kind if t.kind in ("double", "float") else None
        if k is None:
            return None
        if runs and runs[-1][1] == k and runs[-1][0] + runs[-1][2] == o - off:
            runs[-1] = (runs[-1][0], k, runs[-1][2] + sz)
        else:
            runs.append((o - off, k, sz))
        if len(runs) > most:
            return None
    return runs


def tree_float_fields(module, ptrs, nbytes, most=64, pointers=False):
    """The floating-point values among the ``nbytes`` at each pointer by the byte-offset
    analysis (``typetree``), for a copy whose layout nothing declares (its pointers
    loaded from memory at -O0): runs as ``float_fields`` gives them, when both ends
    hold, in each 4-byte step, exactly one double (8 bytes), exactly one float, or only
    integers (and, with ``pointers``, pointers); None where a byte is unknown, kinds
    mix within a step, or there are more than ``most`` runs.  Unknown bytes are
    padding (no run) only where a C layout puts it: the 4 bytes after a 4-byte field
    that ends off an 8-byte boundary in an object of a multiple of 8 bytes (``{const
    char *key; double val; uint32_t hash;}``'s tail)."""
    from .typetree import MemoryTypes
    if nbytes % 4 or nbytes > 4096:
        return None
    types = MemoryTypes.of(module, ptrs)

    def at(off, n):
        # (characters a string keeps inline, at offsets not known, do not make a
        # field at a fixed offset beside them unknown)
        out = set()
        for p in ptrs:
            out |= types.kinds(p, off, n, text=False)
        return out
    other = {"int", "ptr"} if pointers else {"int"}
    runs, off, four = [], 0, False     # four: the last step was a 4-byte field
    while off < nbytes:
        if off + 8 <= nbytes and at(off, 8) == {"double"}:
            run, four = (off, "double", 8), False
        elif at(off, 4) == {"float"}:
            run, four = (off, "float", 4), True
        elif at(off, 4) and at(off, 4) <= other:
            four = at(off, 4) == {"int"}
            off += 4
            continue
        elif four and off % 8 == 4 and nbytes % 8 == 0 and not at(off, 4):
            four = False
            off += 4
            continue
        else:
            return None
        if runs and runs[-1][1] == run[1] and runs[-1][0] + runs[-1][2] == off:
            runs[-1] = (runs[-1][0], run[1], runs[-1][2] + run[2])
        else:
            runs.append(run)
        off += run[2]
    return runs if len(runs) <= most else None


def tbaa_struct_fields(inst, nbytes, most=64, pointers=False):
    """The floating-point fields a memcpy moves by its ``!tbaa.struct`` (clang's list of
    ``offset, size, type`` of a struct assignment's fields): runs as ``float_fields``
    gives them; None without the metadata, when it does not cover ``nbytes`` whole, or
    a field's type is not known (or, unless ``pointers``, is a pointer)."""
    module = inst.module
    n = _md(module, inst.get_metadata("tbaa.struct"))
    if n is None:
        return None
    ops = n.operands
    if len(ops) % 3:
        return None
    items = []   # clang's triples: i64 offset, i64 size, !tag
    for i in range(0, len(ops) - 2, 3):
        off, size, ref = ops[i:i + 3]
        if not (isinstance(off, md.MDValue) and isinstance(size, md.MDValue)
                and isinstance(ref, md.MDRef) and off.value.isdigit() and size.value.isdigit()):
            return None
        items.append((int(off.value), int(size.value), ref))
    runs: list = []
    end = 0
    for off, size, ref in items:
        if off < end or off + size > nbytes:
            return None
        end = off + size
        k = tbaa_kind_of_tag(module, ref)
        if k is None or k == "ptr" and not pointers or k == "float-other":
            return None
        if k not in ("double", "float"):
            continue
        if k == "double" and size != 8 or k == "float" and size != 4:
            return None
        if runs and runs[-1][1] == k and runs[-1][0] + runs[-1][2] == off:
            runs[-1] = (runs[-1][0], k, runs[-1][2] + size)
        else:
            runs.append((off, k, size))
        if len(runs) > most:
            return None
    return runs if items else None


def _leaf_list(ty, base, dl, out):
    if is_union(ty) or getattr(ty, "is_opaque", False):
        out.append((base, None))   # a union: float_fields gives up
    elif ty.is_struct:
        for e, o in zip(ty.elements, dl.field_offsets(ty)):
            _leaf_list(e, base + o, dl, out)
    elif ty.is_array or ty.is_vector:
        esz = dl.size_in_bytes(ty.element)
        if ty.count > 4096:
            out.append((base, ty))   # too many: not a float leaf, float_fields gives up
            return
        for k in range(ty.count):
            _leaf_list(ty.element, base + k * esz, dl, out)
    else:
        out.append((base, ty))


def _layout_span(p, nbytes, datalayout):
    """(type, offset) as ``_layout_base`` gives them, where the ``nbytes`` at ``p`` lie
    inside that object; else None."""
    found = _layout_base(p, datalayout)
    if found is None:
        return None
    ty, off = found
    if off < 0 or off + nbytes > datalayout.size_in_bytes(ty):
        return None
    return ty, off


def _layout_base(p, datalayout, limit=16):
    """(struct/array type, byte offset of p in it) where visible, else None."""
    from ..ir.values import ConstantInt
    off = 0
    v = p
    while limit:
        limit -= 1
        if isinstance(v, GEP):
            idx = v.indices
            if not all(isinstance(i, ConstantInt) for i in idx[1:]):
                return None
            src = v.source_type
            if src.is_struct or src.is_array:
                # the first index steps over whole objects of the same layout
                return src, off + datalayout.offset_of(src, [i.value for i in idx[1:]])
            if not isinstance(idx[0], ConstantInt) or len(idx) != 1:
                return None
            off += idx[0].value * datalayout.size_in_bytes(src)
            v = v.operand(0)
        elif isinstance(v, Cast) and v.opcode in ("bitcast", "addrspacecast"):
            v = v.operand(0)
        elif isinstance(v, Alloca) and (v.allocated_type.is_struct
                                        or v.allocated_type.is_array):
            return v.allocated_type, off
        else:
            return None
    return None


def indexed_kinds(p, nbytes, datalayout):
    """What the ``nbytes`` at ``p`` hold by the type a GEP into a struct or array
    indexes, variable array indices included (``b.flags[i]`` of ``short flags[4]``):
    the kinds of that element when the bytes lie inside it, else None.  An element of
    ``char`` type says nothing (C's bytes of anything)."""
    from ..ir.values import ConstantInt
    while isinstance(p, Cast) and p.opcode in ("bitcast", "addrspacecast"):
        p = p.operand(0)
    if not isinstance(p, GEP) or not (p.source_type.is_struct or p.source_type.is_array):
        return None
    t = p.source_type
    for i in p.indices[1:]:
        if t.is_struct:
            if not isinstance(i, ConstantInt):
                return None
            t = t.elements[i.value]
        elif t.is_array or t.is_vector:
            t = t.element
        else:
            return None
    leaf = t
    while leaf.is_array:
        leaf = leaf.element
    if leaf.is_int and leaf.width == 8 or nbytes > datalayout.size_in_bytes(t):
        return None
    return scalar_kinds(t, set())


def layout_kinds(p, nbytes, datalayout):
    """What the ``nbytes`` at ``p`` hold by the declared layout of the object they are
    part of: ``p`` is a constant byte offset (GEPs with constant indices) from a GEP into
    a struct or array type, or from an alloca of one.  The kinds of the leaf fields
    overlapping those bytes (a set over 'double', 'float', 'int', 'ptr'), or None where
    no layout is visible.  (After SROA, a struct copy is a load and a store per field;
    this tells an ``i32`` field from a ``float`` bit-copy.)"""
    found = _layout_span(p, nbytes, datalayout)
    if found is None:
        return None
    ty, off = found
    out: set = set()
    _leaves(ty, 0, off, off + nbytes, datalayout, out)
    return out


def declared_kinds(p, nbytes, datalayout, extra=0, depth=4, seen=None) -> set:
    """What the declared types of the objects ``p`` may point into say of the ``nbytes``
    at ``p`` (+ ``extra``; None: at an offset not known): ``p`` stripped of constant
    GEPs and casts down to an alloca or a defined global (the leaf fields of its type
    overlapping those bytes; of the whole type where the offset is not known), or down
    to a parameter, followed into the arguments of its function's direct calls
    (``depth`` calls up), or to a phi or select (a pointer advanced in a loop, ``*d++ =
    *s++``: each value it merges, at an offset not known).  A set over 'double',
    'float', 'int', 'ptr' ('unknown' for a union); empty where no declared type is seen
    (heap memory, a pointer read from memory) -- unlike ``layout_kinds``, which stops at
    its own function's values."""
    from .activity import base_offset
    seen = set() if seen is None else seen
    root, off = base_offset(p, datalayout)
    out: set = set()
    if root in seen:
        return out
    seen.add(root)
    off = None if off is None or extra is None else off + extra
    ty = root.allocated_type if isinstance(root, Alloca) else \
        root.value_type if getattr(root, "is_global", False) \
        and not getattr(root, "is_declaration", True) else None
    if ty is not None:
        if off is None:
            _leaves(ty, 0, 0, datalayout.size_in_bytes(ty), datalayout, out)
        else:
            _leaves(ty, 0, off, off + nbytes, datalayout, out)
    elif isinstance(root, Argument) and depth and root.parent is not None:
        f = root.parent
        for u in f.uses:
            c = u.user
            if isinstance(c, Call) and c.called_function is f and root.index < len(c.args):
                out |= declared_kinds(c.args[root.index], nbytes, datalayout, off, depth - 1,
                                      seen)
    elif isinstance(root, (Phi, Select)):
        vals = root.merged
        for v in vals:
            out |= declared_kinds(v, nbytes, datalayout, None, depth, seen)
    return out


def is_union(ty) -> bool:
    """clang's ``%union.X``: its one member type says nothing about the other members."""
    return ty.is_struct and str(getattr(ty, "name", "")).lstrip('"').startswith("union.")


def _leaves(ty, base, lo, hi, dl, out):
    size = dl.size_in_bytes(ty)
    if base >= hi or base + size <= lo:
        return
    if is_union(ty) or getattr(ty, "is_opaque", False):
        out.add("unknown")
    elif ty.is_struct:
        for e, o in zip(ty.elements, dl.field_offsets(ty)):
            _leaves(e, base + o, lo, hi, dl, out)
    elif ty.is_array or ty.is_vector:
        esz = dl.size_in_bytes(ty.element)
        first = max(0, (lo - base) // esz) if esz else 0
        last = min(ty.count, (hi - base + esz - 1) // esz) if esz else 0
        for k in range(first, last):
            _leaves(ty.element, base + k * esz, lo, hi, dl, out)
    else:
        scalar_kinds(ty, out)
