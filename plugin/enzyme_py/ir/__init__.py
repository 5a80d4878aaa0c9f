"""EnzymePy's mutable SSA IR: types, values with use lists, instructions, blocks,
functions and modules; a parser of LLVM textual IR, a printer, and IRBuilder, the
instruction builder (the AD pass builds with ``ad.emit.Emitter``, a subclass).

    from enzyme_py.ir import parse_module, print_module, IRBuilder
"""

from . import types
from .builder import IRBuilder
from .instructions import *  # noqa: F401,F403
from .lexer import ParseError
from .module import BasicBlock, Function, GlobalAlias, GlobalIFunc, GlobalVariable, Module
from .parser import parse_module
from .printer import print_function, print_module
from .values import *  # noqa: F401,F403

__all__ = ["types", "IRBuilder", "ParseError", "BasicBlock", "Function", "GlobalAlias",
           "GlobalIFunc", "GlobalVariable", "Module", "parse_module", "print_module",
           "print_function"]
