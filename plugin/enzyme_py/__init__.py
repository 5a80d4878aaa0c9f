"""EnzymePy: Enzyme-compatible automatic differentiation of C and C++ at link time.

The compiler drivers ``enzyme-cc`` / ``enzyme-c++`` (:mod:`enzyme_py.driver`)
build programs through clang → bitcode → llvmlite link → EnzymePy's own IR
(:mod:`enzyme_py.ir`) → AD pass → llvmlite optimise → native object → link.

The Python interface (:mod:`enzyme_py.api`, needs NumPy and libclang) builds C/C++
source into a library and differentiates its functions: ``compile``, ``grad``,
``value_and_grad``, ``jvp``, ``vjp``; ``enzyme_py.torch.function`` and
``enzyme_py.jax.function`` adapt them to PyTorch and JAX.  These are imported on
first use, so the compiler drivers do not load NumPy.
"""

__version__ = "0.1.0"

_API = ("compile", "grad", "value_and_grad", "jvp", "vjp", "Library", "Function",
        "CompileError", "cache_dir")
__all__ = [*_API, "torch", "jax", "__version__"]


def __getattr__(name):
    if name in _API:
        from . import api
        return getattr(api, name)
    if name in ("torch", "jax"):
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'enzyme_py' has no attribute '{name}'")
