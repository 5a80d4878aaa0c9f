"""EnzymePy: Enzyme-compatible automatic differentiation of C and C++ at link time.

The compiler drivers ``enzyme-cc`` / ``enzyme-c++`` (:mod:`enzyme_py.driver`)
build programs through clang → bitcode → llvmlite link → EnzymePy's own IR
(:mod:`enzyme_py.ir`) → AD pass → llvmlite optimise → native object → link.
"""

__version__ = "0.1.0"
