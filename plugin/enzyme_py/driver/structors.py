"""Global constructors and destructors as ``.init_array`` / ``.fini_array``.

llvmlite's TargetMachine emits ``llvm.global_ctors``/``llvm.global_dtors`` into
``.ctors``/``.dtors`` sections (its target options leave ``UseInitArray``
off).  GNU ld folds those into ``.init_array``, but lld — which the clang in the
``ziglang`` wheel links with — does not, and static initialisers silently never
run.  So after optimisation the driver lowers the two lists itself, as clang's
code generator does on Linux: one array of function pointers per priority, in
section ``.init_array`` (``.init_array.NNNNN`` for explicit priorities, which
linkers sort by priority).
"""

from __future__ import annotations

from .. import llvm
from ..ir import parse_module, print_module
from ..ir import types as T
from ..ir.values import ConstantAggregate, ConstantInt, ConstantNull, ZeroInit

_LISTS = (("llvm.global_ctors", ".init_array"), ("llvm.global_dtors", ".fini_array"))
DEFAULT_PRIORITY = 65535


def lower_structors(module) -> bool:
    """Replace ``llvm.global_ctors``/``llvm.global_dtors`` by arrays in
    ``.init_array``/``.fini_array``; True if the module changed."""
    changed = False
    for list_name, section in _LISTS:
        g = module.get_global(list_name)
        if g is None or g.initializer is None:
            continue
        init = g.initializer
        if isinstance(init, ZeroInit):
            entries = []
        elif isinstance(init, ConstantAggregate):
            entries = []
            for entry in init.operands:
                prio, fn = entry.operand(0), entry.operand(1)
                if not isinstance(prio, ConstantInt) or isinstance(fn, ConstantNull):
                    continue
                entries.append((prio.value, fn))
        else:
            continue  # a form we do not know: leave it to the code generator
        by_priority: dict[int, list] = {}
        for prio, fn in entries:
            by_priority.setdefault(prio, []).append(fn)
        for prio, fns in sorted(by_priority.items()):
            sec = section if prio == DEFAULT_PRIORITY else f"{section}.{prio:05d}"
            arr_ty = T.ArrayType(T.ptr, len(fns))
            arr = module.add_global(f"__enzyme_py{section.replace('.', '_')}_{prio}", arr_ty,
                                    ConstantAggregate(arr_ty, [fn if fn.is_global else fn.clone()
                                                               for fn in fns]),
                                    constant=True, linkage="internal")
            arr.tail = f', section "{sec}", align 8'
        g.erase()
        changed = True
    return changed


def lower_module(mod):
    """The same for an LLVM module handle, ready for code generation: returns
    ``mod`` itself when it has neither list, else a new handle."""
    text = llvm.to_text(mod)
    if "@llvm.global_ctors" not in text and "@llvm.global_dtors" not in text:
        return mod
    module = parse_module(text)
    if not lower_structors(module):
        return mod
    return llvm.parse_assembly(print_module(module), "the module with lowered constructors")
